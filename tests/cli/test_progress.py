"""Progress you can see: retried provider calls and long tool calls in the plain progress
output. No test here waits for real time: the retry layer's sleep records its waits, and the
printer runs on a clock the test moves."""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from rich.console import Console

from fakes.openai_server import FakeOpenAIServer
from fakes.sleep import RecordingSleep
from subagents.cli.ui.progress import ProgressPrinter, progress_printer
from subagents.errors import ModelRetriesExhaustedError
from subagents.messages import ToolCall, ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.models.openai import OpenAIChatModel
from subagents.models.retry import (
    Failure,
    RetryNotice,
    RetryPolicy,
    call_with_retries,
    listening_to_retries,
    retry_reason,
    stream_with_retries,
)
from subagents.redaction import Redactor
from subagents.runtime import events as ev
from subagents.runtime.result import RunResult
from subagents.runtime.session import Session
from subagents.testing import FunctionModel, text_response, tool_call_response
from subagents.tools.base import ToolRegistry
from subagents.tools.decorator import tool
from subagents.tools.execution import ToolOutcome

SECRET = "sk-progress-secret-0123456789"


class FakeClock:
    """A monotonic clock the test moves; its ``sleep`` moves it instead of waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)  # let the rest of the loop run, as a real sleep would


def console() -> Console:
    return Console(file=io.StringIO(), width=300, color_system=None)


def printed(out: Console) -> str:
    return out.file.getvalue()  # type: ignore[attr-defined,no-any-return]


async def until(condition: Callable[[], bool], *, turns: int = 10_000) -> None:
    """Let the event loop run until ``condition`` holds (a state, not a time)."""
    for _ in range(turns):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


# --- retries: the retry layer reports them, the session makes events of them ------------------


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def gpt(openai_server: FakeOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    model = OpenAIChatModel(
        "gpt-test",
        base_url=openai_server.base_url,
        api_key=SECRET,
        timeout_seconds=5,
        max_retries=5,
        sleep=RecordingSleep(),
    )
    yield model
    await model.aclose()


@pytest.mark.parametrize("stream", [False, True], ids=["request", "stream"])
async def test_a_rate_limited_call_emits_its_retries_in_order_with_the_servers_wait(
    openai_server: FakeOpenAIServer, gpt: OpenAIChatModel, tmp_path: Path, stream: bool
) -> None:
    for _ in range(2):
        openai_server.reply_error(429, "Rate limit reached", headers={"Retry-After": "2"})
    if stream:
        from fakes.openai_server import chunk, usage

        openai_server.reply_stream(
            [
                chunk({"role": "assistant", "content": "hello"}),
                chunk(finish_reason="stop"),
                chunk(usage_body=usage()),
            ]
        )
    else:
        openai_server.reply_text("hello")
    seen: list[ev.Event] = []
    out = console()
    bus = ev.EventBus([seen.append, progress_printer(out, Redactor((SECRET,)))])
    session = Session(
        model=gpt,
        system_prompt="Answer.",
        tools=ToolRegistry([]),
        workspace=tmp_path,
        events=bus,
        stream=stream,
    )
    result = await session.run("hi")
    assert result.status == "completed", result.error
    assert result.output == "hello"
    assert len(openai_server.requests) == 3
    assert gpt._policy.sleep.waits == [2.0, 2.0]  # type: ignore[attr-defined]

    kinds = [e.kind for e in seen if not isinstance(e, ev.TextDelta)]
    assert kinds == [
        "session_started",
        "turn_started",
        "model_retrying",
        "model_retrying",
        "model_responded",
        "session_finished",
    ]
    retries = [e for e in seen if isinstance(e, ev.ModelRetrying)]
    assert retries == [
        ev.ModelRetrying(session.agent_id, 2, 6, 2.0, "HTTP 429"),
        ev.ModelRetrying(session.agent_id, 3, 6, 2.0, "HTTP 429"),
    ]
    lines = printed(out).splitlines()
    assert "main: provider error (HTTP 429), retrying in 2.0 s (attempt 2 of 6)" in lines
    assert "main: provider error (HTTP 429), retrying in 2.0 s (attempt 3 of 6)" in lines
    assert bus.handler_errors == []


async def test_without_listeners_a_retried_call_builds_no_events(
    openai_server: FakeOpenAIServer, gpt: OpenAIChatModel, tmp_path: Path
) -> None:
    openai_server.reply_error(503, "Overloaded")
    openai_server.reply_text("fine")
    session = Session(
        model=gpt, system_prompt="Answer.", tools=ToolRegistry([]), workspace=tmp_path
    )
    result = await session.run("hi")
    assert result.output == "fine"
    assert len(gpt._policy.sleep.waits) == 1  # type: ignore[attr-defined]


_RATE_LIMITED = Failure("HTTP 429: slow down", True, status_code=429, retry_after=1.5)


def _failing(times: int, failure: Failure) -> tuple[Callable[[], Awaitable[str]], list[int]]:
    calls: list[int] = []

    async def operation() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise RuntimeError(failure.message)
        return "ok"

    return operation, calls


async def test_the_retry_layer_reports_each_retry_to_the_listener_of_the_block() -> None:
    sleep = RecordingSleep()
    policy = RetryPolicy(max_retries=3, sleep=sleep)
    notices: list[RetryNotice] = []
    operation, _ = _failing(2, _RATE_LIMITED)
    with listening_to_retries(notices.append):
        answer = await call_with_retries(
            operation, classify=lambda exc: _RATE_LIMITED, policy=policy, what="test request"
        )
    assert answer == "ok"
    assert notices == [
        RetryNotice(2, 4, 1.5, "HTTP 429", "test request"),
        RetryNotice(3, 4, 1.5, "HTTP 429", "test request"),
    ]
    assert sleep.waits == [1.5, 1.5]

    # outside the block nobody hears of retries
    operation, _ = _failing(1, _RATE_LIMITED)
    await call_with_retries(
        operation, classify=lambda exc: _RATE_LIMITED, policy=policy, what="test request"
    )
    assert len(notices) == 2


async def test_a_stream_reports_its_retries_and_the_last_failure_is_not_one() -> None:
    policy = RetryPolicy(max_retries=1, sleep=RecordingSleep())
    notices: list[RetryNotice] = []

    failing = [True]

    async def broken() -> AsyncGenerator[str, None]:
        if failing[0]:  # always: a generator that fails before its first event
            raise RuntimeError("down")
        yield "never"

    with listening_to_retries(notices.append), pytest.raises(ModelRetriesExhaustedError):
        async for _ in stream_with_retries(
            broken, classify=lambda exc: _RATE_LIMITED, policy=policy, what="test stream"
        ):
            pass
    assert notices == [RetryNotice(2, 2, 1.5, "HTTP 429", "test stream")]


async def test_a_broken_listener_does_not_change_the_call() -> None:
    def explode(notice: RetryNotice) -> None:
        raise ValueError("listener bug")

    operation, calls = _failing(1, _RATE_LIMITED)
    with listening_to_retries(explode):
        answer = await call_with_retries(
            operation,
            classify=lambda exc: _RATE_LIMITED,
            policy=RetryPolicy(max_retries=2, sleep=RecordingSleep()),
            what="test request",
        )
    assert answer == "ok" and len(calls) == 2


async def test_each_task_reports_to_its_own_listener() -> None:
    """Two sessions retrying at once (a parent and a background subagent) each hear only
    of their own retries: the listener lives in the task's context."""
    policy = RetryPolicy(max_retries=2, sleep=RecordingSleep())
    heard: dict[str, list[RetryNotice]] = {"a": [], "b": []}

    async def call(name: str, failures: int) -> None:
        operation, _ = _failing(failures, _RATE_LIMITED)
        with listening_to_retries(heard[name].append):
            await call_with_retries(
                operation, classify=lambda exc: _RATE_LIMITED, policy=policy, what=name
            )

    await asyncio.gather(call("a", 1), call("b", 2))
    assert [n.what for n in heard["a"]] == ["a"]
    assert [n.what for n in heard["b"]] == ["b", "b"]


