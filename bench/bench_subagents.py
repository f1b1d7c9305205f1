"""The peer-bench workloads (W1-W4) written for `subagents`, on the path users take.

Same fake-model logic as ../shared/peer-bench (it imports that folder's `common.py`): on each
call the model counts the tool-call rounds already in the conversation; below ``n_rounds`` it
asks for ``fanout`` calls to its tool, else it answers "done". Tool-call arguments go through
``json.dumps`` / ``json.loads`` as a real provider adapter's would.

Every workload runs through ``Runtime.run`` with a SQLite store (each run a durable task, as
``subagents run`` does) and the tool declared as users declare it: a plain ``def`` under
``@tool``, neither read-only nor inline. ``BENCH_STORE=off`` runs without the store;
``BENCH_TOOL=read_only|inline|async`` declares the tool ``read_only=True``,
``run_in_thread=False`` or ``async def``.

    python bench/bench_subagents.py w1|w2|w3|w4a|w4b|check [--iters N --warmup N]
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

__all__ = [
    "W1_STEPS",
    "WORKSPACE",
    "delegation_runtime",
    "echo",
    "fake_model",
    "main",
    "w1_runtime",
    "w1_session",
]

PEER_BENCH = Path(
    os.environ.get("PEER_BENCH_DIR", Path(__file__).resolve().parents[2] / "shared" / "peer-bench")
)
sys.path.insert(0, str(PEER_BENCH))

from common import (  # type: ignore[import-not-found]  # noqa: E402
    COUNTS,
    W1_STEPS,
    W2_SUB_STEPS,
    W3_FANOUT,
    W3_LATENCY,
    W3_SUB_ROUNDS,
    W4_N,
    emit,
    memory_probe,
    parse_args,
    peak_rss_mb,
    rss_mb,
    time_async,
)

import subagents  # noqa: E402
from subagents.config import Config, SubagentsSettings  # noqa: E402
from subagents.definitions.model import AgentDefinition  # noqa: E402
from subagents.inventory import Inventory  # noqa: E402
from subagents.messages import AssistantMessage, ToolCall  # noqa: E402
from subagents.models.base import ModelRequest, ModelResponse  # noqa: E402
from subagents.runtime.result import RunResult  # noqa: E402
from subagents.runtime.runtime import Runtime  # noqa: E402
from subagents.runtime.session import Session  # noqa: E402
from subagents.store import Store, open_store  # noqa: E402
from subagents.testing import FunctionModel  # noqa: E402
from subagents.tools.base import ToolRegistry  # noqa: E402
from subagents.tools.decorator import tool  # noqa: E402

VERSIONS = {"subagents": subagents.__version__}
W3_FANOUT = int(os.environ.get("W3_FANOUT", W3_FANOUT))  # 100; the 500 row sets it
_ids = itertools.count()
WORKSPACE = Path(tempfile.gettempdir())


def fake_model(
    n_rounds: int, tool_name: str, fanout: int = 1, latency: float = 0.0, args_key: str = "x"
) -> FunctionModel:
    async def respond(request: ModelRequest) -> ModelResponse:
        COUNTS["model:" + tool_name] += 1
        if latency:
            await asyncio.sleep(latency)
        rounds = sum(
            1 for m in request.messages if isinstance(m, AssistantMessage) and m.tool_calls
        )
        if rounds < n_rounds:
            calls = tuple(
                ToolCall(
                    f"call_{next(_ids)}",
                    tool_name,
                    json.loads(json.dumps({args_key: f"item-{rounds}-{j}"})),
                )
                for j in range(fanout)
            )
            return ModelResponse(tool_calls=calls, stop_reason="tool_use")
        return ModelResponse(text="done")

    # a peer's fake model keeps nothing; ours would keep every request, and so every history,
    # alive for the whole benchmark, slowing each full garbage collection
    return FunctionModel(respond, name=f"bench:{tool_name}", keep_requests=False)


def _echo(x: str) -> str:
    """Echo the input."""
    COUNTS["echo"] += 1
    return "ok:" + x


async def _async_echo(x: str) -> str:
    """Echo the input."""
    return _echo(x)


# The workload's tool is a plain function under `@tool`, as users write it: not read-only (so
# each call is in the tool ledger) and run in a worker thread (it might block). BENCH_TOOL
# declares it otherwise.
_TOOL_KIND = os.environ.get("BENCH_TOOL", "default")
if _TOOL_KIND == "async":
    echo = tool(name="echo")(_async_echo)
elif _TOOL_KIND == "inline":
    echo = tool(name="echo", run_in_thread=False)(_echo)
elif _TOOL_KIND == "read_only":
    echo = tool(name="echo", read_only=True)(_echo)
else:
    echo = tool(name="echo")(_echo)
VERSIONS["tool"] = _TOOL_KIND
STORE_KIND = os.environ.get("BENCH_STORE", "on")  # on (SQLite), off, or postgres
STORE_ON = STORE_KIND != "off"
VERSIONS["store"] = STORE_KIND
# BENCH_STORE=postgres: a fresh schema in this database (the project machines' server)
BENCH_PG = os.environ.get("BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")


def bench_store() -> Store | None:
    """A store in a fresh folder (it grows with the runs, as a project's does), a fresh
    PostgreSQL schema with BENCH_STORE=postgres, or none."""
    if not STORE_ON:
        return None
    if STORE_KIND == "postgres":
        import atexit
        import uuid

        import psycopg

        schema = f"bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(BENCH_PG, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {schema}")
        store = open_store(f"{BENCH_PG}?options=-csearch_path%3D{schema}")

        def drop() -> None:
            store.close()
            with psycopg.connect(BENCH_PG, autocommit=True) as admin:
                admin.execute(f"DROP SCHEMA {schema} CASCADE")

        atexit.register(drop)
        return store
    return open_store(Path(tempfile.mkdtemp(prefix="bench-store-")) / "state.db")


def w1_runtime() -> Runtime:
    return Runtime(
        cwd=WORKSPACE,
        model=fake_model(W1_STEPS, "echo"),
        tools=[echo],
        builtin_tools=False,
        permission_mode="bypassPermissions",
        config=Config(subagents=SubagentsSettings(max_turns=200)),  # W1_STEPS may be 50
        store=bench_store(),
    )


def w1_session() -> Session:
    return Session(
        model=fake_model(W1_STEPS, "echo"),
        system_prompt="agent",
        tools=ToolRegistry([echo]),
        workspace=WORKSPACE,
        max_turns=200,  # as the baseline's loop: W1_STEPS may be 50
    )


def delegation_runtime(sub_rounds: int, fanout: int, latency: float) -> Runtime:
    """A parent whose model makes ``fanout`` Task calls to the `sub` agent, once."""
    sub = AgentDefinition(
        name="sub", description="Bench subagent.", system_prompt="sub", tools=["echo"]
    )
    # The default limit of 20 concurrent subagents per parent would queue W3's 100; the
    # workload asks for 100 at once, so the bench raises the limit as a user would.
    config = Config(subagents=SubagentsSettings(max_concurrent=max(fanout, 20)))
    inventory = Inventory.discover(
        WORKSPACE, config=config, explicit=[sub], tool_names=["echo"], include_builtin=False
    )
    parent_model = fake_model(1, "Task", fanout=fanout, args_key="prompt")

    async def parent(request: ModelRequest) -> ModelResponse:
        response = await parent_model.request(request)
        # the fake model only fills `prompt`; a Task call also names the agent
        calls = tuple(
            ToolCall(c.id, c.name, {"description": "bench", "subagent_type": "sub", **c.arguments})
            for c in response.tool_calls
        )
        return ModelResponse(text=response.text, tool_calls=calls, stop_reason=response.stop_reason)

    return Runtime(
        cwd=WORKSPACE,
        config=config,
        inventory=inventory,
        model=FunctionModel(parent, name="bench:parent", keep_requests=False),
        agent_models={"sub": fake_model(sub_rounds, "echo", latency=latency)},
        tools=[echo],
        builtin_tools=False,
        permission_mode="bypassPermissions",
        store=bench_store(),
    )


async def main() -> None:
    args = parse_args()
    if args.workload in ("w1", "check"):
        runtime = w1_runtime()
        run: Callable[[], Awaitable[RunResult]] = lambda: runtime.run("go")  # noqa: E731
        result = await run()
        assert result.output == "done", result
        if args.workload == "check":
            print(dict(COUNTS))
            COUNTS.clear()
        else:
            stats: dict[str, Any] = await time_async(run, args.warmup or 50, args.iters or 1000)
            stats["per_model_turn_us"] = stats["median_ms"] * 1e3 / (W1_STEPS + 1)
            stats["cpu_per_model_turn_us"] = stats["cpu_median_ms"] * 1e3 / (W1_STEPS + 1)
            emit("subagents", "w1", stats, VERSIONS)
    if args.workload in ("w2", "check"):
        runtime = delegation_runtime(W2_SUB_STEPS, 1, 0.0)
        run = lambda: runtime.run("go")  # noqa: E731
        result = await run()
        assert result.output == "done", result
        if args.workload == "check":
            print(dict(COUNTS))
            COUNTS.clear()
        else:
            stats = await time_async(run, args.warmup or 50, args.iters or 2000)
            emit("subagents", "w2", stats, VERSIONS)
    if args.workload in ("w3", "check"):
        runtime = delegation_runtime(W3_SUB_ROUNDS, W3_FANOUT, W3_LATENCY)
        run = lambda: runtime.run("go")  # noqa: E731
        await run()
        gc.collect()
        r0 = rss_mb()
        times, cpus = [], []
        for _ in range(args.iters or 5):
            c0, t0 = time.process_time(), time.perf_counter()
            result = await run()
            times.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        assert result.output == "done", result
        stats = {
            "wall_ms_each": [t * 1e3 for t in times],
            "median_ms": sorted(times)[len(times) // 2] * 1e3,
            "cpu_ms_each": [c * 1e3 for c in cpus],
            "rss_before_mb": r0,
            "peak_rss_mb": peak_rss_mb(),
        }
        if args.workload == "check":
            print(dict(COUNTS))
            COUNTS.clear()
            print(stats)
        else:
            emit("subagents", "w3", stats, VERSIONS)
    if args.workload == "w4a":
        model = fake_model(1, "echo")
        registry = ToolRegistry([echo])
        stats = memory_probe(
            lambda i: Session(
                model=model, system_prompt=f"agent {i}", tools=registry, workspace=WORKSPACE
            )
        )
        emit("subagents", "w4a", stats, VERSIONS)
    if args.workload == "w4b":
        model = fake_model(1, "echo")
        registry = ToolRegistry([echo])

        async def one() -> Any:
            session = Session(
                model=model, system_prompt="agent", tools=registry, workspace=WORKSPACE
            )
            return (await session.run("go")).messages

        for _ in range(20):
            await one()
        gc.collect()
        r0 = rss_mb()
        keep = [await one() for _ in range(W4_N)]
        gc.collect()
        r1 = rss_mb()
        emit(
            "subagents",
            "w4b",
            {
                "n": W4_N,
                "rss_growth_mb_per_1000": (r1 - r0) * 1000 / W4_N,
                "kib_per_session": (r1 - r0) * 1024 / W4_N,
                "held": f"message list x{len(keep)}",
            },
            VERSIONS,
        )


if __name__ == "__main__":
    asyncio.run(main())
