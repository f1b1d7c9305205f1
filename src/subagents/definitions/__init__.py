"""Agent definitions: the model, the parsers for every dialect, validation, rendering, and the
agents that ship with the library."""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from subagents._lazy import lazy_exports
from subagents.definitions.model import (
    SCOPE_RANK,
    AgentDefinition,
    AgentStatus,
    Dialect,
    Effort,
    Isolation,
    MemoryScope,
    PermissionMode,
    Scope,
)
from subagents.definitions.parse import (
    AGENT_FILE_SUFFIXES,
    MAX_AGENT_FILE_BYTES,
    dialect_for_path,
    parse_agent_file,
    parse_agent_mapping,
    parse_agent_text,
)
from subagents.definitions.validate import (
    NAME_PATTERN,
    effective_tool_names,
    normalise_name,
    validate_definition,
)

if TYPE_CHECKING:
    from subagents.definitions.render import (
        frontmatter_json_schema,
        new_agent_template,
        render_markdown,
    )

__all__ = [
    "AGENT_FILE_SUFFIXES",
    "MAX_AGENT_FILE_BYTES",
    "NAME_PATTERN",
    "SCOPE_RANK",
    "AgentDefinition",
    "AgentStatus",
    "Dialect",
    "Effort",
    "Isolation",
    "MemoryScope",
    "PermissionMode",
    "Scope",
    "builtin_definitions",
    "dialect_for_path",
    "effective_tool_names",
    "frontmatter_json_schema",
    "new_agent_template",
    "normalise_name",
    "parse_agent_file",
    "parse_agent_mapping",
    "parse_agent_text",
    "render_markdown",
    "validate_definition",
]

# Writing agent files (PyYAML's dumper, the frontmatter's JSON Schema) loads on first use: a
# run only reads them.
_RENDER_EXPORTS = dict.fromkeys(
    ("frontmatter_json_schema", "new_agent_template", "render_markdown"),
    "subagents.definitions.render",
)
__getattr__, __dir__ = lazy_exports(__name__, _RENDER_EXPORTS, globals())


@cache
def _load_builtins() -> tuple[AgentDefinition, ...]:
    folder = resources.files(__name__).joinpath("builtin")
    entries = sorted((e for e in folder.iterdir() if e.name.endswith(".md")), key=lambda e: e.name)
    return tuple(
        parse_agent_text(
            entry.read_text(encoding="utf-8"),
            dialect="markdown",
            scope="builtin",
            source_path=entry if isinstance(entry, Path) else None,
        )
        for entry in entries
    )


def builtin_definitions() -> list[AgentDefinition]:
    """The agents that ship with the library (``general-purpose``, ``explore``, ``plan``).

    Read once per process; each call returns fresh copies the caller may change.
    """
    return [d.model_copy() for d in _load_builtins()]
