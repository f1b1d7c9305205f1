"""`subagents chat`: an interactive conversation, each prompt a durable turn of one task.

The first prompt is :meth:`Runtime.run`; every later one :meth:`Runtime.continue_task` on the
same task, so the main agent sees the whole conversation and ``subagents trace`` /
``resume`` work on it as on any run. :class:`~subagents.cli.chat_session.ChatSession` is
that loop without a screen (the slash commands, ``@agent`` prompts, switching task or
model); the Textual app (:mod:`subagents.cli.ui.chat_app`) and the line mode (``--no-tui``)
here both drive it.

Textual is imported only when the app starts, so that ``subagents --help`` stays fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from subagents.cli.chat_session import ChatSession, decision_of, how_to_go_on
from subagents.cli.common import stderr_console
from subagents.cli.options import (
    MaxBudgetTokensOption,
    MaxBudgetUsdOption,
    ModelOption,
    PermissionModeOption,
    WorkspaceOption,
    permission_mode_named,
)
from subagents.cli.render import EXIT_ERROR, print_error, print_problem

if TYPE_CHECKING:
    from rich.console import Console

    from subagents.runtime.runtime import Runtime
    from subagents.tools.permissions import ApprovalDecision, ApprovalRequest

__all__ = ["chat_command", "open_chat", "run_line_mode"]


def chat_command(
    model: ModelOption = None,
    cwd: WorkspaceOption = None,
    continue_: Annotated[
        bool,
        typer.Option("--continue", "-c", help="Go on with this workspace's latest conversation."),
    ] = False,
    resume: Annotated[
        str | None, typer.Option("--resume", "-r", help="Go on with the conversation TASK.")
    ] = None,
    no_tui: Annotated[
        bool, typer.Option("--no-tui", help="Plain line output: read a line, run it, print.")
    ] = False,
    permission_mode: PermissionModeOption = "default",
    max_budget_tokens: MaxBudgetTokensOption = None,
    max_budget_usd: MaxBudgetUsdOption = None,
) -> None:
    """Talk with the main agent: each prompt is a durable turn of one task.

    Subagents show as blocks, tool calls as compact lines, approvals are asked on screen.
    Type /help for the commands; '@agent-name PROMPT' hands a prompt to that agent.
    """
    from subagents.errors import SubagentsError

    if continue_ and resume is not None:
        print_problem("--continue and --resume do not go together", "drop one of them")
        raise typer.Exit(EXIT_ERROR)
    try:
        open_chat(
            model=model,
            cwd=cwd,
            continue_=continue_,
            resume=resume,
            tui=not no_tui,
            permission_mode=permission_mode,
            max_budget_tokens=max_budget_tokens,
            max_budget_usd=max_budget_usd,
        )
    except SubagentsError as error:
        print_error(error)
        raise typer.Exit(EXIT_ERROR) from None


def open_chat(
    *,
    model: str | None = None,
    cwd: Path | None = None,
    continue_: bool = False,
    resume: str | None = None,
    tui: bool = True,
    permission_mode: str = "default",
    max_budget_tokens: int | None = None,
    max_budget_usd: float | None = None,
) -> None:
    """Open the project's store and run the chat (the app, or the line mode)."""
    import asyncio

    from subagents.cli.mcp import project_server_policy
    from subagents.errors import ConfigError
    from subagents.runtime.events import EventBus
    from subagents.runtime.runtime import Runtime
    from subagents.store.open import open_store

    mode = permission_mode_named(permission_mode)
    database = open_store(cwd=cwd)
    # the project's MCP servers: asked about once, on the line before the app takes the
    # screen (line mode: when stdin is a terminal); otherwise left out with what to do
    mcp_policy = project_server_policy(interactive=sys.stdin.isatty())

    def make_runtime(chosen: str | None) -> Runtime:
        return Runtime(
            cwd=cwd,
            model=chosen,
            permission_mode=mode,
            headless="pause",  # nobody to ask (line mode without a terminal): pause the turn
            events=EventBus(),
            stream=True,
            store=database,
            project_mcp=mcp_policy,
            max_budget_tokens=max_budget_tokens,
            max_budget_usd=max_budget_usd,
        )

    try:
        session = ChatSession(make_runtime, model=model)
        session.runtime.toolbox.mcp_config()  # asks about project MCP servers before the app starts
        if continue_:
            session.task_id = session.runtime.latest_conversation()
            if session.task_id is None:
                raise ConfigError(
                    "There is no conversation to continue in this workspace.",
                    hint="start one with 'subagents chat'",
                )
        elif resume is not None:
            session.task_id = session.store.get_task(resume).id
        if tui:
            from subagents.cli.ui.chat_app import ChatApp

            ChatApp(session).run()
        else:
            asyncio.run(run_line_mode(session, input_line=_read_line))
    finally:
        database.close()


