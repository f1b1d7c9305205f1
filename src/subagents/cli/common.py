"""Options and error handling shared by the commands that work on the task store."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "EXIT_ERROR",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_PAUSED",
    "AnswerWatch",
    "CwdOption",
    "JsonOption",
    "ModelOption",
    "StoreOption",
    "StoreTarget",
    "TaskArgument",
    "WorkspaceOption",
    "exit_code",
    "make_console",
    "same_terminal",
    "stderr_console",
    "store_path",
    "user_errors",
]

# Exit codes of `run`, `resume` and `workflow run` (documented in the README and `run --help`).
EXIT_OK = 0  # completed
EXIT_FAILED = 1  # failed, out of turns (max_turns), cancelled
EXIT_ERROR = 2  # a usage or configuration error: nothing ran
EXIT_PAUSED = 3  # paused: waiting for a person (`subagents resume TASK` goes on)

CwdOption = Annotated[
    Path | None,
    typer.Option(
        "--cwd",
        help="Project directory to work from (default: the current directory).",
        exists=True,
        file_okay=False,
    ),
]
# the two commands that run agents: `run` and `chat`
ModelOption = Annotated[
    str | None,
    typer.Option("--model", "-m", help="Model as PROVIDER:MODEL or an alias (sonnet, haiku)."),
]
WorkspaceOption = Annotated[
    Path | None,
    typer.Option(
        "--cwd", help="Workspace directory (default: current).", exists=True, file_okay=False
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
        from subagents.redaction import Redactor

        redactor = Redactor()  # an error may quote a stored value or a config line
        typer.echo(f"error: {redactor.text(error.message)}", err=True)
        if error.hint:
            typer.echo(f"hint: {redactor.text(error.hint)}", err=True)
        raise typer.Exit(EXIT_ERROR) from None


@dataclass(frozen=True, slots=True)
class StoreTarget:
    """The store a command works on: a SQLite file, or a database server's URL. Shown, it
    never prints the URL's password."""

    location: Path | str

    def exists(self) -> bool:
        """Whether there is a store there to read (a server's always counts)."""
        return not isinstance(self.location, Path) or self.location.exists()

    def __str__(self) -> str:
        if isinstance(self.location, Path):
            return str(self.location)
        from subagents.store.postgres.store import shown_url

        return shown_url(self.location)


def store_path(cwd: Path | None, store: str | None) -> StoreTarget:
    """The store ``--store`` names (a path or URL), else ``SUBAGENTS_STORE``'s, else the user
    config's ``[store] url``, else the project's default file."""
    from subagents.store.open import configured_store, is_postgres_url, store_file

    named = store if store is not None else configured_store()
    if named is not None and is_postgres_url(named):
        return StoreTarget(named)
    return StoreTarget(store_file(named, cwd=cwd))


def make_console() -> Console:
    """A Rich console as wide as the terminal; output that is not a terminal (logs, CI) gets
    a wide page, unless ``COLUMNS`` sets the width."""
    import os

    from rich.console import Console

    out = Console()
    if not out.is_terminal and not os.environ.get("COLUMNS", "").strip().isdigit():
        out = Console(width=max(out.width, 160))
    return out


def stderr_console() -> Console:
    """The console of progress and messages on stderr, which quote what models wrote: it reads
    no ``:emoji:`` codes (Rich's markup is escaped where such text is quoted)."""
    from rich.console import Console

    return Console(stderr=True, emoji=False)


def exit_code(status: str) -> int:
    """The exit code of a run that ended with ``status`` (see the ``EXIT_*`` constants)."""
    if status == "completed":
        return EXIT_OK
    if status == "awaiting_human":
        return EXIT_PAUSED
    return EXIT_FAILED


def same_terminal() -> bool:
    """Whether stdout and stderr are one and the same terminal (what is streamed on stderr is
    then already on the screen stdout writes to)."""
    import os

    try:
        if not (os.isatty(1) and os.isatty(2)):
            return False
        return os.path.samestat(os.fstat(1), os.fstat(2))
    except OSError:
        return False


class AnswerWatch:
    """An event handler that keeps the text the main agent streamed since its last step, to
    tell whether the final answer is already on the screen (see :meth:`shown`).

    It follows the progress printer's rule: only sessions of the agent type ``main`` are
    streamed there (a subagent's text shows up in its summary)."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._text: list[str] = []

    def __call__(self, event: object) -> None:
        from subagents.runtime import events as ev

        if isinstance(event, ev.SessionStarted):
            self._names[event.agent_id] = event.agent_type
            return
        agent_id = getattr(event, "agent_id", None)
        if not isinstance(agent_id, str) or self._names.get(agent_id, "main") != "main":
            return
        if isinstance(event, ev.TextDelta):
            self._text.append(event.text)
        elif not isinstance(event, ev.SessionFinished | ev.ModelResponded):
            self._text.clear()  # a tool call or a new turn: the answer comes after it

    def shown(self, output: str) -> bool:
        """Whether ``output`` is what was streamed last (so it is on the screen already)."""
        return bool(output.strip()) and "".join(self._text).strip() == output.strip()

    def on_screen(self, output: str) -> bool:
        """Whether ``output`` was streamed on stderr, and stderr is the terminal stdout shows:
        then printing it on stdout would show it twice."""
        return self.shown(output) and same_terminal()
