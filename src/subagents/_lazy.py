"""Lazy public names for a package: each is imported from its module on first use, so that
importing the package itself stays cheap (``import subagents``, ``subagents --help``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` for ``package``.

    ``exports`` maps each public name to the module that defines it; a loaded name is cached in
    ``namespace`` (the package's globals) so the lookup happens once.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(namespace["__all__"])

    return __getattr__, __dir__
