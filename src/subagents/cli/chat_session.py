"""The chat without a screen: :class:`ChatSession` runs each prompt as a durable turn of one
task (the first :meth:`Runtime.run`, every later one :meth:`Runtime.continue_task`), and reads
the slash commands, ``@agent`` prompts, switching task or model. The Textual app
(:mod:`subagents.cli.ui.chat_app`) and the line mode of :mod:`subagents.cli.chat` both drive it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from subagents.runtime.pause import HumanDecision, HumanQuestion
    from subagents.runtime.result import RunResult
    from subagents.runtime.runtime import Runtime
    from subagents.store.base import Store
    from subagents.tools.permissions import ApprovalDecision, ApprovalRequest

__all__ = [
    "COMMANDS",
    "KEYS_HELP",
    "ChatSession",
    "CommandResult",
    "decision_of",
    "how_to_go_on",
    "request_of",
]

COMMANDS: dict[str, str] = {
    "/help": "this list, and the keys",
    "/agents": "the agents here: source, model, what each overrides",
    "/tasks": "the latest tasks of this workspace",
    "/trace": "what the current task did, session by session",
    "/model": "show the model; /model NAME: NAME from the next prompt on",
    "/clear": "clear the screen, start a new conversation",
    "/resume": "/resume [TASK]: go on with TASK (default: the latest)",
    "/budget": "show the budget; /budget N (tokens) or /budget $X (USD) sets it",
}
KEYS_HELP = (
    "enter sends · esc stops the turn · ctrl+n/ctrl+p select a subagent ·\n"
    "ctrl+o expands it · ctrl+t expands all · ctrl+b cancels a background agent ·\n"
    "ctrl+q quits · '@agent-name PROMPT' hands PROMPT to that agent ·\n"
    "'@agent-id MESSAGE' sends MESSAGE to that agent of the task"
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
        self.limits = self.runtime.budget_limits  # kept when /model builds a new runtime
        self.task_id = task_id
        self.new_task_id = new_task_id
        self.model_name = model or ""
        self.turns = 0
        self.tokens = 0
        """The input and output tokens the conversation's task used so far, every turn's."""
        self.cost: str | None = None
        """What the conversation's task cost so far (``$0.0123``), when its prices are known."""

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
        if name not in names and self._agent_of_task(name) is not None:
            if not rest:
                raise SubagentsError(f"Say what to tell agent {name}: @{name} MESSAGE")
            return text.strip()
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
            agent = self._agent_of_task(delegate_to)
            if agent is not None and self.runtime.definition_named(delegate_to) is None:
                return await self._message(agent, prompt)
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

    def _agent_of_task(self, name: str) -> str | None:
        """The session id of the current task's agent ``name`` (its id or the start of it:
        8 characters or more), if there is one."""
        if self.task_id is None or len(name) < 8:
            return None
        from subagents.errors import SubagentsError
        from subagents.runtime.mail import recipient

        try:
            found = recipient(self.store.sessions(self.task_id), name)
        except SubagentsError:
            return None
        return found.session_id if found.session_id.startswith(name) else None

    async def _message(self, agent_id: str, text: str) -> RunResult:
        """``@agent-id MESSAGE``: the message is stored for that agent of the task, which
        then goes on: the agent reads it at its next step (a finished one runs again on it)
        and its parent hears of what it does."""
        from subagents.runtime.mail import post_from_person

        assert self.task_id is not None
        name = self.store.get_session(agent_id).agent_name
        post_from_person(self.store, self.task_id, agent_id, name, text, self.runtime.redactor())
        return self._ended(await self.runtime.resume(self.task_id))

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
        self.turns += 1
        self._count_usage()
        return result

    def _count_usage(self) -> None:
        """What the task used so far, from the store: the sessions' own counts."""
        from subagents.cli.usage import task_usage

        report = task_usage(self.store, self.task_id, self.runtime.config)
        total = report.total if report is not None else None
        self.tokens = total["input_tokens"] + total["output_tokens"] if total else 0
        priced = total is not None and total["cost_known"] and total["cost_usd"]
        self.cost = f"${total['cost_usd']:.4f}" if total is not None and priced else None

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
            "/budget": self._budget,
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
        trace = build_trace(self.store, task_id, redactor=redactor)
        return CommandResult(render_tree(trace, prices=self.runtime.config.model_prices()))

    async def _model(self, argument: str) -> CommandResult:
        if not argument:
            shown = self.shown_model
            return CommandResult(f"Model: {shown}. /model NAME changes it for the next prompt.")
        runtime = self.make_runtime(argument)
        runtime.budget_limits = self.limits
        await self.runtime.aclose()
        self.runtime, self.model, self.model_name = runtime, argument, argument
        return CommandResult(f"Model: {argument} from the next prompt on.")

    def _clear(self, _argument: str) -> CommandResult:
        self.task_id = None
        self.tokens = self.turns = 0
        self.cost = None
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
        self._count_usage()
        if task.status == "awaiting_human":
            question = self.pending_question()
            if question is not None and question.kind == "budget":
                return CommandResult(
                    f"Task {task.id[:8]} goes on with the budget {self._limits_shown()}.",
                    action="resume",
                )
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

    def _budget(self, argument: str) -> CommandResult:
        from subagents.errors import ConfigError
        from subagents.runtime.budget import Limits, usd

        if argument:
            text = argument.replace(",", "").replace("_", "")
            if text.startswith("$"):
                amount = usd(text[1:])
                limits = Limits(self.limits.tokens, amount) if amount is not None else None
            else:
                limits = Limits(int(text), self.limits.usd) if text.isdecimal() else None
            if limits is None or limits.tokens == 0:
                raise ConfigError(
                    f"{argument!r} is not a budget.",
                    hint="/budget 50000 for tokens, /budget $2.50 for USD",
                )
            self.limits = self.runtime.budget_limits = limits
        spent = f"{self.tokens:,} tokens" + (f", {self.cost}" if self.cost else "")
        return CommandResult(
            f"Budget: {self._limits_shown()}; this chat spent {spent}. A turn that reaches it "
            "stops; /budget N or /budget $X raises it, and /resume goes on."
        )

    def _limits_shown(self) -> str:
        from subagents.runtime.budget import dollars

        limits = self.limits
        shown = [f"{limits.tokens:,} tokens"] if limits.tokens is not None else []
        shown += [dollars(limits.usd)] if limits.usd is not None else []
        return " and ".join(shown) or "none (the task's own, else [budget] in the config)"


def how_to_go_on(result: RunResult, otherwise: str) -> str:
    """What the person types to go on with a turn that waits for them: ``otherwise`` unless
    the turn stopped at its budget."""
    if result.question is not None and result.question.kind == "budget":
        return "/budget N or /budget $X raises the budget, then /resume goes on"
    return otherwise


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
