"""Run the suite through ``Runtime.run`` with whatever ``subagents`` is on ``PYTHONPATH``.

Each task runs in a fresh temporary workspace whose ``.subagents/config.toml`` names the
endpoint as ``[providers.weak]``, with the store on and ``headless="pause"``, as ``subagents
run`` does. A config key the tree does not know (``tool_calls`` before issue 10) is left out
and the row says so: the old code then runs as it would for a user who could not set it.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from weak_models.policies import Policy
from weak_models.server import WeakModelServer
from weak_models.tasks import SuiteTask, judge, new_secret

__all__ = ["Endpoint", "run_suite"]

PROVIDER = "weak"
_KEY_VARIABLE = "WEAK_MODELS_BENCH_KEY"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the model is: ``policy`` for a scripted one, else ``base_url`` of a real one."""

    model: str = "weak-model"
    policy: Policy | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    tool_calls: str | None = None  # overrides the policy's own
    tool_descriptions: str | None = None
    timeout_seconds: float = 600.0
    stream: bool = True  # as `subagents run` does (not with --json)

    @property
    def label(self) -> str:
        return self.policy.name if self.policy is not None else f"real:{self.model}"


def accepted_provider_keys() -> set[str]:
    from subagents.models.settings import ProviderSettings

    return set(ProviderSettings.model_fields)


def config_text(endpoint: Endpoint, base_url: str) -> tuple[str, list[str]]:
    """The project config.toml, and the keys left out because this tree does not know them."""
    known = accepted_provider_keys()
    lines = ["[providers.weak]", f'base_url = "{base_url}"']
    lines.append(f'api_key_env = "{endpoint.api_key_env or _KEY_VARIABLE}"')
    lines.append(f"timeout_seconds = {endpoint.timeout_seconds}")
    policy_mode = None
    if endpoint.policy is not None:
        # a policy scripts a server's native or text answers: read in auto mode unless it
        # says otherwise (a server on 127.0.0.1 would otherwise get schema turns)
        policy_mode = endpoint.policy.tool_calls or "auto"
    wanted = {
        "tool_calls": endpoint.tool_calls or policy_mode,
        "tool_descriptions": endpoint.tool_descriptions,
    }
    dropped = []
    for key, value in wanted.items():
        if value is None:
            continue
        if key in known:
            lines.append(f'{key} = "{value}"')
        else:
            dropped.append(f"{key} = {value!r} (not a setting in this tree)")
    return "\n".join(lines) + "\n", dropped


async def run_task(
    task: SuiteTask, endpoint: Endpoint, server: WeakModelServer, home: Path
) -> dict[str, Any]:
    from subagents.errors import SubagentsError
    from subagents.runtime.runtime import Runtime
    from subagents.store.sqlite import open_store

    secret = new_secret()
    with tempfile.TemporaryDirectory(prefix="weak-models-") as directory:
        root = Path(directory)
        task.build(root, secret)
        (root / ".subagents").mkdir()
        config, dropped = config_text(endpoint, server.base_url)
        (root / ".subagents" / "config.toml").write_text(config)
        os.environ["SUBAGENTS_HOME"] = str(home)
        requests_before, lines_before = server.mark()
        store = open_store(cwd=root)
        runtime = Runtime(
            cwd=root,
            model=f"{PROVIDER}:{endpoint.model}",
            store=store,
            headless="pause",
            stream=endpoint.stream,
        )
        output, status, error, task_id = "", "error", None, None
        started = time.perf_counter()
        try:
            result = await asyncio.wait_for(runtime.run(task.prompt), endpoint.timeout_seconds)
            output, status, error = result.output, result.status, result.error
            task_id = result.task_id
        except SubagentsError as exc:
            error = f"{type(exc).__name__}: {exc}"
        except TimeoutError:
            error = f"no answer within {endpoint.timeout_seconds:.0f} s"
        finally:
            await runtime.aclose()
        wall = time.perf_counter() - started
        if task_id is None:
            tasks = store.list_tasks(limit=1)
            task_id = tasks[0].id if tasks else None
        sessions = store.sessions(task_id) if task_id else []
        store.close()
        requests_after, lines_after = server.mark()
    types = [s.agent_name for s in sessions if s.parent_session_id is not None]
    outcome = judge(task, secret, output, status, types)
    return {
        "task": task.name,
        "policy": endpoint.label,
        **asdict(outcome),
        "turns": sum(s.turns for s in sessions),
        "requests": requests_after - requests_before,
        "wall_s": round(wall, 4),
        "error": _short(error),
        "output": _short(output.replace(secret, "<secret>")),
        "config_dropped": dropped,
        "transcript": [
            line.replace(secret, "<secret>")
            for line in server.transcript[lines_before:lines_after][:16]
        ],
    }


def run_suite(endpoints: list[Endpoint], tasks: list[SuiteTask]) -> list[dict[str, Any]]:
    """Every task against every endpoint, one after another; a row per run.

    The user scope is an empty temporary home (``SUBAGENTS_HOME``); the environment is put
    back as it was afterwards."""
    saved = {name: os.environ.get(name) for name in ("SUBAGENTS_HOME", _KEY_VARIABLE)}
    os.environ.setdefault(_KEY_VARIABLE, "sk-weak-models-bench")
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="weak-models-home-") as home:
            for endpoint in endpoints:
                server = WeakModelServer(endpoint.policy, upstream=endpoint.base_url)
                with server:
                    for task in tasks:
                        rows.append(asyncio.run(run_task(task, endpoint, server, Path(home))))
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return rows


def _short(text: str | None, limit: int = 300) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 3] + "..."
