"""The durable peer: LangGraph's ReAct agent with its SQLite checkpointer, workloads W1-W3.

../shared/peer-bench measures every peer with nothing persisted; `subagents` users get a store
by default. This script runs the same workloads as ../shared/peer-bench/bench_langgraph.py
(same fake model logic, same `common.py` harness) with LangGraph's ``AsyncSqliteSaver`` on a
file, a new thread per run: the durable counterpart to compare our store-on rows with. Run it
with the peer venv's python (it needs ``langgraph-checkpoint-sqlite`` and ``aiosqlite``):

    $PEER_PY bench/peer_langgraph_durable.py w1|w2|w3 [--iters N --warmup N]
"""
# ruff: noqa: E402
# mypy: ignore-errors
# (run by the peer venv's python: its imports are not installed where the type check runs)

from __future__ import annotations

import asyncio
import importlib.metadata as md
import itertools
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore")
PEER_BENCH = Path(
    os.environ.get("PEER_BENCH_DIR", Path(__file__).resolve().parents[2] / "shared" / "peer-bench")
)
sys.path.insert(0, str(PEER_BENCH))

from common import (
    COUNTS,
    W1_STEPS,
    W2_SUB_STEPS,
    W3_FANOUT,
    W3_LATENCY,
    W3_SUB_ROUNDS,
    emit,
    parse_args,
    time_async,
)
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.prebuilt import create_react_agent

FRAMEWORK = "langgraph (sqlite checkpointer)"
VERSIONS = {
    "langgraph": md.version("langgraph"),
    "langgraph-checkpoint-sqlite": md.version("langgraph-checkpoint-sqlite"),
}
_ids = itertools.count()
_threads = itertools.count()


class FakeToolModel(BaseChatModel):
    n_rounds: int
    tool_name: str
    fanout: int = 1
    latency: float = 0.0
    args_key: str = "x"

    @property
    def _llm_type(self) -> str:
        return "fake-tool-model"

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeToolModel:
        return self

    def _decide(self, messages: list[Any]) -> AIMessage:
        COUNTS["model:" + self.tool_name] += 1
        rounds = sum(1 for m in messages if isinstance(m, AIMessage) and m.tool_calls)
        if rounds < self.n_rounds:
            calls = [
                {
                    "name": self.tool_name,
                    "args": {self.args_key: f"item-{rounds}-{j}"},
                    "id": f"call_{next(_ids)}",
                    "type": "tool_call",
                }
                for j in range(self.fanout)
            ]
            return AIMessage(content="", tool_calls=calls)
        return AIMessage(content="done")

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        return ChatResult(generations=[ChatGeneration(message=self._decide(messages))])

    async def _agenerate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Any:
        if self.latency:
            await asyncio.sleep(self.latency)
        return ChatResult(generations=[ChatGeneration(message=self._decide(messages))])


@tool
def echo(x: str) -> str:
    """Echo a short string."""
    COUNTS["echo"] += 1
    return "ok:" + x


def config() -> dict[str, Any]:
    return {"recursion_limit": 200, "configurable": {"thread_id": f"t{next(_threads)}"}}


async def main() -> None:
    args = parse_args()
    with tempfile.TemporaryDirectory() as folder:
        async with AsyncSqliteSaver.from_conn_string(str(Path(folder) / "lg.db")) as saver:
            await run(args, saver)


async def run(args: Any, saver: Any) -> None:
    def inputs() -> dict[str, Any]:
        return {"messages": [HumanMessage("go")]}

    def sub_agent(rounds: int, latency: float = 0.0) -> Any:
        model = FakeToolModel(n_rounds=rounds, tool_name="echo", latency=latency)
        return create_react_agent(model, [echo], prompt="sub", checkpointer=saver)

    def parent_agent(sub: Any, fanout: int) -> Any:
        @tool
        async def delegate(task: str) -> str:
            """Delegate a task to a subagent and return its summary."""
            out = await sub.ainvoke({"messages": [HumanMessage(task)]}, config())
            return str(out["messages"][-1].content)

        model = FakeToolModel(n_rounds=1, tool_name="delegate", fanout=fanout, args_key="task")
        return create_react_agent(model, [delegate], prompt="parent", checkpointer=saver)

    if args.workload == "w1":
        model = FakeToolModel(n_rounds=W1_STEPS, tool_name="echo")
        agent = create_react_agent(model, [echo], prompt="agent", checkpointer=saver)
        out = await agent.ainvoke(inputs(), config())
        assert out["messages"][-1].content == "done"
        stats = await time_async(
            lambda: agent.ainvoke(inputs(), config()), args.warmup or 10, args.iters or 100
        )
        stats["per_model_turn_us"] = stats["median_ms"] * 1e3 / (W1_STEPS + 1)
        stats["cpu_per_model_turn_us"] = stats["cpu_median_ms"] * 1e3 / (W1_STEPS + 1)
        emit(FRAMEWORK, "w1", stats, VERSIONS)
    elif args.workload == "w2":
        parent = parent_agent(sub_agent(W2_SUB_STEPS), 1)
        stats = await time_async(
            lambda: parent.ainvoke(inputs(), config()), args.warmup or 10, args.iters or 100
        )
        emit(FRAMEWORK, "w2", stats, VERSIONS)
    elif args.workload == "w3":
        fanout = int(os.environ.get("W3_FANOUT", W3_FANOUT))
        parent = parent_agent(sub_agent(W3_SUB_ROUNDS, W3_LATENCY), fanout)
        await parent.ainvoke(inputs(), config())
        times = []
        for _ in range(args.iters or 5):
            started = time.perf_counter()
            await parent.ainvoke(inputs(), config())
            times.append(time.perf_counter() - started)
        stats = {
            "wall_ms_each": [t * 1e3 for t in times],
            "median_ms": sorted(times)[len(times) // 2] * 1e3,
        }
        emit(FRAMEWORK, "w3", stats, VERSIONS)


if __name__ == "__main__":
    asyncio.run(main())
