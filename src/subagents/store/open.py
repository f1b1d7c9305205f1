"""Opening a store by path or URL: the one place that chooses the store implementation.

``open_store()`` takes a file path (``.subagents/state.db``), a ``sqlite:`` URL
(``sqlite:///ABSOLUTE/PATH`` or ``sqlite:RELATIVE/PATH``, percent-encoded), or nothing (the
project's default, :func:`subagents.store.location.default_store_path`). Server databases
(``postgresql://``) are named here first, so that adding one is an adapter in
``store/postgres/`` and one branch below, not a change of every caller.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from subagents.errors import StoreError

if TYPE_CHECKING:
    from subagents.store.base import AsyncStore, Store

__all__ = [
    "KNOWN_SCHEMES",
    "STORE_ENV_VAR",
    "configured_store",
    "is_postgres_url",
    "open_async_store",
    "open_store",
    "store_file",
    "store_from_environment",
]

KNOWN_SCHEMES = ("sqlite", "postgresql")
_POSTGRES_SCHEMES = ("postgresql", "postgres")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")  # two letters or more: 'C:' is a drive
_PASSWORD = re.compile(r"(//[^/@:]*):[^/@]*@")
_URL_FORMS = "sqlite:///ABSOLUTE/PATH or sqlite:RELATIVE/PATH"


def open_store(
    url_or_path: str | Path | None = None,
    *,
    cwd: Path | None = None,
    read_only: bool = False,
) -> Store:
    """Open (creating when missing) the store ``url_or_path`` names, else the one
    :func:`configured_store` names, else the default store for ``cwd``. ``read_only`` opens a
    SQLite store for reading only (it must exist then); a store that cannot be written here is
    opened so anyway."""
    target = url_or_path if url_or_path is not None else configured_store()
    if isinstance(target, str) and is_postgres_url(target):
        from subagents.store.postgres import PostgresStore

        return PostgresStore(target)
    from subagents.store.sqlite import SQLiteStore

    return SQLiteStore(store_file(target, cwd=cwd), read_only=read_only)


STORE_ENV_VAR = "SUBAGENTS_STORE"


def store_from_environment() -> str | None:
    """The store ``SUBAGENTS_STORE`` names (a path or URL), or None."""
    import os

    return os.environ.get(STORE_ENV_VAR) or None


def configured_store() -> str | None:
    """The store ``SUBAGENTS_STORE`` names, else ``[store] url`` of the user's config.toml
    (see :class:`subagents.config.StoreSettings`), else None: each project's own file."""
    named = store_from_environment()
    if named is not None:
        return named
    from subagents.config import user_store_url

    return user_store_url()


def is_postgres_url(text: str) -> bool:
    """Whether ``text`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    match = _SCHEME.match(text)
    return match is not None and match.group(1).lower().split("+", 1)[0] in _POSTGRES_SCHEMES


def open_async_store(
    url_or_path: str | Path | None = None,
    *,
    cwd: Path | None = None,
    read_only: bool = False,
) -> AsyncStore:
    """:func:`open_store`, as an :class:`~subagents.store.base.AsyncStore` whose calls run
    on a thread of its own (see :class:`~subagents.store.threaded.ThreadedAsyncStore`)."""
    from subagents.store.threaded import ThreadedAsyncStore

    return ThreadedAsyncStore(open_store(url_or_path, cwd=cwd, read_only=read_only))


def store_file(url_or_path: str | Path | None, *, cwd: Path | None = None) -> Path:
    """The SQLite file ``url_or_path`` names (the default store for ``cwd`` when None);
    a URL of another kind of store is refused with a :class:`~subagents.errors.StoreError`."""
    if url_or_path is None:
        from subagents.store.location import default_store_path

        return default_store_path(cwd)
    if isinstance(url_or_path, Path):
        return url_or_path
    match = _SCHEME.match(url_or_path)
    if match is None:
        return Path(url_or_path)
    scheme = match.group(1).lower()
    if scheme == "sqlite":
        return _sqlite_path(url_or_path, url_or_path[match.end() :])
    if scheme.split("+", 1)[0] in _POSTGRES_SCHEMES:
        raise StoreError(
            f"the store {_shown(url_or_path)} is a PostgreSQL database, not a file",
            hint="open it with open_store() (this needs a SQLite store's file)",
        )
    raise StoreError(
        f"unknown kind of store {scheme!r} in {_shown(url_or_path)}",
        hint=f"use a file path, or a URL of a scheme this subagents knows "
        f"({', '.join(KNOWN_SCHEMES)}): {_URL_FORMS}; a file name with a colon is "
        f"written ./{url_or_path}",
    )


def _sqlite_path(url: str, rest: str) -> Path:
    if rest.startswith("//"):
        authority, _, path = rest[2:].partition("/")
        if authority not in ("", "localhost"):
            raise StoreError(
                f"the store URL {_shown(url)} names the host {authority!r}; a SQLite store "
                "is a file on this machine",
                hint=f"write {_URL_FORMS} (three slashes before an absolute path)",
            )
        rest = "/" + path
    if "?" in rest or "#" in rest:
        raise StoreError(
            f"the store URL {_shown(url)} has a query or fragment, which a store does not take",
            hint="leave them out (percent-encode a '?' or '#' of the file name as %3F or %23); "
            "open_store(read_only=True) opens a store read-only",
        )
    path = unquote(rest)
    if path in ("", "/") or path == ":memory:":
        raise StoreError(
            f"the store URL {_shown(url)} names no file",
            hint=f"name the store file: {_URL_FORMS}",
        )
    return Path(path)


def _shown(url: str) -> str:
    """``url`` without its password, fit for an error message."""
    return _PASSWORD.sub(r"\1:***@", url)