def _read_line(prompt: str) -> str | None:
    try:
        return input(prompt)
    except EOFError:
        return None


async def run_line_mode(
    session: ChatSession,
    *,
    input_line: Callable[[str], str | None],
    console: Console | None = None,
    ask: bool | None = None,
) -> None:
    """``--no-tui``: read a line, run it (progress lines on stderr), print the answer; until
    end of input or ``/quit``. With ``ask`` (default: stdin is a terminal) an approval is
    asked on the line; without, the turn pauses and ``/resume`` answers it."""
    import asyncio

    from rich.console import Console

    from subagents.cli.answer import write_answer
    from subagents.cli.common import AnswerWatch
    from subagents.cli.ui.progress import progress_printer
    from subagents.errors import SubagentsError
    from subagents.redaction import Redactor

    out = console if console is not None else Console(highlight=False)
    ask = sys.stdin.isatty() if ask is None else ask
    redactor = Redactor(session.runtime.credentials())
    for role, text in session.history():
        write_answer(("› " if role == "user" else "◆ ") + redactor.text(text), out.file)
    while True:
        line = await asyncio.to_thread(input_line, "› ")
        if line is None:
            break
        if not line.strip():
            continue
        try:
            if line.strip().startswith("/"):
                outcome = await session.command(line)
                if isinstance(outcome.output, str):  # plain text, a stored prompt in it
                    write_answer(outcome.output, out.file)
                elif outcome.output is not None:  # a renderable quotes its own text
                    out.print(outcome.output)
                if outcome.action == "quit":
                    break
                if outcome.action != "resume":
                    continue
                decision = None
                if outcome.question is not None:
                    answer = await asyncio.to_thread(input_line, "Allow? [y/N/reason to deny] ")
                    decision = decision_of(_line_answer(answer or ""))
                runner = session.resume(decision)
            else:
                runner = session.send(session.prompt_for(line))
            runtime = session.runtime
            if ask:
                runtime.permissions.approver = _line_approver(out, redactor, input_line)
            printer = progress_printer(stderr_console(), redactor)
            watch = AnswerWatch()
            unsubscribe = runtime.events.subscribe(printer)
            unwatch = runtime.events.subscribe(watch)
            try:
                result = await runner
            finally:
                unwatch()
                unsubscribe()
                printer.close()
                runtime.permissions.approver = None
        except SubagentsError as error:
            hint = f"\nhint: {error.hint}" if error.hint else ""
            write_answer(f"error: {redactor.text(error.message + hint)}", out.file)
            continue
        # once: not again when it streamed to the terminal the answer is written to
        if not (watch.on_screen(result.output) and out.file is sys.stdout):
            write_answer(redactor.text(result.output), out.file)
        if result.question is not None:
            question = redactor.text(result.question.text)
            go_on = how_to_go_on(result, "/resume")
            write_answer(f"waiting for you: {question} ({go_on})", out.file)
        elif not result.success:
            write_answer(f"turn {result.status}: {redactor.text(result.error or '')}", out.file)
    await session.aclose()


def _line_answer(answer: str) -> ApprovalDecision:
    from subagents.tools.permissions import ApprovalDecision

    if answer.strip().lower() in {"y", "yes"}:
        return ApprovalDecision(approved=True)
    reason = answer.strip() if answer.strip().lower() not in {"", "n", "no"} else None
    return ApprovalDecision(approved=False, reason=reason or "the user declined")


def _line_approver(out: Console, redactor: Any, input_line: Callable[[str], str | None]) -> Any:
    import asyncio
    import json

    from subagents.cli.answer import write_answer

    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        shown = json.dumps(redactor.value(request.arguments), indent=2, ensure_ascii=False)
        write_answer(f"{request.agent_type} wants to run {request.tool_name}:\n{shown}", out.file)
        answer = await asyncio.to_thread(input_line, "Allow? [y/N/reason to deny] ")
        return _line_answer(answer or "")

    return approve
