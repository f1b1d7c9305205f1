"""`subagents store migrate | copy SRC DST`: bring a store's schema up to date, and move a
project's history between stores (a SQLite file and a PostgreSQL database, either way)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from subagents.cli.common import store_path, user_errors
from subagents.cli.options import CwdOption, StoreOption

if TYPE_CHECKING:
    from subagents.store.base import Store

__all__ = ["store_app"]

store_app = typer.Typer(
    help="The store itself: its schema, and moving tasks between stores.", no_args_is_help=True
)


@store_app.command("migrate")
def migrate_command(cwd: CwdOption = None, store: StoreOption = None) -> None:
    """Create the store, or upgrade its schema to this subagents' (every command does so when
    it opens a store; this does only that, e.g. before workers start)."""
    from subagents.store.open import open_store

    with user_errors():
        target = store_path(cwd, store)
        with open_store(target.location) as opened:
            version = opened.get_meta("schema_version")
    typer.echo(f"{target}: schema {version}")


@store_app.command("copy")
def copy_command(
    source: Annotated[str, typer.Argument(help="The store to copy from: a path or a URL.")],
    destination: Annotated[str, typer.Argument(help="The store to copy into: a path or URL.")],
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite the tasks the destination has already.")
    ] = False,
) -> None:
    """Copy every task of SOURCE, whole, into DESTINATION (created when missing). Tasks the
    destination has already are left as they are unless --replace; a task that cannot be read
    is named and left behind (exit 1)."""
    from subagents.store.open import open_store

    with user_errors():
        source_target = store_path(None, source)
        if not source_target.exists():
            from subagents.errors import StoreError

            raise StoreError(
                f"no store at {source_target} to copy from",
                hint="name an existing store file, or a postgresql:// URL",
            )
        with (
            open_store(source_target.location) as origin,
            open_store(store_path(None, destination).location) as target,
        ):
            copied, kept, unreadable = _copy(origin, target, replace=replace)
    typer.echo(f"copied {copied} task(s); {kept} already there, left as they were")
    for task_id, reason in unreadable:
        typer.echo(f"not copied: task {task_id}: {reason}", err=True)
    if unreadable:
        raise typer.Exit(1)


def _copy(origin: Store, target: Store, *, replace: bool) -> tuple[int, int, list[tuple[str, str]]]:
    from subagents.errors import StoreError

    scan = origin.scan_tasks(limit=None)
    unreadable = [(task.task_id, task.reason) for task in scan.unreadable]
    copied = kept = 0
    for task in reversed(scan.tasks):  # oldest first, as they were made
        try:
            bundle = origin.load_bundle(task.id)
        except StoreError as error:
            unreadable.append((task.id, error.message))
            continue
        try:
            exists = target.get_task(task.id).id == task.id  # not a task it is a prefix of
        except StoreError:
            exists = False
        if exists and not replace:
            kept += 1
            continue
        target.restore_bundle(bundle, replace=replace)
        copied += 1
    return copied, kept, unreadable
