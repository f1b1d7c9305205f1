"""subagents: Claude-Code-style subagents for any LLM.

The public API is imported lazily so that ``import subagents`` and ``subagents --help`` stay
fast; each name is loaded from its module on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "SubagentsError": "subagents.errors",
    "ConfigError": "subagents.errors",
    "AgentNotFoundError": "subagents.errors",
    "ModelError": "subagents.errors",
    "ModelConfigurationError": "subagents.errors",
    "ToolError": "subagents.errors",
    "AssistantMessage": "subagents.messages",
    "SystemMessage": "subagents.messages",
    "ToolCall": "subagents.messages",
    "ToolResultMessage": "subagents.messages",
    "Usage": "subagents.messages",
    "UserMessage": "subagents.messages",
    "Model": "subagents.models.base",
    "ModelRequest": "subagents.models.base",
    "ModelResponse": "subagents.models.base",
    "Tool": "subagents.tools.base",
    "ToolContext": "subagents.tools.base",
    "ToolRegistry": "subagents.tools.base",
}

__all__ = [
    "AgentNotFoundError",
    "AssistantMessage",
    "ConfigError",
    "Model",
    "ModelConfigurationError",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "SubagentsError",
    "SystemMessage",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "__version__",
]

if TYPE_CHECKING:
    from subagents.errors import (
        AgentNotFoundError,
        ConfigError,
        ModelConfigurationError,
        ModelError,
        SubagentsError,
        ToolError,
    )
    from subagents.messages import (
        AssistantMessage,
        SystemMessage,
        ToolCall,
        ToolResultMessage,
        Usage,
        UserMessage,
    )
    from subagents.models.base import Model, ModelRequest, ModelResponse
    from subagents.tools.base import Tool, ToolContext, ToolRegistry


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'subagents' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
