"""A fresh PostgreSQL store for a test: its own schema in the database ``SUBAGENTS_TEST_PG``
names (default: the project machines' server, ``postgresql://postgres@127.0.0.1:5432/test``),
dropped afterwards. Where no server answers, the tests that need one skip and say so."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from subagents.store.postgres import PostgresStore

__all__ = ["POSTGRES_URL", "postgres_available", "postgres_store", "postgres_url"]

POSTGRES_URL = os.environ.get("SUBAGENTS_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def postgres_available() -> str | None:
    """None when the server answers; else why not."""
    try:
        import psycopg

        with psycopg.connect(POSTGRES_URL, connect_timeout=3):
            return None
    except Exception as error:  # not installed, refused, no such database...
        return f"no PostgreSQL at {POSTGRES_URL} ({type(error).__name__}: {error})".strip()


@contextmanager
def postgres_url() -> Iterator[str]:
    """The URL of a schema of its own, dropped at the end."""
    import psycopg

    reason = postgres_available()
    if reason is not None:
        pytest.skip(reason)
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in POSTGRES_URL else "?"
    try:
        yield f"{POSTGRES_URL}{separator}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@contextmanager
def postgres_store() -> Iterator[PostgresStore]:
    with postgres_url() as url, PostgresStore(url) as store:
        yield store
