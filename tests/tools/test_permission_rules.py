"""Claude Code's tool specs and permission rules, enforced: every rule form, every source, deny
before ask before allow, inheritance by subagents, Agent(types), dontAsk, and the CLI flags.

Runs are real: a Runtime with the built-in tools in a tmp workspace, driven by ScriptedModel;
the CLI test runs the console script against a local OpenAI-compatible server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subagents.definitions import parse_agent_file
from subagents.definitions.model import AgentDefinition
from subagents.definitions.render import render_markdown
from subagents.messages import ToolResultMessage
from subagents.models.base import ModelResponse
from subagents.runtime.runtime import Runtime
from subagents.testing import ScriptedModel, tool_call_response
from subagents.tools.base import Tool
from subagents.tools.permissions import ApprovalDecision, ApprovalRequest, narrower_mode
from subagents.tools.rules import command_matches
from subagents.tools.specs import split_tool_list


def agent(name: str, **fields: Any) -> AgentDefinition:
    fields.setdefault("description", f"The {name} specialist.")
    fields.setdefault("system_prompt", f"You are {name}.")
    return AgentDefinition(name=name, **fields)


def bash(command: str) -> ModelResponse:
    return tool_call_response("Bash", {"command": command})


def task(subagent_type: str, prompt: str = "do it") -> ModelResponse:
    return tool_call_response(
        "Task", {"description": "delegate", "prompt": prompt, "subagent_type": subagent_type}
    )


def results(model: ScriptedModel) -> list[ToolResultMessage]:
    return [m for m in model.requests[-1].messages if isinstance(m, ToolResultMessage)]


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root


async def run_calls(
    root: Path, *calls: ModelResponse, mode: str = "default", **kwargs: Any
) -> list[ToolResultMessage]:
    main = ScriptedModel([*calls, "done"])
    kwargs.setdefault("headless", "allow")
    runtime = Runtime(cwd=root, model=main, permission_mode=mode, **kwargs)  # type: ignore[arg-type]
    await runtime.run("go")
    return results(main)


# -- parsing tool lists -----------------------------------------------------------------


def test_agent_types_and_bash_rules_stay_one_entry() -> None:
    assert split_tool_list("Read, Agent(explore, plan), Bash(git push *)") == (
        ["Read", "Agent(explore, plan)", "Bash(git push *)"],
        [],
    )
    assert split_tool_list("Read Grep Bash(git log *)")[0] == ["Read", "Grep", "Bash(git log *)"]


def test_unbalanced_parentheses_are_a_warning_not_a_crash(tmp_path: Path) -> None:
    file = tmp_path / "a.md"
    file.write_text("---\nname: a\ndescription: d\ntools: Read, Agent(explore, plan\n---\nbody\n")
    d = parse_agent_file(file)
    assert d.status == "active"
    assert d.tools == ["Read", "Agent(explore, plan"]
    assert any("never closed" in w for w in d.warnings), d.warnings
    assert any("'Agent(explore, plan'" in w and "left out" in w for w in d.warnings)


def test_rule_entries_are_not_reported_as_unknown_tools(tmp_path: Path) -> None:
    file = tmp_path / "a.md"
    file.write_text(
        "---\nname: a\ndescription: d\ntools: Read, Bash(npm run test:*), Agent(explore)\n"
        "disallowedTools: Bash(git push *), Read(./.env)\n---\nbody\n"
    )
    d = parse_agent_file(file)
    assert (d.status, d.warnings, d.unavailable_tools) == ("active", [], [])
    assert d.disallowed_tools == ["Bash(git push *)", "Read(./.env)"]


_NAME = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,8}", fullmatch=True)
_SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
_SPECIFIER = st.text(
    st.characters(exclude_characters="()\n\r", exclude_categories=_SURROGATES), max_size=12
)
_ENTRY = st.one_of(
    _NAME, st.builds(lambda n, s: f"{n}({s.strip()})", _NAME, _SPECIFIER.filter(str.strip))
)


@pytest.mark.slow
@given(st.lists(_ENTRY, min_size=1, max_size=6, unique=True))
def test_joined_entries_split_back_into_the_same_entries(entries: list[str]) -> None:
    assert split_tool_list(", ".join(entries)) == (entries, [])


@given(st.text(max_size=60))
def test_splitting_any_text_never_raises_and_loses_no_character(text: str) -> None:
    entries, _problems = split_tool_list(text)
    assert all(entry == entry.strip() and entry for entry in entries)

    def content(value: str) -> str:  # what is left once separators are taken away
        return "".join(char for char in value if not char.isspace() and char != ",")

    assert content("".join(entries)) == content(text)


@pytest.mark.slow
@given(st.lists(_ENTRY, min_size=1, max_size=5, unique=True))
def test_rendered_agent_file_gives_back_its_tool_entries(entries: list[str]) -> None:
    import tempfile

    d = agent("round-trip", tools=entries, disallowed_tools=entries[:1])
    with tempfile.TemporaryDirectory() as folder:
        file = Path(folder) / "round-trip.md"
        file.write_text(render_markdown(d), encoding="utf-8")
        back = parse_agent_file(file)
    assert back.tools == entries and back.disallowed_tools == entries[:1]


# -- Bash specifiers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "command", "expected"),
    [
        ("git push *", "git push origin main", True),
        ("git push *", "git push", True),
        ("git push *", "git pushy", False),
        ("npm run test:*", "npm run test", True),
        ("npm run test:*", "npm run test -- --watch", True),
        ("npm run test:*", "npm run testing", False),
        ("make", "make", True),
        ("make", "make install", False),
        ("git * main", "git push origin main", True),
        ("git * main", "git push origin dev", False),
        ("git push *", "git   push   origin", True),
    ],
)
def test_bash_specifier_forms(pattern: str, command: str, expected: bool) -> None:
    assert command_matches(pattern, command) is expected


@pytest.mark.parametrize(
    "command",
    [
        "echo hi && git push origin",
        "echo hi; git push",
        "true || git push --force",
        "echo $(git push)",
        "FOO=1 git push",
        "sudo git push",
        "bash -c 'git push origin'",
        "(cd sub && git push)",
        "echo main | xargs -n1 git push origin",
        "timeout 5 git push",
        "cd repo && /usr/bin/git push",
        "ec'ho' x; g\"it\" push",
    ],
)
async def test_a_compound_command_does_not_slip_past_a_deny_rule(
    tmp_path: Path, command: str
) -> None:
    root = project(tmp_path)
    (refused,) = await run_calls(
        root, bash(command), mode="bypassPermissions", disallowed_tools=["Bash(git push *)"]
    )
    assert refused.is_error
    assert "deny rule 'Bash(git push *)' from --disallowedTools" in refused.content


async def test_allow_rule_runs_without_asking_only_when_every_part_matches(
    tmp_path: Path,
) -> None:
    root = project(tmp_path)
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=False, reason="no")

    ran, chained = await run_calls(
        root,
        bash("echo allowed > a.txt"),
        bash("echo allowed && touch b.txt"),
        allowed_tools=["Bash(echo *)"],
        approver=approver,
    )
    assert not ran.is_error and (root / "a.txt").exists()
    assert chained.is_error and not (root / "b.txt").exists()
    assert [request.arguments["command"] for request in asked] == ["echo allowed && touch b.txt"]


# -- sources and order ----------------------------------------------------------------------


async def test_project_settings_deny_beats_allow_even_in_bypass_mode(tmp_path: Path) -> None:
    root = project(tmp_path)
    settings = write_json(
        root / ".claude" / "settings.json",
        {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm *)"]}},
    )
    (root / "keep.txt").write_text("x")
    refused, ran = await run_calls(
        root, bash("rm keep.txt"), bash("echo ok > ok.txt"), mode="bypassPermissions"
    )
    assert refused.is_error and (root / "keep.txt").exists()
    assert f"deny rule 'Bash(rm *)' from {settings}" in refused.content
    assert not ran.is_error and (root / "ok.txt").exists()


async def test_ask_beats_allow_and_the_question_names_the_rule(tmp_path: Path) -> None:
    root = project(tmp_path)
    write_json(
        root / ".claude" / "settings.local.json",
        {"permissions": {"allow": ["Bash"], "ask": ["Bash(git commit *)"]}},
    )
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=False, reason="not now")

    committed, listed = await run_calls(
        root, bash("git commit -m x"), bash("echo listed"), approver=approver
    )
    assert committed.is_error and "not now" in committed.content
    assert not listed.is_error and "listed" in listed.content
    (request,) = asked
    assert request.reason is not None and "ask rule 'Bash(git commit *)'" in request.reason
    assert "settings.local.json" in request.reason


async def test_user_settings_rules_apply_in_every_project(
    tmp_path: Path, isolated_home: Path
) -> None:
    root = project(tmp_path)
    write_json(
        isolated_home / ".claude" / "settings.json",
        {"permissions": {"deny": ["Read(./secret/**)"]}},
    )
    (root / "secret").mkdir()
    (root / "secret" / "key.txt").write_text("k")
    refused, listed = await run_calls(
        root, tool_call_response("LS", {"path": "secret"}), tool_call_response("LS", {})
    )
    assert refused.is_error and "key.txt" not in refused.content
    assert str(isolated_home / ".claude" / "settings.json") in refused.content
    assert not listed.is_error and "secret" in listed.content


async def test_read_rule_covers_read_grep_glob_and_symlinks(tmp_path: Path) -> None:
    root = project(tmp_path)
    write_json(root / ".claude" / "settings.json", {"permissions": {"deny": ["Read(./.env)"]}})
    (root / ".env").write_text("TOKEN=secret")
    (root / "notes.txt").write_text("fine")
    (root / "innocent.txt").symlink_to(root / ".env")
    env, linked, grep, notes = await run_calls(
        root,
        tool_call_response("Read", {"file_path": ".env"}),
        tool_call_response("Read", {"file_path": "innocent.txt"}),
        tool_call_response("Grep", {"pattern": "TOKEN", "path": ".env"}),
        tool_call_response("Read", {"file_path": "notes.txt"}),
    )
    for refused in (env, linked, grep):
        assert refused.is_error and "Read(./.env)" in refused.content
        assert "secret" not in refused.content
    assert not notes.is_error and "fine" in notes.content


async def test_edit_rule_covers_write_with_gitignore_patterns(tmp_path: Path) -> None:
    root = project(tmp_path)
    write_json(root / ".claude" / "settings.json", {"permissions": {"deny": ["Edit(src/**)"]}})
    (root / "src" / "deep").mkdir(parents=True)
    in_src, deep, docs = await run_calls(
        root,
        tool_call_response("Write", {"file_path": "src/a.py", "content": "x"}),
        tool_call_response("Write", {"file_path": "src/deep/b.py", "content": "x"}),
        tool_call_response("Write", {"file_path": "docs/a.md", "content": "x"}),
        mode="bypassPermissions",
    )
    assert in_src.is_error and deep.is_error and "Edit(src/**)" in in_src.content
    assert not (root / "src" / "a.py").exists()
    assert not docs.is_error and (root / "docs" / "a.md").exists()


async def test_webfetch_domain_rules_match_the_host_of_the_url(tmp_path: Path) -> None:
    root = project(tmp_path)
    fetched: list[str] = []

    async def fetch(url: str) -> str:
        fetched.append(url)
        return "page"

    web_fetch = Tool(
        name="WebFetch",
        description="Fetch a URL.",
        parameters={"type": "object", "properties": {"url": {"type": "string"}}},
        function=fetch,
        read_only=True,
    )
    blocked, other = await run_calls(
        root,
        tool_call_response("WebFetch", {"url": "https://Evil.example.com:8443/x"}),
        tool_call_response("WebFetch", {"url": "https://docs.python.org/3/"}),
        tools=[web_fetch],
        disallowed_tools=["WebFetch(domain:evil.example.com)"],
    )
    assert blocked.is_error and "WebFetch(domain:evil.example.com)" in blocked.content
    assert not other.is_error and fetched == ["https://docs.python.org/3/"]


async def test_mcp_server_rule_covers_every_tool_of_that_server(tmp_path: Path) -> None:
    root = project(tmp_path)

    def make(name: str, server: str) -> Tool:
        return Tool(
            name=name,
            description="An MCP tool.",
            parameters={"type": "object", "properties": {}},
            function=lambda: f"{name} ran",
            read_only=True,
            mcp_server=server,
        )

    issue, other = await run_calls(
        root,
        tool_call_response("mcp__github__create_issue", {}),
        tool_call_response("mcp__docs__search", {}),
        tools=[make("mcp__github__create_issue", "github"), make("mcp__docs__search", "docs")],
        disallowed_tools=["mcp__github"],
    )
    assert issue.is_error and "mcp__github" in issue.content
    assert not other.is_error and other.content == "mcp__docs__search ran"


async def test_a_malformed_settings_file_is_a_warning_and_the_rest_still_works(
    tmp_path: Path,
) -> None:
    root = project(tmp_path)
    broken = root / ".claude" / "settings.local.json"
    broken.parent.mkdir(parents=True)
    broken.write_text("{ not json")
    write_json(root / ".claude" / "settings.json", {"permissions": {"deny": ["Bash(rm *)"]}})
    main = ScriptedModel([bash("rm -rf x"), "done"])
    runtime = Runtime(cwd=root, model=main, permission_mode="bypassPermissions")
    await runtime.run("go")
    (refused,) = results(main)
    assert refused.is_error and "Bash(rm *)" in refused.content
    (warning,) = runtime.permissions.warnings
    assert str(broken) in warning and "not valid JSON" in warning


async def test_bare_disallowed_tool_is_taken_away(tmp_path: Path) -> None:
    root = project(tmp_path)
    main = ScriptedModel(["done"])
    runtime = Runtime(cwd=root, model=main, disallowed_tools=["Bash, Write"])
    await runtime.run("go")
    names = {spec.name for spec in main.requests[0].tools}
    assert "Bash" not in names and "Write" not in names and "Read" in names


# -- subagents ------------------------------------------------------------------------------


async def test_a_subagent_inherits_its_parents_deny_rules(tmp_path: Path) -> None:
    root = project(tmp_path)
    lead = agent("lead", disallowed_tools=["Bash(rm *)"])
    helper = agent("helper")
    child = ScriptedModel([bash("rm -f precious.txt"), "could not"])
    (root / "precious.txt").write_text("x")
    main = ScriptedModel([task("helper"), "done"])
    runtime = Runtime(
        cwd=root,
        agents=[lead, helper],
        model=main,
        agent_models={"helper": child},
        permission_mode="bypassPermissions",
    )
    await runtime.run("go", agent="lead")
    (refused,) = results(child)
    assert refused.is_error and "deny rule 'Bash(rm *)' from agent 'lead'" in refused.content
    assert (root / "precious.txt").exists()


async def test_a_subagents_tool_spec_limits_it_and_never_pre_approves(tmp_path: Path) -> None:
    root = project(tmp_path)
    echoer = agent("echoer", tools=["Bash(echo *)"])
    child = ScriptedModel([bash("touch made.txt"), bash("echo hi > said.txt"), "done"])
    main = ScriptedModel([task("echoer"), "done"])
    runtime = Runtime(
        cwd=root, agents=[echoer], model=main, agent_models={"echoer": child}, headless="deny"
    )
    await runtime.run("go")
    limited, unapproved = results(child)
    assert limited.is_error
    assert "limit in agent 'echoer' tools (Bash only as Bash(echo *))" in limited.content
    # the parent would have asked for this command, so the subagent may not run it unasked
    assert unapproved.is_error and "needs approval" in unapproved.content
    assert not (root / "made.txt").exists() and not (root / "said.txt").exists()


async def test_the_main_agents_tool_spec_is_an_allow_rule(tmp_path: Path) -> None:
    root = project(tmp_path)
    lead = agent("lead", tools=["Read", "Bash(echo *)"])
    main = ScriptedModel([bash("echo hi > said.txt"), bash("touch made.txt"), "done"])
    runtime = Runtime(cwd=root, agents=[lead], model=main, headless="deny")
    await runtime.run("go", agent="lead")
    said, made = results(main)
    assert not said.is_error and (root / "said.txt").exists()
    assert made.is_error and not (root / "made.txt").exists()


async def test_agent_types_limit_which_subagents_may_be_started(tmp_path: Path) -> None:
    root = project(tmp_path)
    worker = agent("worker", tools=["Read", "Agent(helper-a)"])
    helpers = [agent("helper-a"), agent("helper-b")]
    worker_model = ScriptedModel([task("helper-b"), task("helper-a"), "worker done"])
    helper_model = ScriptedModel(["helper-a done"])
    main = ScriptedModel([task("worker"), "done"])
    runtime = Runtime(
        cwd=root,
        agents=[worker, *helpers],
        model=main,
        agent_models={"worker": worker_model, "helper-a": helper_model},
        permission_mode="bypassPermissions",
    )
    await runtime.run("go")
    refused, started = results(worker_model)
    assert refused.is_error and "you may not start 'helper-b'" in refused.content
    assert "Agent(helper-a)" in refused.content
    assert started.content.startswith("helper-a done")
    (task_spec,) = [spec for spec in worker_model.requests[0].tools if spec.name == "Task"]
    assert "- helper-a:" in task_spec.description and "helper-b" not in task_spec.description
    main_task = next(spec for spec in main.requests[0].tools if spec.name == "Task")
    assert "- helper-b:" in main_task.description


async def test_a_subagent_cannot_widen_the_agent_types_of_its_parent(tmp_path: Path) -> None:
    root = project(tmp_path)
    lead = agent("lead", tools=["Agent(middle)"])
    middle = agent("middle", tools=["Agent"])
    middle_model = ScriptedModel([task("other"), "middle done"])
    main = ScriptedModel([task("middle"), "done"])
    runtime = Runtime(
        cwd=root,
        agents=[lead, middle, agent("other")],
        model=main,
        agent_models={"middle": middle_model},
        permission_mode="bypassPermissions",
    )
    await runtime.run("go", agent="lead")
    (refused,) = results(middle_model)
    assert refused.is_error and "you may not start 'other'" in refused.content


# -- dontAsk --------------------------------------------------------------------------------


def test_dont_ask_sits_between_plan_and_default() -> None:
    assert narrower_mode("default", "dontAsk") == "dontAsk"
    assert narrower_mode("acceptEdits", "dontAsk") == "dontAsk"
    assert narrower_mode("dontAsk", "default") == "dontAsk"
    assert narrower_mode("dontAsk", "bypassPermissions") == "dontAsk"
    assert narrower_mode("dontAsk", "plan") == "plan"


async def test_dont_ask_refuses_what_would_ask_and_runs_what_is_allowed(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "notes").mkdir()
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=True)

    refused, allowed, read = await run_calls(
        root,
        tool_call_response("Write", {"file_path": "a.txt", "content": "x"}),
        tool_call_response("Write", {"file_path": "notes/n.md", "content": "x"}),
        tool_call_response("Read", {"file_path": "notes/n.md"}),
        mode="dontAsk",
        approver=approver,
        allowed_tools=["Edit(notes/**)"],
    )
    assert refused.is_error and "dontAsk" in refused.content and not (root / "a.txt").exists()
    assert not allowed.is_error and (root / "notes" / "n.md").exists()
    assert not read.is_error
    assert asked == []


async def test_a_dont_ask_subagent_never_asks_even_when_someone_could_answer(
    tmp_path: Path,
) -> None:
    root = project(tmp_path)
    quiet = agent("quiet", permission_mode="dontAsk")
    child = ScriptedModel([bash("touch x.txt"), "done"])
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=True)

    main = ScriptedModel([task("quiet"), "done"])
    runtime = Runtime(
        cwd=root, agents=[quiet], model=main, agent_models={"quiet": child}, approver=approver
    )
    await runtime.run("go")
    (refused,) = results(child)
    assert refused.is_error and "dontAsk" in refused.content
    assert asked == [] and not (root / "x.txt").exists()


# -- the command line -----------------------------------------------------------------------


@pytest.mark.slow
def test_run_disallowed_tools_flag_through_the_console_script(tmp_path: Path) -> None:
    from cli_project import Project, ScriptedServer

    with ScriptedServer() as server:
        home = tmp_path / "home"
        home.mkdir()
        cli = Project(tmp_path / "cli-project", server, home)
        server.call("Bash", {"command": "echo start && git push origin main"})
        server.call("Bash", {"command": "echo fine"}, call_id="call_2")
        server.say("finished")
        done = cli.run(
            "push it",
            "--no-store",
            "--yes",
            "--disallowedTools",
            "Bash(git push *), Read(./.env)",
            "--allowedTools",
            "Read",
        )
        assert done.code == 0, done.err
        bodies = server.bodies()
    tool_messages = [m for m in bodies[-1]["messages"] if m["role"] == "tool"]
    refused, fine = (m["content"] for m in tool_messages)
    assert "deny rule 'Bash(git push *)' from --disallowedTools" in refused
    assert "fine" in fine


@pytest.mark.slow
def test_a_bad_rule_on_the_command_line_is_a_warning(tmp_path: Path) -> None:
    from cli_project import Project, ScriptedServer

    with ScriptedServer() as server:
        home = tmp_path / "home"
        home.mkdir()
        cli = Project(tmp_path / "cli-project", server, home)
        server.say("finished")
        done = cli.run("hi", "--no-store", "--disallowedTools", "Glob(oops(")
    assert done.code == 0, done.err
    assert "Warning:" in done.said and "Glob(oops(" in done.said


async def test_disallowed_agent_type_is_a_deny_rule_on_task(tmp_path: Path) -> None:
    root = project(tmp_path)
    lead = agent("lead", disallowed_tools=["Agent(risky)"])
    main = ScriptedModel([task("risky"), task("safe"), "done"])
    runtime = Runtime(
        cwd=root,
        agents=[lead, agent("risky"), agent("safe")],
        model=main,
        agent_models={"safe": ScriptedModel(["safe done"])},
        permission_mode="bypassPermissions",
    )
    await runtime.run("go", agent="lead")
    refused, started = results(main)
    assert refused.is_error and "deny rule 'Agent(risky)' from agent 'lead'" in refused.content
    assert started.content.startswith("safe done")


@given(st.text(max_size=40), st.sampled_from(["allow", "ask", "deny"]))
def test_parsing_any_rule_text_gives_a_rule_or_a_reason(text: str, behavior: str) -> None:
    from subagents.tools.rules import parse_rule

    rule, problem = parse_rule(text, behavior, "test")  # type: ignore[arg-type]
    assert (rule is None) != (problem is None)
    if problem is not None:
        assert "ignored" in problem


@given(st.text(max_size=40), st.text(max_size=40))
def test_matching_any_command_never_raises(pattern: str, command: str) -> None:
    from subagents.tools.rules import split_command

    command_matches(pattern, command)
    split_command(command)


@pytest.mark.parametrize(
    "settings",
    [
        {"permissions": ["Bash"]},
        {"permissions": {"deny": "Bash(rm *)"}},
        {"permissions": {"deny": [3]}},
        [1, 2],
    ],
)
async def test_settings_of_the_wrong_shape_are_warned_about(tmp_path: Path, settings: Any) -> None:
    root = project(tmp_path)
    path = write_json(root / ".claude" / "settings.json", settings)
    runtime = Runtime(cwd=root, model=ScriptedModel(["done"]))
    await runtime.run("go")
    assert not runtime.permissions.rules()
    (warning,) = runtime.permissions.warnings
    assert str(path) in warning


async def test_command_substitution_is_never_pre_approved(tmp_path: Path) -> None:
    root = project(tmp_path)
    (ran,) = await run_calls(
        root, bash("echo $(touch sneaky.txt)"), allowed_tools=["Bash(echo *)"], headless="deny"
    )
    assert ran.is_error and not (root / "sneaky.txt").exists()


async def test_grep_over_a_folder_leaves_out_files_a_read_rule_denies(tmp_path: Path) -> None:
    root = project(tmp_path)
    write_json(
        root / ".claude" / "settings.json", {"permissions": {"deny": ["Read(./secrets.txt)"]}}
    )
    (root / "secrets.txt").write_text("TOKEN=hunter2\n")  # neither hidden nor ignored
    (root / "config.txt").write_text("TOKEN=placeholder\n")
    (found,) = await run_calls(
        root,
        tool_call_response(
            "Grep", {"pattern": "TOKEN", "path": ".", "output_mode": "content", "glob": "*"}
        ),
    )
    assert not found.is_error
    assert "placeholder" in found.content and "hunter2" not in found.content
    assert "left out 1 file that permission rules keep from being read" in found.content


_WORD = st.from_regex(r"[a-z][a-z0-9.-]{0,6}", fullmatch=True)
_SIMPLE = st.lists(_WORD, min_size=1, max_size=4).map(" ".join)
_SEPARATOR = st.sampled_from([" && ", " || ", "; ", " | ", "\n", " & "])


@pytest.mark.slow
@given(st.lists(_SIMPLE, max_size=4), st.lists(_SIMPLE, max_size=4), _SEPARATOR)
def test_a_denied_command_is_caught_wherever_it_sits_in_a_chain(
    before: list[str], after: list[str], separator: str
) -> None:
    from subagents.tools.rules import _command_rule_matches

    command = separator.join([*before, "git push origin main", *after])
    assert _command_rule_matches("git push *", command, strict=False)


@given(st.text(max_size=12), st.text(max_size=40))
def test_whatever_an_allow_rule_lets_through_the_same_deny_rule_stops(
    pattern: str, command: str
) -> None:
    from subagents.tools.rules import _command_rule_matches

    if _command_rule_matches(pattern, command, strict=True):
        assert _command_rule_matches(pattern, command, strict=False)


def test_agents_show_lists_the_agents_it_may_start(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from subagents.cli.app import app

    root = project(tmp_path)
    folder = root / ".claude" / "agents"
    folder.mkdir(parents=True)
    (folder / "lead.md").write_text(
        "---\nname: lead\ndescription: Leads.\ntools: Read, Agent(explore, plan)\n"
        "disallowedTools: Bash(git push *)\npermissionMode: dontAsk\n---\nYou lead.\n"
    )
    shown = CliRunner().invoke(app, ["agents", "show", "lead", "--cwd", str(root)])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert "may start only explore, plan" in text
    assert "warnings" not in text and "no effect" not in text
    listed = CliRunner().invoke(app, ["agents", "list", "--json", "--cwd", str(root)])
    (lead,) = [a for a in json.loads(listed.output)["agents"] if a["name"] == "lead"]
    assert lead["subagent_types"] == ["explore", "plan"]
    assert "Task" in lead["effective_tools"] and "Bash" not in lead["effective_tools"]


def _probe(name: str) -> Tool:
    return Tool(name=name, description="", parameters={}, function=lambda: "")


@pytest.mark.parametrize(
    ("specifier", "file_path", "expected"),
    [
        ("./.env", ".env", True),
        ("./.env", "sub/.env", False),
        (".env", "sub/.env", True),  # no slash: any depth, as in .gitignore
        ("/src/**", "src/a.py", False),  # /x is relative to the project root, not the workspace
        ("/work/src/**", "src/a.py", True),
        ("//etc/passwd", "/etc/passwd", True),
        ("~/secrets/*", "HOME/secrets/k", True),
        ("*.pem", "deep/er/key.pem", True),
        ("src/", "src/a/b.py", True),
    ],
)
def test_path_specifiers_are_anchored_as_claude_code_documents(
    tmp_path: Path, specifier: str, file_path: str, expected: bool
) -> None:
    from subagents.tools.rules import PathContext, PermissionRules, parse_rule

    project_root = tmp_path / "repo"
    workspace = project_root / "work"
    home = tmp_path / "home"
    workspace.mkdir(parents=True)
    rule, problem = parse_rule(f"Read({specifier})", "deny", "test", project_root=project_root)
    assert rule is not None and problem is None
    paths = PathContext(workspace=workspace, home=home)
    target = file_path.replace("HOME", str(home))
    verdict = PermissionRules([rule]).decide(_probe("Read"), {"file_path": target}, paths)
    assert (verdict is not None) is expected


def test_denied_by_rules_lets_a_tool_check_each_further_step(tmp_path: Path) -> None:
    from subagents.runtime.delegation import Delegation
    from subagents.tools.base import ToolContext
    from subagents.tools.rules import denied_by_rules

    runtime = Runtime(
        cwd=tmp_path,
        model=ScriptedModel([]),
        disallowed_tools=["WebFetch(domain:internal.example)"],
    )
    session = runtime.main_session(Delegation(runtime))
    ctx = ToolContext(workspace=tmp_path, session=session)
    fetch = _probe("WebFetch")
    assert denied_by_rules(ctx, fetch, {"url": "https://public.example/"}) is None
    why = denied_by_rules(ctx, fetch, {"url": "http://internal.example/admin"})
    assert why is not None and "WebFetch(domain:internal.example)" in why


async def test_a_resumed_task_keeps_the_rules_it_was_started_with(tmp_path: Path) -> None:
    from subagents.runtime.pause import HumanDecision
    from subagents.store.sqlite import open_store

    root = project(tmp_path)
    first = ScriptedModel([tool_call_response("Write", {"file_path": "a.txt", "content": "x"})])
    with open_store(tmp_path / "state.db") as store:
        started = Runtime(
            cwd=root,
            model=first,
            store=store,
            headless="pause",
            disallowed_tools=["Bash(git push *)"],
        )
        paused = await started.run("go")
        assert paused.status == "awaiting_human"
        second = ScriptedModel([bash("git push origin"), "done"])
        resumer = Runtime(cwd=root, model=second, store=store, headless="pause")
        done = await resumer.resume(paused.task_id or "", HumanDecision("approve"))
    assert done.status == "completed" and (root / "a.txt").exists()
    refused = results(second)[-1]
    assert refused.is_error and "deny rule 'Bash(git push *)' from --disallowedTools" in (
        refused.content
    )


@pytest.mark.parametrize(
    ("specifier", "skill", "expected"),
    [
        ("pdf", "pdf", True),
        ("pdf", "pdf-forms", False),
        ("team:*", "team:review", True),
        ("team:*", "team", True),
        ("team:*", "teamwork", False),
        ("pdf*", "pdf-forms", True),
    ],
)
def test_skill_rules_match_the_skill_a_call_loads(
    tmp_path: Path, specifier: str, skill: str, expected: bool
) -> None:
    from subagents.tools.rules import PathContext, PermissionRules, parse_rule

    rule, _ = parse_rule(f"Skill({specifier})", "deny", "test")
    assert rule is not None
    paths = PathContext(workspace=tmp_path, home=tmp_path)
    verdict = PermissionRules([rule]).decide(_probe("Skill"), {"skill": skill}, paths)
    assert (verdict is not None) is expected


@pytest.mark.parametrize(
    "command", ["sudo echo hi", "LD_PRELOAD=evil.so echo hi", "env echo hi", "echo hi | sh"]
)
async def test_an_allow_rule_does_not_cover_a_wrapped_command(tmp_path: Path, command: str) -> None:
    root = project(tmp_path)
    (refused,) = await run_calls(
        root, bash(command), allowed_tools=["Bash(echo *)"], headless="deny"
    )
    assert refused.is_error and "needs approval" in refused.content


@given(
    st.text(alphabet="ab* ", max_size=8).filter(lambda p: p.strip()),
    st.text(alphabet="ab ", max_size=12),
)
def test_glob_matching_agrees_with_a_regular_expression(pattern: str, text: str) -> None:
    import re

    from subagents.tools.rules import _glob_fullmatch

    expression = ".*".join(re.escape(piece) for piece in pattern.split("*"))
    assert _glob_fullmatch(pattern, text) is (re.fullmatch(expression, text, re.DOTALL) is not None)


@pytest.mark.slow
def test_a_huge_command_against_a_many_star_rule_is_decided(tmp_path: Path) -> None:
    from subagents.tools.rules import _command_rule_matches

    command = "a" * 200_000
    assert not _command_rule_matches("a*a*a*a*a*a*b", command, strict=False)
    assert _command_rule_matches("a*a*a*a*a*a*", command, strict=True)


async def test_a_settings_default_mode_is_named_not_applied(tmp_path: Path) -> None:
    root = project(tmp_path)
    path = write_json(
        root / ".claude" / "settings.json",
        {"permissions": {"defaultMode": "bypassPermissions", "deny": ["Bash(rm *)"]}},
    )
    main = ScriptedModel(
        [tool_call_response("Write", {"file_path": "a.txt", "content": "x"}), "done"]
    )
    runtime = Runtime(cwd=root, model=main, headless="deny")
    await runtime.run("go")
    (refused,) = results(main)
    assert refused.is_error and not (root / "a.txt").exists()
    (warning,) = runtime.permissions.warnings
    assert str(path) in warning and "--permission-mode bypassPermissions" in warning


def test_permissions_list_shows_every_rule_with_its_source_deny_first(
    tmp_path: Path, isolated_home: Path
) -> None:
    from typer.testing import CliRunner

    from subagents.cli.app import app

    root = project(tmp_path)
    project_file = write_json(
        root / ".claude" / "settings.json",
        {"permissions": {"allow": ["Bash(npm run test:*)"], "ask": ["Bash(git commit *)"]}},
    )
    user_file = write_json(
        isolated_home / ".claude" / "settings.json", {"permissions": {"deny": ["Read(~/.ssh/**)"]}}
    )
    (root / ".claude" / "settings.local.json").write_text("{ broken")
    args = ["permissions", "list", "--cwd", str(root), "--disallowedTools", "Bash(git push *)"]
    listed = CliRunner().invoke(app, [*args, "--json"])
    assert listed.exit_code == 0, listed.output
    payload = json.loads(listed.output)
    assert [(r["behavior"], r["rule"], r["source"]) for r in payload["rules"]] == [
        ("deny", "Bash(git push *)", "--disallowedTools"),
        ("deny", "Read(~/.ssh/**)", str(user_file)),
        ("ask", "Bash(git commit *)", str(project_file)),
        ("allow", "Bash(npm run test:*)", str(project_file)),
    ]
    (warning,) = payload["warnings"]
    assert "settings.local.json" in warning and "not valid JSON" in warning
    shown = CliRunner().invoke(app, args)
    assert shown.exit_code == 0 and "Bash(git push *)" in shown.output
    assert "warning:" in shown.output


def test_flag_values_split_like_claude_codes() -> None:
    from subagents.tools.rule_sources import split_rule_arguments

    assert split_rule_arguments(["Read,Bash(git log *)", "Edit", "Read"]) == [
        "Read",
        "Bash(git log *)",
        "Edit",
    ]
    assert split_rule_arguments(["Bash(git log *) Read"]) == ["Bash(git log *)", "Read"]


def test_a_hostile_settings_file_is_a_short_warning_never_a_crash(tmp_path: Path) -> None:
    """Found by fuzz/run.py: a deeply nested settings.json raised RecursionError, and a huge
    defaultMode was quoted whole in the warning."""
    from subagents.tools.rule_sources import load_settings_rules

    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / ".git").mkdir()
    settings = project / ".claude" / "settings.json"
    settings.write_text("[" * 100_000 + "]" * 100_000)
    (warning,) = load_settings_rules(project, tmp_path / "home").warnings
    assert "nested too deeply" in warning
    settings.write_text(json.dumps({"permissions": {"defaultMode": ["x" * 100_000]}}))
    (warning,) = load_settings_rules(project, tmp_path / "home").warnings
    assert "defaultMode" in warning and len(warning) < 400
