"""Models on any provider: Claude Code's tier aliases, one resolver, and the fallback to the
parent's model when a subagent's model has no credentials here.

In process through :class:`Runtime` with scripted models, and end to end through the real
console script against a local OpenAI-compatible server (no Anthropic key anywhere).
"""

from __future__ import annotations

import json
import shutil
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cli_project import MODEL, Project, ScriptedServer
from subagents.cli.ui.blocks import BlockTree
from subagents.config import Config, load_config
from subagents.definitions.model import AgentDefinition
from subagents.definitions.validate import check_model
from subagents.inventory import Inventory
from subagents.messages import ToolResultMessage, UserMessage
from subagents.models.aliases import DEFAULT_ALIASES, TIER_ALIASES, split_context_suffix
from subagents.models.base import ModelRequest, ModelResponse
from subagents.models.choice import ModelChoice, choose_model, is_known_model
from subagents.models.resolve import missing_key_variable
from subagents.models.settings import ProviderSettings
from subagents.runtime import events as ev
from subagents.runtime.events import EventBus
from subagents.runtime.runtime import Runtime
from subagents.testing import FunctionModel, ScriptedModel, tool_call_response, tool_calls_response

NO_KEYS: dict[str, str] = {}
ANTHROPIC_KEY = {"ANTHROPIC_API_KEY": "test-key"}


