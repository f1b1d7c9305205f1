"""Options and error handling shared by the commands that work on the task store."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "EXIT_ERROR",
    "CwdOption",
    "JsonOption",
    "StoreOption",
    "TaskArgument",
    "make_console",
    "store_path",
    "user_errors",
]

EXIT_ERROR = 2

CwdOption = Annotated[
    Path | None,
    typer.Option(
        "--cwd",
        help="Project directory to work from (default: the current directory).",
        exists=True,
        file_okay=False,
    ),
]
StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="The store: a file, or a URL (sqlite:///ABSOLUTE/PATH). Default: "
        ".subagents/state.db of the project, else under SUBAGENTS_HOME or ~.",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
TaskArgument = Annotated[
    str, typer.Argument(help="Task id, or a unique prefix of it (4 characters or more).")
]


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Print a SubagentsError as a clear message (no traceback, no secret) and exit 2."""
    from subagents.errors import SubagentsError

    try:
        yield
    except SubagentsError as error:
        from subagents.tracing.redact import Redactor

        redactor = Redactor()  # an error may quote a stored value or a config line
        typer.echo(f"error: {redactor.text(error.message)}", err=True)
        if error.hint:
            typer.echo(f"hint: {redactor.text(error.hint)}", err=True)
        raise typer.Exit(EXIT_ERROR) from None


def store_path(cwd: Path | None, store: str | None) -> Path:
    """The store file ``--store`` names (a path or URL), else the project's default."""
    from subagents.store.open import store_file

    return store_file(store, cwd=cwd)


def make_console() -> Console:
    """A Rich console; output that is not a terminal (logs, CI) gets a wide page."""
    from rich.console import Console

    out = Console()
    if not out.is_terminal:
        out = Console(width=max(out.width, 160))
    return out