def _wrapped(exc: BaseException) -> BaseException:
    outer = RuntimeError("the SDK's own error")
    outer.__cause__ = exc
    return outer


@pytest.mark.parametrize(
    ("cause", "reason"),
    [
        (httpx.ReadTimeout("read"), "timeout"),
        (httpx.ConnectTimeout("connect"), "connect timeout"),
        (_wrapped(httpx.ReadError("peer closed")), "connection reset"),
        (_wrapped(httpx.RemoteProtocolError("server disconnected")), "connection reset"),
        (httpx.ConnectError("[Errno 111] Connection refused"), "connection refused"),
        (ConnectionResetError("reset by peer"), "connection reset"),
    ],
)
def test_the_reason_of_a_retry_is_short(cause: BaseException, reason: str) -> None:
    failure = Failure("connection to http://localhost:1/v1 failed (x)", True)
    assert retry_reason(failure, cause) == reason


def test_the_reason_of_a_status_error_is_its_status_and_of_others_the_message_start() -> None:
    assert retry_reason(_RATE_LIMITED, RuntimeError()) == "HTTP 429"
    overloaded = Failure("overloaded_error: Overloaded", True)
    assert retry_reason(overloaded, RuntimeError()) == "overloaded_error"


def test_a_retry_line_is_redacted() -> None:
    out = console()
    printer = ProgressPrinter(out, Redactor((SECRET,)), ticker=False)
    printer(ev.SessionStarted("s1", "helper", "s0", "m", 1))
    printer(ev.ModelRetrying("s1", 2, 5, 0.4, f"bad key {SECRET}"))
    assert printed(out).splitlines() == [
        "helper: provider error (bad key [REDACTED]), retrying in 0.4 s (attempt 2 of 5)"
    ]


