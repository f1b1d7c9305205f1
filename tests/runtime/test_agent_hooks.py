"""Hooks in agent files: scoped to their agent, run as real subprocesses, able to steer.

Agent files are real files in a project's ``.claude/agents``; hooks are real commands (small
Python scripts) that log their payload and answer by exit code or JSON, as Claude Code's do.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from processes import is_gone
from subagents.definitions import parse_agent_file
from subagents.messages import ToolResultMessage, UserMessage
from subagents.runtime.runtime import Runtime
from subagents.testing import ScriptedModel, tool_call_response

HOOK_SCRIPT = """\
import json, sys
payload = json.load(sys.stdin)
log, mode = sys.argv[1], sys.argv[2]
with open(log, "a") as f:
    f.write(json.dumps(payload) + "\\n")
if mode == "block-once" and not payload.get("stop_hook_active"):
    sys.stderr.write("run the tests first")
    sys.exit(2)
if mode == "json-block-once" and not payload.get("stop_hook_active"):
    print(json.dumps({"decision": "block", "reason": "add a summary line"}))
if mode == "deny":
    sys.stderr.write("no shell for this agent")
    sys.exit(2)
"""


def hook_command(tmp_path: Path, log: str, mode: str = "log") -> str:
    script = tmp_path / "hook.py"
    script.write_text(HOOK_SCRIPT)
    return " ".join(
        shlex.quote(p) for p in (sys.executable, str(script), str(tmp_path / log), mode)
    )


def write_agent(tmp_path: Path, name: str, hooks: dict[str, Any] | None = None) -> Path:
    folder = tmp_path / ".claude" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["---", f"name: {name}", f"description: The {name} agent."]
    if hooks is not None:
        lines.append(f"hooks: {json.dumps(hooks)}")  # JSON is YAML
    lines += ["---", f"You are {name}."]
    path = folder / f"{name}.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def command_hooks(command: str, matcher: str | None = None) -> list[dict[str, Any]]:
    entry: dict[str, Any] = {"hooks": [{"type": "command", "command": command, "timeout": 30}]}
    if matcher is not None:
        entry["matcher"] = matcher
    return [entry]


def logged(tmp_path: Path, log: str) -> list[dict[str, Any]]:
    path = tmp_path / log
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def task(agent: str, prompt: str = "do it") -> Any:
    return tool_call_response(
        "Task", {"description": f"run {agent}", "prompt": prompt, "subagent_type": agent}
    )


def runtime(tmp_path: Path, main: Any, **models: Any) -> Runtime:
    return Runtime(
        cwd=tmp_path, model=main, agent_models=models, permission_mode="bypassPermissions"
    )


async def test_a_stop_hook_in_the_agent_file_runs_as_subagent_stop_and_sends_it_back(
    tmp_path: Path,
) -> None:
    stop = hook_command(tmp_path, "stop.log", "block-once")
    write_agent(tmp_path, "tester", {"Stop": command_hooks(stop)})
    child = ScriptedModel(["looks done", "tests pass"])
    main = ScriptedModel([task("tester"), "all good"])
    rt = runtime(tmp_path, main, tester=child)

    result = await rt.run("test it")

    assert result.output == "all good"
    second = child.requests[1].messages[-1]
    assert isinstance(second, UserMessage) and second.content == "run the tests first"
    (returned,) = [m for m in main.requests[-1].messages if isinstance(m, ToolResultMessage)]
    assert returned.content.startswith("tests pass")
    payloads = logged(tmp_path, "stop.log")
    assert [p["hook_event_name"] for p in payloads] == ["SubagentStop", "SubagentStop"]
    assert [p["stop_hook_active"] for p in payloads] == [False, True]
    assert payloads[0]["agent_type"] == "tester" and payloads[0]["result"] == "looks done"


async def test_hooks_of_one_agent_do_not_fire_for_another(tmp_path: Path) -> None:
    deny = hook_command(tmp_path, "a.log", "deny")
    write_agent(tmp_path, "careful", {"PreToolUse": command_hooks(deny, "Bash")})
    write_agent(tmp_path, "plain")
    careful = ScriptedModel([tool_call_response("Bash", {"command": "echo A"}), "a done"])
    plain = ScriptedModel([tool_call_response("Bash", {"command": "echo B"}), "b done"])
    main = ScriptedModel(
        [tool_call_response("Bash", {"command": "echo main"}), task("careful"), task("plain"), "ok"]
    )
    rt = runtime(tmp_path, main, careful=careful, plain=plain)

    await rt.run("go")

    careful_result = careful.requests[1].messages[-1]
    assert isinstance(careful_result, ToolResultMessage) and careful_result.is_error
    assert "denied by a PreToolUse hook: no shell for this agent" in careful_result.content
    plain_result = plain.requests[1].messages[-1]
    assert isinstance(plain_result, ToolResultMessage) and not plain_result.is_error
    assert "B" in plain_result.content
    main_result = main.requests[1].messages[-1]
    assert isinstance(main_result, ToolResultMessage) and "main" in main_result.content
    payloads = logged(tmp_path, "a.log")
    assert len(payloads) == 1 and payloads[0]["agent_type"] == "careful"
    assert payloads[0]["tool_input"] == {"command": "echo A"}


async def test_the_hooks_of_an_agent_do_not_reach_the_subagents_it_starts(tmp_path: Path) -> None:
    log = hook_command(tmp_path, "parent.log")
    write_agent(tmp_path, "lead", {"PostToolUse": command_hooks(log)})
    write_agent(tmp_path, "worker")
    worker = ScriptedModel([tool_call_response("Bash", {"command": "echo w"}), "w done"])
    lead = ScriptedModel([tool_call_response("Bash", {"command": "echo l"}), task("worker"), "ok"])
    main = ScriptedModel([task("lead"), "done"])
    rt = runtime(tmp_path, main, lead=lead, worker=worker)

    await rt.run("go")

    payloads = logged(tmp_path, "parent.log")
    assert [(p["agent_type"], p["tool_name"]) for p in payloads] == [
        ("lead", "Bash"),
        ("lead", "Task"),
    ]
    assert "l" in payloads[0]["tool_response"]


async def test_the_runs_own_hooks_still_apply_beside_the_agents(tmp_path: Path) -> None:
    project = hook_command(tmp_path, "project.log")
    agent = hook_command(tmp_path, "agent.log")
    (tmp_path / ".subagents").mkdir()
    (tmp_path / ".subagents" / "config.toml").write_text(
        f"[[hooks.PreToolUse]]\ncommand = {json.dumps(project)}\n"
    )
    write_agent(tmp_path, "worker", {"PreToolUse": command_hooks(agent)})
    worker = ScriptedModel([tool_call_response("Bash", {"command": "echo w"}), "w done"])
    main = ScriptedModel([task("worker"), "done"])
    rt = runtime(tmp_path, main, worker=worker)

    await rt.run("go")

    project_calls = [(p["agent_type"], p["tool_name"]) for p in logged(tmp_path, "project.log")]
    assert project_calls == [("main", "Task"), ("worker", "Bash")]
    assert [(p["agent_type"], p["tool_name"]) for p in logged(tmp_path, "agent.log")] == [
        ("worker", "Bash")
    ]


async def test_the_main_agents_stop_hook_can_send_it_back_with_json(tmp_path: Path) -> None:
    stop = hook_command(tmp_path, "stop.log", "json-block-once")
    write_agent(tmp_path, "writer", {"Stop": command_hooks(stop)})
    main = ScriptedModel(["draft", "draft\nSummary: done"])
    rt = runtime(tmp_path, main)

    result = await rt.run("write", agent="writer")

    assert result.output == "draft\nSummary: done"
    assert main.requests[1].messages[-1] == UserMessage("add a summary line")
    payloads = logged(tmp_path, "stop.log")
    assert [(p["hook_event_name"], p["stop_hook_active"]) for p in payloads] == [
        ("Stop", False),
        ("Stop", True),
    ]


async def test_subagent_start_in_the_agent_file_adds_context_for_that_agent(
    tmp_path: Path,
) -> None:
    script = tmp_path / "context.py"
    script.write_text("import sys; sys.stdin.read(); print('The build uses make.')\n")
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    write_agent(tmp_path, "builder", {"SubagentStart": command_hooks(command, "someone-else")})
    write_agent(tmp_path, "other")
    builder = ScriptedModel(["built"])
    other = ScriptedModel(["other"])
    main = ScriptedModel([task("builder", "build it"), task("other", "look"), "done"])
    rt = runtime(tmp_path, main, builder=builder, other=other)

    await rt.run("go")

    # the matcher of an agent's own start hook does not matter: it is the agent's
    assert builder.requests[0].messages[0] == UserMessage(
        "build it\n\nAdditional context:\nThe build uses make."
    )
    assert other.requests[0].messages[0] == UserMessage("look")


def test_hooks_that_cannot_run_here_are_warned_about(tmp_path: Path) -> None:
    path = write_agent(
        tmp_path,
        "odd",
        {
            "Notification": command_hooks("true"),
            "PreToolUse": command_hooks("true", "Bash(("),
            "Stop": command_hooks("true"),
        },
    )
    definition = parse_agent_file(path)
    assert definition.status == "active"
    assert definition.hooks["Stop"] == command_hooks("true")
    warnings = "\n".join(definition.warnings)
    assert "hooks.Notification: this event is not supported here" in warnings
    assert "hooks.PreToolUse: matcher 'Bash((' is not a valid regular expression" in warnings
    assert "hooks.Stop" not in warnings


def test_agents_show_says_what_isolation_effort_and_hooks_will_do(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from subagents.cli.agents import agents_app

    folder = tmp_path / ".claude" / "agents"
    folder.mkdir(parents=True)
    (folder / "full.md").write_text(
        "---\nname: full\ndescription: All of it.\nisolation: worktree\neffort: max\n"
        "hooks:\n  PreToolUse:\n    - matcher: Bash|Edit\n      hooks:\n"
        "        - type: command\n          command: ./check.sh\n"
        "  Stop:\n    - hooks:\n        - type: command\n          command: ./verify.sh\n"
        "---\nBody.\n"
    )
    result = CliRunner().invoke(
        agents_app, ["show", "full", "--cwd", str(tmp_path)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "isolation        worktree: each run in a git worktree of its own" in result.output
    assert "effort           max: OpenAI reasoning_effort high, Claude thinking budget" in (
        result.output
    )
    assert "PreToolUse: 1 command (tools: Bash|Edit)" in result.output
    assert "Stop: 1 command (as SubagentStop when it runs as a subagent)" in result.output
    assert "no effect" not in result.output and "warnings" not in result.output


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["matcher", "hooks", "type", "command", "timeout", "Stop", "x"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)
_EVENTS = st.sampled_from(["PreToolUse", "PostToolUse", "Stop", "SubagentStart", "Nope", "1"])
_ENTRY = st.fixed_dictionaries(
    {
        "hooks": st.lists(
            st.fixed_dictionaries(
                {"type": st.just("command"), "command": st.text(min_size=1, max_size=10)},
                optional={"timeout": _JSON},
            ),
            min_size=1,
            max_size=2,
        )
    },
    optional={"matcher": st.text(max_size=8)},
)


def _usable(entry: Any) -> bool:
    from subagents.runtime.hooks import compile_matcher

    try:
        compile_matcher(entry.get("matcher"))
    except ValueError:
        return False
    return any(hook["command"].strip() for hook in entry["hooks"])


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    hooks=st.dictionaries(_EVENTS, st.lists(_ENTRY | _JSON, max_size=3), max_size=4) | _JSON,
    subagent=st.booleans(),
)
def test_any_hooks_value_is_read_and_scoped_without_raising(hooks: Any, subagent: bool) -> None:
    from subagents.definitions.fields import definition_from_mapping
    from subagents.runtime.agent_hooks import describe_agent_hooks, scoped_hooks
    from subagents.runtime.hooks import Hooks

    definition = definition_from_mapping(
        {"name": "a", "description": "d", "hooks": hooks},
        dialect="markdown",
        scope="project",
        source_path=None,
        body="b",
    )
    scoped = scoped_hooks(Hooks(), definition, subagent=subagent)
    assert isinstance(describe_agent_hooks(definition.hooks), str)
    for event in ("PreToolUse", "PostToolUse"):
        entries = definition.hooks.get(event, [])
        assert scoped.has(event) == any(_usable(entry) for entry in entries)


@pytest.mark.slow
async def test_a_hook_that_overruns_its_timeout_is_stopped_and_reported(tmp_path: Path) -> None:
    """The script is a child of the hook's shell: killing the shell alone left it holding
    the output, and the run waited its 60 s out."""
    script = tmp_path / "slow.py"
    pid_file = tmp_path / "slow.pid"
    script.write_text(
        f"import os, sys, time\nsys.stdin.read()\nopen({str(pid_file)!r}, 'w').write(str("
        "os.getpid()))\ntime.sleep(60)\n"
    )
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    entry = [{"hooks": [{"type": "command", "command": command, "timeout": 1}]}]
    write_agent(tmp_path, "slowpoke", {"PreToolUse": entry})
    child = ScriptedModel([tool_call_response("Bash", {"command": "echo ran"}), "ok"])
    main = ScriptedModel([task("slowpoke"), "done"])
    rt = runtime(tmp_path, main, slowpoke=child)

    started = time.monotonic()
    result = await rt.run("go")

    assert time.monotonic() - started < 30  # not the script's 60 s
    assert is_gone(int(pid_file.read_text()))
    assert result.output == "done"
    ran = child.requests[1].messages[-1]
    # a failing hook does not block the call, and is reported with the run's hook failures
    assert isinstance(ran, ToolResultMessage) and "ran" in ran.content
    assert any("timed out after 1s" in error for error in rt.hooks.errors)
