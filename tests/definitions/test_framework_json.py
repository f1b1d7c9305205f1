"""Agent JSON in the Python framework shape (``role``, ``max_iterations``, ``llm_config``) is
read, not refused; ``llm_config.endpoint`` and ``api_key_env`` take effect in a real run against
a local OpenAI-compatible server, and the key is never stored, traced or handed to tools."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from fakes.openai_server import FakeOpenAIServer
from subagents.cli.agents import agents_app
from subagents.definitions.framework import from_framework_shape
from subagents.definitions.parse import parse_agent_file, parse_agent_text
from subagents.messages import ToolResultMessage
from subagents.models.testing import ScriptedModel, tool_call_response
from subagents.redaction import looks_like_secret_name
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import SQLiteStore

KEY_VARIABLE = "LAB_LLM_VALUE"  # a name that does not look like a secret's, on purpose
KEY = "lab-9f8e7d6c5b4a39281706"


def framework_agent(**overrides: Any) -> dict[str, Any]:
    agent: dict[str, Any] = {
        "name": "researcher",
        "role": "You are a research assistant.\n\nYou find and summarise papers.",
        "tools": ["Read", "Grep"],
        "max_iterations": 7,
        "llm_config": {
            "model": "llama3.2:3b",
            "temperature": 0.2,
            "endpoint": "http://127.0.0.1:9/v1",
            "api_key_env": KEY_VARIABLE,
        },
    }
    agent.update(overrides)
    return agent


def parse(data: object) -> Any:
    return parse_agent_text(json.dumps(data), dialect="json")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- reading --------------------------------------------------------------------------------


def test_the_framework_shape_is_read_into_our_fields_without_warnings() -> None:
    d = parse(framework_agent())

    assert d.status == "active", d.validation_errors
    assert d.warnings == []
    assert d.extra == {}
    assert d.system_prompt == "You are a research assistant.\n\nYou find and summarise papers."
    assert d.description == "You are a research assistant."
    assert d.tools == ["Read", "Grep"]
    assert d.max_turns == 7
    assert d.model == "llama3.2:3b"
    assert d.temperature == 0.2
    assert d.endpoint == "http://127.0.0.1:9/v1"
    assert d.api_key_env == KEY_VARIABLE


def test_role_fills_what_the_file_leaves_out() -> None:
    with_prompt = parse(framework_agent(prompt="Cite every source."))
    assert with_prompt.system_prompt == "Cite every source."
    assert with_prompt.description == "You are a research assistant."

    with_description = parse(framework_agent(description="Finds papers"))
    assert with_description.description == "Finds papers"
    assert with_description.system_prompt.startswith("You are a research assistant.")

    with_both = parse(framework_agent(description="Finds papers", prompt="Cite every source."))
    assert with_both.description == "Finds papers"
    assert with_both.system_prompt == (
        "You are a research assistant.\n\nYou find and summarise papers.\n\nCite every source."
    )
    assert with_both.warnings == []


def test_a_literal_key_is_dropped_with_a_warning_and_kept_nowhere() -> None:
    agent = framework_agent()
    agent["llm_config"]["api_key"] = KEY

    d = parse(agent)

    assert d.status == "active"
    assert any("'llm_config.api_key' is not read" in w and "api_key_env" in w for w in d.warnings)
    assert KEY not in d.model_dump_json()


@pytest.mark.parametrize(
    ("llm_config", "warning"),
    [
        ({"model": "gpt-4o-mini", "max_tokens": 100}, "'llm_config.max_tokens' is not supported"),
        ("gpt-4o-mini", "'llm_config' must be an object"),
        ({"model": "gpt-4o", "endpoint": "ftp://host/v1"}, "is not an http(s) URL"),
        ({"model": "gpt-4o", "endpoint": "http://user:pw@host/v1"}, "is not an http(s) URL"),
        ({"model": "gpt-4o", "api_key_env": "not a name"}, "must name an environment variable"),
        ({"endpoint": "http://localhost:8000/v1"}, "is ignored without a model"),
    ],
)
def test_odd_llm_config_values_are_warnings_never_errors(llm_config: object, warning: str) -> None:
    d = parse(framework_agent(llm_config=llm_config))

    assert d.status == "active", d.validation_errors
    assert any(warning in w for w in d.warnings), d.warnings


def test_two_spellings_of_one_field_keep_the_first_and_say_so() -> None:
    d = parse(framework_agent(maxTurns=3, model="gpt-4o"))

    assert (d.max_turns, d.model) == (7, "llama3.2:3b")
    assert "both 'max_iterations' and 'maxTurns' are set; 'maxTurns' is ignored" in d.warnings
    assert "both 'llm_config.model' and 'model' are set; 'model' is ignored" in d.warnings


def test_a_role_that_is_not_text_is_a_warning_and_the_file_says_what_is_missing() -> None:
    d = parse({"name": "x", "role": ["a", "b"]})

    assert any("'role' must be text" in w for w in d.warnings)
    assert d.status == "invalid"
    assert any("description is missing" in e for e in d.validation_errors)


SENTINEL = "sentinel-key-4242"
_VALUES = st.one_of(st.none(), st.text(alphabet="abc :/.", max_size=20), st.integers())


_LLM_CONFIGS = st.one_of(
    _VALUES,
    st.dictionaries(
        st.sampled_from(["model", "token", "endpoint", "api_key_env", "x"]), _VALUES, max_size=5
    ).map(lambda config: {**config, "api_key": SENTINEL}),
)


@given(
    st.dictionaries(
        st.sampled_from(["role", "prompt", "description", "name", "other"]), _VALUES, max_size=5
    ),
    st.one_of(st.none(), _LLM_CONFIGS),
)
def test_any_framework_mapping_translates_without_raising_and_drops_literal_keys(
    data: dict[str, Any], llm_config: object
) -> None:
    if llm_config is not None:
        data["llm_config"] = llm_config
    translated, warnings = from_framework_shape(data)

    assert "role" not in translated and "llm_config" not in translated
    assert SENTINEL not in json.dumps(dict(translated), default=str)
    if isinstance(data.get("llm_config"), dict):
        assert any("'llm_config.api_key' is not read" in w for w in warnings)
    d = parse(data)  # and the whole parser never raises on it either
    assert SENTINEL not in d.model_dump_json()


def test_agents_show_lists_the_endpoint_and_no_no_effect_warning(
    tmp_path: Path, isolated_home: Path
) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".subagents" / "agents" / "researcher.json", json.dumps(framework_agent()))

    result = CliRunner().invoke(
        agents_app, ["show", "researcher", "--cwd", str(tmp_path)], env={"COLUMNS": "300"}
    )

    assert result.exit_code == 0, result.output
    assert "has no effect" not in result.output and "warnings" not in result.output
    assert f"http://127.0.0.1:9/v1 (key from ${KEY_VARIABLE})" in result.output
    shown = CliRunner().invoke(agents_app, ["show", "researcher", "--json", "--cwd", str(tmp_path)])
    data = json.loads(shown.stdout)
    assert data["endpoint"] == "http://127.0.0.1:9/v1"
    assert data["api_key_env"] == KEY_VARIABLE
    assert data["max_turns"] == 7 and data["warnings"] == []


def test_a_framework_json_file_on_disk_is_active(tmp_path: Path) -> None:
    path = write(tmp_path / "researcher.json", json.dumps(framework_agent()))
    assert parse_agent_file(path).status == "active"


# -- running against the agent's own endpoint -------------------------------------------------


def schema_reply(text: str) -> str:
    """A reply as a server on 127.0.0.1 is asked to write it (schema-constrained turns)."""
    return json.dumps({"reply": text})


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def project(tmp_path: Path, server: FakeOpenAIServer) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    agent = framework_agent()
    agent["llm_config"]["endpoint"] = server.base_url
    write(root / ".subagents" / "agents" / "researcher.json", json.dumps(agent))
    return root


def delegate() -> Any:
    arguments = {"description": "research", "prompt": "find papers", "subagent_type": "researcher"}
    return tool_call_response("Task", arguments)


async def test_a_subagent_runs_on_its_endpoint_with_the_key_from_its_variable(
    project: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not looks_like_secret_name(KEY_VARIABLE)  # so only our own handling can hide it
    monkeypatch.setenv(KEY_VARIABLE, KEY)
    server.reply_text(schema_reply(f"three papers found (the server saw {KEY})"))
    main = ScriptedModel(
        [
            tool_call_response("Bash", {"command": "env"}),
            delegate(),
            "summary done",
        ]
    )
    store = SQLiteStore(project / ".subagents" / "state.db")
    runtime = Runtime(cwd=project, model=main, permission_mode="bypassPermissions", store=store)

    result = await runtime.run("research")
    await runtime.aclose()
    store.close()

    assert result.output == "summary done"
    (request,) = server.requests
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.json()
    assert body["model"] == "llama3.2:3b"
    assert body["temperature"] == 0.2
    assert body["messages"][0]["content"].startswith("You are a research assistant.")
    env_result = next(
        m for m in main.requests[1].messages if isinstance(m, ToolResultMessage)
    ).content
    assert KEY_VARIABLE not in env_result and KEY not in env_result
    (spawn,) = runtime.last_delegation.spawn_results  # type: ignore[union-attr]
    assert spawn.success and spawn.resolved_model == "openai:llama3.2:3b"
    stored = b"".join(path.read_bytes() for path in (project / ".subagents").glob("state.db*"))
    assert b"three papers found" in stored
    assert KEY.encode() not in stored


async def test_the_agent_runs_as_the_main_agent_on_its_endpoint(
    project: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_VARIABLE, KEY)
    server.reply_text(schema_reply("main answer from the endpoint"))
    runtime = Runtime(cwd=project)

    result = await runtime.run("hello", agent="researcher")
    await runtime.aclose()

    assert result.output == "main answer from the endpoint"
    assert result.model_name == "openai:llama3.2:3b"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_an_unset_key_variable_is_a_tool_error_naming_it(
    project: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_VARIABLE, raising=False)
    main = ScriptedModel([delegate(), "gave up"])
    runtime = Runtime(cwd=project, model=main)

    result = await runtime.run("research")

    assert result.output == "gave up"
    (error,) = [m for m in main.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert error.is_error
    assert "cannot start 'researcher'" in error.content
    assert f"{KEY_VARIABLE}, which is not set" in error.content
    assert server.requests == []


async def test_without_api_key_env_no_key_is_sent_not_even_openais(
    tmp_path: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-must-stay-home-123456")
    (tmp_path / ".git").mkdir()
    agent = framework_agent(llm_config={"model": "local-model", "endpoint": server.base_url})
    write(tmp_path / ".subagents" / "agents" / "researcher.json", json.dumps(agent))
    server.reply_text(schema_reply("ok"))

    runtime = Runtime(cwd=tmp_path)
    await runtime.run("hello", agent="researcher")
    await runtime.aclose()

    authorization = server.requests[0].headers["authorization"]
    assert "sk-openai-must-stay-home" not in authorization


def test_the_cli_runs_the_agent_on_its_endpoint_and_never_prints_its_key(
    project: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from subagents.cli.app import app

    monkeypatch.setenv(KEY_VARIABLE, KEY)
    server.reply_text(schema_reply(f"the server echoes {KEY}"))

    result = CliRunner().invoke(
        app, ["run", "hello", "--agent", "researcher", "--json", "--cwd", str(project)]
    )

    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["output"].startswith("the server echoes ")
    assert payload["model"] == "openai:llama3.2:3b"
    assert KEY not in result.stdout and KEY not in result.stderr
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    stored = b"".join(path.read_bytes() for path in (project / ".subagents").glob("state.db*"))
    assert b"the server echoes" in stored and KEY.encode() not in stored


async def test_a_paused_endpoint_subagent_resumes_on_its_endpoint_in_a_new_runtime(
    project: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from subagents.runtime.pause import HumanDecision
    from subagents.store.sqlite import open_store

    monkeypatch.setenv(KEY_VARIABLE, KEY)
    agent = json.loads((project / ".subagents" / "agents" / "researcher.json").read_text())
    agent["tools"] = ["Read", "Write"]
    write(project / ".subagents" / "agents" / "researcher.json", json.dumps(agent))
    write_call = {"file_path": "notes.md", "content": "three papers"}
    server.reply_tool_calls([("call_w", "Write", json.dumps(write_call))])
    server.reply_text(schema_reply("notes written"))

    with open_store(project / ".subagents" / "state.db") as store:
        first = Runtime(
            cwd=project, model=ScriptedModel([delegate()]), store=store, headless="pause"
        )
        paused = await first.run("research")
        await first.aclose()
        assert paused.status == "awaiting_human", paused.error
        assert len(server.requests) == 1

        main = ScriptedModel(["all done"])
        second = Runtime(cwd=project, model=main, store=store, headless="pause")
        done = await second.resume(paused.task_id or "", HumanDecision("approve"))
        await second.aclose()

    assert done.status == "completed", done.error
    assert (project / "notes.md").read_text() == "three papers"
    assert len(server.requests) == 2
    again = server.requests[1]
    assert again.headers["authorization"] == f"Bearer {KEY}"
    assert again.json()["model"] == "llama3.2:3b"
    (result,) = [m for m in main.requests[0].messages if isinstance(m, ToolResultMessage)]
    assert "notes written" in result.content


def test_a_framework_agent_renders_to_markdown_and_reads_back_the_same() -> None:
    from subagents.definitions.render import render_markdown

    d = parse(framework_agent())
    back = parse_agent_text(render_markdown(d), dialect="markdown")

    assert back.status == "active" and back.warnings == []
    for field in ("endpoint", "api_key_env", "model", "temperature", "max_turns", "tools"):
        assert getattr(back, field) == getattr(d, field), field
    assert back.system_prompt == d.system_prompt and back.description == d.description


def test_a_long_role_gives_a_short_description_and_says_so() -> None:
    from subagents.definitions.framework import MAX_DERIVED_DESCRIPTION

    role = "You are thorough. " * 40 + "\n\nSecond paragraph."
    d = parse({"name": "long", "role": role})

    assert d.status == "active"
    assert d.system_prompt == role.strip()
    assert d.description.endswith(" ...")
    assert len(d.description) <= MAX_DERIVED_DESCRIPTION + 4
    assert role.startswith(d.description.removesuffix(" ..."))
    assert any(
        "the description is the first" in w and "add a 'description'" in w for w in d.warnings
    )


def test_an_empty_prompt_or_description_is_filled_from_role() -> None:
    d = parse(framework_agent(prompt="", description=None))

    assert d.status == "active", d.validation_errors
    assert d.system_prompt.startswith("You are a research assistant.")
    assert d.description == "You are a research assistant."


def test_autogens_config_list_gives_model_and_endpoint_from_its_first_entry() -> None:
    llm_config = {
        "temperature": 0.1,
        "config_list": [
            {"model": "qwen2.5:7b", "base_url": "http://127.0.0.1:11434/v1", "api_key": KEY},
            {"model": "gpt-4o", "api_key": KEY},
        ],
    }

    d = parse(framework_agent(llm_config=llm_config))

    assert d.status == "active", d.validation_errors
    assert (d.model, d.endpoint, d.temperature) == (
        "qwen2.5:7b",
        "http://127.0.0.1:11434/v1",
        0.1,
    )
    assert any("only the first of the 2 entries" in w for w in d.warnings)
    assert any("'llm_config.config_list[0].api_key' is not read" in w for w in d.warnings)
    assert KEY not in d.model_dump_json()
