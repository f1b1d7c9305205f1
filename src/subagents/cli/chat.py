"""`subagents chat`: an interactive conversation, each prompt a durable turn of one task.

The first prompt is :meth:`Runtime.run`; every later one :meth:`Runtime.continue_task` on the
same task, so the main agent sees the whole conversation and ``subagents trace`` /
``resume`` work on it as on any run. :class:`ChatSession` is that loop without a screen (the
slash commands, ``@agent`` prompts, switching task or model); the Textual app
(:mod:`subagents.cli.chat_app`) and the line mode (``--no-tui``) both drive it.

Textual is imported only when the app starts, so that ``subagents --help`` stays fast.
"""

from __future__ import annotations

import re
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from subagents.cli.common import ModelOption, WorkspaceOption, stderr_console

if TYPE_CHECKING:
    from rich.console import Console

    from subagents.runtime.pause import HumanDecision, HumanQuestion
    from subagents.runtime.result import RunResult
    from subagents.runtime.runtime import Runtime
    from subagents.store.base import Store
    from subagents.tools.permissions import ApprovalDecision, ApprovalRequest

__all__ = [
    "COMMANDS",
    "ChatSession",
    "CommandResult",
    "chat_command",
    "open_chat",
    "run_line_mode",
]

COMMANDS: dict[str, str] = {
    "/help": "this list, and the keys",
    "/agents": "the agents here: source, model, what each overrides",
    "/tasks": "the latest tasks of this workspace",
    "/trace": "what the current task did, session by session",
    "/model": "show the model; /model NAME: NAME from the next prompt on",
    "/clear": "clear the screen, start a new conversation",
    "/resume": "/resume [TASK]: go on with TASK (default: the latest)",
}
KEYS_HELP = (
    "enter sends · esc stops the turn · ctrl+n/ctrl+p select a subagent ·\n"
    "ctrl+o expands it · ctrl+t expands all · ctrl+b cancels a background agent ·\n"
    "ctrl+q quits · '@agent-name PROMPT' hands PROMPT to that agent"
)
_MENTION = re.compile(r"^@([A-Za-z0-9][\w.-]*)\s*(.*)$", re.DOTALL)
CommandAction = Literal["none", "clear", "resume", "quit"]


@dataclass(slots=True)
class CommandResult:
    """What a slash command printed (Rich markup-free text or a renderable) and what the
    screen should do next: ``clear`` it, ``resume`` the current task, or ``quit``."""

    output: Any = None
    action: CommandAction = "none"
    question: HumanQuestion | None = None


