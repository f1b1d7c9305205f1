"""Skills: discovery and precedence, malformed SKILL.md, preloading into an agent's prompt, the
Skill tool, `subagents skills list` and what `agents show` says about an agent's skills."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from subagents.cli.app import app
from subagents.definitions.model import AgentDefinition
from subagents.inventory import Inventory
from subagents.messages import ToolResultMessage
from subagents.models.base import ModelRequest
from subagents.runtime.runtime import Runtime
from subagents.skills import (
    MAX_PRELOAD_CHARS,
    MAX_SKILL_FILE_BYTES,
    discover_skills,
    read_skill,
    skill_folders,
)
from subagents.testing import ScriptedModel, tool_call_response

runner = CliRunner()


def write_skill(
    root: Path, folder: str, *, name: str | None = None, description: str = "", body: str = ""
) -> Path:
    """A skill folder under ``root`` (e.g. ``repo/.claude/skills``) with its SKILL.md."""
    lines = ["---"]
    if name is not None:
        lines.append(f"name: {name}")
    lines.append(f"description: {description or f'The {folder} skill.'}")
    lines += ["---", "", body or f"Instructions of {folder}.", ""]
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    directory = tmp_path / "repo"
    (directory / ".git").mkdir(parents=True)
    return directory


def project_skills(repo: Path) -> Path:
    return repo / ".claude" / "skills"


def agent(name: str, **fields: Any) -> AgentDefinition:
    fields.setdefault("description", f"The {name} specialist.")
    fields.setdefault("system_prompt", f"You are {name}.")
    return AgentDefinition(name=name, **fields)


def task(subagent_type: str, prompt: str = "do it") -> Any:
    arguments = {"description": "delegate", "prompt": prompt, "subagent_type": subagent_type}
    return tool_call_response("Task", arguments)


def tool_results(request: ModelRequest) -> list[ToolResultMessage]:
    return [m for m in request.messages if isinstance(m, ToolResultMessage)]


# -- discovery -----------------------------------------------------------------------------------


def test_skills_are_found_in_project_and_user_folders(repo: Path, isolated_home: Path) -> None:
    write_skill(project_skills(repo), "pdf-forms", description="Fill PDF forms.")
    write_skill(repo / ".subagents" / "skills", "release", description="Cut a release.")
    write_skill(isolated_home / ".claude" / "skills", "house-style", description="Our style.")

    catalog = discover_skills(repo)

    by_name = {skill.name: skill for skill in catalog.usable()}
    assert set(by_name) == {"pdf-forms", "release", "house-style"}
    assert by_name["pdf-forms"].scope == "project" and by_name["house-style"].scope == "user"
    assert by_name["pdf-forms"].description == "Fill PDF forms."
    assert by_name["pdf-forms"].body == "Instructions of pdf-forms."
    assert by_name["house-style"].folder == isolated_home / ".claude" / "skills" / "house-style"


def test_project_wins_over_user_and_the_nearest_directory_wins(
    repo: Path, isolated_home: Path
) -> None:
    write_skill(isolated_home / ".claude" / "skills", "review", body="user review")
    write_skill(project_skills(repo), "review", body="root review")
    nested = repo / "services" / "api"
    write_skill(project_skills(nested), "review", body="nested review")

    catalog = discover_skills(nested)

    used = catalog.get("review")
    assert used is not None and used.body == "nested review"
    bodies = [skill.body for skill in catalog.found if skill.name == "review"]
    assert bodies == ["nested review", "root review", "user review"]
    shadowed = [skill for skill in catalog.found if catalog.shadowed_by(skill) is not None]
    assert [skill.body for skill in shadowed] == ["root review", "user review"]
    assert [folder.scope for folder in skill_folders(nested)][-1] == "user"


def test_subagents_folder_wins_over_claude_folder_in_one_directory(repo: Path) -> None:
    write_skill(project_skills(repo), "lint", body="from .claude")
    write_skill(repo / ".subagents" / "skills", "lint", body="from .subagents")
    used = discover_skills(repo).get("lint")
    assert used is not None and used.body == "from .subagents"


def test_a_skill_is_known_by_its_frontmatter_name_and_by_its_folder(repo: Path) -> None:
    write_skill(project_skills(repo), "forms", name="PDF Forms")
    catalog = discover_skills(repo)
    skill = catalog.get("pdf-forms")
    assert skill is not None and skill.name == "pdf-forms"
    assert catalog.get("forms") is skill and catalog.get("PDF Forms") is skill
    assert any("normalised" in warning for warning in skill.warnings)


# -- malformed SKILL.md --------------------------------------------------------------------------


def test_malformed_skill_files_are_reported_never_raised(repo: Path) -> None:
    root = project_skills(repo)
    (root / "yaml").mkdir(parents=True)
    (root / "yaml" / "SKILL.md").write_text(
        "---\nname: yaml\ndescription: Use it: when asked\n---\nBody.\n"
    )
    (root / "badname").mkdir()
    (root / "badname" / "SKILL.md").write_text("---\nname: '[x'\ndescription: d\n---\nBody.\n")
    (root / "empty").mkdir()
    (root / "empty" / "SKILL.md").write_text("---\nname: empty\ndescription: d\n---\n")
    (root / "binary").mkdir()
    (root / "binary" / "SKILL.md").write_bytes(b"---\nname: binary\n---\n\xff\xfe\n")
    (root / "huge").mkdir()
    (root / "huge" / "SKILL.md").write_text("x" * (MAX_SKILL_FILE_BYTES + 1))
    (root / "lower").mkdir()
    (root / "lower" / "skill.md").write_text("---\nname: lower\ndescription: d\n---\nBody\n")
    (root / "bare").mkdir()
    (root / "bare" / "SKILL.md").write_text("Just instructions, no frontmatter.\n")
    (root / "notes").mkdir()  # a folder with no skill file is no skill at all
    (root / "notes" / "README.md").write_text("notes")

    catalog = discover_skills(repo)

    skills = {skill.folder.name: skill for skill in catalog.found}
    assert set(skills) == {"yaml", "badname", "empty", "binary", "huge", "lower", "bare"}
    # what Claude Code tolerates is recovered, with a warning
    assert skills["yaml"].usable and skills["yaml"].description == "Use it: when asked"
    assert any("not valid YAML" in w for w in skills["yaml"].warnings)
    assert skills["bare"].usable and skills["bare"].name == "bare"
    assert any("no frontmatter" in w for w in skills["bare"].warnings)
    # the rest cannot be loaded, and says why
    assert "is not valid" in skills["badname"].errors[0]
    assert skills["badname"].name == "badname"
    assert "no instructions" in skills["empty"].errors[0]
    assert "UTF-8" in skills["binary"].errors[0]
    assert "too large" in skills["huge"].errors[0]
    assert "must be named SKILL.md" in skills["lower"].errors[0]
    assert {skill.name for skill in catalog.usable()} == {"yaml", "bare"}


def test_a_broken_skill_hides_a_lower_one_of_the_same_name(repo: Path, isolated_home: Path) -> None:
    write_skill(isolated_home / ".claude" / "skills", "deploy", body="user deploy")
    (project_skills(repo) / "deploy").mkdir(parents=True)
    (project_skills(repo) / "deploy" / "SKILL.md").write_text("---\nname: deploy\n---\n")
    used = discover_skills(repo).get("deploy")
    assert used is not None and not used.usable and used.scope == "project"


async def test_a_project_skill_linked_to_a_private_file_is_refused(
    repo: Path, tmp_path: Path, isolated_home: Path
) -> None:
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY MATERIAL")
    folder = project_skills(repo) / "innocent"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").symlink_to(secret)
    shared = isolated_home / ".claude" / "shared-skill"
    write_skill(shared.parent, "shared-skill", body="Shared from home.")
    (project_skills(repo) / "shared").symlink_to(shared, target_is_directory=True)
    mine = tmp_path / "mine"
    write_skill(mine, "personal", body="Mine, linked from home.")
    user_skills = isolated_home / ".claude" / "skills"
    user_skills.mkdir(parents=True)
    (user_skills / "personal").symlink_to(mine / "personal", target_is_directory=True)

    catalog = discover_skills(repo)

    innocent = catalog.get("innocent")
    assert innocent is not None and not innocent.usable
    assert "outside" in innocent.errors[0] and "PRIVATE" not in innocent.body
    shared_skill = catalog.get("shared-skill") or catalog.get("shared")
    assert shared_skill is not None and shared_skill.usable  # ~/.claude is allowed
    personal = catalog.get("personal")
    assert personal is not None and personal.usable  # the user's own skills may link anywhere
    main = ScriptedModel([tool_call_response("Skill", {"skill": "innocent"}), "done"])
    runtime = Runtime(cwd=repo, model=main, agents=[agent("thief", skills=["innocent"])])
    await runtime.run("go", agent="thief")
    assert "PRIVATE KEY MATERIAL" not in main.requests[0].system
    (refused,) = tool_results(main.requests[1])
    assert refused.is_error and "PRIVATE KEY MATERIAL" not in refused.content


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_in_place_of_skill_md_is_refused_without_blocking(repo: Path) -> None:
    folder = project_skills(repo) / "pipe"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "SKILL.md")
    (skill,) = discover_skills(repo).found
    assert not skill.usable and "not a regular file" in skill.errors[0]


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=400))
def test_reading_any_text_never_raises(tmp_path: Path, text: str) -> None:
    path = tmp_path / "any" / "SKILL.md"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    skill = read_skill(path)
    assert skill.usable == (not skill.errors)
    assert skill.name  # always known by something, the folder's name at worst


# -- preloading into an agent's prompt -----------------------------------------------------------


async def test_listed_skills_are_preloaded_in_full_into_the_subagent_prompt(repo: Path) -> None:
    write_skill(project_skills(repo), "pdf-forms", body="Step 1: open the form.\nStep 2: fill.")
    write_skill(project_skills(repo), "unused", body="NOT FOR THIS AGENT")
    child = ScriptedModel(["filled"])
    main = ScriptedModel([task("filler"), "done"])
    filler = agent("filler", skills=["pdf-forms", "missing-one"])
    runtime = Runtime(
        cwd=repo, agents=[filler], model=main, agent_models={"filler": child},
        permission_mode="bypassPermissions",
    )  # fmt: skip

    await runtime.run("fill the form")

    system = child.requests[0].system
    assert system.startswith("You are filler.")
    assert "Step 1: open the form.\nStep 2: fill." in system
    assert f'folder="{project_skills(repo) / "pdf-forms"}"' in system
    assert "NOT FOR THIS AGENT" not in system
    assert "not available here: missing-one" in system
    assert "Step 1" not in main.requests[0].system  # the main agent lists no skills


async def test_the_main_agent_run_with_agent_gets_its_skills_too(repo: Path) -> None:
    write_skill(project_skills(repo), "style", body="Write short sentences.")
    main = ScriptedModel(["ok"])
    runtime = Runtime(cwd=repo, agents=[agent("writer", skills=["style"])], model=main)
    await runtime.run("write", agent="writer")
    assert "Write short sentences." in main.requests[0].system


async def test_a_huge_skill_is_cut_with_a_visible_note(repo: Path) -> None:
    body = "line of the skill\n" * (MAX_PRELOAD_CHARS // 10)
    write_skill(project_skills(repo), "big", body=body)
    main = ScriptedModel(["ok"])
    runtime = Runtime(cwd=repo, agents=[agent("reader", skills=["big"])], model=main)
    await runtime.run("go", agent="reader")
    system = main.requests[0].system
    assert "The skill's instructions were cut here" in system
    assert str(project_skills(repo) / "big" / "SKILL.md") in system
    assert len(system) < MAX_PRELOAD_CHARS + 5_000


def test_many_big_skills_stop_at_the_total_budget_and_are_named(repo: Path) -> None:
    from subagents.skills import MAX_PRELOAD_TOTAL_CHARS, preload_prompt

    count = MAX_PRELOAD_TOTAL_CHARS // MAX_PRELOAD_CHARS + 2
    for i in range(count):
        write_skill(project_skills(repo), f"big-{i}", body=f"skill {i} " * (MAX_PRELOAD_CHARS // 7))
    names = [f"big-{i}" for i in range(count)]
    prompt = preload_prompt(names, discover_skills(repo))
    assert MAX_PRELOAD_TOTAL_CHARS < len(prompt) < MAX_PRELOAD_TOTAL_CHARS + 3_000
    assert "left out for space" in prompt and f"big-{count - 1}." in prompt
    assert "skill 0 " in prompt and f"skill {count - 1} " not in prompt


# -- the Skill tool ------------------------------------------------------------------------------


async def test_the_skill_tool_loads_another_skill_by_name(repo: Path) -> None:
    write_skill(project_skills(repo), "changelog", description="Write changelog entries.",
                body="Use the Keep a Changelog format.")  # fmt: skip
    write_skill(project_skills(repo), "pdf-forms", description="Fill PDF forms.")
    main = ScriptedModel([tool_call_response("Skill", {"skill": "changelog"}), "done"])
    runtime = Runtime(cwd=repo, model=main, permission_mode="bypassPermissions")

    await runtime.run("update the changelog")

    (spec,) = [spec for spec in main.requests[0].tools if spec.name == "Skill"]
    assert "- changelog: Write changelog entries." in spec.description
    assert "- pdf-forms: Fill PDF forms." in spec.description
    assert spec.parameters["required"] == ["skill"]
    (result,) = tool_results(main.requests[1])
    assert not result.is_error
    assert "Use the Keep a Changelog format." in result.content
    assert str(project_skills(repo) / "changelog") in result.content
    assert "outside the workspace" not in result.content
    assert "Other files of the skill" not in result.content  # it has none


async def test_the_skill_tool_names_the_other_files_of_the_skill(repo: Path) -> None:
    folder = write_skill(project_skills(repo), "forms", body="See reference.md.").parent
    (folder / "reference.md").write_text("fields")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "fill.py").write_text("print()")
    (folder / ".cache").mkdir()
    (folder / ".cache" / "x").write_text("hidden")
    main = ScriptedModel(
        [
            tool_call_response("Skill", {"skill": "forms"}),
            tool_call_response("Read", {"file_path": str(folder / "reference.md")}),
            "done",
        ]
    )
    await Runtime(cwd=repo, model=main).run("go")
    loaded = tool_results(main.requests[1])[-1]
    assert "to read with Read when the instructions ask: reference.md, scripts/fill.py." in (
        loaded.content
    )
    read = tool_results(main.requests[2])[-1]
    assert not read.is_error and "fields" in read.content


async def test_the_skill_tool_reads_the_skill_afresh(repo: Path) -> None:
    path = write_skill(project_skills(repo), "notes", body="old text")
    main = ScriptedModel([tool_call_response("Skill", {"skill": "notes"}), "done"])
    runtime = Runtime(cwd=repo, model=main)
    runtime.toolbox.base_tools()  # the catalog is read now...
    path.write_text("---\nname: notes\ndescription: d\n---\nnew text\n")  # ...and edited after
    await runtime.run("go")
    (result,) = tool_results(main.requests[1])
    assert "new text" in result.content and "old text" not in result.content


async def test_an_unknown_or_broken_skill_is_a_tool_error_naming_the_choices(repo: Path) -> None:
    write_skill(project_skills(repo), "alpha")
    (project_skills(repo) / "broken").mkdir(parents=True)
    (project_skills(repo) / "broken" / "SKILL.md").write_text("---\nname: broken\n---\n")
    main = ScriptedModel(
        [
            tool_call_response("Skill", {"skill": "nope"}),
            tool_call_response("Skill", {"skill": "broken"}),
            tool_call_response("Skill", {}),
            "done",
        ]
    )
    runtime = Runtime(cwd=repo, model=main)
    result = await runtime.run("go")

    assert result.output == "done"
    unknown, broken, missing = (tool_results(main.requests[i])[-1] for i in (1, 2, 3))
    assert unknown.is_error and "no skill named 'nope'" in unknown.content
    assert "Available skills: alpha." in unknown.content
    assert broken.is_error and "no instructions" in broken.content
    assert missing.is_error and "skill: required" in missing.content


async def test_a_user_skill_outside_the_workspace_says_its_files_are_out_of_reach(
    repo: Path, isolated_home: Path
) -> None:
    write_skill(isolated_home / ".claude" / "skills", "mine", body="Use scripts/run.sh.")
    main = ScriptedModel([tool_call_response("Skill", {"skill": "mine"}), "done"])
    await Runtime(cwd=repo, model=main).run("go")
    (result,) = tool_results(main.requests[1])
    assert "Use scripts/run.sh." in result.content
    assert "is outside the workspace" not in result.content  # no other files: nothing to say

    folder = isolated_home / ".claude" / "skills" / "mine"
    (folder / "scripts").mkdir()
    (folder / "scripts" / "run.sh").write_text("echo")
    main = ScriptedModel([tool_call_response("Skill", {"skill": "mine"}), "done"])
    await Runtime(cwd=repo, model=main).run("go")
    (result,) = tool_results(main.requests[1])
    assert "Other files of the skill: scripts/run.sh." in result.content
    assert f"Its folder {folder} is outside the workspace" in result.content


async def test_no_skill_tool_without_skills_and_only_for_agents_allowed_it(repo: Path) -> None:
    bare = ScriptedModel(["ok"])
    await Runtime(cwd=repo, model=bare).run("go")
    assert "Skill" not in {spec.name for spec in bare.requests[0].tools}

    write_skill(project_skills(repo), "alpha")
    narrow, chosen = ScriptedModel(["a"]), ScriptedModel(["b"])
    main = ScriptedModel([task("narrow"), task("chosen"), "done"])
    runtime = Runtime(
        cwd=repo, model=main, permission_mode="bypassPermissions",
        agents=[agent("narrow", tools=["Read"]), agent("chosen", tools=["Read", "Skill"])],
        agent_models={"narrow": narrow, "chosen": chosen},
    )  # fmt: skip
    await runtime.run("go")
    assert "Skill" in {spec.name for spec in main.requests[0].tools}
    assert [spec.name for spec in narrow.requests[0].tools] == ["Read"]
    assert sorted(spec.name for spec in chosen.requests[0].tools) == ["Read", "Skill"]


async def test_arguments_fill_the_placeholder_or_follow_the_instructions(repo: Path) -> None:
    write_skill(project_skills(repo), "greet", body="Greet $ARGUMENTS politely.")
    write_skill(project_skills(repo), "plain", body="Summarise.")
    main = ScriptedModel(
        [
            tool_call_response("Skill", {"skill": "greet", "args": "the reviewers"}),
            tool_call_response("Skill", {"skill": "plain", "args": "only the API"}),
            "done",
        ]
    )
    await Runtime(cwd=repo, model=main).run("go")
    greet, plain = tool_results(main.requests[1])[-1], tool_results(main.requests[2])[-1]
    assert "Greet the reviewers politely." in greet.content
    assert "Summarise.\n\nARGUMENTS: only the API" in plain.content


async def test_a_skill_kept_from_the_model_is_preloaded_but_not_offered(repo: Path) -> None:
    path = write_skill(project_skills(repo), "deploy", body="Deploy with care.")
    text = path.read_text().replace("---\n\n", "disable-model-invocation: true\n---\n\n", 1)
    path.write_text(text)
    write_skill(project_skills(repo), "lint")
    main = ScriptedModel([tool_call_response("Skill", {"skill": "deploy"}), "done"])
    runtime = Runtime(cwd=repo, model=main, agents=[agent("ops", skills=["deploy"])])
    await runtime.run("go", agent="ops")

    assert "Deploy with care." in main.requests[0].system  # preloaded: the agent file asks
    (spec,) = [spec for spec in main.requests[0].tools if spec.name == "Skill"]
    assert "- lint:" in spec.description and "deploy" not in spec.description
    (refused,) = tool_results(main.requests[1])
    assert refused.is_error and "only for people" in refused.content
    listed = runner.invoke(app, ["skills", "list", "--cwd", str(repo), "--json"]).stdout
    flags = {row["name"]: row["model_invocable"] for row in json.loads(listed)["skills"]}
    assert flags == {"deploy": False, "lint": True}


def test_claude_code_skill_keys_without_effect_here_are_warned_about(repo: Path) -> None:
    path = write_skill(project_skills(repo), "fork")
    path.write_text(path.read_text().replace(
        "---\n\n", "allowed-tools: Bash(git *)\ncontext: fork\nlicense: MIT\n---\n\n", 1
    ))  # fmt: skip
    (skill,) = discover_skills(repo).found
    assert skill.usable
    keys = [w.split(" has no effect here")[0] for w in skill.warnings]
    assert keys == ["'allowed-tools'", "'context'"]


# -- CLI -----------------------------------------------------------------------------------------


def test_skills_list_shows_name_scope_path_description_and_problems(
    repo: Path, isolated_home: Path
) -> None:
    write_skill(project_skills(repo), "pdf-forms", description="Fill PDF forms.")
    write_skill(isolated_home / ".claude" / "skills", "pdf-forms", description="older")
    (project_skills(repo) / "broken").mkdir(parents=True)
    (project_skills(repo) / "broken" / "SKILL.md").write_text("---\nname: broken\n---\n")

    result = runner.invoke(app, ["skills", "list", "--cwd", str(repo), "--json"])
    assert result.exit_code == 0, result.output
    rows = {(row["name"], row["scope"]): row for row in json.loads(result.stdout)["skills"]}
    winner = rows[("pdf-forms", "project")]
    assert winner["status"] == "ok" and winner["path"] == ".claude/skills/pdf-forms/SKILL.md"
    assert winner["description"] == "Fill PDF forms."
    loser = rows[("pdf-forms", "user")]
    assert loser["status"] == "shadowed"
    assert loser["shadowed_by"] == ".claude/skills/pdf-forms/SKILL.md"
    broken = rows[("broken", "project")]
    assert broken["status"] == "invalid" and "no instructions" in broken["errors"][0]
    assert "description is missing" in broken["warnings"][0]

    table = runner.invoke(app, ["skills", "list", "--cwd", str(repo)], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "Skills: 1 usable of 3" in table.stdout
    assert "Fill PDF forms." in table.stdout
    assert "error: broken (.claude/skills/broken/SKILL.md): has no instructions" in table.stdout


def test_skills_beyond_the_limit_are_reported_not_read(repo: Path) -> None:
    from subagents.skills import MAX_SKILLS

    for i in range(MAX_SKILLS + 3):
        write_skill(project_skills(repo), f"s{i:04d}")
    catalog = discover_skills(repo)
    assert len(catalog.found) == MAX_SKILLS
    assert [path.parent.name for path in catalog.left_out] == [
        f"s{i:04d}" for i in range(MAX_SKILLS, MAX_SKILLS + 3)
    ]
    result = runner.invoke(app, ["skills", "list", "--cwd", str(repo)], env={"COLUMNS": "300"})
    assert f"3 more skills were not read (at most {MAX_SKILLS} are)" in result.stdout
    data = json.loads(runner.invoke(app, ["skills", "list", "--cwd", str(repo), "--json"]).stdout)
    assert len(data["left_out"]) == 3


def test_skills_list_with_no_skills_says_how_to_add_one(repo: Path) -> None:
    result = runner.invoke(app, ["skills", "list", "--cwd", str(repo)])
    assert result.exit_code == 0 and "No skills found" in result.stdout


def test_agents_show_warns_about_missing_skills_and_lists_skill_among_tools(repo: Path) -> None:
    write_skill(project_skills(repo), "pdf-forms")
    agents = repo / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "filler.md").write_text(
        "---\nname: filler\ndescription: Fills forms.\nskills: [pdf-forms, gone]\n"
        "memory: project\n---\nYou fill forms.\n"
    )

    record = Inventory.discover(repo).get("filler")

    assert record.status == "active"
    assert "Skill" in record.effective_tools
    (warning,) = [w for w in record.definition.warnings if "skill" in w]
    assert "skill 'gone' is not found" in warning
    warnings = record.definition.warnings
    assert not any("no effect" in w or "not available here" in w for w in warnings)
    shown = runner.invoke(app, ["agents", "show", "filler", "--cwd", str(repo), "--json"])
    data = json.loads(shown.stdout)
    assert data["skills"] == ["pdf-forms", "gone"]
    assert data["memory_folder"] == str(repo / ".claude" / "agent-memory" / "filler")
    text = runner.invoke(
        app, ["agents", "show", "filler", "--cwd", str(repo)], env={"COLUMNS": "300"}
    ).stdout
    assert "pdf-forms, gone" in text
    assert f"project: {repo / '.claude' / 'agent-memory' / 'filler'}" in text
    assert not (repo / ".claude" / "agent-memory").exists()  # showing creates nothing


def test_agents_validate_strict_fails_on_a_missing_skill(repo: Path) -> None:
    agents = repo / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "filler.md").write_text(
        "---\nname: filler\ndescription: Fills forms.\nskills: gone\n---\nYou fill forms.\n"
    )
    lenient = runner.invoke(app, ["agents", "validate", "--cwd", str(repo)])
    assert lenient.exit_code == 0
    assert "filler: warning: skill 'gone' is not found" in lenient.stdout
    strict = runner.invoke(app, ["agents", "validate", "--strict", "--cwd", str(repo)])
    assert strict.exit_code != 0

    write_skill(project_skills(repo), "gone")
    fixed = runner.invoke(app, ["agents", "validate", "--strict", "--cwd", str(repo)])
    assert fixed.exit_code == 0, fixed.stdout


def test_a_skill_folder_listing_is_bounded(tmp_path: Path) -> None:
    from subagents.skills import skill_files

    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(60):
        (folder / f"f{i:02d}.md").write_text("x")
    files, more = skill_files(folder, limit=40)
    assert files == [f"f{i:02d}.md" for i in range(40)] and more
    assert skill_files(tmp_path / "gone") == ([], False)
