"""`make eval`: delegation tasks run by a real small model, the way users run one.

The model is Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, see ``model_weights.py``), on the CPU. Each
task of ``eval_tasks.py`` runs through the `subagents run` command in a fresh project, once
per path:

- ``in-process``: ``--model llamacpp:PATH.gguf``, the model run inside the CLI's process;
- ``server``: llama-cpp-python's own OpenAI-compatible server (its ``server`` extra), started
  here on 127.0.0.1, and the CLI pointed at it with ``OPENAI_BASE_URL``, as the guides of
  local servers tell people to do, with no config file and no API key.

A recording proxy sits between the CLI and the server: every request and answer of a task is
kept in its folder under ``eval-results/`` (with the run's progress output and, for a failed
task, an export of the stored task), for turning a failure into a replay test.

The table at the end: task, path, success (and why not), model requests, wall time, prompt
tokens (all requests of the run, and the main agent's first). Slow by nature: about a minute
a task on 2 cores. Not part of `make test`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from eval_tasks import TASKS, Call, EvalTask, Outcome, SessionView
from model_weights import ensure_model
from record_proxy import RecordingProxy

ROOT = Path(__file__).resolve().parents[1]
PATHS = ("in-process", "server")
SERVER_MODEL = "openai:qwen2.5-coder-1.5b-instruct"
CONTEXT_TOKENS = 8192
TASK_SECONDS = 300.0  # a delegation task slower than this has failed the 45 s goal anyway


@dataclass
class Row:
    task: str
    path: str
    success: bool
    why: str
    requests: int
    seconds: float
    prompt_tokens: int
    first_prompt_tokens: int
    folder: str


def main() -> int:
    args = _arguments()
    tasks = [t for t in TASKS if not args.tasks or t.name in args.tasks]
    unknown = set(args.tasks or ()) - {t.name for t in TASKS}
    if unknown:
        print(f"unknown tasks: {', '.join(sorted(unknown))}; known: {[t.name for t in TASKS]}")
        return 2
    gguf = ensure_model()
    out = args.out or ROOT / "eval-results" / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    print(f"model: {gguf}\nresults: {out}", flush=True)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="subagents-eval-") as scratch:
        home = Path(scratch) / "home"  # no user-level agents or config of whoever runs it
        home.mkdir()
        for path in args.paths:
            rows += _run_path(path, tasks, args.repeat, gguf, Path(scratch), home, out)
    (out / "results.json").write_text(json.dumps([asdict(r) for r in rows], indent=2))
    _print_table(rows)
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    parser.add_argument("--tasks", nargs="+", help="only these tasks (default: all)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each task (default 1)")
    parser.add_argument("--out", type=Path, help="results folder (default eval-results/TIME)")
    return parser.parse_args()


def _run_path(
    path: str,
    tasks: list[EvalTask],
    repeat: int,
    gguf: Path,
    scratch: Path,
    home: Path,
    out: Path,
) -> list[Row]:
    env = {**os.environ, "HOME": str(home)}
    env.pop("SUBAGENTS_STORE", None)
    server = proxy = None
    if path == "server":
        server, upstream = _start_server(gguf, out / "server.log")
        proxy = RecordingProxy(upstream)
        env["OPENAI_BASE_URL"] = f"http://127.0.0.1:{proxy.port}/v1"
        model = SERVER_MODEL
    else:
        model = f"llamacpp:{gguf}"
    rows = []
    try:
        for task in tasks:
            for attempt in range(1, repeat + 1):
                folder = out / f"{path}-{task.name}-{attempt}"
                folder.mkdir()
                if proxy is not None:
                    proxy.log = folder / "exchanges.jsonl"
                row = _run_task(task, path, model, env, scratch / folder.name, folder, gguf)
                rows.append(row)
                mark = "ok  " if row.success else "FAIL"
                print(
                    f"{mark} {path:10} {task.name:15} {row.seconds:6.1f}s "
                    f"{row.requests:3} requests  {row.why}",
                    flush=True,
                )
    finally:
        if proxy is not None:
            proxy.close()
        if server is not None:
            _stop(server)
    return rows


def _run_task(
    task: EvalTask,
    path: str,
    model: str,
    env: dict[str, str],
    workspace: Path,
    folder: Path,
    gguf: Path,
) -> Row:
    missing = [needed for needed in task.needs if not needed.is_file()]
    if missing:
        skipped = f"skipped: {missing[0]} is not here (../shared beside the clone)"
        return Row(task.name, path, False, skipped, 0, 0.0, 0, 0, str(folder))
    _make_project(task, workspace)
    command = [sys.executable, "-m", "subagents", "run", task.prompt, "--model", model, "--yes"]
    started = time.monotonic()
    with (folder / "progress.txt").open("w") as progress:
        process = subprocess.Popen(
            command,
            cwd=workspace,
            env=env,
            stdout=progress,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            exit_code: int | None = process.wait(timeout=TASK_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            exit_code = None
    seconds = time.monotonic() - started
    outcome = _outcome(workspace, exit_code)
    why = task.check(outcome)
    if outcome.status == "not stored":  # the command failed before the run: say how
        printed = " ".join((folder / "progress.txt").read_text(errors="replace").split())
        why = f"no run: {printed[:160]}"
    elif why is not None:  # the stored task, for a replay test
        _export(workspace, folder)
    sessions = outcome.sessions
    main = [s for s in sessions if s.parent_id is None]
    return Row(
        task=task.name,
        path=path,
        success=why is None,
        why=why or "",
        requests=sum(s.usage.get("requests", 0) for s in sessions),
        seconds=round(seconds, 1),
        prompt_tokens=sum(s.usage.get("input_tokens", 0) for s in sessions)
        or sum(_counted_prompts(folder, gguf)),
        first_prompt_tokens=_first_prompt_tokens(folder, main)
        or next(iter(_counted_prompts(folder, gguf)), 0),
        folder=str(folder),
    )


def _make_project(task: EvalTask, workspace: Path) -> None:
    workspace.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    for name, text in task.files.items():
        target = workspace / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    agents = workspace / ".claude" / "agents"
    agents.mkdir(parents=True)
    for name, text in task.agents.items():
        (agents / f"{name}.md").write_text(text)
    for needed in task.needs:
        shutil.copy(needed, agents / needed.name)


def _outcome(workspace: Path, exit_code: int | None) -> Outcome:
    from subagents.store.sqlite import open_store

    database = workspace / ".subagents" / "state.db"
    if not database.is_file():
        return Outcome(exit_code, "not stored", "", (), workspace)
    store = open_store(database, read_only=True)
    try:
        tasks = store.list_tasks(limit=1)
        if not tasks:
            return Outcome(exit_code, "not stored", "", (), workspace)
        task = tasks[0]
        sessions = tuple(
            _session_view(record, store.messages(record.session_id))
            for record in store.sessions(task.id)
        )
        return Outcome(exit_code, task.status, task.result or "", sessions, workspace)
    finally:
        store.close()


def _session_view(record: Any, messages: list[dict[str, Any]]) -> SessionView:
    results = {
        m["tool_call_id"]: m for m in messages if m.get("role") == "tool" and "tool_call_id" in m
    }
    calls = []
    for message in messages:
        for call in message.get("tool_calls") or ():
            result = results.get(call["id"], {})
            calls.append(
                Call(
                    name=call["name"],
                    arguments=call.get("arguments") or {},
                    result=str(result.get("content", "")),
                    is_error=bool(result.get("is_error", True)),
                )
            )
    return SessionView(
        session_id=record.session_id,
        agent=record.agent_name,
        parent_id=record.parent_session_id,
        status=record.status,
        background=record.background,
        calls=tuple(calls),
        usage=dict(record.usage),
        turns=record.turns,
    )


def _first_prompt_tokens(folder: Path, main: list[SessionView]) -> int:
    """The prompt tokens of the run's first request, as the server counted them (the server
    path), else 0: the in-process path reports a session's tokens in sum only."""
    log = folder / "exchanges.jsonl"
    if not log.is_file():
        return 0
    for line in log.read_text().splitlines():
        answer = json.loads(line).get("answer")
        usage = _usage_of(answer)
        if usage:
            return int(usage.get("prompt_tokens", 0))
    return 0