# --- long tool calls ---------------------------------------------------------------------------


def _call(call_id: str, name: str = "Bash") -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments={"command": "make"})


def _outcome(call: ToolCall, status: str = "ok", content: str = "done") -> ToolOutcome:
    message = ToolResultMessage(
        tool_call_id=call.id, tool_name=call.name, content=content, is_error=status != "ok"
    )
    return ToolOutcome(message, call.name, 0.0, status)  # type: ignore[arg-type]


def _printer(clock: FakeClock, **options: object) -> tuple[ProgressPrinter, Console]:
    out = console()
    printer = ProgressPrinter(
        out,
        Redactor(()),
        clock=clock,
        ticker=False,
        **options,  # type: ignore[arg-type]
    )
    printer(ev.SessionStarted("main-id", "main", None, "m", 0))
    return printer, out


def _new_lines(out: Console, before: str) -> list[str]:
    return printed(out)[len(before) :].splitlines()


def test_a_long_tool_call_says_it_still_runs_then_how_long_it_took() -> None:
    clock = FakeClock()
    printer, out = _printer(clock)
    call = _call("c1")
    printer(ev.ToolCallStarted("main-id", call))
    start = clock.now
    before = printed(out)
    printer.tick(start + 4.9)
    assert _new_lines(out, before) == []
    printer.tick(start + 5.0)
    assert _new_lines(out, before) == ["main → Bash still running (5 s)"]
    before = printed(out)
    printer.tick(start + 6.0)
    printer.tick(start + 14.9)
    assert _new_lines(out, before) == []  # every 10 s, not on every tick
    printer.tick(start + 15.0)
    printer.tick(start + 25.3)
    assert _new_lines(out, before) == [
        "main → Bash still running (15 s)",
        "main → Bash still running (25 s)",
    ]
    before = printed(out)
    clock.now = start + 26.24
    printer(ev.ToolCallFinished("main-id", call, _outcome(call)))
    assert _new_lines(out, before) == ["main → Bash finished after 26.2 s"]
    before = printed(out)
    printer.tick(start + 100)
    assert _new_lines(out, before) == []  # it ended: no more reminders


