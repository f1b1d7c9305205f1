"""A run's token budget (runtime/budget.py): one pool for the whole tree of agents, looked at
before each model call; reaching it pauses the run where it stands, and a resume with a larger
budget goes on from there."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import pytest

from subagents.definitions.model import AgentDefinition
from subagents.errors import StoreError
from subagents.messages import ToolResultMessage, Usage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.models.testing import ModelFunction
from subagents.runtime.budget import Limits
from subagents.runtime.pause import HumanDecision
from subagents.runtime.runtime import Runtime
from subagents.runtime.session import Session
from subagents.store.sqlite import SQLiteStore, open_store
from subagents.testing import FunctionModel, text_response, tool_call_response
from subagents.tools.base import Tool, ToolContext
from subagents.tools.decorator import tool

CALL_TOKENS = (560, 140)  # input, output: 700 a call
WORKER = AgentDefinition(name="worker", description="Works.", system_prompt="You work.")


class Tree:
    """A main agent that delegates to ``worker`` ``rounds`` times; the worker reads a file
    ``steps`` times before it answers. Every call reports the same usage, and is counted."""

    def __init__(self, rounds: int, steps: int) -> None:
        self.calls: list[str] = []
        self.reported = Usage()
        self.main = FunctionModel(self._main(rounds), name="scripted:main")
        self.worker = FunctionModel(self._worker(steps), name="scripted:worker")

    def _counted(self, agent: str, response: ModelResponse) -> ModelResponse:
        response.usage = Usage(input_tokens=CALL_TOKENS[0], output_tokens=CALL_TOKENS[1])
        self.calls.append(agent)
        self.reported.add(response.usage)
        return response

    def _main(self, rounds: int) -> Callable[[ModelRequest], ModelResponse]:
        def turn(request: ModelRequest) -> ModelResponse:
            done = sum(isinstance(m, ToolResultMessage) for m in request.messages)
            if done < rounds:
                task = {"description": "work", "prompt": "read notes", "subagent_type": "worker"}
                return self._counted("main", tool_call_response("Task", task))
            return self._counted("main", text_response("all rounds done"))

        return turn

    def _worker(self, steps: int) -> Callable[[ModelRequest], ModelResponse]:
        def turn(request: ModelRequest) -> ModelResponse:
            done = sum(isinstance(m, ToolResultMessage) for m in request.messages)
            if done < steps:
                return self._counted("worker", tool_call_response("Read", {"file_path": "n.md"}))
            return self._counted("worker", text_response("read it"))

        return turn

    def runtime(
        self, workspace: Path, store: SQLiteStore, budget: int | None, usd: float | None = None
    ) -> Runtime:
        return Runtime(
            cwd=workspace,
            agents=[WORKER],
            model=self.main,
            agent_models={"worker": self.worker},
            store=store,
            max_budget_tokens=budget,
            max_budget_usd=usd,
        )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "n.md").write_text("notes\n")
    return root


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    return open_store(tmp_path / "state.db")


async def test_a_runaway_tree_stops_within_one_call_of_its_budget_and_goes_on_with_more(
    workspace: Path, store: SQLiteStore
) -> None:
    tree = Tree(rounds=5, steps=4)  # 5 x (1 + 5) + 1 = 31 calls, 21,700 tokens to the end
    paused = await tree.runtime(workspace, store, 6_000).run("go")

    per_call = sum(CALL_TOKENS)
    spent = len(tree.calls) * per_call
    assert 6_000 <= spent < 6_000 + per_call  # no call once the pool was spent
    assert paused.status == "awaiting_human" and paused.task_id is not None
    assert paused.question is not None and paused.question.kind == "budget"
    assert f"{spent:,} of 6,000 tokens" in paused.question.text
    assert (paused.error or "").startswith("budget reached: ")  # not a person's question
    assert "worker" in paused.question.text and "main" in paused.question.text
    stored = store.sessions(paused.task_id)
    assert sum(r.usage["input_tokens"] + r.usage["output_tokens"] for r in stored) == spent
    by_model = paused.usage_by_model  # the run's calls, its subagents' included
    assert paused.total_usage.total_tokens == spent and set(by_model) == {
        "scripted:main",
        "scripted:worker",
    }
    assert by_model["scripted:main"].total_tokens == tree.calls.count("main") * per_call

    with pytest.raises(StoreError, match="leaves no room"):  # the same budget: no way on
        await tree.runtime(workspace, store, None).resume(paused.task_id)
    with pytest.raises(StoreError, match="not for a decision"):
        await tree.runtime(workspace, store, 50_000).resume(
            paused.task_id, HumanDecision("approve")
        )

    done = await tree.runtime(workspace, store, 50_000).resume(paused.task_id)
    assert done.status == "completed", done.error
    assert done.output == "all rounds done"
    assert tree.calls.count("main") == 6  # no turn lost or repeated across the pause
    stored = store.sessions(paused.task_id)
    total = sum(r.usage["input_tokens"] + r.usage["output_tokens"] for r in stored)
    assert total == tree.reported.input_tokens + tree.reported.output_tokens
    assert store.get_task(paused.task_id).settings["max_budget_tokens"] == 50_000


async def test_config_sets_the_budget_and_a_run_within_it_is_untouched(
    workspace: Path, store: SQLiteStore
) -> None:
    config = workspace / ".subagents" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        "[budget]\nmax_tokens = 100000\nmax_usd = 50\n"
        '[prices."scripted:main"]\ninput_per_mtok = 1\n'
        '[prices."scripted:worker"]\ninput_per_mtok = 1\n'
    )
    tree = Tree(rounds=1, steps=1)
    result = await tree.runtime(workspace, store, None).run("go")
    assert result.status == "completed", result.error
    assert result.task_id is not None
    settings = store.get_task(result.task_id).settings
    assert (settings["max_budget_tokens"], settings["max_budget_usd"]) == (100_000, "50.0")


def priced(workspace: Path, *models: str) -> None:
    """$1,000 per million tokens for each of ``models``: 700 tokens, $0.70 a call."""
    config = workspace / ".subagents" / "config.toml"
    config.parent.mkdir(exist_ok=True)
    tables = "".join(
        f'[prices."{model}"]\ninput_per_mtok = 1000\noutput_per_mtok = 1000\n' for model in models
    )
    config.write_text(tables)


async def test_a_budget_in_usd_stops_the_tree_within_one_call_and_goes_on_with_more(
    workspace: Path, store: SQLiteStore
) -> None:
    priced(workspace, "scripted:main", "scripted:worker")
    tree = Tree(rounds=5, steps=4)
    paused = await tree.runtime(workspace, store, None, usd=3.0).run("go")

    assert paused.status == "awaiting_human" and paused.question is not None
    assert paused.question.kind == "budget"
    assert len(tree.calls) == 5  # $0.70 each: $2.80 left room for one more, $3.50 none
    assert "$3.5000 of $3.0000" in paused.question.text
    assert paused.question.arguments["spent_usd"] == "3.5"
    assert paused.task_id is not None
    with pytest.raises(StoreError, match=r"--max-budget-usd 7\.00"):
        await tree.runtime(workspace, store, None).resume(paused.task_id)

    done = await tree.runtime(workspace, store, None, usd=100).resume(paused.task_id)
    assert done.status == "completed", done.error
    assert tree.calls.count("main") == 6
    from subagents.config import load_config

    prices = load_config(workspace).model_prices()
    cost = done.cost(prices)  # what the resumed run's own calls cost
    assert cost.known and cost.usd == Decimal("0.70") * (len(tree.calls) - 5)
    unknown = done.cost()  # without [prices]: these models have no price anywhere
    assert not unknown.known and unknown.usd == 0
    assert store.get_task(paused.task_id).settings["max_budget_usd"] == "100"


async def test_a_budget_in_usd_refuses_a_model_with_no_price_and_says_how_to_give_one(
    workspace: Path, store: SQLiteStore
) -> None:
    tree = Tree(rounds=1, steps=1)
    result = await tree.runtime(workspace, store, None, usd=1.0).run("go")
    assert result.status == "failed" and result.error is not None
    assert "no known price" in result.error and '[prices."scripted:main"]' in result.error
    assert tree.calls == []  # nothing was called that could not be counted


async def test_a_subagent_stops_at_its_own_usd_budget(workspace: Path, store: SQLiteStore) -> None:
    priced(workspace, "scripted:main", "scripted:worker")
    calls: list[str] = []
    capped = WORKER.model_copy(update={"max_budget_usd": 1.5})
    runtime = Runtime(
        cwd=workspace,
        agents=[capped],
        model=delegating("main", "worker", calls),
        agent_models={"worker": reader("worker", 10, calls)},
        store=store,
    )
    result = await runtime.run("go")
    assert result.status == "completed", result.error
    assert calls.count("worker") == 3  # $0.70, $1.40, $2.10: no fourth call
    (spawn,) = result.subagents
    assert spawn.error is not None and "$2.1000 of $1.5000" in spawn.error


def reader(agent: str, steps: int, calls: list[str]) -> FunctionModel:
    """Reads a file ``steps`` times, then answers; 700 tokens a call, each one counted."""

    def turn(request: ModelRequest) -> ModelResponse:
        calls.append(agent)
        done = sum(isinstance(m, ToolResultMessage) for m in request.messages)
        response = (
            tool_call_response("Read", {"file_path": "n.md"})
            if done < steps
            else text_response(f"{agent} read it")
        )
        response.usage = Usage(input_tokens=CALL_TOKENS[0], output_tokens=CALL_TOKENS[1])
        return response

    return FunctionModel(turn, name=f"scripted:{agent}")


def delegating(agent: str, to: str, calls: list[str], budget: int | None = None) -> FunctionModel:
    """Starts ``to`` once (giving it ``budget`` tokens when set), then answers with what came
    back; 700 tokens a call."""

    def turn(request: ModelRequest) -> ModelResponse:
        calls.append(agent)
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if not results:
            task: dict[str, object] = {
                "description": "work",
                "prompt": "read notes",
                "subagent_type": to,
            }
            if budget is not None:
                task["max_budget_tokens"] = budget
            response = tool_call_response("Task", task)
        else:
            response = text_response(f"{agent} heard: {results[-1].content[:80]}")
        response.usage = Usage(input_tokens=CALL_TOKENS[0], output_tokens=CALL_TOKENS[1])
        return response

    return FunctionModel(turn, name=f"scripted:{agent}")


async def test_a_subagent_stops_at_its_own_budget_and_its_parent_goes_on(
    workspace: Path, store: SQLiteStore
) -> None:
    calls: list[str] = []
    capped = WORKER.model_copy(update={"max_budget_tokens": 2_000})
    runtime = Runtime(
        cwd=workspace,
        agents=[capped],
        model=delegating("main", "worker", calls),
        agent_models={"worker": reader("worker", 10, calls)},
        store=store,
    )
    result = await runtime.run("go")
    assert result.status == "completed", result.error
    assert calls.count("worker") == 3  # 700, 1,400, 2,100: no fourth call
    (spawn,) = result.subagents
    assert spawn.status == "failed" and spawn.error is not None
    assert "2,100 of 2,000 tokens" in spawn.error and "maxBudgetTokens" in spawn.error
    assert result.output.startswith("main heard:")


async def test_a_subagent_gets_no_more_than_its_parent_has_left(
    workspace: Path, store: SQLiteStore
) -> None:
    calls: list[str] = []
    lead = AgentDefinition(
        name="lead", description="Leads.", system_prompt="You lead.", max_budget_tokens=3_000
    )
    generous = WORKER.model_copy(update={"max_budget_tokens": 50_000})
    runtime = Runtime(
        cwd=workspace,
        agents=[lead, generous],
        model=delegating("main", "lead", calls),
        agent_models={
            "lead": delegating("lead", "worker", calls),
            "worker": reader("worker", 10, calls),
        },
        store=store,
    )
    result = await runtime.run("go")
    assert result.status == "completed", result.error
    # lead spent 700 before it started worker: worker gets 2,300, not 50,000
    assert calls.count("worker") == 4  # 700 ... 2,100 < 2,300, then 2,800: stopped
    worker = next(s for s in store.sessions(result.task_id or "") if s.agent_name == "worker")
    assert worker.status == "error"
    assert calls.count("lead") == 1  # its own 3,000 were spent by then: it stops too


async def test_a_task_call_gives_a_smaller_budget_and_never_more_than_its_parent_has_left(
    workspace: Path, store: SQLiteStore
) -> None:
    calls: list[str] = []
    lead = AgentDefinition(
        name="lead", description="Leads.", system_prompt="You lead.", max_budget_tokens=3_000
    )

    def runtime(main: FunctionModel, lead_model: FunctionModel) -> Runtime:
        return Runtime(
            cwd=workspace,
            agents=[lead, WORKER],
            model=main,
            agent_models={"lead": lead_model, "worker": reader("worker", 10, calls)},
            store=store,
        )

    # main gives worker 1,000: it stops after its second call (1,400), main goes on
    smaller = await runtime(
        delegating("main", "worker", calls, 1_000), reader("lead", 1, calls)
    ).run("go")
    assert smaller.status == "completed", smaller.error
    assert calls.count("worker") == 2 and "1,400 of 1,000 tokens" in (
        smaller.subagents[0].error or ""
    )

    # lead (3,000 of its own, 700 spent) asks 50,000 for worker: worker gets the 2,300 left
    calls.clear()
    larger = await runtime(
        delegating("main", "lead", calls), delegating("lead", "worker", calls, 50_000)
    ).run("go")
    assert larger.status == "completed", larger.error
    assert calls.count("worker") == 4  # 2,100 < 2,300, then 2,800: stopped
    worker = next(s for s in store.sessions(larger.task_id or "") if s.agent_name == "worker")
    checkpoint = store.checkpoints(larger.task_id or "")
    kept = [c.state.get("own_budget") for c in checkpoint if c.session_id == worker.session_id]
    assert kept[-1] == {"tokens": 2_300}  # kept for a rebuild after a crash


async def test_a_workflows_agent_nodes_share_one_budget_and_resume_with_more(
    workspace: Path, store: SQLiteStore
) -> None:
    from subagents.workflows.graph import AgentNode, Edge, Workflow

    calls: list[str] = []
    first = AgentDefinition(name="first", description="One.", system_prompt="You read.")
    second = AgentDefinition(name="second", description="Two.", system_prompt="You read.")
    workflow = Workflow(
        name="two-readers",
        entry_point="one",
        nodes={"one": AgentNode(agent="first"), "two": AgentNode(agent="second")},
        edges=[Edge(from_="one", to="two")],
    )

    def runtime(budget: int | None) -> Runtime:
        return Runtime(
            cwd=workspace,
            agents=[first, second],
            agent_models={
                "first": reader("first", 3, calls),
                "second": reader("second", 3, calls),
            },
            store=store,
            max_budget_tokens=budget,
        )

    paused = await runtime(4_000).run_workflow(workflow, "go", task_id="readers")
    # first: 4 calls (2,800); second: 2 calls (4,200), then no room: it pauses at node two
    assert paused.status == "awaiting_human", paused.error
    assert paused.question is not None and paused.question.kind == "budget"
    assert (calls.count("first"), calls.count("second")) == (4, 2)

    done = await runtime(20_000).resume("readers")
    assert done.status == "completed", done.error
    assert (calls.count("first"), calls.count("second")) == (4, 4)  # nothing run twice
    assert paused.total_usage.total_tokens == 6 * sum(CALL_TOKENS)  # the agent nodes' calls
    assert done.total_usage.total_tokens == 2 * sum(CALL_TOKENS)


def timed_worker(
    workspace: Path, store: SQLiteStore, seconds: int, only_tool: Tool, turn: ModelFunction
) -> Runtime:
    """main starts ``worker`` once; the worker has ``seconds`` (maxDurationSeconds), the one
    tool ``only_tool``, and takes its turns from ``turn``."""
    limited = WORKER.model_copy(update={"max_duration_seconds": seconds, "tools": [only_tool.name]})
    return Runtime(
        cwd=workspace,
        agents=[limited],
        model=delegating("main", "worker", []),
        agent_models={"worker": FunctionModel(turn, name="scripted:worker")},
        tools=[only_tool],
        store=store,
        permission_mode="bypassPermissions",
    )


async def test_a_subagent_past_its_time_limit_stops_at_its_next_step(
    workspace: Path, store: SQLiteStore
) -> None:
    """maxDurationSeconds: the subagent gets an hour from its start; the tool then moves its
    deadline to now, as an hour of work would, so the next step finds the limit passed. No
    real time is waited for, so a slow or busy machine changes nothing."""

    @tool
    async def Wait(ctx: ToolContext) -> str:
        """Work until the subagent's time is up."""
        session = ctx.session
        assert isinstance(session, Session) and session.time_limit is not None
        deadline, seconds = session.time_limit
        assert seconds == 3600 and 0 < deadline - time.monotonic() <= 3600
        session.time_limit = (time.monotonic(), seconds)  # the hour has passed
        return "waited"

    calls: list[str] = []

    def slow(request: ModelRequest) -> ModelResponse:
        calls.append("worker")
        done = sum(isinstance(m, ToolResultMessage) for m in request.messages)
        return tool_call_response("Wait", {}) if done < 5 else text_response("finished")

    result = await timed_worker(workspace, store, 3600, Wait, slow).run("go")
    assert result.status == "completed", result.error
    (spawn,) = result.subagents
    assert spawn.status == "failed" and spawn.error is not None
    assert "time limit of 3600 s" in spawn.error and "maxDurationSeconds" in spawn.error
    assert calls == ["worker"]  # one call, one wait, then it was stopped