_CHATML_TOKENS = 5  # <|im_start|>, the role, "\n" ... <|im_end|>, "\n" around each message
_tokenizers: dict[Path, Any] = {}


def _counted_prompts(folder: Path, gguf: Path) -> list[int]:
    """The prompt tokens of each request the server answered, counted with the model's own
    tokenizer over its chat template's messages: llama-cpp-python's server sends no usage
    in a stream, and schema turns are streamed."""
    log = folder / "exchanges.jsonl"
    if not log.is_file():
        return []
    if gguf not in _tokenizers:
        from llama_cpp import Llama

        _tokenizers[gguf] = Llama(model_path=str(gguf), vocab_only=True, verbose=False)
    tokenizer = _tokenizers[gguf]
    counts = []
    for line in log.read_text().splitlines():
        exchange = json.loads(line)
        if exchange.get("status") != 200:
            continue
        messages = exchange["request"].get("messages", [])
        texts = [str(message.get("content") or "") for message in messages]
        tokens = sum(len(tokenizer.tokenize(t.encode(), add_bos=False)) for t in texts)
        counts.append(tokens + _CHATML_TOKENS * (len(messages) + 1))
    return counts


def _usage_of(answer: Any) -> dict[str, Any] | None:
    if isinstance(answer, dict):
        usage = answer.get("usage")
        return usage if isinstance(usage, dict) else None
    if isinstance(answer, str):  # a stream: the usage rides on one of the last events
        for line in reversed(answer.splitlines()):
            if line.startswith("data: {"):
                usage = json.loads(line[len("data: ") :]).get("usage")
                if isinstance(usage, dict):
                    return usage
    return None


