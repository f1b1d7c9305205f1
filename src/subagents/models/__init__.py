"""Models: the Model protocol, providers (and their registry), test doubles and model strings.

Names are imported lazily, so ``import subagents.models`` never loads a provider SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from subagents._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "Model": "subagents.models.base",
    "ModelRequest": "subagents.models.base",
    "ModelResponse": "subagents.models.base",
    "ModelSettings": "subagents.models.base",
    "ResponseCompleted": "subagents.models.base",
    "StopReason": "subagents.models.base",
    "StreamEvent": "subagents.models.base",
    "TextDelta": "subagents.models.base",
    "ToolSpec": "subagents.models.base",
    "ProviderSettings": "subagents.models.settings",
    "OpenAIChatModel": "subagents.models.openai",
    "AnthropicModel": "subagents.models.anthropic",
    "RetryPolicy": "subagents.models.retry",
    "DEFAULT_ALIASES": "subagents.models.aliases",
    "TIER_ALIASES": "subagents.models.aliases",
    "ModelChoice": "subagents.models.choice",
    "choose_model": "subagents.models.choice",
    "KNOWN_PROVIDERS": "subagents.models.registry",
    "ApiKey": "subagents.models.registry",
    "Provider": "subagents.models.registry",
    "register_provider": "subagents.models.registry",
    "build_model": "subagents.models.resolve",
    "resolve_model_string": "subagents.models.resolve",
    "FunctionModel": "subagents.models.testing",
    "ScriptedModel": "subagents.models.testing",
    "TextToolCallModel": "subagents.models.text_tools",
}

__all__ = [
    "DEFAULT_ALIASES",
    "KNOWN_PROVIDERS",
    "TIER_ALIASES",
    "AnthropicModel",
    "ApiKey",
    "FunctionModel",
    "Model",
    "ModelChoice",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "OpenAIChatModel",
    "Provider",
    "ProviderSettings",
    "ResponseCompleted",
    "RetryPolicy",
    "ScriptedModel",
    "StopReason",
    "StreamEvent",
    "TextDelta",
    "TextToolCallModel",
    "ToolSpec",
    "build_model",
    "choose_model",
    "register_provider",
    "resolve_model_string",
]

if TYPE_CHECKING:
    from subagents.models.aliases import DEFAULT_ALIASES, TIER_ALIASES
    from subagents.models.anthropic import AnthropicModel
    from subagents.models.base import (
        Model,
        ModelRequest,
        ModelResponse,
        ModelSettings,
        ResponseCompleted,
        StopReason,
        StreamEvent,
        TextDelta,
        ToolSpec,
    )
    from subagents.models.choice import ModelChoice, choose_model
    from subagents.models.openai import OpenAIChatModel
    from subagents.models.registry import KNOWN_PROVIDERS, ApiKey, Provider, register_provider
    from subagents.models.resolve import build_model, resolve_model_string
    from subagents.models.retry import RetryPolicy
    from subagents.models.settings import ProviderSettings
    from subagents.models.testing import FunctionModel, ScriptedModel
    from subagents.models.text_tools import TextToolCallModel

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
