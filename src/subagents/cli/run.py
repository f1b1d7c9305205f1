"""`subagents run PROMPT`: run one agent to completion and print its answer."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from subagents.cli.common import AnswerWatch, stderr_console, user_errors
from subagents.cli.options import (
    ExitWhenDoneOption,
    MaxBudgetTokensOption,
    MaxBudgetUsdOption,
    ModelOption,
    PermissionModeOption,
    QueueOption,
    TrustProjectMcpOption,
    WaitOption,
    WorkspaceOption,
    YesOption,
    permission_mode_named,
)
from subagents.cli.render import (
    EXIT_ERROR,
    Ending,
    how_to_resume,
    print_ending,
    print_error,
    print_problem,
)

if TYPE_CHECKING:
    from rich.console import Console

    from subagents.cli.ui.progress import ProgressPrinter
    from subagents.config import Config
    from subagents.definitions.model import AgentDefinition
    from subagents.redaction import Redactor, StreamRedactor
    from subagents.runtime.events import Event
    from subagents.runtime.permissions import Headless
    from subagents.runtime.result import RunResult
    from subagents.runtime.runtime import Runtime
    from subagents.tools.permissions import ApprovalDecision, ApprovalRequest
    from subagents.tracing.otlp import LiveExport

__all__ = [
    "MAX_STDIN_BYTES",
    "OUTPUT_FORMATS",
    "StreamJson",
    "ask_person",
    "result_payload",
    "run_command",
]

MAX_STDIN_BYTES = 1_000_000  # `run -`: a prompt read from stdin, at most this long
OUTPUT_FORMATS = ("text", "json", "stream-json")


def run_command(
    prompt: Annotated[
        str | None,
        typer.Argument(
            help="What the agent should do; '-' reads it from stdin (default: the "
            "initialPrompt of the --agent).",
            show_default=False,
        ),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", help="Run this agent instead of the main agent.")
    ] = None,
    agents_json: Annotated[
        str | None,
        typer.Option(
            "--agents",
            help="Extra agents for this run as JSON, as in Claude Code: "
            '\'{"name": {"description": "...", "prompt": "..."}}\' (highest precedence).',
        ),
    ] = None,
    model: ModelOption = None,
    cwd: WorkspaceOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the result as JSON (--output-format json).")
    ] = False,
    output_format: Annotated[
        str,
        typer.Option(
            "--output-format",
            help="text | json (the result as one JSON object) | stream-json (one JSON event "
            "per line while it runs, the result last).",
        ),
    ] = "text",
    continue_latest: Annotated[
        bool,
        typer.Option(
            "--continue",
            "-c",
            help="Continue the latest conversation of this project with PROMPT.",
        ),
    ] = False,
    resume_task: Annotated[
        str | None,
        typer.Option(
            "--resume",
            metavar="TASK",
            help="Continue the conversation of TASK (id or unique prefix) with PROMPT.",
        ),
    ] = None,
    max_budget_tokens: MaxBudgetTokensOption = None,
    max_budget_usd: MaxBudgetUsdOption = None,
    max_turns: Annotated[
        int | None,
        typer.Option(
            "--max-turns",
            min=1,
            help="Turn limit of the main agent (subagents without a maxTurns of their own "
            "share it, as with [subagents] max_turns).",
        ),
    ] = None,
    permission_mode: PermissionModeOption = "default",
    allowed_tools: Annotated[
        list[str] | None,
        typer.Option(
            "--allowedTools",
            "--allowed-tools",
            help="Rules that run without asking, e.g. 'Bash(npm run test:*)' 'Edit(src/**)' "
            "(repeatable; comma or space separated).",
        ),
    ] = None,
    disallowed_tools: Annotated[
        list[str] | None,
        typer.Option(
            "--disallowedTools",
            "--disallowed-tools",
            help="Rules that are refused, e.g. 'Bash(git push *)' 'Read(./.env)', or a bare "
            "tool name to take the tool away (repeatable; comma or space separated).",
        ),
    ] = None,
    yes: YesOption = False,
    trust_project_mcp: TrustProjectMcpOption = False,
    no_store: Annotated[
        bool,
        typer.Option(
            "--no-store", help="Do not record the run as a task (it cannot be resumed then)."
        ),
    ] = False,
    tags: Annotated[
        list[str] | None, typer.Option("--tag", help="Tag the task (retention by tag).")
    ] = None,
    ui: Annotated[
        bool,
        typer.Option("--ui", help="Show the run live in a terminal UI, one block per agent."),
    ] = False,
    exit_when_done: ExitWhenDoneOption = False,
    otel: Annotated[
        bool,
        typer.Option(
            "--otel",
            help="Send the run's spans to an OpenTelemetry collector as it goes (OTLP; "
            "OTEL_EXPORTER_OTLP_ENDPOINT, default localhost:4318). Setting that variable "
            "does it too.",
        ),
    ] = False,
    otel_content: Annotated[
        bool,
        typer.Option(
            "--otel-content", help="With OTLP export: include tool arguments and results."
        ),
    ] = False,
    remote: Annotated[
        bool,
        typer.Option(
            "--remote",
            help="Queue the run for 'subagents worker' processes on the shared PostgreSQL "
            "store (SUBAGENTS_STORE) instead of running it here; prints the task id.",
        ),
    ] = False,
    wait: WaitOption = False,
    queue: QueueOption = "subagents",
) -> None:
    """Run an agent on PROMPT, streaming its progress, and print the final answer.

    Without PROMPT, the agent named by --agent starts from the initialPrompt of its file;
    PROMPT '-' reads the prompt from stdin. --continue / --resume TASK go on with a finished
    conversation, its whole history included.

    The run is recorded as a task in the project's store (.subagents/state.db): a tool that
    needs approval asks at a terminal; in a run nobody watches it pauses the run, and
    `subagents resume TASK` continues it, after a decision or a crash. Secrets are redacted
    from everything printed.

    Exit codes: 0 completed; 1 failed, out of turns or cancelled; 2 usage or configuration
    error; 3 paused, waiting for a person; 4 paused at the token budget; 130 interrupted.
    """
    from subagents.cli.answer import quote_markup
    from subagents.cli.mcp import project_server_policy
    from subagents.cli.ui.progress import progress_printer
    from subagents.cli.usage import task_usage
    from subagents.errors import SubagentsError
    from subagents.redaction import Redactor
    from subagents.runtime.events import EventBus
    from subagents.tracing.otlp import start_live_export

    err = stderr_console()
    redactor = Redactor()  # the environment's secrets, until the project's config is read
    problem = _usage_problem(
        output_format,
        as_json=as_json,
        ui=ui,
        follow_up=continue_latest or resume_task is not None,
        both=continue_latest and resume_task is not None,
        agent=agent,
        no_store=no_store,
        tags=bool(tags),
        max_turns=max_turns,
    ) or _remote_problem(
        remote,
        wait,
        ui=ui,
        output_format=output_format,
        no_store=no_store,
        follow_up=continue_latest or resume_task is not None,
        otel=otel,
    )
    if problem is not None:
        print_problem(*problem)
        raise typer.Exit(EXIT_ERROR)
    with user_errors():
        mode = permission_mode_named(permission_mode)
    fmt = "json" if as_json else output_format
    machine = fmt != "text"
    # with --ui the UI owns the terminal and asks the person itself (see run_in_ui)
    interactive = (
        sys.stdin.isatty() and prompt != "-" and not yes and not machine and not ui and not remote
    )
    events = EventBus()
    live: LiveExport | None = None
    printer: ProgressPrinter | None = None
    watch = AnswerWatch()
    stream: StreamJson | None = None
    database = None
    try:
        if prompt == "-":
            prompt = _read_stdin_prompt()
        explicit = _session_agents(agents_json, err, redactor)
        if not no_store:
            database = _open_store(cwd)
        follow_up = _conversation_to_continue(database, cwd, continue_latest, resume_task)
        if follow_up is not None and model is None:
            model = database.get_task(follow_up).model if database is not None else None
        headless: Headless = "allow" if yes else "pause" if database is not None else "deny"

        def build(agents: list[AgentDefinition], config: Config | None) -> Runtime:
            from subagents.runtime.runtime import Runtime

            return Runtime(
                cwd=cwd,
                config=config,
                model=model,
                permission_mode=mode,
                headless=headless,
                events=events,
                stream=fmt != "json",
                store=database,
                allowed_tools=allowed_tools or (),
                disallowed_tools=disallowed_tools or (),
                agents=agents,
                project_mcp=project_server_policy(
                    interactive=interactive, trust_all=trust_project_mcp
                ),
                max_budget_tokens=max_budget_tokens,
                max_budget_usd=max_budget_usd,
            )

        runtime = _with_max_turns(build, explicit, cwd, agent, max_turns)
        runtime.permissions.rules()  # read now, to say what cannot be used before the run
        for warning in runtime.permissions.warnings:
            err.print(f"[yellow]Warning:[/] {quote_markup(warning)}")
        redactor = Redactor(runtime.credentials())
        live = start_live_export(
            events, redactor=redactor, force=otel, include_content=otel_content or None
        )
        if follow_up is None:
            prompt = _prompt_for(runtime, prompt, agent)
        elif prompt is None or not prompt.strip():
            raise SubagentsError(
                "No prompt given to continue the conversation with.",
                hint="pass one: subagents run --continue 'and now the tests'",
            )
        if remote:
            from subagents.cli.remote import report_queued
            from subagents.workers.submit import queue_run

            queued = queue_run(runtime, prompt, agent=agent, tags=tuple(tags or ()), queue=queue)
            assert database is not None
            report_queued(
                err, database, queued, queue=queue, wait=wait, as_json=machine, redactor=redactor
            )
            return
        if interactive and follow_up is None and agent is None:
            from subagents.cli.suggest import offer_agent

            agent = offer_agent(err, runtime.inventory, prompt, ask=input)
        if fmt == "stream-json":
            stream = StreamJson(redactor)
            events.subscribe(stream)
        elif not (machine or ui):
            from subagents.cli.servers import session_describer

            printer = progress_printer(err, redactor, describe=session_describer(runtime))
            events.subscribe(printer)
            events.subscribe(watch)
        if interactive:
            runtime.permissions.approver = ask_person(err, redactor, printer)
        if ui:
            from subagents.cli.ui.live import run_in_ui

            ui_result = run_in_ui(
                runtime,
                prompt,
                agent=agent,
                tags=tags or (),
                exit_when_done=exit_when_done,
                ask_approval=sys.stdin.isatty() and not yes,
            )
            if ui_result is None:
                again = (
                    "continue it with 'subagents resume' and the task id"
                    if database is not None
                    else "start it again with 'subagents run'"
                )
                err.print(f"[yellow]Cancelled from the UI.[/] Every agent was stopped; {again}.")
                raise typer.Exit(130)
            result = ui_result
        elif follow_up is not None:
            result = _continue_sync(runtime, follow_up, prompt)
        else:
            result = runtime.run_sync(prompt, agent=agent, tags=tags or ())
        # priced for the machine-read outputs; a person sees the tokens ('tasks usage': USD)
        used = task_usage(database, result.task_id, runtime.config, priced=machine)
    except SubagentsError as error:
        if stream is not None:
            stream.close()
        print_error(error, redactor)
        raise typer.Exit(EXIT_ERROR) from None
    except KeyboardInterrupt:
        err.print("[yellow]Interrupted.[/] Continue it with 'subagents resume' and the task id.")
        raise typer.Exit(130) from None
    finally:
        if printer is not None:
            printer.close()
        if live is not None:
            lost = live.close()
            if lost is not None:
                err.print(f"[yellow]Warning:[/] {quote_markup(lost)}")
        if database is not None:
            database.close()
    payload = result_payload(result)
    if used is not None:
        payload["task_usage"] = used.summary()
    if stream is not None:
        stream.finish(payload)
        code = Ending.of(result).exit_code()
        if code:
            raise typer.Exit(code)
        return
    # the answer once: not again when it streamed to the terminal stdout shows
    print_ending(
        replace(Ending.of(result), usage=used.line(cost=False) if used is not None else None),
        err,
        redactor,
        as_json=fmt == "json",
        payload=payload,
        how_to_resume=how_to_resume(result.task_id),
        on_screen=watch.on_screen,
    )


def result_payload(result: RunResult) -> dict[str, Any]:
    """What ``--json`` prints (and the last line of ``stream-json``), not yet redacted."""
    question = result.question.to_dict() if result.question is not None else None
    return {
        "task_id": result.task_id,
        "question": question,
        "status": result.status,
        "output": result.output,
        "error": result.error,
        "agent_id": result.agent_id,
        "model": result.model_name,
        "turns": result.turns,
        "tool_calls": result.tool_calls,
        "usage": {
            "input_tokens": result.usage.input_tokens,
            "output_tokens": result.usage.output_tokens,
        },
        "duration_ms": round(result.duration_ms, 1),
        "subagents": [spawn.to_dict() for spawn in result.subagents],
    }


class StreamJson:
    """``--output-format stream-json``: one JSON object a line on stdout while the run goes
    (``type``: session_started, text, tool_call, tool_result, subagent_started,
    subagent_finished, paused), the result last (``type`` result, the fields of ``--json``).
    Every value passes through the run's redactor; streamed text through a stream redactor, so
    a secret split across two pieces is caught whole."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._streams: dict[str, StreamRedactor] = {}

    def __call__(self, event: Event) -> None:
        from subagents.runtime import events as ev

        if isinstance(event, ev.TextDelta):
            stream = self._streams.get(event.agent_id)
            if stream is None:
                stream = self._streams[event.agent_id] = self._redactor.stream()
            self._text(event.agent_id, stream.feed(event.text))
            return
        agent_id = getattr(event, "agent_id", None)
        if isinstance(agent_id, str):
            self._end_text(agent_id)
        line = _event_line(event)
        if line is not None:
            self._write(self._redactor.value(line))

    def close(self) -> None:
        """Write out the text still held back."""
        for agent_id in list(self._streams):
            self._end_text(agent_id)

    def finish(self, payload: dict[str, Any]) -> None:
        self.close()
        self._write({"type": "result", **self._redactor.value(payload)})

    def _end_text(self, agent_id: str) -> None:
        stream = self._streams.pop(agent_id, None)
        if stream is not None:
            self._text(agent_id, stream.close())

    def _text(self, agent_id: str, text: str) -> None:
        if text:
            self._write({"type": "text", "agent_id": agent_id, "text": text})

    @staticmethod
    def _write(line: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
        sys.stdout.flush()


def _event_line(event: Event) -> dict[str, Any] | None:
    """The stream-json line of ``event`` (not yet redacted); None for events not streamed."""
    from subagents.runtime import events as ev

    if isinstance(event, ev.SessionStarted):
        return {
            "type": "session_started",
            "agent_id": event.agent_id,
            "agent_type": event.agent_type,
            "parent_id": event.parent_id,
            "model": event.model_name,
            "depth": event.depth,
        }
    if isinstance(event, ev.ToolCallStarted):
        return {
            "type": "tool_call",
            "agent_id": event.agent_id,
            "tool_call_id": event.call.id,
            "name": event.call.name,
            "arguments": event.call.arguments,
        }
    if isinstance(event, ev.ToolCallFinished):
        return {
            "type": "tool_result",
            "agent_id": event.agent_id,
            "tool_call_id": event.call.id,
            "name": event.call.name,
            "status": event.outcome.status,
            "content": event.outcome.message.content,
            "duration_ms": round(event.outcome.duration_ms, 1),
        }
    if isinstance(event, ev.SubagentStarted):
        return {
            "type": "subagent_started",
            "agent_id": event.agent_id,
            "parent_id": event.parent_id,
            "subagent_type": event.subagent_type,
            "description": event.description,
            "model": event.resolved_model,
            "background": event.background,
            "tool_call_id": event.tool_call_id,
        }
    if isinstance(event, ev.SubagentFinished):
        return {
            "type": "subagent_finished",
            "agent_id": event.agent_id,
            "parent_id": event.parent_id,
            **event.result.to_dict(),
        }
    if isinstance(event, ev.SessionPaused):
        return {
            "type": "paused",
            "agent_id": event.agent_id,
            "question": event.question.to_dict(),
        }
    if isinstance(event, ev.AnswerRejected):
        return {
            "type": "answer_rejected",
            "agent_id": event.agent_id,
            "message": event.message,
            "asked_again": event.asking_again,
        }
    return None


def _usage_problem(
    output_format: str,
    *,
    as_json: bool,
    ui: bool,
    follow_up: bool,
    both: bool,
    agent: str | None,
    no_store: bool,
    tags: bool,
    max_turns: int | None,
) -> tuple[str, str] | None:
    """What is wrong with the options (message, what to do), or None."""
    if output_format not in OUTPUT_FORMATS:
        return (
            f"Unknown output format {output_format!r}",
            "use one of: " + ", ".join(OUTPUT_FORMATS),
        )
    if as_json and output_format not in ("text", "json"):
        return ("--json and --output-format stream-json do not go together", "drop one of them")
    if ui and (as_json or output_format != "text"):
        return ("--ui and --json / --output-format do not go together", "drop one of them")
    if both:
        return ("--continue and --resume do not go together", "give one of them")
    if not follow_up:
        return None
    for given, name in (
        (agent is not None, "--agent"),
        (ui, "--ui"),
        (no_store, "--no-store"),
        (tags, "--tag"),
        (max_turns is not None, "--max-turns"),
    ):
        if given:
            return (
                f"{name} does not go with --continue / --resume",
                "a conversation goes on with its own agent, limits and task",
            )
    return None


def _remote_problem(
    remote: bool,
    wait: bool,
    *,
    ui: bool,
    output_format: str,
    no_store: bool,
    follow_up: bool,
    otel: bool,
) -> tuple[str, str] | None:
    """What is wrong with ``--remote`` and the options beside it, or None."""
    if not remote:
        return ("--wait goes with --remote", "add --remote, or drop --wait") if wait else None
    for given, name in (
        (ui, "--ui"),
        (output_format == "stream-json", "--output-format stream-json"),
        (no_store, "--no-store"),
        (follow_up, "--continue / --resume"),
        (otel, "--otel"),
    ):
        if given:
            return (
                f"{name} does not go with --remote",
                "a queued run is carried out by a worker; follow it with 'subagents tasks "
                "show' or 'subagents trace'",
            )
    return None


def _read_stdin_prompt() -> str:
    """The prompt piped in (``run -``), at most :data:`MAX_STDIN_BYTES`."""
    from subagents.errors import SubagentsError

    data = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    if len(data) > MAX_STDIN_BYTES:
        raise SubagentsError(
            f"The prompt on stdin is longer than {MAX_STDIN_BYTES:,} bytes.",
            hint="shorten it, or put the material in a file and ask the agent to read it",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SubagentsError(
            "The prompt on stdin is not UTF-8 text.", hint="pipe text in: subagents run - < f"
        ) from None


def _conversation_to_continue(
    database: Any, cwd: Path | None, latest: bool, task: str | None
) -> str | None:
    """The task id ``--continue`` (``latest``) or ``--resume TASK`` names; None for a new run."""
    from subagents.errors import SubagentsError

    if not latest and task is None:
        return None
    if database is None:  # refused with --no-store before; for the type checker
        raise SubagentsError("Continuing a conversation needs the task store.")
    if task is not None:
        found: str = database.get_task(task).id
        return found
    from subagents.runtime.runtime import Runtime

    chosen = Runtime(cwd=cwd, store=database).latest_conversation()
    if chosen is None:
        raise SubagentsError(
            "There is no conversation to continue in this project.",
            hint="start one with: subagents run 'PROMPT'",
        )
    return chosen


def _with_max_turns(
    build: Any,
    explicit: list[AgentDefinition],
    cwd: Path | None,
    agent: str | None,
    max_turns: int | None,
) -> Runtime:
    """The run's runtime; with ``max_turns``, the main agent's turn limit is that.

    The main agent takes ``[subagents] max_turns`` of the config, so the runtime gets the
    config with that value replaced (subagents without a ``maxTurns`` of their own share it);
    an ``--agent`` whose file sets ``maxTurns`` runs as a session agent with the limit
    replaced."""
    if max_turns is None:
        runtime: Runtime = build(explicit, None)
        return runtime
    import dataclasses

    from subagents.config import load_config

    config = load_config((cwd or Path.cwd()).resolve())
    config = dataclasses.replace(
        config, subagents=config.subagents.model_copy(update={"max_turns": max_turns})
    )
    runtime = build(explicit, config)
    if agent is None:
        return runtime
    definition = runtime.inventory.get(agent).definition
    if definition.max_turns is None or definition.max_turns == max_turns:
        return runtime
    limited = definition.model_copy(update={"max_turns": max_turns})
    others = [item for item in explicit if item.name != definition.name]
    rebuilt: Runtime = build([*others, limited], config)
    return rebuilt


def _continue_sync(runtime: Runtime, task_id: str, prompt: str) -> RunResult:
    """:meth:`Runtime.continue_task`, closing the runtime after."""
    import asyncio

    async def continue_and_close() -> RunResult:
        try:
            return await runtime.continue_task(task_id, prompt)
        finally:
            await runtime.aclose()

    return asyncio.run(continue_and_close())


def _session_agents(
    agents_json: str | None, err: Console, redactor: Redactor
) -> list[AgentDefinition]:
    """The agents given with --agents, their problems printed (redacted) as ``agents
    validate`` does."""
    if agents_json is None:
        return []
    from subagents.cli.answer import quote_markup
    from subagents.inventory import explicit_agents_from_json

    definitions = explicit_agents_from_json(agents_json)
    for definition in definitions:
        name = quote_markup(redactor.text(definition.name))
        for reason in definition.validation_errors:
            err.print(
                f"[red]--agents: {name} is invalid:[/] {quote_markup(redactor.text(reason))}",
                highlight=False,
            )
        for reason in definition.warnings:
            err.print(
                f"[yellow]--agents: {name}:[/] {quote_markup(redactor.text(reason))}",
                highlight=False,
            )
    return definitions


def _prompt_for(runtime: Runtime, prompt: str | None, agent: str | None) -> str:
    """``prompt``, else the ``initialPrompt`` of ``agent``; a clear error without either."""
    from subagents.errors import SubagentsError

    if prompt is not None and prompt.strip():
        return prompt
    if agent is None:
        raise SubagentsError(
            "No prompt given.",
            hint="pass one (subagents run 'fix the failing test'), or run an agent whose file "
            "sets initialPrompt with --agent NAME",
        )
    definition = runtime.inventory.get(agent).definition
    if definition.initial_prompt is None or not definition.initial_prompt.strip():
        raise SubagentsError(
            f"No prompt given, and agent {definition.name!r} has no initialPrompt.",
            hint=f"pass a prompt (subagents run 'PROMPT' --agent {definition.name}), or set "
            f"initialPrompt in {definition.location}",
        )
    return definition.initial_prompt


def _open_store(cwd: Path | None) -> Any:
    """The project's store, after the daily retention clean-up."""
    from subagents.store.open import open_store
    from subagents.store.retention import load_retention_policy, maybe_cleanup_daily

    database = open_store(cwd=cwd)
    try:
        maybe_cleanup_daily(database, load_retention_policy(cwd))
    except BaseException:
        database.close()
        raise
    return database


def ask_person(console: Console, redactor: Redactor, printer: ProgressPrinter | None = None) -> Any:
    """An approver that asks the person at the terminal (``y`` approves; anything else
    declines, with what they typed as the reason); ``printer``'s "still running" reminders
    wait while the person answers."""
    from subagents.cli.answer import markup_safe
    from subagents.tools.permissions import ApprovalDecision

    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        import asyncio

        args = json.dumps(redactor.value(request.arguments), indent=2, ensure_ascii=False)
        console.print(
            f"\n[bold]{request.agent_type}[/] wants to run [bold]{request.tool_name}[/]:\n"
            f"{markup_safe(args, console)}"
        )
        if printer is None:
            answer = await asyncio.to_thread(input, "Allow? [y/N/reason to deny] ")
        else:
            with printer.holding():
                answer = await asyncio.to_thread(input, "Allow? [y/N/reason to deny] ")
        if answer.strip().lower() in {"y", "yes"}:
            return ApprovalDecision(approved=True)
        reason = answer.strip() if answer.strip().lower() not in {"", "n", "no"} else None
        return ApprovalDecision(approved=False, reason=reason or "the user declined")

    return approve