class ChatSession:
    """One conversation: the task it continues, the runtime it runs on, the totals.

    ``make_runtime(model)`` builds the runtime (again when ``/model`` changes the model);
    ``new_task_id`` chooses the first turn's task id (tests fix it; ``None``: a new UUID).
    """

    def __init__(
        self,
        make_runtime: Callable[[str | None], Runtime],
        *,
        model: str | None = None,
        task_id: str | None = None,
        new_task_id: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.make_runtime = make_runtime
        self.model = model
        self.runtime = make_runtime(model)
        self.task_id = task_id
        self.new_task_id = new_task_id
        self.model_name = model or ""
        self.input_tokens = 0
        self.output_tokens = 0
        self.turns = 0

    @property
    def store(self) -> Store:
        store = self.runtime.store
        assert store is not None, "a chat always has a store: each turn is a durable task"
        return store

    @property
    def shown_model(self) -> str:
        """The model to name in the status line: the last turn's, else the one asked for,
        else the configured default."""
        if self.model_name or self.model:
            return self.model_name or self.model or ""
        try:
            configured = self.runtime.config.subagents.default_model
        except Exception:  # a bad config is reported when the first turn starts
            configured = None
        return configured or "default model"

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    # -- turns -------------------------------------------------------------------------------

    def prompt_for(self, text: str) -> str:
        """``text`` checked: ``@agent-name rest`` must name an agent there is and say what it
        should do (an unknown name is an error naming the ones there are)."""
        from subagents.errors import SubagentsError

        match = _MENTION.match(text.strip())
        if match is None:
            return text
        name, rest = match.group(1), match.group(2).strip()
        names = sorted(record.name for record in self.runtime.inventory.active())
        if name not in names:
            raise SubagentsError(
                f"There is no agent named {name!r} here.",
                hint="agents: " + (", ".join(names) or "none") + " (see /agents)",
            )
        if not rest:
            raise SubagentsError(f"Say what @{name} should do: @{name} PROMPT")
        return text.strip()

    async def send(self, prompt: str) -> RunResult:
        """Run ``prompt`` as the next turn: a new task for the first, the same task after.
        ``@agent-name rest`` hands ``rest`` to that agent: the harness makes the Task call
        (see :func:`subagents.runtime.run.handed_to`), whatever the model would have done."""
        delegate_to = None
        mention = _MENTION.match(prompt.strip())
        if mention is not None:
            delegate_to, prompt = mention.group(1), mention.group(2).strip()
        if self.task_id is None:
            task_id = self.new_task_id() or str(uuid.uuid4())
            try:
                result = await self.runtime.run(prompt, task_id=task_id, delegate_to=delegate_to)
            finally:  # stopped or failed: the next prompt goes on with the task, if it exists
                if self.task_id is None and self._exists(task_id):
                    self.task_id = task_id
        else:
            result = await self.runtime.continue_task(self.task_id, prompt, delegate_to=delegate_to)
        return self._ended(result)

    def _exists(self, task_id: str) -> bool:
        from subagents.errors import SubagentsError

        try:
            self.store.get_task(task_id)
        except SubagentsError:
            return False
        return True

    async def resume(self, decision: HumanDecision | None) -> RunResult:
        """Continue the current task after a pause (with the person's decision) or a crash."""
        assert self.task_id is not None
        return self._ended(await self.runtime.resume(self.task_id, decision))

    def _ended(self, result: RunResult) -> RunResult:
        self.task_id = result.task_id or self.task_id
        self.model_name = result.model_name or self.model_name
        self.input_tokens += result.usage.input_tokens
        self.output_tokens += result.usage.output_tokens
        self.turns += 1
        return result

    def pending_question(self) -> HumanQuestion | None:
        """What the current task waits for a person to answer, if it does."""
        if self.task_id is None:
            return None
        return self.runtime.pending_question(self.task_id)

    def history(self, limit: int = 20) -> list[tuple[str, str]]:
        """The current task's conversation so far (``(role, text)`` of the main session's
        user prompts and answers, the latest ``limit``), to show when a chat is reopened."""
        if self.task_id is None:
            return []
        sessions = self.store.sessions(self.task_id)
        mains = [s for s in sessions if s.parent_session_id is None]
        if not mains:
            return []
        shown: list[tuple[str, str]] = []
        messages = self.store.messages(mains[0].session_id)
        for index, message in enumerate(messages):
            role, content = message.get("role"), message.get("content")
            if role in ("user", "assistant") and isinstance(content, str) and content.strip():
                text = content.strip()
                handed = _handed_to(messages[index + 1]) if index + 1 < len(messages) else None
                if role == "user" and handed is not None:
                    text = f"@{handed} {text}"
                shown.append((str(role), text))
        return shown[-limit:]

    async def aclose(self) -> None:
        await self.runtime.aclose()

    # -- slash commands ----------------------------------------------------------------------

    async def command(self, line: str) -> CommandResult:
        """Run the slash command ``line``; an unknown one says which there are."""
        from subagents.errors import SubagentsError

        name, _, argument = line.strip().partition(" ")
        argument = argument.strip()
        handlers: dict[str, Callable[[str], Any]] = {
            "/help": self._help,
            "/agents": self._agents,
            "/tasks": self._tasks,
            "/trace": self._trace,
            "/model": self._model,
            "/clear": self._clear,
            "/resume": self._resume,
        }
        if name in ("/quit", "/exit"):
            return CommandResult(action="quit")
        handler = handlers.get(name)
        if handler is None:
            known = " ".join(COMMANDS)
            return CommandResult(f"Unknown command {name}. Commands: {known}")
        try:
            result = handler(argument)
            if hasattr(result, "__await__"):
                result = await result
        except SubagentsError as error:
            hint = f"\nhint: {error.hint}" if error.hint else ""
            return CommandResult(f"error: {error.message}{hint}")
        assert isinstance(result, CommandResult)
        return result

    def _help(self, _argument: str) -> CommandResult:
        lines = [f"{name:<8} {what}" for name, what in COMMANDS.items()]
        return CommandResult("\n".join([*lines, "", KEYS_HELP]))

    def _agents(self, _argument: str) -> CommandResult:
        inventory = self.runtime.inventory
        lines = []
        for record in sorted(inventory.active(), key=lambda r: r.name):
            model = record.effective_model or "inherit"
            line = f"{record.name:<20} {record.scope:<8} {model:<24} {record.source}"
            for hidden in record.overrides:
                line += f"\n{'':<20} overrides {hidden.scope} {hidden.location}"
            lines.append(line)
        return CommandResult("\n".join(lines) or "No agents.")

    def _tasks(self, _argument: str) -> CommandResult:
        workspace = str(self.runtime.workspace)
        tasks = [t for t in self.store.list_tasks(limit=200) if t.workspace == workspace][:10]
        if not tasks:
            return CommandResult("No tasks in this workspace yet.")
        lines = []
        for task in tasks:
            mark = "▶ " if task.id == self.task_id else "  "
            prompt = " ".join(task.prompt.split())[:50]
            lines.append(f"{mark}{task.id[:8]}  {task.status:<15} {prompt}")
        return CommandResult("\n".join([*lines, "", "/resume TASK goes on with one of them."]))

    def _trace(self, argument: str) -> CommandResult:
        from subagents.cli.trace import render_tree
        from subagents.secrets import workspace_redactor
        from subagents.tracing.view import build_trace

        task_id = argument or self.task_id
        if task_id is None:
            return CommandResult("No task yet: the first prompt starts one.")
        redactor = workspace_redactor(self.runtime.workspace)
        return CommandResult(render_tree(build_trace(self.store, task_id, redactor=redactor)))

    async def _model(self, argument: str) -> CommandResult:
        if not argument:
            shown = self.shown_model
            return CommandResult(f"Model: {shown}. /model NAME changes it for the next prompt.")
        runtime = self.make_runtime(argument)
        await self.runtime.aclose()
        self.runtime, self.model, self.model_name = runtime, argument, argument
        return CommandResult(f"Model: {argument} from the next prompt on.")

    def _clear(self, _argument: str) -> CommandResult:
        self.task_id = None
        self.input_tokens = self.output_tokens = self.turns = 0
        return CommandResult("New conversation.", action="clear")

    def _resume(self, argument: str) -> CommandResult:
        from subagents.errors import StoreError

        task_id = argument or self.task_id or self.runtime.latest_conversation()
        if task_id is None:
            raise StoreError("There is no conversation here to resume.")
        task = self.store.get_task(task_id)
        if task.workspace != str(self.runtime.workspace):
            raise StoreError(f"Task {task.id[:8]} belongs to another workspace: {task.workspace}")
        if "workflow" in task.settings:
            raise StoreError(f"Task {task.id[:8]} is a workflow run, not a conversation.")
        self.task_id = task.id
        if task.status == "awaiting_human":
            question = self.pending_question()
            return CommandResult(
                f"Task {task.id[:8]} waits for you: {question.text if question else '?'}",
                action="resume",
                question=question,
            )
        if task.status in ("pending", "running"):
            return CommandResult(f"Task {task.id[:8]} stopped early; finishing it.", "resume")
        return CommandResult(
            f"Task {task.id[:8]} ({task.status}): the next prompt goes on with it.",
            action="clear",
        )


def decision_of(answer: ApprovalDecision) -> HumanDecision:
    """The stored task's decision for what the person answered on the approval screen."""
    from subagents.runtime.pause import HumanDecision

    if not answer.approved:
        return HumanDecision("reject", reason=answer.reason)
    if answer.arguments is not None:
        return HumanDecision("modify", arguments=dict(answer.arguments))
    return HumanDecision("approve")


def request_of(question: HumanQuestion) -> ApprovalRequest:
    """An approval request for a stored task's question, for the approval screen."""
    from subagents.tools.permissions import ApprovalRequest

    return ApprovalRequest(
        question.tool_name,
        dict(question.arguments),
        question.session_id,
        question.agent_type,
        question.tool_call_id,
        reason=question.text,
    )


# -- the command -------------------------------------------------------------------------------


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
    permission_mode: Annotated[
        str,
        typer.Option(
            "--permission-mode", help="default | acceptEdits | plan | dontAsk | bypassPermissions"
        ),
    ] = "default",
) -> None:
    """Talk with the main agent: each prompt is a durable turn of one task.

    Subagents show as blocks, tool calls as compact lines, approvals are asked on screen.
    Type /help for the commands; '@agent-name PROMPT' hands a prompt to that agent.
    """
    from rich.console import Console

    from subagents.cli.answer import quote_markup
    from subagents.errors import SubagentsError

    err = Console(stderr=True)
    if continue_ and resume is not None:
        err.print("[red]--continue and --resume do not go together[/] - drop one of them")
        raise typer.Exit(2)
    try:
        open_chat(
            model=model,
            cwd=cwd,
            continue_=continue_,
            resume=resume,
            tui=not no_tui,
            permission_mode=permission_mode,
        )
    except SubagentsError as error:
        from subagents.tracing.redact import Redactor

        hint = f"\nhint: {error.hint}" if error.hint else ""
        err.print(f"[red]Error:[/] {quote_markup(Redactor().text(error.message + hint))}")
        raise typer.Exit(2) from None


