"""How commands end: one error format for every command, and one way the commands that run
agents (``run``, ``resume``, ``workflow run``, a remote run waited for) print what a run left
and choose the exit code.

An error is ``error: MESSAGE`` and, when there is one, ``hint: WHAT TO DO`` on stderr, with
every known secret redacted, and exit code 2 (nothing ran). A run's answer goes to stdout
exactly as the model wrote it; what happened to it (paused, failed) and its task id go to
stderr; ``--json`` prints one object instead.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from subagents.errors import SubagentsError
    from subagents.redaction import Redactor
    from subagents.runtime.budget import Budget
    from subagents.runtime.result import RunResult
    from subagents.store.records import TaskRecord

__all__ = [
    "EXIT_BUDGET",
    "EXIT_ERROR",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_PAUSED",
    "Ending",
    "exit_code",
    "how_to_resume",
    "print_answer",
    "print_ending",
    "print_error",
    "print_problem",
]

# Exit codes of `run`, `resume` and `workflow run` (documented in the README and `run --help`).
EXIT_OK = 0  # completed
EXIT_FAILED = 1  # failed, out of turns (max_turns), cancelled
EXIT_ERROR = 2  # a usage or configuration error: nothing ran
EXIT_PAUSED = 3  # paused: waiting for a person (`subagents resume TASK` goes on)
EXIT_BUDGET = 4  # paused at its token budget (`resume TASK --max-budget-tokens N` goes on)


def exit_code(status: str, *, budget_reached: bool = False) -> int:
    """The exit code of a run that ended with ``status`` (see the ``EXIT_*`` constants)."""
    if budget_reached:
        return EXIT_BUDGET
    if status == "completed":
        return EXIT_OK
    if status == "awaiting_human":
        return EXIT_PAUSED
    return EXIT_FAILED


def print_error(error: SubagentsError, redactor: Redactor | None = None) -> None:
    """``error: MESSAGE`` and ``hint: WHAT TO DO`` on stderr, secrets redacted (an error may
    quote a stored value or a config line)."""
    print_problem(error.message, error.hint, redactor)


def print_problem(message: str, hint: str | None, redactor: Redactor | None = None) -> None:
    """:func:`print_error` for a problem found before anything ran (options that do not go
    together, say)."""
    if redactor is None:
        from subagents.redaction import Redactor

        redactor = Redactor()
    typer.echo(f"error: {redactor.text(message)}", err=True)
    if hint:
        typer.echo(f"hint: {redactor.text(hint)}", err=True)


def print_answer(answer: str) -> None:
    """The answer on stdout (see :mod:`subagents.cli.answer`); at a terminal after a blank
    line, which sets it apart from the progress above it."""
    from subagents.cli.answer import write_answer, writes_to_terminal

    if writes_to_terminal(sys.stdout):
        sys.stdout.write("\n")
    write_answer(answer)


@dataclass(frozen=True, slots=True)
class Ending:
    """What a run left, as a command prints it: from a :class:`RunResult` here, or from the
    stored task of a run a worker carried out."""

    task_id: str | None
    status: str
    output: str
    error: str | None
    question: str | None
    """What it waits for a person to answer, when the command knows."""
    budget: Budget | None = None
    """Set when the run stopped at its budget: what it spent of what."""
    usage: str | None = None
    """What the whole task used, as ``tasks show`` says it (``58,280 tokens, $0.1094``)."""

    @classmethod
    def of(cls, result: RunResult) -> Ending:
        asked = result.question
        if asked is None:
            return cls(result.task_id, result.status, result.output, result.error, None)
        from subagents.runtime.budget import Budget

        budget = Budget.asked(asked.arguments) if asked.kind == "budget" else None
        return cls(result.task_id, result.status, result.output, result.error, asked.text, budget)

    def exit_code(self) -> int:
        return exit_code(self.status, budget_reached=self.budget is not None)

    @classmethod
    def of_task(cls, task: TaskRecord) -> Ending:
        return cls(task.id, task.status, task.result or "", task.error, None)


def how_to_resume(task_id: str | None, *more: str) -> str:
    """The command line that goes on with a run waiting for a person (``more``: its other
    options)."""
    at_a_terminal = " (or without a decision at a terminal: it asks)" if sys.stdin.isatty() else ""
    words = ["resume with: subagents resume", str(task_id), "--approve | --reject REASON", *more]
    return " ".join(words) + at_a_terminal


def _never(_output: str) -> bool:
    return False


def print_ending(
    ending: Ending,
    err: Console,
    redactor: Redactor,
    *,
    as_json: bool,
    payload: Mapping[str, Any],
    how_to_resume: str,
    on_screen: Callable[[str], bool] = _never,
) -> None:
    """Print what the run left and exit with its code (0 completed, 1 failed, 3 paused).

    ``payload`` is what ``--json`` prints; ``on_screen`` tells whether the answer is on the
    screen already (streamed to the terminal stdout shows); ``how_to_resume`` is the command
    line that goes on when the run waits for a person.
    """
    from subagents.cli.answer import markup_safe, quote_markup
    from subagents.runtime.budget import budget_hint

    if as_json:
        typer.echo(json.dumps(redactor.value(dict(payload)), indent=2, default=str))
    else:
        if ending.output.strip() and not on_screen(ending.output):
            print_answer(redactor.text(ending.output))
        if ending.budget is not None and ending.task_id is not None:
            reached = markup_safe(redactor.text(ending.question or ""), err)
            hint = budget_hint(ending.task_id, ending.budget)
            err.print(f"[yellow]Budget reached:[/] {reached}\ngo on with: {quote_markup(hint)}")
        elif ending.status == "awaiting_human":
            asked = ending.question
            waits = f": {markup_safe(redactor.text(asked), err)}" if asked else ""
            err.print(f"[yellow]Waiting for a person[/]{waits}\n{quote_markup(how_to_resume)}")
        elif ending.status != "completed":
            reason = markup_safe(redactor.text(ending.error or ""), err)
            err.print(f"[red]Run {ending.status}:[/] {reason}")
        if ending.task_id is not None:
            used = f" · {quote_markup(ending.usage)}" if ending.usage else ""
            err.print(f"[dim]task {ending.task_id}{used}[/]")
    code = ending.exit_code()
    if code:
        raise typer.Exit(code)
