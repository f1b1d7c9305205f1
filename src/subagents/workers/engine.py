"""What the workers and the processes that queue runs for them agree on: DBOS's database and
schema, the queue, the workflow's name and the pinned application version.

DBOS keeps its own tables (queues, workflow status, step outputs) beside the store, in the same
PostgreSQL database: in the schema ``dbos``, or in ``<schema>_dbos`` when the store's URL
chooses a schema of its own with ``options=-csearch_path=<schema>`` (so two stores in one
database never share a queue). Inputs and outputs are stored as JSON, never pickled: nothing a
row holds is executed when a worker reads it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from subagents.errors import WorkerError
from subagents.runtime.pause import HumanDecision
from subagents.store.open import is_postgres_url

if TYPE_CHECKING:
    from dbos import DBOSClient, DBOSConfig

__all__ = [
    "APP_VERSION",
    "DEFAULT_QUEUE",
    "WORKFLOW_NAME",
    "WorkerError",
    "dbos_client",
    "dbos_config",
    "dbos_schema",
    "decision_from_dict",
    "decision_to_dict",
    "drop_decision",
    "put_decision",
    "require_postgres",
    "sqlalchemy_url",
    "take_decision",
]

WORKFLOW_NAME = "subagents.task"
DEFAULT_QUEUE = "subagents"

APP_VERSION = "subagents-workers-1"
"""The version DBOS recovers and dequeues by. Pinned rather than DBOS's default (a hash of the
code), so that a worker of a later release picks up the runs an earlier one left: the
workflow is a thin shell around :meth:`Runtime.resume`, and a run's state lives in the store.
Raise it only when the workflow's arguments or steps change shape; then drain the queue with
the old workers first (see the README, "Workers")."""

_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,57}$")


def require_postgres(url: str | None) -> str:
    """``url`` when it names a PostgreSQL store; else an error saying how to name one."""
    if url is None or not is_postgres_url(url):
        named = "none is named" if url is None else f"{url} is not one"
        raise WorkerError(
            f"Workers share a PostgreSQL store, and {named}.",
            hint="pass --store postgresql://USER@HOST:PORT/DB, or set SUBAGENTS_STORE or [store] "
            "url in ~/.subagents/config.toml to that URL (copy a project's history there with "
            "'subagents store copy')",
        )
    return url


def sqlalchemy_url(store_url: str) -> str:
    """The store's URL as SQLAlchemy (which DBOS uses) names it: with the psycopg driver."""
    scheme, _, rest = store_url.partition("://")
    if scheme in ("postgres", "postgresql"):
        scheme = "postgresql+psycopg"
    return f"{scheme}://{rest}"


def dbos_schema(store_url: str) -> str:
    """The schema of DBOS's tables for the store ``store_url`` (see the module docstring)."""
    query = parse_qs(urlsplit(store_url).query)
    for option in query.get("options", []):
        match = re.search(r"-c\s*search_path\s*=\s*([^,\s]+)", option)
        if match:
            schema = match.group(1).strip('"')
            if not _SCHEMA_NAME.match(schema):
                raise WorkerError(
                    f"The store's search_path {schema!r} is not a plain schema name.",
                    hint="name the store's schema with letters, digits and underscores only",
                )
            return f"{schema}_dbos"
    return "dbos"


def dbos_config(store_url: str, *, executor_id: str) -> DBOSConfig:
    """DBOS's configuration for a worker on the store ``store_url``."""
    config: dict[str, Any] = {
        "name": "subagents",
        "system_database_url": sqlalchemy_url(store_url),
        "dbos_system_schema": dbos_schema(store_url),
        "application_version": APP_VERSION,
        "executor_id": executor_id,
        "serializer": _serializer(),
        "log_level": "WARNING",
        "sys_db_pool_size": 10,
    }
    return config  # type: ignore[return-value]


