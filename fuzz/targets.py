"""What each fuzz target feeds, and the property it checks.

A target turns a seeded :class:`random.Random` into one input (bytes, with a file suffix) and
checks one public entry point on it: it must return normally or raise the error type its API
documents, never anything else, and what it says must stay short. :class:`Violation` marks a
property broken without an exception; any other exception escaping :meth:`Target.check` is a
failure too. Time and memory are measured by the callers (the test suite's hypothesis
deadline and tracemalloc, the runner's clock).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzz import grammar
from subagents.store.sqlite import SQLiteStore

__all__ = ["TARGETS", "Case", "Target", "Violation"]

MAX_MESSAGE_CHARS = 4_000  # one error or warning, file path included
MAX_CONFIG_MESSAGE_CHARS = 40_000  # a ConfigError lists up to 20 problems
MAX_TOOL_MESSAGE_CHARS = 50_000  # a tool error may quote a (long) argument


class Violation(AssertionError):
    """The input broke a property without an exception escaping."""


@dataclass(frozen=True, slots=True)
class Case:
    suffix: str
    data: bytes
    bomb: bool = False  # alias bombs: callers also bound the memory they take


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    make: Callable[[random.Random, Sequence[bytes]], Case]
    check: Callable[[Case, Path], None]


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise Violation(what)


def _short(message: str, limit: int = MAX_MESSAGE_CHARS) -> None:
    _require(len(message) <= limit, f"a message of {len(message):,} characters: {message[:200]}")


# -- agent files -------------------------------------------------------------------------------


def _make_agent(rng: random.Random, seeds: Sequence[bytes]) -> Case:
    if rng.random() < 0.15:
        front = grammar.alias_bomb(rng)
        return Case(".md", f"---\nname: a\ndescription: d\n{front}\n---\nbody\n".encode(), True)
    suffix, data = grammar.agent_file(rng, seeds)
    return Case(suffix, data)


def _check_agent(case: Case, workdir: Path) -> None:
    from subagents.definitions import parse_agent_file

    path = workdir / f"agent{case.suffix}"
    path.write_bytes(case.data)
    definition = parse_agent_file(path, scope="project")
    _require(definition.status in ("active", "invalid"), f"status {definition.status!r}")
    if definition.status == "invalid":
        _require(bool(definition.validation_errors), "invalid without a reason")
    for message in [*definition.validation_errors, *definition.warnings]:
        _short(message)
    definition.model_dump_json()  # whatever was read can be reported


# -- .claude/settings.json, SKILL.md, CLAUDE.md ------------------------------------------------


def _make_settings(rng: random.Random, seeds: Sequence[bytes]) -> Case:
    return Case(".json", grammar.settings_json(rng).encode("utf-8", "surrogatepass"))


def _check_settings(case: Case, workdir: Path) -> None:
    from subagents.tools.rule_sources import load_settings_rules

    project = workdir / "project"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / "settings.json").write_bytes(case.data)
    loaded = load_settings_rules(project, workdir / "home")
    for warning in loaded.warnings:
        _short(warning, MAX_CONFIG_MESSAGE_CHARS)


def _make_skill(rng: random.Random, seeds: Sequence[bytes]) -> Case:
    return Case(".md", grammar.skill_file(rng, seeds))


def _check_skill(case: Case, workdir: Path) -> None:
    from subagents.skills import discover_skills, skills_prompt

    project = workdir / "project"
    folder = project / ".claude" / "skills" / "fuzzed"
    folder.mkdir(parents=True, exist_ok=True)
    (project / ".git").mkdir(exist_ok=True)
    (folder / "SKILL.md").write_bytes(case.data)
    catalog = discover_skills(project, home=workdir / "home")
    for skill in catalog.found:
        for message in [*skill.errors, *skill.warnings]:
            _short(message)
    skills_prompt(["fuzzed"], project)


def _make_instructions(rng: random.Random, seeds: Sequence[bytes]) -> Case:
    return Case(".md", grammar.instructions_file(rng).encode("utf-8", "surrogatepass"))


def _check_instructions(case: Case, workdir: Path) -> None:
    from subagents.runtime.instructions import MAX_TOTAL_CHARS, load_project_instructions

    project = workdir / "project"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    (project / "CLAUDE.md").write_bytes(case.data)
    (project / "AGENTS.md").write_bytes(case.data[::-1])
    found = load_project_instructions(project, home=workdir / "home")
    _require(sum(len(f.text) for f in found.files) <= MAX_TOTAL_CHARS, "over the total cap")
    for warning in found.warnings:
        _short(warning)


# -- config.toml -------------------------------------------------------------------------------


def _make_config(rng: random.Random, seeds: Sequence[bytes]) -> Case:
    return Case(".toml", grammar.config_toml(rng).encode("utf-8", "surrogatepass"))


def _check_config(case: Case, workdir: Path) -> None:
    from subagents.config import load_config
    from subagents.errors import ConfigError

    project = workdir / "project"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    (project / ".subagents").mkdir(exist_ok=True)
    (project / ".subagents" / "config.toml").write_bytes(case.data)
    try:
        load_config(project, home=workdir / "home")
    except ConfigError as error:
        _short(error.message, MAX_CONFIG_MESSAGE_CHARS)


# -- MCP server files --------------------------------------------------------------------------


def _make_mcp(rng: random.Random, seeds: Sequence[bytes]) -> Case:
    suffix, text = grammar.mcp_file(rng)
    return Case(suffix, text.encode("utf-8", "surrogatepass"), bomb="&b0" in text)


def _check_mcp(case: Case, workdir: Path) -> None:
    from subagents.errors import ConfigError
    from subagents.mcp.config import read_mcp_file

    path = workdir / (".mcp.json" if case.suffix == ".json" else "mcp_servers.yaml")
    path.write_bytes(case.data)
    try:
        found = read_mcp_file(path, environ={"HOME": "/home/x", "TOKEN": "t"})
    except ConfigError as error:
        _short(error.message, MAX_CONFIG_MESSAGE_CHARS)
        return
    for problem in found.problems.values():
        _short(problem)


# -- tool arguments ----------------------------------------------------------------------------


def _make_arguments(rng: random.Random, seeds: Sequence[bytes]) -> Case:
    return Case(".json", grammar.tool_arguments_text(rng).encode("utf-8", "surrogatepass"))


def _check_arguments(case: Case, workdir: Path) -> None:
    from subagents.models.tool_arguments import (
        MAX_ARGUMENT_DEPTH,
        MAX_RAW_ARGUMENTS_CHARS,
        arguments_text,
        parse_tool_arguments,
    )

    call = parse_tool_arguments("call_1", "Read", case.data.decode("utf-8", "surrogatepass"))
    if call.arguments_error is not None:
        _require(call.arguments == {}, "refused arguments kept")
        _require(
            len(call.raw_arguments or "") <= MAX_RAW_ARGUMENTS_CHARS + 100, "raw text unbounded"
        )
        _short(call.arguments_error)
    else:
        _require(_depth(call.arguments) <= MAX_ARGUMENT_DEPTH, "arguments deeper than the limit")
    arguments_text(call)


# -- tool calls written as text ----------------------------------------------------------------

_TEXT_CALL_PIECES = (
    "<tool_call>", "</tool_call>", "```json\n", "```tool_code\n", "```", "[TOOL_CALLS]",
    "[ARGS]", "<|python_tag|>", "<|eom_id|>", "<function=Read>", "</function>", ";", "\n",
    "[Read(file_path='a')]", 'Read(x=', ")", '{"name": "Read", "arguments": ', '"name"', ": ",
    '{"type": "function", "function": ', '{"tool": "Bash", "args": ', "}", "]", "[",
)  # fmt: skip


def _make_text_calls(rng: random.Random, seeds: Sequence[bytes]) -> Case:
    pieces: list[str] = []
    for _ in range(rng.randint(1, 40)):
        roll = rng.random()
        if roll < 0.6:
            pieces.append(rng.choice(_TEXT_CALL_PIECES))
        elif roll < 0.85:
            pieces.append(grammar.dumps(grammar.json_value(rng)))
        elif roll < 0.95:
            pieces.append(grammar.deep_json_text(rng))
        else:
            pieces.append(grammar.tool_arguments_text(rng))
    return Case(".txt", "".join(pieces).encode("utf-8", "surrogatepass"))


def _check_text_calls(case: Case, workdir: Path) -> None:
    from subagents.models.text_calls import find_text_tool_calls
    from subagents.models.tool_arguments import MAX_ARGUMENT_DEPTH, arguments_text

    offered = ("Read", "Grep")
    text = case.data.decode("utf-8", "surrogatepass")
    found = find_text_tool_calls(text, offered)
    if found is None:
        return
    _require(bool(found.calls) != bool(found.ignored), "neither calls nor a reason")
    _require(len(found.text) <= len(text), "the kept text grew")
    for call in found.calls:
        _require(call.name in offered, f"a call to {call.name!r}, which was not offered")
        _require(_depth(call.arguments) <= MAX_ARGUMENT_DEPTH, "arguments deeper than the limit")
        if call.arguments_error is not None:
            _short(call.arguments_error)
        arguments_text(call)


def _depth(value: Any) -> int:
    level, depth = [value], 0
    while level:
        depth += 1
        level = [
            item
            for container in level
            if isinstance(container, dict | list)
            for item in (container.values() if isinstance(container, dict) else container)
            if isinstance(item, dict | list)
        ]
    return depth


# -- built-in tools with arbitrary arguments ---------------------------------------------------

_TOOL_KEYS = {
    "Read": ["file_path", "offset", "limit"],
    "Write": ["file_path", "content"],
    "Edit": ["file_path", "old_string", "new_string", "replace_all"],
    "Glob": ["pattern", "path", "include_ignored"],
    "Grep": ["pattern", "path", "glob", "type", "output_mode", "-i", "-n", "-A", "-B", "-C",
             "head_limit", "multiline", "include_ignored"],
    "LS": ["path", "ignore", "include_ignored"],
    "Bash": ["command", "timeout", "description"],
    "MultiEdit": ["file_path", "edits"],
    "TodoWrite": ["todos"],
    "WebSearch": ["query", "allowed_domains", "blocked_domains"],
}  # fmt: skip
_UNEXPECTED = re.compile(r"Tool \w+ failed: (?!OSError|FileNotFoundError|PermissionError)\w+: ")
_FILE_NAMES = ["notes.txt", "sub/a.py", "../outside.txt", "/etc/passwd", "", ".", "sub", "x" * 300]


def _make_tool_call(rng: random.Random, seeds: Sequence[bytes]) -> Case:
    name = rng.choice(sorted(_TOOL_KEYS))
    arguments: dict[str, Any] = {}
    for key in _TOOL_KEYS[name]:
        if rng.random() < 0.7:
            arguments[key] = (
                rng.choice(_FILE_NAMES)
                if key in ("file_path", "path") and rng.random() < 0.7
                else grammar.json_value(rng, 3)
            )
    if rng.random() < 0.2:
        arguments["unexpected"] = grammar.json_value(rng)
    try:
        payload = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    except ValueError:  # an integer too long to print
        payload = json.dumps({"name": name, "arguments": {}})
    return Case(".json", payload.encode("utf-8", "surrogatepass"))


def _check_tool_call(case: Case, workdir: Path) -> None:
    from subagents.messages import ToolCall
    from subagents.tools.base import ToolContext, ToolRegistry
    from subagents.tools.builtin import builtin_tools
    from subagents.tools.builtin.glob import make_glob_tool
    from subagents.tools.builtin.grep import make_grep_tool
    from subagents.tools.execution import execute_tool_call
    from subagents.tools.permissions import PermissionPolicy

    payload = json.loads(case.data.decode("utf-8", "surrogatepass"))
    workspace = workdir / "workspace"
    (workspace / "sub").mkdir(parents=True, exist_ok=True)
    (workspace / "notes.txt").write_text("alpha\nbeta\n" * 5)
    (workspace / "sub" / "a.py").write_text("def f():\n    return 1\n")
    quick = {
        "Grep": make_grep_tool(time_budget_seconds=2),
        "Glob": make_glob_tool(time_budget_seconds=2),
    }
    tools = [quick.get(tool.name, tool) for tool in builtin_tools()]
    call = ToolCall("call_1", payload["name"], payload["arguments"])
    # Bash must never run what a fuzzer wrote: its permission check refuses it.
    policy = PermissionPolicy(mode="default", headless="deny") if call.name == "Bash" else None
    outcome = asyncio.run(
        execute_tool_call(
            call, ToolRegistry(tools), ToolContext(workspace=workspace), permissions=policy
        )
    )
    _require(outcome.status in ("ok", "error", "denied", "timeout"), f"status {outcome.status}")
    if call.name == "Bash":
        _require(outcome.status != "ok", "Bash ran without permission")
    if outcome.status != "ok":  # it may quote what the model sent (a 10,000-character path)
        _short(outcome.message.content, MAX_TOOL_MESSAGE_CHARS)
        # An exception a tool did not expect (its message names the type). OSError is let
        # through: the file system's own refusals (a name too long) reach the model as they are.
        unexpected = _UNEXPECTED.match(outcome.message.content)
        _require(unexpected is None, f"a tool raised: {outcome.message.content[:300]}")
    _require(not (workdir / "outside.txt").exists(), "a tool wrote outside its workspace")


# -- stored records and the export reader ------------------------------------------------------

_RECORD_CLASSES = ["TaskRecord", "SessionRecord", "CheckpointRecord", "ToolLedgerEntry",
                   "TraceRecord"]  # fmt: skip


def _make_record(rng: random.Random, seeds: Sequence[bytes]) -> Case:
    from subagents.store import records

    name = rng.choice(_RECORD_CLASSES)
    cls = getattr(records, name)
    data = grammar.record_data(rng, list(cls.model_fields))
    if rng.random() < 0.1 and isinstance(data, dict):
        data[rng.choice(["settings", "state", "data", "arguments"])] = grammar.deep_value(rng)
    try:
        text = json.dumps({"class": name, "data": data}, ensure_ascii=False)
    except (ValueError, RecursionError):
        text = json.dumps({"class": name, "data": {}})
    return Case(".json", text.encode("utf-8", "surrogatepass"))


def _check_record(case: Case, workdir: Path) -> None:
    from subagents.errors import StoreCorruptError, StoreError, StoreVersionError
    from subagents.store import records
    from subagents.store.codec import dump_record, load_record, record_from_data

    try:
        payload = json.loads(case.data.decode("utf-8", "surrogatepass"))
    except RecursionError:
        return  # the generator wrote something json cannot read back: nothing to feed
    cls = getattr(records, payload["class"])
    try:
        record = record_from_data(cls, payload["data"], where="fuzz")
    except (StoreCorruptError, StoreVersionError) as error:
        _short(error.message)
        return
    try:
        text = dump_record(record)
    except StoreError as error:
        _short(error.message)
        return
    _require(load_record(cls, text, where="fuzz") == record, "a record does not round-trip")


def _make_export(rng: random.Random, seeds: Sequence[bytes]) -> Case:
    target = rng.choice(["task.json", "sessions.json", "ledger.json", "trace.json",
                         "checkpoint_000.json", "export.json", "messages"])  # fmt: skip
    roll = rng.random()
    if roll < 0.3:
        content = grammar.deep_json_text(rng).encode()
    elif roll < 0.6:
        value = grammar.record_data(rng, ["id", "task_id", "session_id", "description"])
        content = grammar.dumps(value if rng.random() < 0.5 else [value]).encode(
            "utf-8", "surrogatepass"
        )
    else:
        content = b"MUTATE"  # the runner mutates the real file
    return Case(target, content + b"\0" + rng.randbytes(8))


def _check_export(case: Case, workdir: Path) -> None:
    from subagents.errors import StoreError
    from subagents.store.export import import_task

    content, seed = case.data.rsplit(b"\0", 1)
    folder = workdir / "archive"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(_pristine_export(workdir), folder)
    target = folder / ("messages/main.json" if case.suffix == "messages" else case.suffix)
    if content == b"MUTATE" and target.exists():
        content = grammar.mutate(random.Random(seed), target.read_bytes())
    target.write_bytes(content)
    with SQLiteStore(workdir / "target.db") as store:
        try:
            import_task(store, folder, replace=True)
        except StoreError as error:
            _short(error.message)


def _pristine_export(workdir: Path) -> Path:
    """A real export of a small task (made once per work directory)."""
    from subagents.messages import UserMessage, message_to_dict
    from subagents.store.base import StepWrite
    from subagents.store.export import export_task
    from subagents.store.records import CheckpointRecord, SessionRecord, TaskRecord

    tasks = workdir / "pristine" / "tasks"
    if not tasks.exists():
        with SQLiteStore(workdir / "source.db") as store:
            task = TaskRecord(description="d", prompt="p", workspace="/w")
            store.create_task(task)
            session = SessionRecord(
                session_id="main", task_id=task.id, agent_name="main", model="m", max_turns=5
            )
            message = message_to_dict(UserMessage("hi"))
            store.commit(
                StepWrite(
                    task_id=task.id,
                    session=session,
                    messages=[("main", 0, message)],
                    checkpoint=CheckpointRecord(
                        task_id=task.id, session_id="main", position="after_model"
                    ),
                )
            )
            export_task(store, task.id, workdir / "pristine")
    (folder,) = tasks.iterdir()
    return folder


TARGETS: dict[str, Target] = {
    target.name: target
    for target in (
        Target("agent-file", _make_agent, _check_agent),
        Target("settings-json", _make_settings, _check_settings),
        Target("skill-file", _make_skill, _check_skill),
        Target("instructions", _make_instructions, _check_instructions),
        Target("config-toml", _make_config, _check_config),
        Target("mcp-file", _make_mcp, _check_mcp),
        Target("tool-arguments", _make_arguments, _check_arguments),
        Target("text-tool-calls", _make_text_calls, _check_text_calls),
        Target("builtin-tools", _make_tool_call, _check_tool_call),
        Target("stored-record", _make_record, _check_record),
        Target("export-reader", _make_export, _check_export),
    )
}