@pytest.fixture(autouse=True)
def no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the machine has, these tests start without any provider key."""
    for variable in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)


# -- the alias table --------------------------------------------------------------------------


def test_every_tier_names_a_claude_model_of_that_tier() -> None:
    assert set(TIER_ALIASES) == {"haiku", "sonnet", "opus", "fable"}
    for tier, model in TIER_ALIASES.items():
        assert model.startswith(f"anthropic:claude-{tier}-"), model


@pytest.mark.parametrize(
    ("alias", "tier"), [("best", "fable"), ("opusplan", "opus"), ("FABLE", "fable")]
)
def test_derived_aliases_follow_their_tier(alias: str, tier: str) -> None:
    choice = choose_model(alias, env=ANTHROPIC_KEY)
    assert choice.model == TIER_ALIASES[tier]
    assert choice.fallback is None and choice.error is None


def test_best_follows_a_mapping_of_fable_in_models() -> None:
    aliases = {"fable": "openai:gpt-top"}
    choice = choose_model("best", aliases=aliases, env={"OPENAI_API_KEY": "k"})
    assert choice.model == "openai:gpt-top"


@pytest.mark.parametrize("spec", ["sonnet[1m]", "Sonnet[1M]", " opus[1m] ", "claude-opus-4-7[1m]"])
def test_a_1m_suffix_is_the_same_model_with_its_long_context_noted(spec: str) -> None:
    choice = choose_model(spec, env=ANTHROPIC_KEY)
    plain = choose_model(split_context_suffix(spec)[0], env=ANTHROPIC_KEY)
    assert choice.model == plain.model is not None
    assert choice.long_context and not plain.long_context
    assert choice.describe() == f"{plain.model} (1M context)"


def test_models_table_maps_a_suffixed_name_of_its_own() -> None:
    aliases = {"sonnet[1m]": "openai:long-context", "sonnet": "openai:short"}
    env = {"OPENAI_API_KEY": "k"}
    assert choose_model("sonnet[1m]", aliases=aliases, env=env).model == "openai:long-context"
    assert choose_model("sonnet", aliases=aliases, env=env).model == "openai:short"


def test_models_table_overrides_any_alias() -> None:
    aliases = {name: f"ollama:local-{name}" for name in TIER_ALIASES}
    for name in DEFAULT_ALIASES:
        choice = choose_model(name, aliases=aliases, env=NO_KEYS)
        assert choice.model is not None and choice.model.startswith("ollama:local-"), name
        assert choice.fallback is None  # ollama needs no key


# -- what the resolver decides ----------------------------------------------------------------


@pytest.mark.parametrize("declared", [None, "", "inherit", "INHERIT"])
def test_no_model_or_inherit_is_the_parents_model_without_a_note(declared: str | None) -> None:
    choice = choose_model(declared, env=NO_KEYS)
    assert choice.inherits and choice.fallback is None and choice.error is None
    assert choice.describe() == "inherit"


def test_the_default_model_applies_only_when_nothing_is_declared() -> None:
    env = {"OPENAI_API_KEY": "k"}
    assert choose_model(None, default_model="openai:d", env=env).model == "openai:d"
    assert choose_model("inherit", default_model="openai:d", env=env).inherits


@pytest.mark.parametrize("spec", ["gpt4", "gemini-2.5-pro", "openai/gpt-4o", "x:", "default"])
def test_an_unknown_model_runs_on_the_parents_model_and_says_how_to_map_it(spec: str) -> None:
    choice = choose_model(spec, env=ANTHROPIC_KEY)
    assert choice.inherits
    assert choice.fallback is not None and "not a model or alias known here" in choice.fallback
    assert choice.hint is not None and "[models]" in choice.hint
    assert not is_known_model(spec)


@pytest.mark.parametrize(
    "aliases", [{"sonnet": "gpt4"}, {"sonnet": "fast", "fast": "sonnet"}, {"sonnet": ""}]
)
def test_a_models_mapping_that_names_no_model_says_to_fix_the_mapping(
    aliases: dict[str, str],
) -> None:
    choice = choose_model("sonnet", aliases=aliases, env=ANTHROPIC_KEY)
    assert choice.inherits
    assert choice.fallback is not None and "[models] mapping names no model" in choice.fallback
    assert choice.hint is not None and "PROVIDER:MODEL" in choice.hint


def test_an_unknown_model_is_never_an_error_even_in_error_mode() -> None:
    choice = choose_model("gpt4", fallback_mode="error", env=NO_KEYS)
    assert choice.inherits and choice.error is None and choice.fallback is not None


def test_a_missing_key_falls_back_with_the_variable_and_the_mapping_named() -> None:
    choice = choose_model("sonnet", env=NO_KEYS)
    assert choice.inherits
    assert choice.wanted == TIER_ALIASES["sonnet"]
    assert choice.describe() == (
        'inherit: no ANTHROPIC_API_KEY; map it with [models] sonnet = "PROVIDER:MODEL" in '
        ".subagents/config.toml, or set ANTHROPIC_API_KEY"
    )


def test_error_mode_keeps_the_model_and_says_why_it_cannot_start() -> None:
    choice = choose_model("sonnet", fallback_mode="error", env=NO_KEYS)
    assert choice.model == TIER_ALIASES["sonnet"]
    assert choice.error is not None and "ANTHROPIC_API_KEY" in choice.error
    assert choice.hint is not None and "[models] sonnet" in choice.hint
    assert "cannot start" in choice.describe()


def test_the_mapping_hint_quotes_a_key_toml_would_not_take_bare() -> None:
    choice = choose_model("anthropic:claude-opus-4-7", env=NO_KEYS)
    assert '[models] "anthropic:claude-opus-4-7" = "PROVIDER:MODEL"' in (choice.hint or "")


def test_a_huge_model_value_gives_a_bounded_message_that_says_it_is_cut() -> None:
    choice = choose_model("x" * 100_000, env=NO_KEYS)
    assert choice.inherits and len(choice.describe()) < 400
    assert "..." in choice.describe()


@pytest.mark.parametrize(
    ("provider", "settings", "env", "missing"),
    [
        ("anthropic", None, {}, "ANTHROPIC_API_KEY"),
        ("anthropic", None, {"ANTHROPIC_API_KEY": "k"}, None),
        # a local server that speaks Anthropic's API needs no key (issue 30), its API does
        ("anthropic", ProviderSettings(base_url="http://127.0.0.1:1"), {}, None),
        (
            "anthropic",
            ProviderSettings(base_url="https://api.anthropic.com"),
            {},
            "ANTHROPIC_API_KEY",
        ),
        ("anthropic", None, {"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}, None),
        ("openai", None, {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, None),
        ("openai", None, {}, "OPENAI_API_KEY"),
        ("openai", ProviderSettings(base_url="http://127.0.0.1:1/v1"), {}, None),
        ("openai", ProviderSettings(api_key_env="MY_KEY"), {"OPENAI_API_KEY": "k"}, "MY_KEY"),
        ("openai", ProviderSettings(api_key_env="MY_KEY"), {"MY_KEY": "k"}, None),
        ("ollama", None, {}, None),
        ("vllm", ProviderSettings(base_url="http://127.0.0.1:1/v1"), {}, None),
    ],
)
def test_missing_key_follows_the_rules_build_model_uses(
    provider: str, settings: ProviderSettings | None, env: dict[str, str], missing: str | None
) -> None:
    assert missing_key_variable(provider, settings, env) == missing


@pytest.mark.slow
@settings(max_examples=300)
@given(
    spec=st.one_of(st.none(), st.text(max_size=40)),
    aliases=st.dictionaries(st.text(max_size=10), st.text(max_size=20), max_size=5),
    mode=st.sampled_from(["inherit", "error"]),
)
def test_the_resolver_never_raises_and_its_answer_is_consistent(
    spec: str | None, aliases: dict[str, str], mode: Any
) -> None:
    choice = choose_model(spec, aliases=aliases, fallback_mode=mode, env=NO_KEYS)
    if choice.model is not None:
        provider, _, name = choice.model.partition(":")
        assert provider and name
    if choice.fallback is not None:
        assert choice.model is None and choice.hint
    if choice.error is not None:
        assert choice.model is not None and choice.hint and mode == "error"
    assert choice.describe()


@pytest.mark.slow
@settings(max_examples=400)
@given(
    spec=st.one_of(
        st.text(max_size=30),
        st.sampled_from([*DEFAULT_ALIASES, "Sonnet[1M]", "openai:", "a.b:c", "claude-x", "o3"]),
    ),
    names=st.lists(st.text(min_size=1, max_size=8), max_size=3),
)
def test_a_file_is_warned_about_exactly_when_the_run_cannot_tell_its_model(
    spec: str, names: list[str]
) -> None:
    assume(spec.strip())
    aliases = dict.fromkeys(names, "openai:mapped")
    _, warning = check_model(spec, known_aliases=list(aliases))
    keys = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
    choice = choose_model(spec, aliases=aliases, env=keys)
    unknown = choice.fallback == "not a model or alias known here"
    assert (warning is not None and "not recognised" in warning) == unknown


# -- at run time, in process ------------------------------------------------------------------


def agent(name: str, **fields: Any) -> AgentDefinition:
    fields.setdefault("description", f"The {name} specialist.")
    fields.setdefault("system_prompt", f"You are {name}.")
    return AgentDefinition(name=name, **fields)


def task(subagent_type: str, **extra: Any) -> ModelResponse:
    arguments = {"description": "delegate", "prompt": "do it", "subagent_type": subagent_type}
    return tool_call_response("Task", {**arguments, **extra})


def config(tmp_path: Path, text: str = "") -> Config:
    (tmp_path / ".subagents").mkdir(exist_ok=True)
    (tmp_path / ".subagents" / "config.toml").write_text(text, encoding="utf-8")
    return load_config(tmp_path)


class Events:
    def __init__(self) -> None:
        self.seen: list[ev.Event] = []
        self.bus = EventBus([self.seen.append])

    def fallbacks(self) -> list[ev.ModelFallback]:
        return [event for event in self.seen if isinstance(event, ev.ModelFallback)]


async def run_delegation(
    tmp_path: Path,
    definition: AgentDefinition,
    *,
    cfg: str = "",
    child_on_main: bool = True,
    **kwargs: Any,
) -> tuple[Runtime, ScriptedModel, Events]:
    """Main delegates once and then answers "end"; the child answers "child" on the main
    model's script when ``child_on_main`` (a fallback), else on its own model."""
    child = ["child"] if child_on_main else []
    main = ScriptedModel([kwargs.pop("call", task(definition.name)), *child, "end"], name="t:main")
    events = Events()
    rt = Runtime(
        cwd=tmp_path,
        config=config(tmp_path, cfg),
        agents=[definition],
        model=main,
        events=events.bus,
        permission_mode="bypassPermissions",
        **kwargs,
    )
    result = await rt.run("go")
    assert result.output == "end"
    main.assert_consumed()
    return rt, main, events