@pytest.mark.parametrize("hangs_in", ["model", "tool"])
async def test_a_subagent_that_hangs_is_stopped_at_its_time_limit_and_its_parent_goes_on(
    workspace: Path, store: SQLiteStore, hangs_in: str
) -> None:
    """A provider that never answers, or a tool that never returns: the subagent's time limit
    cuts the call short (a real second: the hang itself never ends, so nothing but the limit
    can end the test, however busy the machine)."""
    never = asyncio.Event()

    @tool
    async def Hang(ctx: ToolContext) -> str:
        """Never returns."""
        await never.wait()
        return "unreachable"

    async def stuck(request: ModelRequest) -> ModelResponse:
        if hangs_in == "model" or any(isinstance(m, ToolResultMessage) for m in request.messages):
            await never.wait()
        return tool_call_response("Hang", {})

    result = await timed_worker(workspace, store, 1, Hang, stuck).run("go")
    assert result.status == "completed", result.error
    (spawn,) = result.subagents
    assert spawn.status == "failed" and spawn.error is not None
    during = "a model call" if hangs_in == "model" else "its tool calls"
    assert f"time limit of 1 s, cutting {during} short" in spawn.error
    worker = next(s for s in store.sessions(result.task_id or "") if s.agent_name == "worker")
    assert worker.status == "error"


