"""Turning a Pydantic input model into the JSON Schema shown to models.

Providers accept plain JSON Schema but some reject or mishandle Pydantic's extras: ``$ref`` into
``$defs`` (inlined here unless a type refers to itself) and ``anyOf [T, null]`` for an optional
argument (shown as plain ``T``, the argument simply not being required). The top level always
has ``type: object``, ``properties``, ``required`` and ``additionalProperties: false``.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["input_schema"]

_REF_PREFIX = "#/$defs/"
_DROPPED_KEYS = frozenset({"discriminator"})


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The provider-ready JSON Schema of a tool's input model."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    definitions: dict[str, Any] = raw.pop("$defs", {})
    kept_definitions: dict[str, Any] = {}
    schema: dict[str, Any] = _inline(raw, definitions, kept_definitions, ())
    schema["type"] = "object"
    properties: dict[str, Any] = schema.setdefault("properties", {})
    required: list[str] = schema.setdefault("required", [])
    for name, prop in list(properties.items()):
        if name not in required:
            properties[name] = _without_null_branch(prop)
    schema["additionalProperties"] = False
    if kept_definitions:
        schema["$defs"] = kept_definitions
    return schema


def _inline(
    node: Any, definitions: dict[str, Any], kept: dict[str, Any], expanding: tuple[str, ...]
) -> Any:
    if isinstance(node, list):
        return [_inline(item, definitions, kept, expanding) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
        name = ref.removeprefix(_REF_PREFIX)
        if name in expanding or name not in definitions:
            # A self-referencing type cannot be inlined: keep the reference and its definition.
            if name in definitions and name not in kept:
                kept[name] = {}
                kept[name] = _inline(definitions[name], definitions, kept, (*expanding, name))
            return {key: value for key, value in node.items() if key not in _DROPPED_KEYS}
        target = _inline(copy.deepcopy(definitions[name]), definitions, kept, (*expanding, name))
        siblings = {
            key: _inline(value, definitions, kept, expanding)
            for key, value in node.items()
            if key != "$ref" and key not in _DROPPED_KEYS
        }
        return {**target, **siblings}
    return {
        key: _inline(value, definitions, kept, expanding)
        for key, value in node.items()
        if key not in _DROPPED_KEYS
    }


def _without_null_branch(prop: dict[str, Any]) -> dict[str, Any]:
    """``anyOf [T, {type: null}]`` with a ``null`` default becomes plain ``T``."""
    branches = prop.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2:
        return prop
    others = [branch for branch in branches if branch != {"type": "null"}]
    if len(others) != 1:
        return prop
    simplified = {key: value for key, value in prop.items() if key != "anyOf"}
    if simplified.get("default", ...) is None:
        del simplified["default"]
    return {**others[0], **simplified}