async def test_an_unknown_model_runs_on_the_parents_model_with_an_event(tmp_path: Path) -> None:
    rt, main, events = await run_delegation(tmp_path, agent("odd", model="gpt4"))
    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert spawn.success and spawn.resolved_model == "t:main"
    assert len(main.requests) == 3  # the child's turn went to the parent's model
    (fallback,) = events.fallbacks()
    assert (fallback.agent_type, fallback.requested, fallback.model_name) == (
        "odd",
        "gpt4",
        "t:main",
    )
    assert "not a model or alias known here" in fallback.reason


async def test_a_tier_without_its_key_runs_on_the_parents_model(tmp_path: Path) -> None:
    rt, _, events = await run_delegation(tmp_path, agent("debugger", model="sonnet"))
    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert spawn.success and spawn.resolved_model == "t:main"
    (fallback,) = events.fallbacks()
    assert fallback.reason == "no ANTHROPIC_API_KEY"
    assert '[models] sonnet = "PROVIDER:MODEL"' in fallback.hint
    # the event follows the start of the subagent it explains
    started = [i for i, e in enumerate(events.seen) if isinstance(e, ev.SubagentStarted)]
    assert started and started[0] < events.seen.index(fallback)


async def test_the_live_ui_block_shows_the_fallback(tmp_path: Path) -> None:
    tree = BlockTree(prompt="go")
    main = ScriptedModel([task("debugger"), "child", "end"], name="t:main")
    rt = Runtime(
        cwd=tmp_path,
        config=config(tmp_path),
        agents=[agent("debugger", model="sonnet")],
        model=main,
        events=EventBus([tree.handle]),
        permission_mode="bypassPermissions",
    )
    await rt.run("go")
    (block,) = [b for b in tree.ordered() if b.agent_type == "debugger"]
    assert block.model == "t:main (instead of sonnet: no ANTHROPIC_API_KEY)"
    assert tree.errors == []


