"""Inventory: discovery across scopes and dialects, precedence, conflicts, switches, lookup."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from subagents.config import load_config
from subagents.definitions.model import AgentDefinition
from subagents.errors import AgentNotFoundError, AgentUnavailableError, ConfigError
from subagents.inventory import (
    AGENT_FOLDER_NAMES,
    Inventory,
    agent_folders,
    is_readme,
    scan_agent_folder,
)
from subagents.models.aliases import TIER_ALIASES
from subagents.tools.names import BUILTIN_TOOL_NAMES


def agent_md(
    name: str,
    *,
    description: str = "Does one thing well.",
    tools: str | None = None,
    model: str | None = None,
    body: str = "You are a focused specialist.",
    extra: str = "",
) -> str:
    lines = ["---", f"name: {name}", f"description: {description}"]
    if tools is not None:
        lines.append(f"tools: {tools}")
    if model is not None:
        lines.append(f"model: {model}")
    if extra:
        lines.append(extra)
    lines += ["---", "", body, ""]
    return "\n".join(lines)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    directory = tmp_path / "home"
    directory.mkdir()
    return directory


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    directory = tmp_path / "repo"
    (directory / ".git").mkdir(parents=True)
    return directory


def discover(repo: Path, home: Path, **kwargs: object) -> Inventory:
    return Inventory.discover(repo, home=home, **kwargs)  # type: ignore[arg-type]


def kinds(inventory: Inventory, kind: str) -> list[tuple[str | None, Path | None]]:
    return [(e.name, e.path) for e in inventory.discovery_events if e.kind == kind]


# -- the real corpus ---------------------------------------------------------------------------


def test_every_corpus_file_is_active(corpus_dir: Path, repo: Path, home: Path) -> None:
    target = repo / ".claude" / "agents"

    def only_markdown(directory: str, names: list[str]) -> list[str]:
        return [n for n in names if not n.endswith(".md") and not Path(directory, n).is_dir()]

    shutil.copytree(corpus_dir, target, ignore=only_markdown)
    copied = sorted(target.rglob("*.md"))
    assert len(copied) == 158

    inventory = discover(repo, home)
    from_corpus = [d for d in inventory.definitions if d.scope == "project"]
    assert len(from_corpus) == 158
    not_active = {
        str(d.source_path): d.validation_errors for d in from_corpus if d.status != "active"
    }
    assert not_active == {}
    assert inventory.conflicts == []
    assert len(kinds(inventory, "found")) == 158 + 3  # the corpus and the three built-ins
    assert kinds(inventory, "invalid") == []
    # readme-generator.md is an agent, not a README.
    assert inventory.get("readme-generator").status == "active"
    for record in inventory.active():
        if record.definition.tools is not None:
            assert set(record.effective_tools) <= {*BUILTIN_TOOL_NAMES, "Task"}
            assert not set(record.definition.unavailable_tools) & set(record.effective_tools)


# -- scopes and precedence ---------------------------------------------------------------------


def test_builtins_are_present_and_looked_up_case_insensitively(
    repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")  # else haiku falls back to inherit
    inventory = discover(repo, home)
    assert sorted(inventory.records) == ["explore", "general-purpose", "plan"]
    explore = inventory.get("Explore")
    assert explore.scope == "builtin"
    assert explore.effective_tools == ["Read", "Glob", "Grep", "LS"]
    assert explore.effective_model == TIER_ALIASES["haiku"]  # the built-in alias
    general = inventory.get("general-purpose")
    assert general.effective_tools == [*BUILTIN_TOOL_NAMES, "Task"]
    assert general.effective_model == "inherit"
    assert inventory.get("Plan").effective_model == "inherit"
    assert sorted(discover(repo, home, include_builtin=False).records) == []


def test_precedence_across_every_scope(repo: Path, home: Path) -> None:
    user_file = write(
        home / ".claude" / "agents" / "reviewer.md", agent_md("reviewer", body="user")
    )
    root_file = write(
        repo / ".claude" / "agents" / "reviewer.md", agent_md("reviewer", body="project root")
    )
    nested = repo / "packages" / "web"
    nested_file = write(
        nested / ".subagents" / "agents" / "reviewer.md", agent_md("reviewer", body="nested")
    )
    cwd = nested / "src"
    cwd.mkdir()
    explicit = AgentDefinition(
        name="reviewer", description="From Python.", system_prompt="explicit", tools=["Read"]
    )

    inventory = discover(cwd, home, explicit=[explicit])
    record = inventory.get("reviewer")
    assert record.scope == "explicit"
    assert record.definition.system_prompt == "explicit"
    assert record.source == "<explicit>"
    assert [(d.scope, d.source_path) for d in record.overrides] == [
        ("project", nested_file),
        ("project", root_file),
        ("user", user_file),
    ]
    overridden = kinds(inventory, "overridden")
    assert sorted(str(path) for _, path in overridden) == sorted(
        str(p) for p in (nested_file, root_file, user_file)
    )
    assert all(
        "explicit definition" in e.detail
        for e in inventory.discovery_events
        if e.kind == "overridden"
    )
    # Nested directories are layers, not a conflict.
    assert inventory.conflicts == []

    without_explicit = discover(cwd, home)
    record = without_explicit.get("reviewer")
    assert (record.scope, record.definition.system_prompt) == ("project", "nested")
    assert [d.source_path for d in record.overrides] == [root_file, user_file]

    from_root = discover(repo, home)  # the nested folder is below cwd: not seen
    assert from_root.get("reviewer").definition.system_prompt == "project root"
    assert [d.scope for d in from_root.get("reviewer").overrides] == ["user"]


def test_a_file_overrides_a_builtin(repo: Path, home: Path) -> None:
    write(
        home / ".codex" / "agents" / "explore.toml",
        'name = "explore"\ndescription = "Mine."\n'
        'developer_instructions = "Explore my way."\nmodel = "sonnet"\n',
    )
    inventory = discover(repo, home)
    record = inventory.get("Explore")
    assert record.scope == "user"
    assert record.definition.dialect == "codex-toml"
    assert record.definition.system_prompt == "Explore my way."
    assert [d.scope for d in record.overrides] == ["builtin"]
    assert record.effective_tools == [*BUILTIN_TOOL_NAMES, "Task"]


def test_every_dialect_and_folder_is_discovered(repo: Path, home: Path) -> None:
    write(home / ".subagents" / "agents" / "u-ours.md", agent_md("u-ours"))
    write(home / ".wave" / "agents" / "u-wave.md", agent_md("u-wave"))
    write(home / ".gemini" / "agents" / "u-gemini.md", agent_md("u-gemini"))
    write(
        repo / ".codex" / "agents" / "p-codex.toml",
        'name = "p-codex"\ndescription = "Codex agent."\ndeveloper_instructions = "Work."\n',
    )
    write(
        repo / ".subagents" / "agents" / "p-json.json",
        json.dumps({"name": "p-json", "description": "JSON agent.", "prompt": "Be terse."}),
    )
    write(repo / ".claude" / "agents" / "deep" / "er" / "p-nested.md", agent_md("p-nested"))
    inventory = discover(repo, home, include_builtin=False)
    dialects = {r.name: (r.scope, r.definition.dialect) for r in inventory.active()}
    assert dialects == {
        "u-ours": ("user", "markdown"),
        "u-wave": ("user", "markdown"),
        "u-gemini": ("user", "markdown"),
        "p-codex": ("project", "codex-toml"),
        "p-json": ("project", "json"),
        "p-nested": ("project", "markdown"),
    }
    assert len(kinds(inventory, "found")) == 6


def test_conflicts_within_one_scope_follow_folder_then_path_order(repo: Path, home: Path) -> None:
    ours = write(repo / ".subagents" / "agents" / "dup.md", agent_md("dup", body="ours"))
    claude = write(repo / ".claude" / "agents" / "dup.md", agent_md("dup", body="claude"))
    codex = write(
        repo / ".codex" / "agents" / "dup.toml",
        'name = "dup"\ndescription = "x"\ndeveloper_instructions = "codex"\n',
    )
    b = write(repo / ".claude" / "agents" / "b" / "twin.md", agent_md("twin", body="b"))
    a = write(repo / ".claude" / "agents" / "a" / "twin.md", agent_md("Twin", body="a"))
    c = write(repo / ".claude" / "agents" / "c.md", agent_md("twin", body="c"))
    write(home / ".claude" / "agents" / "dup.md", agent_md("dup", body="user"))

    inventory = discover(repo, home, include_builtin=False)
    dup = inventory.get("dup")
    assert dup.definition.system_prompt == "ours"
    assert [d.scope for d in dup.overrides] == ["user"]  # conflicts are not overrides
    twin = inventory.get("twin")
    assert twin.definition.source_path == a
    by_name = {c.name: c for c in inventory.conflicts}
    assert set(by_name) == {"dup", "twin"}
    assert by_name["dup"].winner.source_path == ours
    assert [d.source_path for d in by_name["dup"].losers] == [claude, codex]
    assert [d.source_path for d in by_name["twin"].losers] == [b, c]
    assert all(conflict.scope == "project" for conflict in inventory.conflicts)
    conflict_events = kinds(inventory, "conflict")
    assert sorted(str(p) for _, p in conflict_events) == sorted(
        str(p) for p in (claude, codex, b, c)
    )
    # Every file is still listed among the definitions read.
    assert len(inventory.definitions) == 7


def test_explicit_duplicates_are_a_conflict(repo: Path, home: Path) -> None:
    first = AgentDefinition(name="x", description="d", system_prompt="first")
    second = AgentDefinition(name="x", description="d", system_prompt="second", scope="user")
    inventory = discover(repo, home, explicit=[first, second], include_builtin=False)
    record = inventory.get("x")
    assert record.definition.system_prompt == "first"
    assert record.scope == "explicit"
    assert [c.losers[0].system_prompt for c in inventory.conflicts] == ["second"]
    assert inventory.conflicts[0].losers[0].scope == "explicit"


def test_invalid_file_wins_its_name_and_is_reported(repo: Path, home: Path) -> None:
    write(home / ".claude" / "agents" / "helper.md", agent_md("helper"))
    bad = write(repo / ".claude" / "agents" / "helper.md", "---\nname: helper\n---\n\n")
    inventory = discover(repo, home, include_builtin=False)
    record = inventory.records["helper"]
    assert record.status == "invalid"
    assert record.definition.source_path == bad
    assert "description" in record.detail
    assert [d.scope for d in record.overrides] == ["user"]
    assert [(n, p) for n, p in kinds(inventory, "invalid")] == [("helper", bad)]
    with pytest.raises(AgentUnavailableError) as caught:
        inventory.get("helper")
    assert isinstance(caught.value, AgentNotFoundError)
    assert caught.value.status == "invalid"
    assert "description" in str(caught.value)
    assert "subagents agents validate" in str(caught.value)


def test_unreadable_files_are_reported_not_fatal(repo: Path, home: Path) -> None:
    folder = repo / ".claude" / "agents"
    write(folder / "good.md", agent_md("good"))
    (folder / "binary.md").write_bytes(b"\x00\x01\x02---\n")
    (folder / "latin1.md").write_bytes("---\nname: caf\xe9\n---\n".encode("latin-1"))
    (folder / "broken.md").symlink_to(folder / "missing-target.md")
    (folder / "dir.md").mkdir()  # a directory named like a file is scanned, not parsed
    inventory = discover(repo, home, include_builtin=False)
    assert [r.name for r in inventory.active()] == ["good"]
    invalid = {Path(p or "").name: n for n, p in kinds(inventory, "invalid")}
    assert set(invalid) == {"binary.md", "latin1.md", "broken.md"}
    reasons = {
        d.source_path.name: d.validation_errors[0]
        for d in inventory.definitions
        if d.source_path is not None and d.status == "invalid"
    }
    assert "binary" in reasons["binary.md"]
    assert "UTF-8" in reasons["latin1.md"]
    assert "broken symlink" in reasons["broken.md"]


def test_scan_skips_hidden_and_readmes_and_survives_symlink_loops(tmp_path: Path) -> None:
    folder = tmp_path / "agents"
    write(folder / "a.md", "x")
    write(folder / "sub" / "b.toml", "x")
    write(folder / "sub" / "c.json", "x")
    write(folder / ".hidden" / "h.md", "x")
    write(folder / ".dotfile.md", "x")
    write(folder / "notes.txt", "x")
    write(folder / "README.md", "x")
    write(folder / "sub" / "readme.fr.md", "x")
    write(folder / "readme-generator.md", "x")
    (folder / "sub" / "loop").symlink_to(folder)
    files, readmes = scan_agent_folder(folder)
    assert [f.relative_to(folder).as_posix() for f in files] == [
        "a.md",
        "readme-generator.md",
        "sub/b.toml",
        "sub/c.json",
    ]
    assert [r.name for r in readmes] == ["README.md", "readme.fr.md"]
    assert scan_agent_folder(tmp_path / "absent") == ([], [])
    assert is_readme(Path("README.markdown")) and not is_readme(Path("readmes.md"))


def test_readme_in_agent_folder_is_skipped_with_an_event(repo: Path, home: Path) -> None:
    readme = write(repo / ".claude" / "agents" / "README.md", "# Our agents\n")
    inventory = discover(repo, home, include_builtin=False)
    assert inventory.records == {}
    assert kinds(inventory, "skipped") == [(None, readme)]


def test_agent_folders_order(repo: Path, home: Path) -> None:
    cwd = repo / "a" / "b"
    cwd.mkdir(parents=True)
    folders = agent_folders(cwd, home=home)
    assert [f.path for f in folders[:5]] == [home / n for n in AGENT_FOLDER_NAMES]
    project = [f.path for f in folders[5:]]
    resolved = repo.resolve()
    expected_dirs = [resolved, resolved / "a", resolved / "a" / "b"]
    assert project == [d / n for d in expected_dirs for n in AGENT_FOLDER_NAMES]


# -- config switches ---------------------------------------------------------------------------


def test_disabled_agents_and_builtins(repo: Path, home: Path) -> None:
    write(repo / ".claude" / "agents" / "reviewer.md", agent_md("reviewer"))
    write(repo / ".claude" / "agents" / "writer.md", agent_md("writer"))
    write(
        repo / ".subagents" / "config.toml",
        '[subagents]\ndisabled = ["Reviewer", "Explore", "ghost"]\n',
    )
    inventory = discover(repo, home)
    assert sorted(r.name for r in inventory.active()) == ["general-purpose", "plan", "writer"]
    assert inventory.records["reviewer"].status == "disabled"
    assert inventory.records["explore"].status == "disabled"
    assert "disabled" in inventory.records["reviewer"].detail
    assert sorted(str(n) for n, _ in kinds(inventory, "disabled")) == ["explore", "reviewer"]
    assert [n for n, _ in kinds(inventory, "skipped")] == ["ghost"]
    with pytest.raises(AgentUnavailableError) as caught:
        inventory.get("explore")
    assert caught.value.status == "disabled"
    assert "config.toml" in str(caught.value)


def test_enabled_false_disables_everything(repo: Path, home: Path) -> None:
    write(repo / ".claude" / "agents" / "reviewer.md", agent_md("reviewer"))
    write(home / ".subagents" / "config.toml", "[subagents]\nenabled = false\n")
    explicit = AgentDefinition(name="py", description="d", system_prompt="p")
    inventory = discover(repo, home, explicit=[explicit])
    assert inventory.active() == []
    assert {r.status for r in inventory.records.values()} == {"disabled"}
    assert len(inventory.records) == 5
    with pytest.raises(AgentNotFoundError):
        inventory.get("reviewer")


def test_manual_discovery_keeps_only_listed_agents(repo: Path, home: Path) -> None:
    write(repo / ".claude" / "agents" / "reviewer.md", agent_md("reviewer"))
    write(repo / ".claude" / "agents" / "writer.md", agent_md("writer"))
    write(
        repo / ".subagents" / "config.toml",
        '[subagents]\ndiscovery = "manual"\nagents = ["writer", "plan", "nobody"]\n',
    )
    inventory = discover(repo, home)
    assert sorted(r.name for r in inventory.active()) == ["plan", "writer"]
    assert "manual" in inventory.records["reviewer"].detail
    assert [n for n, _ in kinds(inventory, "skipped")] == ["nobody"]


def test_effective_model_uses_config_aliases_and_default(
    repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    write(
        home / ".subagents" / "config.toml",
        '[subagents]\ndefault_model = "fast"\n[models]\nfast = "openai:gpt-4o-mini"\n'
        'smart = "anthropic:claude-sonnet-4-5"\n',
    )
    folder = repo / ".claude" / "agents"
    write(folder / "a.md", agent_md("a", model="smart"))
    write(folder / "b.md", agent_md("b", model="inherit"))
    write(folder / "c.md", agent_md("c"))
    write(folder / "d.md", agent_md("d", model="openai:gpt-4o"))
    write(folder / "e.md", agent_md("e", model="haiku"))
    inventory = discover(repo, home, include_builtin=False)
    models = {r.name: r.effective_model for r in inventory.records.values()}
    assert models == {
        "a": "anthropic:claude-sonnet-4-5",
        "b": "inherit",
        "c": "openai:gpt-4o-mini",
        "d": "openai:gpt-4o",
        "e": TIER_ALIASES["haiku"],  # built-in alias, not redefined in [models]
    }
    assert inventory.records["a"].status == "active"  # a config alias is a known model


def test_effective_tools_with_mcp_tools(repo: Path, home: Path) -> None:
    folder = repo / ".claude" / "agents"
    write(folder / "web.md", agent_md("web", tools="Read, WebFetch, NotebookEdit, mcp__docs"))
    write(folder / "all.md", agent_md("all", extra="disallowedTools: Bash, Write"))
    write(folder / "none.md", agent_md("none", tools="NotebookEdit, NotebookRead"))
    inventory = discover(
        repo,
        home,
        include_builtin=False,
        known_mcp_servers=["docs"],
        tool_names=["mcp__docs__search", "mcp__docs__fetch", "mcp__other__x"],
    )
    web = inventory.get("web")
    assert web.effective_tools == ["Read", "WebFetch", "mcp__docs__search", "mcp__docs__fetch"]
    assert web.definition.unavailable_tools == ["NotebookEdit"]
    assert any("NotebookEdit" in w for w in web.definition.warnings)
    everything = inventory.get("all")
    assert "Bash" not in everything.effective_tools and "Write" not in everything.effective_tools
    assert "mcp__other__x" in everything.effective_tools
    assert inventory.records["none"].status == "invalid"  # nothing usable left


def test_bad_config_raises_config_error(repo: Path, home: Path) -> None:
    write(repo / ".subagents" / "config.toml", "[subagents]\nmax_depth = 'deep'\n")
    with pytest.raises(ConfigError, match=r"config.toml:2: key 'subagents.max_depth'"):
        discover(repo, home)


def test_given_config_is_used_instead_of_files(repo: Path, home: Path) -> None:
    write(repo / ".subagents" / "config.toml", "[subagents]\nmax_depth = 'deep'\n")
    config = load_config(home / "elsewhere", home=home)
    write(repo / ".claude" / "agents" / "x.md", agent_md("x"))
    inventory = Inventory.discover(repo, home=home, config=config, include_builtin=False)
    assert inventory.config is config
    assert inventory.get("x").status == "active"


# -- lookup and reload -------------------------------------------------------------------------


def test_unknown_name_lists_available_and_closest(repo: Path, home: Path) -> None:
    write(repo / ".claude" / "agents" / "code-reviewer.md", agent_md("code-reviewer"))
    inventory = discover(repo, home)
    with pytest.raises(AgentNotFoundError) as caught:
        inventory.get("code-reviwer")
    error = caught.value
    assert error.closest == ["code-reviewer"]
    assert error.available == ["code-reviewer", "explore", "general-purpose", "plan"]
    assert "Did you mean 'code-reviewer'" in str(error)
    assert "subagents agents list" in str(error)
    with pytest.raises(AgentNotFoundError) as caught:
        inventory.get("zzzzzz")
    assert caught.value.closest == []
    # Only exact (normalised) names match: no prefixes, no fuzzy hits.
    with pytest.raises(AgentNotFoundError):
        inventory.get("code")
    assert inventory.get("Code_Reviewer").name == "code-reviewer"


def test_lookup_miss_rescans_once(repo: Path, home: Path) -> None:
    inventory = discover(repo, home, include_builtin=False)
    assert inventory.generation == 0
    write(repo / ".claude" / "agents" / "late.md", agent_md("late"))
    assert "late" not in inventory.records
    assert inventory.get("late").status == "active"
    assert inventory.generation == 1
    inventory.get("late")  # a hit does not rescan
    assert inventory.generation == 1
    with pytest.raises(AgentNotFoundError):
        inventory.get("still-missing")
    assert inventory.generation == 2


def test_lookup_of_a_fixed_invalid_file_rescans(repo: Path, home: Path) -> None:
    path = write(repo / ".claude" / "agents" / "fixme.md", "---\nname: fixme\n---\nbody\n")
    inventory = discover(repo, home, include_builtin=False)
    assert inventory.records["fixme"].status == "invalid"
    write(path, agent_md("fixme"))
    assert inventory.get("fixme").status == "active"


def test_reload_picks_up_removals_and_config_changes(repo: Path, home: Path) -> None:
    path = write(repo / ".claude" / "agents" / "gone.md", agent_md("gone"))
    inventory = discover(repo, home, include_builtin=False)
    assert list(inventory.records) == ["gone"]
    path.unlink()
    write(home / ".subagents" / "config.toml", '[models]\nsonnet = "openai:x"\n')
    assert inventory.reload() is inventory
    assert inventory.records == {}
    assert inventory.config.models == {"sonnet": "openai:x"}
