"""`subagents worker`: carry out the runs queued on a shared PostgreSQL store."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated, Any

import typer

from subagents.cli.render import EXIT_ERROR, print_error

__all__ = ["worker_command"]


def worker_command(
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            metavar="URL",
            help="The shared PostgreSQL store (default: SUBAGENTS_STORE, else the store url "
            "of your ~/.subagents/config.toml).",
        ),
    ] = None,
    root: Annotated[
        Path | None,
        typer.Option(
            "--root",
            exists=True,
            file_okay=False,
            help="Run only tasks whose workspace lies in this directory (default: the current "
            "one).",
        ),
    ] = None,
    queue: Annotated[
        str, typer.Option("--queue", help="The queue to take runs from.")
    ] = "subagents",
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Runs carried out at once.")
    ] = 4,
    takeover_after: Annotated[
        float,
        typer.Option(
            "--takeover-after",
            min=0.5,
            help="Seconds a worker may be silent before another takes over its runs.",
        ),
    ] = 30.0,
    grace: Annotated[
        int,
        typer.Option(
            "--grace",
            min=0,
            help="On stop (Ctrl-C, SIGTERM): seconds to let the runs in flight finish; the "
            "rest continue on another worker.",
        ),
    ] = 30,
) -> None:
    """Carry out the runs queued on a shared PostgreSQL store ('subagents run --remote'),
    until stopped.

    Each run continues from its last recorded step wherever it is taken up: when a worker
    dies, another takes over its runs after --takeover-after seconds. A run works in the
    directory it was queued from, which must exist at the same path here, within --root;
    models, keys and MCP servers are this machine's. Stop with Ctrl-C or SIGTERM.
    """
    from rich.console import Console

    from subagents.errors import SubagentsError
    from subagents.store.open import configured_store
    from subagents.workers.engine import require_postgres

    err = Console(stderr=True)
    try:
        url = require_postgres(store if store is not None else configured_store())
        from subagents.workers.worker import Worker

        worker = Worker(
            url,
            root=root or Path.cwd(),
            queue=queue,
            concurrency=concurrency,
            takeover_after=takeover_after,
        )
        _show_worker_logs()
        stop = _stop_on_signals()
        worker.start()
    except SubagentsError as error:
        print_error(error)
        raise typer.Exit(EXIT_ERROR) from None
    try:
        # A wait with a timeout: a signal the kernel hands to another of the process's threads
        # runs its Python handler only when the main thread runs again, and a wait without one
        # never returns to run it (a worker that ignored SIGTERM for a minute, under load).
        while not stop.wait(timeout=0.5):
            pass
    finally:
        err.print(f"stopping: runs in flight get {grace} s to finish")
        worker.stop(grace_seconds=grace)


def _stop_on_signals() -> threading.Event:
    """An event set by the first SIGINT or SIGTERM; a second one exits at once."""
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        if stop.is_set():
            sys.exit(130)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    return stop


def _show_worker_logs() -> None:
    """The worker's own lines (runs taken up and ended, takeovers) on stderr."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    logger = logging.getLogger("subagents.workers")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