async def test_a_tier_with_its_key_runs_on_its_own_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    sonnet = ScriptedModel(["from sonnet"], name=TIER_ALIASES["sonnet"])
    rt, _, events = await run_delegation(
        tmp_path,
        agent("debugger", model="sonnet"),
        models={TIER_ALIASES["sonnet"]: sonnet},
        child_on_main=False,
    )
    sonnet.assert_consumed()
    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert spawn.resolved_model == TIER_ALIASES["sonnet"]
    assert spawn.summary == "from sonnet"
    assert events.fallbacks() == []


async def test_a_models_mapping_runs_the_tier_on_another_provider(tmp_path: Path) -> None:
    mapped = ScriptedModel(["from mapped"], name="ollama:mapped")
    rt, _, events = await run_delegation(
        tmp_path,
        agent("debugger", model="sonnet"),
        cfg='[models]\nsonnet = "ollama:mapped"\n',
        models={"ollama:mapped": mapped},
        child_on_main=False,
    )
    mapped.assert_consumed()
    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert (spawn.resolved_model, spawn.summary) == ("ollama:mapped", "from mapped")
    assert events.fallbacks() == []


async def test_a_model_pinned_in_python_wins_without_a_fallback(tmp_path: Path) -> None:
    pinned = ScriptedModel(["from pinned"], name="t:pinned")
    rt, _, events = await run_delegation(
        tmp_path,
        agent("debugger", model="sonnet"),
        agent_models={"debugger": pinned},
        child_on_main=False,
    )
    pinned.assert_consumed()
    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert spawn.summary == "from pinned"
    assert events.fallbacks() == []


async def test_a_task_calls_model_without_its_key_falls_back_too(tmp_path: Path) -> None:
    rt, _, events = await run_delegation(
        tmp_path, agent("helper"), call=task("helper", model="opus")
    )
    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert spawn.resolved_model == "t:main"
    (fallback,) = events.fallbacks()
    assert fallback.requested == "opus"


async def test_error_mode_refuses_to_start_the_agent_and_tells_the_model(tmp_path: Path) -> None:
    rt, main, events = await run_delegation(
        tmp_path,
        agent("debugger", model="sonnet"),
        cfg='[subagents]\nmodel_fallback = "error"\n',
        child_on_main=False,  # the child never starts
    )
    assert rt.last_delegation.spawn_results == []  # type: ignore[union-attr]
    assert events.fallbacks() == []
    refusal = next(m for m in main.requests[1].messages if isinstance(m, ToolResultMessage))
    assert refusal.is_error
    assert "cannot start 'debugger'" in refusal.content
    assert "ANTHROPIC_API_KEY" in refusal.content
    assert '[models] sonnet = "PROVIDER:MODEL"' in refusal.content


async def test_a_main_agent_with_an_unknown_model_runs_on_the_default(tmp_path: Path) -> None:
    default = ScriptedModel(["from the default"], name="test:default")
    rt = Runtime(
        cwd=tmp_path,
        config=config(tmp_path, '[subagents]\ndefault_model = "test:default"\n'),
        agents=[agent("lead", model="gpt4")],
        models={"test:default": default},
    )
    result = await rt.run("go", agent="lead")
    assert result.output == "from the default"


# -- the corpus: what `agents list` shows is what runs ----------------------------------------


