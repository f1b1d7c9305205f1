"""Which model an agent runs on here: one decision for ``agents list/show`` and for the run.

An agent file says ``model: sonnet``; what that means depends on this machine. The decision,
in order:

1. no value (and no ``[subagents] default_model``), or ``inherit``: the parent's model;
2. a value no alias or model form explains (``model: gpt4``): a warning, and the parent's
   model - a file is never invalid for its model;
3. a model whose provider has no credentials here (``sonnet`` without ``ANTHROPIC_API_KEY``):
   the parent's model, said out loud, unless ``[subagents] model_fallback = "error"``, which
   refuses to start the agent instead;
4. otherwise the resolved ``provider:model``.

The main agent has no parent to fall back to: it keeps failing on a missing key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from subagents._preview import shorten
from subagents.errors import ModelConfigurationError
from subagents.models.aliases import DEFAULT_ALIASES, split_context_suffix
from subagents.models.registry import missing_key_variable
from subagents.models.resolve import resolve_model_string

if TYPE_CHECKING:
    from subagents.models.settings import ProviderSettings

__all__ = [
    "INHERIT",
    "FallbackMode",
    "ModelChoice",
    "choose_model",
    "is_known_model",
]

INHERIT = "inherit"
FallbackMode = Literal["inherit", "error"]
_BARE_TOML_KEY = re.compile(r"[A-Za-z0-9_-]+")
_SHOWN_CHARS = 60  # of a model value quoted in a message


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The model an agent runs on, and why.

    ``model`` is the ``provider:model`` to build, or ``None`` for the parent's model;
    ``wanted`` the one ``requested`` means when its credentials are missing. ``fallback`` says
    why the parent's model stands in for ``requested`` (``"no ANTHROPIC_API_KEY"``); ``error``
    why the agent may not start at all (``model_fallback = "error"``); ``hint`` what a person
    can do about either.
    """

    requested: str | None
    model: str | None
    long_context: bool = False
    fallback: str | None = None
    error: str | None = None
    hint: str | None = None
    wanted: str | None = None

    @property
    def inherits(self) -> bool:
        return self.model is None

    def describe(self) -> str:
        """One line for people: ``anthropic:claude-sonnet-5-5``, ``inherit``, or
        ``inherit: no ANTHROPIC_API_KEY; map it with [models] sonnet = "PROVIDER:MODEL"``."""
        if self.fallback is not None:
            return f"{INHERIT}: {self.fallback}; {self.hint}"
        if self.model is None:
            return INHERIT
        text = self.model + (" (1M context)" if self.long_context else "")
        if self.error is not None:
            text += f" (cannot start: {self.error}; {self.hint})"
        return text


def choose_model(
    requested: str | None,
    *,
    aliases: Mapping[str, str] | None = None,
    providers: Mapping[str, ProviderSettings] | None = None,
    default_model: str | None = None,
    fallback_mode: FallbackMode = "inherit",
    env: Mapping[str, str] | None = None,
) -> ModelChoice:
    """Decide the model for an agent whose ``model`` value is ``requested`` (see the module
    docstring). ``env`` defaults to ``os.environ``; nothing here raises."""
    name = requested.strip() if requested is not None and requested.strip() else None
    if name is None:
        name = default_model
    if name is None or name.lower() == INHERIT:
        return ModelChoice(requested=name, model=None)
    try:
        resolved = resolve_model_string(name, aliases)
    except ModelConfigurationError as error:
        if _is_mapped(name, aliases or {}):  # the mapping itself leads nowhere
            return ModelChoice(
                requested=name,
                model=None,
                fallback=f"its [models] mapping names no model ({shorten(error.message, 160)})",
                hint="write PROVIDER:MODEL as its value under [models] in .subagents/config.toml",
            )
        return ModelChoice(
            requested=name,
            model=None,
            fallback="not a model or alias known here",
            hint=f"{_mapping_hint(name)} (aliases: {', '.join(DEFAULT_ALIASES)})",
        )
    long_context = split_context_suffix(name)[1]
    provider = resolved.partition(":")[0]
    settings = (providers or {}).get(provider)
    missing = missing_key_variable(provider, settings, os.environ if env is None else env)
    if missing is None:
        return ModelChoice(requested=name, model=resolved, long_context=long_context)
    hint = f"{_mapping_hint(name)}, or set {missing}"
    if fallback_mode == "error":
        shown = shorten(resolved, _SHOWN_CHARS)
        return ModelChoice(
            requested=name,
            model=resolved,
            long_context=long_context,
            error=f"the model {shown!r} needs {missing}, which is not set",
            hint=hint,
            wanted=resolved,
        )
    return ModelChoice(
        requested=name, model=None, fallback=f"no {missing}", hint=hint, wanted=resolved
    )


def is_known_model(spec: str, aliases: Mapping[str, str] | None = None) -> bool:
    """Whether ``spec`` names a model by some form we understand (credentials aside)."""
    if spec.strip().lower() == INHERIT:
        return True
    try:
        resolve_model_string(spec, aliases)
    except ModelConfigurationError:
        return False
    return True


def _is_mapped(name: str, aliases: Mapping[str, str]) -> bool:
    bare = split_context_suffix(name)[0]
    return any(key in aliases for key in (name, name.lower(), bare, bare.lower()))


def _mapping_hint(name: str) -> str:
    key = shorten(split_context_suffix(name)[0], _SHOWN_CHARS)
    if key.lower() in DEFAULT_ALIASES:
        key = key.lower()
    shown = key if _BARE_TOML_KEY.fullmatch(key) else '"' + key.replace('"', '\\"') + '"'
    return f'map it with [models] {shown} = "PROVIDER:MODEL" in .subagents/config.toml'
