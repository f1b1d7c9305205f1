"""What a store's path or URL names, read without opening anything: a SQLite file
(a path, ``sqlite:///ABSOLUTE/PATH``, ``sqlite:RELATIVE/PATH``, percent-encoded) or a
PostgreSQL database (``postgresql://``). Config validation reads URLs here, below the stores.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

from subagents.errors import StoreError

__all__ = ["KNOWN_SCHEMES", "is_postgres_url", "sqlite_file"]

KNOWN_SCHEMES = ("sqlite", "postgresql")
_POSTGRES_SCHEMES = ("postgresql", "postgres")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")  # two letters or more: 'C:' is a drive
_PASSWORD = re.compile(r"(//[^/@:]*):[^/@]*@")
_URL_FORMS = "sqlite:///ABSOLUTE/PATH or sqlite:RELATIVE/PATH"


def is_postgres_url(text: str) -> bool:
    """Whether ``text`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    match = _SCHEME.match(text)
    return match is not None and match.group(1).lower().split("+", 1)[0] in _POSTGRES_SCHEMES


def sqlite_file(url_or_path: str | Path) -> Path:
    """The SQLite file ``url_or_path`` names; a URL of another kind of store is refused with
    a :class:`~subagents.errors.StoreError`."""
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