def open_chat(
    *,
    model: str | None = None,
    cwd: Path | None = None,
    continue_: bool = False,
    resume: str | None = None,
    tui: bool = True,
    permission_mode: str = "default",
) -> None:
    """Open the project's store and run the chat (the app, or the line mode)."""
    import asyncio

    from subagents.cli.mcp import project_server_policy
    from subagents.errors import ConfigError
    from subagents.runtime.events import EventBus
    from subagents.runtime.runtime import Runtime
    from subagents.store.open import open_store
    from subagents.tools.permissions import PERMISSION_MODES

    if permission_mode not in PERMISSION_MODES:
        raise ConfigError(
            f"Unknown permission mode {permission_mode!r}",
            hint="use one of: " + ", ".join(PERMISSION_MODES),
        )
    database = open_store(cwd=cwd)
    # the project's MCP servers: asked about once, on the line before the app takes the
    # screen (line mode: when stdin is a terminal); otherwise left out with what to do
    mcp_policy = project_server_policy(interactive=sys.stdin.isatty())

    def make_runtime(chosen: str | None) -> Runtime:
        return Runtime(
            cwd=cwd,
            model=chosen,
            permission_mode=permission_mode,  # type: ignore[arg-type]
            headless="pause",  # nobody to ask (line mode without a terminal): pause the turn
            events=EventBus(),
            stream=True,
            store=database,
            project_mcp=mcp_policy,
        )

    try:
        session = ChatSession(make_runtime, model=model)
        session.runtime.mcp_config()  # asks about project MCP servers before the app starts
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
            from subagents.cli.chat_app import ChatApp

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
    from subagents.cli.progress import progress_printer
    from subagents.errors import SubagentsError
    from subagents.tracing.redact import Redactor

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
                runtime.approver = _line_approver(out, redactor, input_line)
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
                runtime.approver = None
        except SubagentsError as error:
            hint = f"\nhint: {error.hint}" if error.hint else ""
            write_answer(f"error: {redactor.text(error.message + hint)}", out.file)
            continue
        # once: not again when it streamed to the terminal the answer is written to
        if not (watch.on_screen(result.output) and out.file is sys.stdout):
            write_answer(redactor.text(result.output), out.file)
        if result.question is not None:
            question = redactor.text(result.question.text)
            write_answer(f"waiting for you: {question} (/resume)", out.file)
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


def _handed_to(message: dict[str, Any]) -> str | None:
    """The agent a stored turn handed the prompt before it to (``@agent``), if it did."""
    calls = message.get("tool_calls") if message.get("role") == "assistant" else None
    if not isinstance(calls, list) or len(calls) != 1 or not isinstance(calls[0], dict):
        return None
    call = calls[0]
    arguments = call.get("arguments")
    if not str(call.get("id", "")).startswith("handoff_") or not isinstance(arguments, dict):
        return None
    agent = arguments.get("subagent_type")
    return agent if isinstance(agent, str) else None
