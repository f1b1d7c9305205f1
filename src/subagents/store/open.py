"""Opening a store by path or URL: the one place that chooses the store implementation.

``open_store()`` takes a file path (``.subagents/state.db``), a ``sqlite:`` URL
(``sqlite:///ABSOLUTE/PATH`` or ``sqlite:RELATIVE/PATH``, percent-encoded), or nothing (the
project's default, :func:`subagents.store.location.default_store_path`). Server databases
(``postgresql://``) are named here first, so that adding one is an adapter in
``store/postgres/`` and one branch below, not a change of every caller.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from subagents.store.url import KNOWN_SCHEMES, is_postgres_url, sqlite_file

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
    return sqlite_file(url_or_path)
