"""What the commands share besides their options (:mod:`subagents.cli.options`) and their
endings (:mod:`subagents.cli.render`): the store a command works on, consoles, the user-error
guard, and the watch that tells whether an answer is on the screen already."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "AnswerWatch",
    "StoreTarget",
    "make_console",
    "same_terminal",
    "stderr_console",
    "store_path",
    "user_errors",
]


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Print a SubagentsError as every command does (:func:`subagents.cli.render.print_error`:
    no traceback, no secret) and exit 2."""
    from subagents.cli.render import EXIT_ERROR, print_error
    from subagents.errors import SubagentsError

    try:
        yield
    except SubagentsError as error:
        print_error(error)
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