def test_a_quick_tool_call_prints_nothing_more_than_before() -> None:
    clock = FakeClock()
    printer, out = _printer(clock)
    call = _call("c1")
    printer(ev.ToolCallStarted("main-id", call))
    before = printed(out)
    clock.now += 4.0
    printer.tick()  # the clock's own time
    printer(ev.ToolCallFinished("main-id", call, _outcome(call)))
    assert _new_lines(out, before) == []


def test_a_long_failed_call_says_how_long_it_took_on_its_error_line() -> None:
    clock = FakeClock()
    printer, out = _printer(clock, still_running_after=2.0)
    call = _call("c1")
    printer(ev.ToolCallStarted("main-id", call))
    before = printed(out)
    clock.now += 3.0
    printer.tick()
    clock.now += 0.5
    printer(ev.ToolCallFinished("main-id", call, _outcome(call, "error", "exit code 2\nmore")))
    assert _new_lines(out, before) == [
        "main → Bash still running (3 s)",
        "main Bash error after 3.5 s: exit code 2",
    ]


def test_parallel_calls_are_reminded_of_each_on_its_own_schedule() -> None:
    clock = FakeClock()
    printer, out = _printer(clock)
    printer(ev.SessionStarted("sub-id", "helper", "main-id", "m", 1))
    start = clock.now
    printer(ev.ToolCallStarted("main-id", _call("c1", "Bash")))
    clock.now = start + 3
    printer(ev.ToolCallStarted("sub-id", _call("c2", "Grep")))
    before = printed(out)
    for second in range(1, 18):
        printer.tick(start + second)
    assert _new_lines(out, before) == [
        "main → Bash still running (5 s)",
        "helper → Grep still running (5 s)",
        "main → Bash still running (15 s)",
    ]


def test_a_task_call_leaves_the_reminders_to_its_subagent() -> None:
    clock = FakeClock()
    printer, out = _printer(clock)
    task = _call("t1", "Task")
    printer(ev.ToolCallStarted("main-id", task))
    printer(ev.SubagentStarted("sub-id", "main-id", "helper", "help", "m", False, "t1"))
    before = printed(out)
    printer.tick(clock.now + 60)
    assert _new_lines(out, before) == []


def _cancelled(agent_id: str, agent_type: str) -> RunResult:
    return RunResult("", "cancelled", agent_id, agent_type, "m", [])


def test_calls_of_a_session_that_ended_are_not_reminded() -> None:
    clock = FakeClock()
    printer, out = _printer(clock)
    printer(ev.SessionStarted("sub-id", "helper", "main-id", "m", 1))
    printer(ev.ToolCallStarted("sub-id", _call("c1")))
    printer(ev.ToolCallStarted("main-id", _call("c2")))
    printer(ev.SessionFinished("sub-id", _cancelled("sub-id", "helper")))
    before = printed(out)
    printer.tick(clock.now + 5)
    assert _new_lines(out, before) == ["main → Bash still running (5 s)"]
    printer(ev.SessionFinished("main-id", _cancelled("main-id", "main")))
    before = printed(out)
    printer.tick(clock.now + 60)
    assert _new_lines(out, before) == []


def test_no_reminders_while_held_and_the_next_one_comes_later() -> None:
    clock = FakeClock()
    printer, out = _printer(clock)
    printer(ev.ToolCallStarted("main-id", _call("c1")))
    start = clock.now
    before = printed(out)
    with printer.holding():  # e.g. a person reads an approval prompt
        clock.now = start + 30
        printer.tick()
    assert _new_lines(out, before) == []
    printer.tick(start + 39)
    printer.tick(start + 40)
    assert _new_lines(out, before) == ["main → Bash still running (40 s)"]


# --- the ticker: started on the loop while a call runs, gone when none does --------------------


def ticking(printer: ProgressPrinter) -> bool:
    return printer.ticking  # (a call, so that mypy does not narrow a property across awaits)