async def test_a_subagents_own_budget_outlives_a_pause_and_a_rebuild(
    workspace: Path, store: SQLiteStore
) -> None:
    """The worker's budget came from its Task call, not its file: a resumed run rebuilds the
    worker from the store and must keep it."""
    calls: list[str] = []

    def writer(request: ModelRequest) -> ModelResponse:
        calls.append("worker")
        done = sum(isinstance(m, ToolResultMessage) for m in request.messages)
        if done == 2:  # the third call writes: a person must approve it
            response = tool_call_response("Write", {"file_path": "out.md", "content": "x"})
        else:
            response = tool_call_response("Read", {"file_path": "n.md"})
        response.usage = Usage(input_tokens=CALL_TOKENS[0], output_tokens=CALL_TOKENS[1])
        return response

    def runtime() -> Runtime:
        return Runtime(
            cwd=workspace,
            agents=[WORKER],
            model=delegating("main", "worker", calls, 3_000),
            agent_models={"worker": FunctionModel(writer, name="scripted:worker")},
            store=store,
            headless="pause",
        )

    paused = await runtime().run("go")
    assert paused.status == "awaiting_human" and paused.task_id is not None
    assert calls.count("worker") == 3
    done = await runtime().resume(paused.task_id, HumanDecision("approve"))
    assert done.status == "completed", done.error
    assert (workspace / "out.md").exists()
    assert calls.count("worker") == 5  # 2,800 < 3,000, then 3,500: its own budget held
    (spawn,) = done.subagents
    assert spawn.error is not None and "3,500 of 3,000 tokens" in spawn.error


@pytest.mark.parametrize("budget", [None, 10_000])
async def test_the_task_tool_offers_a_budget_only_to_a_run_that_has_one(
    workspace: Path, store: SQLiteStore, budget: int | None
) -> None:
    main = FunctionModel(lambda request: "nothing to do", name="scripted:main")
    runtime = Runtime(cwd=workspace, agents=[WORKER], model=main, store=store)
    runtime.budget_limits = Limits(budget)
    await runtime.run("go")
    (task_tool,) = [spec for spec in main.requests[0].tools if spec.name == "Task"]
    offered = "max_budget_tokens" in task_tool.parameters["properties"]
    assert offered == (budget is not None)
