"""subagents: Claude-Code-style subagents for any LLM.

The public API is imported lazily so that ``import subagents`` and ``subagents --help`` stay
fast; each name is loaded from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from subagents._lazy import lazy_exports

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # every public exception (tests/core/test_public_surface.py fails when one is missing)
    "AgentDefinitionError": "subagents.errors",
    "AgentNotFoundError": "subagents.errors",
    "AgentUnavailableError": "subagents.errors",
    "ConfigError": "subagents.errors",
    "LoopDetectedError": "subagents.errors",
    "MCPServerError": "subagents.errors",
    "ModelConfigurationError": "subagents.errors",
    "ModelError": "subagents.errors",
    "ModelRetriesExhaustedError": "subagents.errors",
    "ScriptExhaustedError": "subagents.errors",
    "ScriptNotConsumedError": "subagents.errors",
    "StoreCorruptError": "subagents.errors",
    "StoreError": "subagents.errors",
    "StoreUnavailableError": "subagents.errors",
    "StoreVersionError": "subagents.errors",
    "SubagentsError": "subagents.errors",
    "TaskLeasedError": "subagents.errors",
    "TaskNotFoundError": "subagents.errors",
    "ToolDefinitionError": "subagents.errors",
    "ToolError": "subagents.errors",
    "TracingError": "subagents.errors",
    "WorkflowConditionError": "subagents.errors",
    "WorkerError": "subagents.errors",
    "WorkflowError": "subagents.errors",
    "WorkflowValidationError": "subagents.errors",
    "WorktreeError": "subagents.errors",
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
    "AgentDefinition": "subagents.definitions.model",
    "Config": "subagents.config",
    "load_config": "subagents.config",
    "Inventory": "subagents.inventory",
    "AgentRecord": "subagents.inventory",
    "build_model": "subagents.models.resolve",
    "tool": "subagents.tools.decorator",
    "PermissionPolicy": "subagents.tools.permissions",
    "Runtime": "subagents.runtime.runtime",
    "Session": "subagents.runtime.session",
    "RunResult": "subagents.runtime.result",
    "SpawnResult": "subagents.runtime.result",
    "EventBus": "subagents.runtime.events",
    "Hooks": "subagents.runtime.hooks",
    "HookResult": "subagents.runtime.hooks",
    "CommandHook": "subagents.runtime.hooks",
}

__all__ = [
    "AgentDefinition",
    "AgentDefinitionError",
    "AgentNotFoundError",
    "AgentRecord",
    "AgentUnavailableError",
    "AssistantMessage",
    "CommandHook",
    "Config",
    "ConfigError",
    "EventBus",
    "HookResult",
    "Hooks",
    "Inventory",
    "LoopDetectedError",
    "MCPServerError",
    "Model",
    "ModelConfigurationError",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ModelRetriesExhaustedError",
    "PermissionPolicy",
    "RunResult",
    "Runtime",
    "ScriptExhaustedError",
    "ScriptNotConsumedError",
    "Session",
    "SpawnResult",
    "StoreCorruptError",
    "StoreError",
    "StoreUnavailableError",
    "StoreVersionError",
    "SubagentsError",
    "SystemMessage",
    "TaskLeasedError",
    "TaskNotFoundError",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolRegistry",
    "ToolResultMessage",
    "TracingError",
    "Usage",
    "UserMessage",
    "WorkerError",
    "WorkflowConditionError",
    "WorkflowError",
    "WorkflowValidationError",
    "WorktreeError",
    "__version__",
    "build_model",
    "load_config",
    "tool",
]

if TYPE_CHECKING:
    from subagents.config import Config, load_config
    from subagents.definitions.model import AgentDefinition
    from subagents.errors import (
        AgentDefinitionError,
        AgentNotFoundError,
        AgentUnavailableError,
        ConfigError,
        LoopDetectedError,
        MCPServerError,
        ModelConfigurationError,
        ModelError,
        ModelRetriesExhaustedError,
        ScriptExhaustedError,
        ScriptNotConsumedError,
        StoreCorruptError,
        StoreError,
        StoreUnavailableError,
        StoreVersionError,
        SubagentsError,
        TaskLeasedError,
        TaskNotFoundError,
        ToolDefinitionError,
        ToolError,
        TracingError,
        WorkerError,
        WorkflowConditionError,
        WorkflowError,
        WorkflowValidationError,
        WorktreeError,
    )
    from subagents.inventory import AgentRecord, Inventory
    from subagents.messages import (
        AssistantMessage,
        SystemMessage,
        ToolCall,
        ToolResultMessage,
        Usage,
        UserMessage,
    )
    from subagents.models.base import Model, ModelRequest, ModelResponse
    from subagents.models.resolve import build_model
    from subagents.runtime.events import EventBus
    from subagents.runtime.hooks import CommandHook, HookResult, Hooks
    from subagents.runtime.result import RunResult, SpawnResult
    from subagents.runtime.runtime import Runtime
    from subagents.runtime.session import Session
    from subagents.tools.base import Tool, ToolContext, ToolRegistry
    from subagents.tools.decorator import tool
    from subagents.tools.permissions import PermissionPolicy

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