def _ticker_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == "progress-ticker" and not t.done()]


async def test_the_ticker_reminds_while_a_call_runs_and_stops_when_it_ends() -> None:
    clock = FakeClock()
    out = console()
    printer = ProgressPrinter(out, Redactor(()), clock=clock, sleep=clock.sleep)
    printer(ev.SessionStarted("main-id", "main", None, "m", 0))
    call = _call("c1")
    printer(ev.ToolCallStarted("main-id", call))
    assert ticking(printer) and len(_ticker_tasks()) == 1
    await until(lambda: "still running (15 s)" in printed(out))
    printer(ev.ToolCallFinished("main-id", call, _outcome(call)))
    assert not ticking(printer)
    await until(lambda: not _ticker_tasks())
    after = printed(out)
    finished = re.fullmatch(r"main → Bash finished after (\d+\.\d) s", after.splitlines()[-1])
    assert finished is not None and float(finished[1]) >= 15.0
    for _ in range(50):
        await asyncio.sleep(0)
    assert printed(out) == after  # nothing once the call ended


async def test_no_ticker_outside_an_event_loop_and_close_stops_one() -> None:
    clock = FakeClock()
    printer = ProgressPrinter(console(), Redactor(()), clock=clock, sleep=clock.sleep)
    printer(ev.ToolCallStarted("main-id", _call("c1")))
    assert ticking(printer)
    printer.close()
    assert not ticking(printer)
    await until(lambda: not _ticker_tasks())

    def outside() -> bool:
        other = ProgressPrinter(console(), Redactor(()), clock=clock)
        other(ev.ToolCallStarted("main-id", _call("c1")))
        return ticking(other)

    assert not await asyncio.to_thread(outside)


@tool
async def Build() -> str:
    """Build the project."""
    await until(lambda: "still running (15 s)" in printed(_RUN_OUT))
    return "built"


_RUN_OUT = console()


def _build_then_answer(request: ModelRequest) -> ModelResponse:
    if not any(isinstance(m, ToolResultMessage) for m in request.messages):
        return tool_call_response("Build", {})
    return text_response("It builds.")


async def test_a_run_shows_a_long_tool_and_leaves_no_ticker_behind(tmp_path: Path) -> None:
    clock = FakeClock()
    _RUN_OUT.file = io.StringIO()
    printer = ProgressPrinter(_RUN_OUT, Redactor(()), clock=clock, sleep=clock.sleep)
    session = Session(
        model=FunctionModel(_build_then_answer),
        system_prompt="Build.",
        tools=ToolRegistry([Build]),
        workspace=tmp_path,
        events=ev.EventBus([printer]),
    )
    result = await session.run("build it")
    assert result.output == "It builds."
    assert not ticking(printer)  # stopped when the call ended; gone at the next turn of the loop
    await until(lambda: not _ticker_tasks())
    lines = printed(_RUN_OUT).splitlines()
    assert lines[0] == "main → Build {}"
    assert lines[1:3] == ["main → Build still running (5 s)", "main → Build still running (15 s)"]
    finished = re.fullmatch(r"main → Build finished after (\d+\.\d) s", lines[3])
    assert finished is not None and float(finished[1]) >= 15.0
    assert len(lines) == 4


async def test_a_cancelled_run_stops_the_ticker(tmp_path: Path) -> None:
    clock = FakeClock()
    out = console()
    printer = ProgressPrinter(out, Redactor(()), clock=clock, sleep=clock.sleep)
    started = asyncio.Event()

    @tool
    async def Hang() -> str:
        """Never ends."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    session = Session(
        model=FunctionModel(lambda request: tool_call_response("Hang", {})),
        system_prompt="Hang.",
        tools=ToolRegistry([Hang]),
        workspace=tmp_path,
        events=ev.EventBus([printer]),
    )
    running = asyncio.create_task(session.run("go"))
    await started.wait()
    await until(lambda: "still running (5 s)" in printed(out))
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert not ticking(printer)
    await until(lambda: not _ticker_tasks())
