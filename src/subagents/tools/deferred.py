"""A :class:`Tool` whose function and input model load from their module on first use.

Building the built-in tools means importing eleven modules and making a Pydantic model of each
signature: about 50 ms of every run, most of which calls no tool at all. A deferred tool holds
what a model is shown (name, description, JSON Schema) and what the permission layer asks
(read-only, writes_paths, ...) from :mod:`subagents.tools.builtin.catalogue`; reading its
``function`` or ``input_model`` loads the real tool once and takes both from it. Everything
else about it is the real tool's (tests/tools/test_builtin_tool_catalogue.py checks that).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from subagents.tools.base import Tool, ToolFunction

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["DeferredTool"]

# Tool's own storage for the two fields (slots), under the properties below
_FUNCTION_SLOT: Any = Tool.__dict__["function"]
_INPUT_MODEL_SLOT: Any = Tool.__dict__["input_model"]


_COMPARED = tuple(field.name for field in dataclasses.fields(Tool) if field.compare)


async def _not_loaded(**kwargs: Any) -> Any:  # pragma: no cover - replaced before any call
    raise AssertionError("a deferred tool is called through its loaded function")


class DeferredTool(Tool):
    """A tool described now and loaded by ``load`` (which returns the real :class:`Tool`)
    the first time its ``function`` or ``input_model`` is read. Without ``load`` it is a plain
    tool of the given fields (what ``dataclasses.replace`` makes of a deferred tool, which
    reads, and so loads, every field)."""

    __slots__ = ("_load",)

    def __init__(self, load: Callable[[], Tool] | None = None, /, **fields: Any) -> None:
        self._load: Callable[[], Tool] | None = load
        if load is not None:
            fields["function"] = _not_loaded
        super().__init__(**fields)

    @property
    def function(self) -> ToolFunction:
        self._ensure_loaded()
        found: ToolFunction = _FUNCTION_SLOT.__get__(self, Tool)
        return found

    @function.setter
    def function(self, value: ToolFunction) -> None:
        _FUNCTION_SLOT.__set__(self, value)

    @property
    def input_model(self) -> type[BaseModel] | None:
        self._ensure_loaded()
        found: type[BaseModel] | None = _INPUT_MODEL_SLOT.__get__(self, Tool)
        return found

    @input_model.setter
    def input_model(self, value: type[BaseModel] | None) -> None:
        _INPUT_MODEL_SLOT.__set__(self, value)

    def __eq__(self, other: object) -> bool:
        """Equal to the real tool, as the module's tools were to one another."""
        if not isinstance(other, Tool):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _COMPARED)

    @property
    def loaded(self) -> bool:
        """Whether the real tool was loaded."""
        return self._load is None

    def _ensure_loaded(self) -> None:
        load = self._load
        if load is None:
            return
        real = load()
        _FUNCTION_SLOT.__set__(self, real.function)
        _INPUT_MODEL_SLOT.__set__(self, real.input_model)
        self._load = None