def copy_corpus(corpus_dir: Path, repo: Path) -> None:
    def only_markdown(directory: str, names: list[str]) -> list[str]:
        return [n for n in names if not n.endswith(".md") and not Path(directory, n).is_dir()]

    (repo / ".git").mkdir(parents=True)
    shutil.copytree(corpus_dir, repo / ".claude" / "agents", ignore=only_markdown)


@pytest.mark.parametrize("env", [NO_KEYS, ANTHROPIC_KEY], ids=["no-keys", "anthropic-key"])
async def test_every_corpus_agent_runs_on_the_model_agents_list_shows(
    corpus_dir: Path,
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
) -> None:
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    repo = tmp_path / "repo"
    copy_corpus(corpus_dir, repo)
    inventory = Inventory.discover(repo, home=isolated_home)
    records = [r for r in inventory.records.values() if r.scope == "project"]
    assert len(records) == 158
    assert all(record.status == "active" for record in records)
    assert all(record.model_choice is not None for record in records)

    # Every tier has a model object of its own name, so what runs is what is shown.
    seen_by: dict[str, str] = {}

    def answer(model_name: str) -> Any:
        def respond(request: ModelRequest) -> ModelResponse | str:
            first = request.messages[0]
            assert isinstance(first, UserMessage)
            if first.content != "go":  # a subagent: its prompt names it
                seen_by[first.content] = model_name
                return "ok"
            if any(isinstance(m, ToolResultMessage) for m in request.messages):
                return "all done"
            calls = [
                ("Task", {"description": "d", "prompt": r.name, "subagent_type": r.name})
                for r in records
            ]
            return tool_calls_response(calls)

        return respond

    main = FunctionModel(answer("t:main"), name="t:main")
    # With the key, the tiers' models are handed in ready-made (no network): what runs is named
    # by the model object that answered. Without it, nothing is handed in: nothing is needed.
    tiers = TIER_ALIASES.values() if env else ()
    models = {name: FunctionModel(answer(name), name=name) for name in tiers}
    rt = Runtime(
        cwd=repo,
        inventory=inventory,
        model=main,
        models=models,
        permission_mode="bypassPermissions",
    )
    result = await rt.run("go")
    assert result.output == "all done"
    assert len(seen_by) == 158
    for record in records:
        shown = record.effective_model
        assert rt.model_chooser.choice(record.definition) == record.model_choice
        expected = "t:main" if shown in (None, "inherit") else shown
        assert seen_by[record.name] == expected, record.name
    if env is NO_KEYS:
        assert all(r.effective_model == "inherit" for r in records if r.definition.model)
    else:
        assert {r.effective_model for r in records} == {
            TIER_ALIASES["sonnet"],
            TIER_ALIASES["haiku"],
            "inherit",
            None,  # files without a model
        }


def test_a_fable_file_is_active_and_its_record_carries_the_choice(
    tmp_path: Path, isolated_home: Path
) -> None:
    (tmp_path / ".git").mkdir()
    folder = tmp_path / ".claude" / "agents"
    folder.mkdir(parents=True)
    (folder / "deep.md").write_text(
        "---\nname: deep\ndescription: Thinks hard.\nmodel: fable\n---\nThink.\n",
        encoding="utf-8",
    )
    record = Inventory.discover(tmp_path, home=isolated_home).get("deep")
    assert record.status == "active" and record.definition.warnings == []
    assert isinstance(record.model_choice, ModelChoice)
    assert record.effective_model == "inherit"  # no ANTHROPIC_API_KEY here
    assert record.model_choice.fallback == "no ANTHROPIC_API_KEY"
    assert record.model_choice.wanted == TIER_ALIASES["fable"]


# -- end to end: the console script against a local OpenAI-compatible server ------------------

DEBUGGER = """---
name: debugger
description: Finds the cause of a failure.
tools: Read, Grep
model: sonnet
---
You are a debugger.
"""


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def project(tmp_path: Path, server: ScriptedServer, isolated_home: Path) -> Project:
    made = Project(tmp_path / "project", server, isolated_home)
    agents = made.root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "debugger.md").write_text(DEBUGGER, encoding="utf-8")
    return made