def _export(workspace: Path, folder: Path) -> None:
    from subagents.store.sqlite import open_store

    database = workspace / ".subagents" / "state.db"
    if not database.is_file():
        return
    store = open_store(database, read_only=True)
    try:
        tasks = store.list_tasks(limit=1)
    finally:
        store.close()
    if tasks:
        subprocess.run(
            [sys.executable, "-m", "subagents", "export", tasks[0].id, str(folder / "export")],
            cwd=workspace,
            capture_output=True,
            check=False,
        )


def _start_server(gguf: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    threads = len(os.sched_getaffinity(0))
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", str(CONTEXT_TOKENS), "--n_threads", str(threads),
    ]  # fmt: skip
    with log.open("w") as output:
        server = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    upstream = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the model server exited with {server.returncode}; see {log}")
        try:
            with urllib.request.urlopen(f"{upstream}/v1/models", timeout=5):
                return server, upstream
        except OSError:
            time.sleep(0.5)  # a server starting up: there is no event to wait on
    _stop(server)
    raise SystemExit(f"the model server did not answer within 180 s; see {log}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _print_table(rows: list[Row]) -> None:
    print()
    print(f"{'task':15} {'path':10} {'ok':4} {'requests':>8} {'wall s':>7} {'prompt tok':>10} "
          f"{'first req':>9}  why not")  # fmt: skip
    for r in rows:
        print(
            f"{r.task:15} {r.path:10} {'yes' if r.success else 'no':4} {r.requests:8} "
            f"{r.seconds:7.1f} {r.prompt_tokens:10} {r.first_prompt_tokens or '':>9}  {r.why}"
        )
    print()
    for path in dict.fromkeys(r.path for r in rows):
        ran = [r for r in rows if r.path == path and not r.why.startswith("skipped")]
        passed = [r for r in ran if r.success]
        median = statistics.median(r.seconds for r in ran) if ran else 0.0
        print(f"{path}: {len(passed)} of {len(ran)} succeeded; median wall time {median:.1f} s")


if __name__ == "__main__":
    raise SystemExit(main())
