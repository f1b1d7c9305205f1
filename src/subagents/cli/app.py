"""The `subagents` command: a thin Typer app that wires the command groups together.

Each command module imports its heavy dependencies inside the command function so that
``subagents --help`` stays fast. :func:`main` goes further: when the command line names a
command, only that command's module is imported and only its Click command is built
(``subagents agents list`` never loads the run, chat or MCP modules), and of a group only the
subcommand named (``agents list`` builds no ``agents show``); the help and an unknown name get
the whole app or group. ``app`` (the whole app, for tests and embedding) is built on first use.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from importlib import import_module
from typing import Any

import typer

__all__ = ["COMMANDS", "GC_PAUSE_SECONDS", "app", "build_app", "main", "pause_gc"]

# Python's cyclic garbage collector runs about 60 times while `subagents run` imports its
# modules and the provider's SDK, each time scanning objects that all survive. main() pauses it
# for the first seconds of the process (a long command gets it back then): about 25 ms less CPU
# per run. At exit it freezes what is still alive before turning it back on (see pause_gc).
GC_PAUSE_SECONDS = 2.0

app: typer.Typer  # the whole app, built by __getattr__ on first use

# name -> (module, attribute): a typer.Typer is a group, anything else a command. The help
# lists commands, then groups, each in this order.
COMMANDS: dict[str, tuple[str, str]] = {
    "agents": ("subagents.cli.agents", "agents_app"),
    "run": ("subagents.cli.run", "run_command"),
    "chat": ("subagents.cli.chat", "chat_command"),
    "resume": ("subagents.cli.resume", "resume_command"),
    "send": ("subagents.cli.send", "send_command"),
    "inbox": ("subagents.cli.inbox", "inbox_command"),
    "trace": ("subagents.cli.trace", "trace_command"),
    "tasks": ("subagents.cli.tasks", "tasks_app"),
    "mcp": ("subagents.cli.mcp", "mcp_app"),
    "skills": ("subagents.cli.skills", "skills_app"),
    "suggest": ("subagents.cli.suggest", "suggest_command"),
    "cleanup": ("subagents.cli.tasks", "cleanup_command"),
    "export": ("subagents.cli.tasks", "export_command"),
    "import": ("subagents.cli.tasks", "import_command"),
    "permissions": ("subagents.cli.permissions", "permissions_app"),
    "models": ("subagents.cli.models", "models_app"),
    "workflow": ("subagents.cli.workflow", "workflow_app"),
    "store": ("subagents.cli.store", "store_app"),
    "worker": ("subagents.cli.worker", "worker_command"),
}


def _print_version(value: bool) -> None:
    if value:
        from subagents import __version__

        typer.echo(f"subagents {__version__}")
        raise typer.Exit()


def _options(
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        callback=_print_version,
        is_eager=True,
    ),
) -> None:
    """Claude-Code-style subagents for any LLM."""


def _load(name: str) -> typer.Typer | Callable[..., Any]:
    module, attribute = COMMANDS[name]
    found: typer.Typer | Callable[..., Any] = getattr(import_module(module), attribute)
    return found


def build_app(only: str | None = None, subcommand: str | None = None) -> typer.Typer:
    """The `subagents` app with every command, or with only the command ``only``; when
    ``only`` is a group with a command named ``subcommand``, the group has only that one."""
    built = typer.Typer(
        name="subagents",
        help="Claude-Code-style subagents for any LLM.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        # Plain Click help: Rich-rendered help imports rich.markdown & co. and costs ~200 ms.
        rich_markup_mode=None,
    )
    built.callback()(_options)
    for name in COMMANDS if only is None else (only,):
        target = _load(name)
        if isinstance(target, typer.Typer):
            built.add_typer(_narrowed(target, subcommand) if only else target, name=name)
        else:
            built.command(name)(target)
    return built


def _narrowed(group: typer.Typer, subcommand: str | None) -> typer.Typer:
    """``group`` with only its command ``subcommand`` (Typer builds the Click command of each
    one it has, its parameters read from the signature); ``group`` itself when it has no
    command of that name, so that help and errors list them all."""
    chosen = [info for info in group.registered_commands if info.name == subcommand]
    if len(chosen) != 1 or any(info.name == subcommand for info in group.registered_groups):
        return group
    narrowed = copy.copy(group)  # shares the group's settings and callback
    narrowed.registered_commands = chosen
    return narrowed


def __getattr__(name: str) -> typer.Typer:
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    whole = build_app()
    globals()["app"] = whole
    return whole


def pause_gc(seconds: float) -> None:
    """Pause Python's cyclic garbage collector for ``seconds`` (a daemon timer turns it back
    on), and at exit freeze the objects still alive; nothing when it is off already, as an
    embedding program may have chosen."""
    import atexit
    import gc
    import threading

    if not gc.isenabled():
        return
    gc.disable()
    resume = threading.Timer(seconds, gc.enable)
    resume.daemon = True  # never keeps the process alive
    resume.start()
    atexit.register(_freeze_for_exit)


def _freeze_for_exit() -> None:
    """At exit: move every object still alive into the collector's permanent generation, then
    turn the collector on (exit handlers run last registered first: those the command
    registered have run by then).

    The interpreter's teardown runs full collections over every tracked object: about 100,000
    after `subagents run`, ~50 ms a collection and ~150 ms in all on a slow machine. Frozen
    objects are not scanned; almost all are modules, classes and functions, freed with the
    process. Objects made after the freeze (by the later exit handlers) are still collected. A
    reference cycle that was garbage already is not finalised: Python never promised that at
    exit, and the commands close their stores, clients and servers before they return."""
    import gc

    gc.freeze()
    gc.enable()


def main() -> None:
    import sys

    pause_gc(GC_PAUSE_SECONDS)

    # bare `subagents` in a terminal opens the chat; anywhere else it prints the help, as before
    if len(sys.argv) == 1 and sys.stdin.isatty() and sys.stdout.isatty():
        sys.argv.append("chat")
    named = sys.argv[1] if len(sys.argv) > 1 else None
    subcommand = sys.argv[2] if len(sys.argv) > 2 else None
    build_app(named if named in COMMANDS else None, subcommand)()