def squeeze(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.slow
def test_a_sonnet_agent_runs_on_the_openai_parent_and_says_so_everywhere(
    project: Project, server: ScriptedServer
) -> None:
    call = {
        "description": "Find the bug",
        "prompt": "Why does it fail?",
        "subagent_type": "debugger",
    }
    server.call("Task", call, call_id="call_task")
    server.say("The test fails because of a typo.")
    server.say("Done: a typo.")

    done = project.run("Debug this")

    assert done.code == 0, done.err
    assert "Done: a typo." in done.out
    assert server.turns == deque()
    bodies = server.bodies()
    assert [body["model"] for body in bodies] == ["fake-model"] * 3  # the child on the parent's
    assert "You are a debugger." in bodies[1]["messages"][0]["content"]
    assert (
        "debugger runs on openai:fake-model (its parent's model) instead of sonnet: "
        'no ANTHROPIC_API_KEY; map it with [models] sonnet = "PROVIDER:MODEL"'
    ) in done.said

    shown = project.show(done.task_id)
    sessions = {session["agent_name"]: session for session in shown["sessions"]}
    assert sessions["debugger"]["model"] == MODEL

    trace = project.cli("trace", done.task_id)
    assert trace.code == 0, trace.err
    assert "model_fallback: runs on openai:fake-model (its parent's model) instead of sonnet" in (
        squeeze(trace.out)
    )
    traced = project.cli("trace", done.task_id, "--json")
    steps = json.dumps(traced.json())
    assert '"step_name": "model_fallback"' in steps and "no ANTHROPIC_API_KEY" in steps

    before_any_run = project.cli("agents", "show", "debugger")
    assert before_any_run.code == 0, before_any_run.err
    assert (
        "model sonnet → inherit: no ANTHROPIC_API_KEY; "
        'map it with [models] sonnet = "PROVIDER:MODEL"'
    ) in squeeze(before_any_run.out)
    listed = project.cli("agents", "list")
    assert "sonnet → inherit: no ANTHROPIC_API_KEY" in squeeze(listed.out)
    assert "map it with [models] sonnet" in squeeze(listed.out)
    as_json = {a["name"]: a for a in project.cli("agents", "list", "--json").json()["agents"]}
    debugger = as_json["debugger"]
    assert debugger["effective_model"] == "inherit"
    assert debugger["model_fallback"]["reason"] == "no ANTHROPIC_API_KEY"
    assert debugger["model_fallback"]["requested"] == "sonnet"
    assert debugger["model_fallback"]["runs_on"] == "inherit"
    assert debugger["model_fallback"]["wanted"] == TIER_ALIASES["sonnet"]
    assert as_json["explore"]["model_fallback"] is None  # haiku is mapped to the server


@pytest.mark.slow
def test_error_mode_fails_the_delegation_clearly(project: Project, server: ScriptedServer) -> None:
    with (project.root / ".subagents" / "config.toml").open("a", encoding="utf-8") as config_file:
        config_file.write('\n[subagents]\nmodel_fallback = "error"\n')
    call = {"description": "Find the bug", "prompt": "Why?", "subagent_type": "debugger"}
    server.call("Task", call, call_id="call_task")
    server.say("I could not start the debugger.")

    done = project.run("Debug this")

    assert done.code == 0, done.err
    bodies = server.bodies()
    assert len(bodies) == 2  # the subagent never ran
    (refusal,) = [m for m in bodies[1]["messages"] if m["role"] == "tool"]
    assert "cannot start 'debugger'" in refusal["content"]
    assert "ANTHROPIC_API_KEY" in refusal["content"]
    assert '[models] sonnet = "PROVIDER:MODEL"' in refusal["content"]
    assert "instead of sonnet" not in done.said
    shown = squeeze(project.cli("agents", "show", "debugger").out)
    assert f"sonnet → {TIER_ALIASES['sonnet']} (cannot start:" in shown
    assert f"{TIER_ALIASES['sonnet']} (cannot start here)" in project.cli("agents", "list").out
    listed = {a["name"]: a for a in project.cli("agents", "list", "--json").json()["agents"]}
    refused = listed["debugger"]["model_fallback"]
    assert refused["runs_on"] is None and refused["wanted"] == TIER_ALIASES["sonnet"]
    assert "ANTHROPIC_API_KEY" in refused["reason"]


@pytest.mark.slow
def test_the_main_agent_on_a_tier_without_its_key_still_fails(
    project: Project, server: ScriptedServer
) -> None:
    done = project.cli("run", "hello", "--model", "sonnet")
    assert done.code != 0
    assert "No API key for the model" in done.said and "ANTHROPIC_API_KEY" in done.said
    assert server.requests == []
