"""The public surface: every public exception can be caught by name from ``subagents`` and
``subagents.errors``, and every ``__all__`` names only what its module has.

Every module of the package is imported (the test fails on one that cannot be), so an
exception class added anywhere is found, wherever it is defined.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path
from types import ModuleType

import pytest

import subagents
import subagents.errors
from subagents.errors import SubagentsError

# Imported by `python -m subagents` only: importing it runs the CLI.
NOT_IMPORTED = {"subagents.__main__": "importing it runs the CLI and exits"}

# Exceptions outside the SubagentsError tree that are public by name but never reach a caller:
# each is caught inside the library and becomes a tool result, a retry or a clearer error.
INTERNAL_EXCEPTIONS = {
    "subagents.models.retry.MalformedResponseError": "retried, then ModelRetriesExhaustedError",
    "subagents.runtime.pause.RunPaused": "a pause unwinding the loop; run() returns it",
    "subagents.tools.web.addresses.BlockedAddressError": "a WebFetch tool result",
    "subagents.tools.web.domains.DomainFilterError": "a WebSearch tool result",
    "subagents.tools.web.fetch.FetchError": "a WebFetch tool result",
    "subagents.tools.web.search.SearchError": "a WebSearch tool result",
    "subagents.store.sqlite.steps.StaleTail": "caught by the store, which reads the tail again",
}


def _all_modules() -> list[ModuleType]:
    modules = [subagents]
    for info in pkgutil.walk_packages(subagents.__path__, "subagents."):
        if info.name not in NOT_IMPORTED:
            modules.append(importlib.import_module(info.name))
    return modules


MODULES = _all_modules()


def _is_private(qualified: str) -> bool:
    return any(part.startswith("_") and part != "__init__" for part in qualified.split("."))


def _defined_exceptions() -> list[type[BaseException]]:
    found = {
        value
        for module in MODULES
        for value in vars(module).values()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__.startswith("subagents")
    }
    return sorted(found, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_every_module_of_the_package_was_imported() -> None:
    root = Path(subagents.__file__).parent
    files = {
        ".".join(("subagents", *path.relative_to(root).with_suffix("").parts)).removesuffix(
            ".__init__"
        )
        for path in root.rglob("*.py")
    }
    imported = {module.__name__ for module in MODULES}
    assert files - imported == set(NOT_IMPORTED)


def test_every_public_subagents_error_is_exported_from_errors_and_the_package() -> None:
    errors = [
        cls
        for cls in _defined_exceptions()
        if issubclass(cls, SubagentsError) and not _is_private(cls.__qualname__)
    ]
    assert SubagentsError in errors and len(errors) > 10
    missing = []
    for cls in errors:
        name = cls.__name__
        if name not in subagents.errors.__all__ or getattr(subagents.errors, name) is not cls:
            missing.append(f"{_qualified(cls)} is not in subagents.errors.__all__")
        if name not in subagents.__all__ or getattr(subagents, name) is not cls:
            missing.append(f"{_qualified(cls)} is not in subagents.__all__")
    assert not missing, "export it (define it in subagents/errors.py): " + "; ".join(missing)


def test_every_other_public_exception_is_a_known_internal_one() -> None:
    others = {
        _qualified(cls)
        for cls in _defined_exceptions()
        if not issubclass(cls, SubagentsError) and not _is_private(_qualified(cls))
    }
    assert others == set(INTERNAL_EXCEPTIONS), (
        "an exception a caller may see derives from SubagentsError (subagents/errors.py); "
        "one that never leaves the library is listed in INTERNAL_EXCEPTIONS with why"
    )


def test_errors_exports_exceptions_only() -> None:
    for name in subagents.errors.__all__:
        value = getattr(subagents.errors, name)
        assert inspect.isclass(value) and issubclass(value, SubagentsError), name


@pytest.mark.parametrize("module", MODULES, ids=lambda module: module.__name__)
def test_every_all_names_only_what_the_module_has(module: ModuleType) -> None:
    names = getattr(module, "__all__", None)
    if names is None:  # only a private module, or a package that holds nothing itself
        public = [
            name
            for name, value in vars(module).items()
            if not name.startswith("_") and not isinstance(value, ModuleType)
        ]
        assert _is_private(module.__name__) or not public, (
            f"{module.__name__} defines {public} and has no __all__"
        )
        return
    assert len(names) == len(set(names)), f"{module.__name__}.__all__ repeats a name"
    absent = [name for name in names if not hasattr(module, name)]
    assert not absent, f"{module.__name__}.__all__ names what it lacks: {absent}"