def dbos_client(store_url: str) -> DBOSClient:
    """The process's DBOS client (enqueue, cancel, status) on the store's database, made
    once per store; DBOS's tables are created first when no worker has created them yet."""
    client = _clients.get(store_url)
    if client is None:
        client = _clients[store_url] = _new_client(store_url)
        if len(_clients) == 1:
            atexit.register(_close_clients)
    return client


_clients: dict[str, DBOSClient] = {}


def _new_client(store_url: str) -> DBOSClient:
    from dbos import DBOS, DBOSClient

    url, schema = sqlalchemy_url(store_url), dbos_schema(store_url)
    try:
        DBOS.migrate(url, schema=schema)
    except Exception as error:
        raise WorkerError(
            f"Could not prepare the workers' tables in schema {schema}: {error}",
            hint="check that the store's database accepts connections and that its user may "
            "create a schema (or start a 'subagents worker' once, which creates it)",
        ) from error
    return DBOSClient(system_database_url=url, dbos_system_schema=schema, serializer=_serializer())


def _close_clients() -> None:
    while _clients:
        _, client = _clients.popitem()
        with contextlib.suppress(Exception):
            client.destroy()


def _serializer() -> Any:
    from dbos import DBOSPortableJSONSerializer

    return DBOSPortableJSONSerializer()


def decision_to_dict(decision: HumanDecision) -> dict[str, Any]:
    return {
        "action": decision.action,
        "reason": decision.reason,
        "arguments": decision.arguments,
        "values": dict(decision.values),
    }


def decision_from_dict(data: Mapping[str, Any]) -> HumanDecision:
    action = data.get("action")
    if action not in ("approve", "reject", "modify"):
        raise WorkerError(f"A queued decision has the unknown action {action!r}.")
    arguments = data.get("arguments")
    return HumanDecision(
        action=action,
        reason=data.get("reason"),
        arguments=dict(arguments) if isinstance(arguments, Mapping) else None,
        values={str(k): str(v) for k, v in (data.get("values") or {}).items()},
    )


# -- a person's decision, on its way to the worker -----------------------------------------
# It is not a workflow input: DBOS keeps those for good, and a decision may hold what the
# store must never keep (the arguments of --modify, the values of --set). It waits in a table
# of its own until the run it resumes has recorded it (redacted), then it is deleted.


def put_decision(store_url: str, workflow_id: str, decision: HumanDecision) -> None:
    """Keep ``decision`` for the workflow ``workflow_id`` until the worker is done with it."""
    with _connection(store_url) as connection:
        connection.execute(
            f"INSERT INTO {_decisions(store_url)} (workflow_id, decision) VALUES (%s, %s)",
            (workflow_id, json.dumps(decision_to_dict(decision))),
        )


def take_decision(store_url: str, workflow_id: str) -> HumanDecision | None:
    """The decision queued for ``workflow_id`` (None once it has been delivered)."""
    with _connection(store_url) as connection:
        row = connection.execute(
            f"SELECT decision FROM {_decisions(store_url)} WHERE workflow_id = %s",
            (workflow_id,),
        ).fetchone()
    return None if row is None else decision_from_dict(json.loads(row[0]))


def drop_decision(store_url: str, workflow_id: str) -> None:
    with _connection(store_url) as connection:
        connection.execute(
            f"DELETE FROM {_decisions(store_url)} WHERE workflow_id = %s", (workflow_id,)
        )


def _decisions(store_url: str) -> str:
    return f"{dbos_schema(store_url)}.subagents_decisions"


@contextlib.contextmanager
def _connection(store_url: str) -> Iterator[Any]:
    import psycopg

    with psycopg.connect(store_url, autocommit=True, connect_timeout=10) as connection:
        connection.execute(
            f"CREATE TABLE IF NOT EXISTS {_decisions(store_url)} (workflow_id TEXT PRIMARY KEY, "
            "decision TEXT NOT NULL, queued_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        yield connection
