"""`subagents run` with session agents (``--agents`` JSON), an agent's ``initialPrompt`` and
project instructions, against a real local OpenAI-compatible server through the openai SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fakes.openai_server import FakeOpenAIServer, chunk, usage
from subagents.cli.app import app
from subagents.runtime.instructions import MAX_FILE_CHARS

MODEL = "openai:fake-model"
runner = CliRunner()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def repo(tmp_path: Path, server: FakeOpenAIServer) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    write(
        root / ".subagents" / "config.toml",
        f'[providers.openai]\nbase_url = "{server.base_url}"\nmax_retries = 0\n'
        'tool_calls = "auto"\n',
    )
    return root


def run(repo: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["run", *args, "--cwd", str(repo), "--model", MODEL, "--no-store"])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, " ".join(result.stderr.split())


def bodies(server: FakeOpenAIServer) -> list[dict[str, Any]]:
    return [request.json() for request in server.requests]


def system_of(body: dict[str, Any]) -> str:
    first = body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def user_texts(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def tool_names(body: dict[str, Any]) -> list[str]:
    return sorted(tool["function"]["name"] for tool in body.get("tools", []))


REVIEWER = {
    "description": "Reviews code for bugs",
    "prompt": "You are the session reviewer.",
    "tools": ["Read", "Grep"],
    "maxTurns": 3,
}


# -- --agents ------------------------------------------------------------------------------------


def test_a_session_agent_runs_as_the_main_agent(repo: Path, server: FakeOpenAIServer) -> None:
    server.reply_text("looks fine")

    code, out, err = run(
        repo,
        "review app.py",
        "--json",
        "--agent",
        "reviewer",
        "--agents",
        json.dumps({"reviewer": REVIEWER}),
    )

    assert code == 0, err
    assert json.loads(out)["output"] == "looks fine"
    (body,) = bodies(server)
    assert system_of(body).startswith("You are the session reviewer.")
    assert tool_names(body) == ["Grep", "Read"]
    assert user_texts(body) == ["review app.py"]


def test_a_session_agent_wins_over_a_project_file_and_is_delegated_to(
    repo: Path, server: FakeOpenAIServer
) -> None:
    write(
        repo / ".claude" / "agents" / "reviewer.md",
        "---\nname: reviewer\ndescription: the file's reviewer\n---\nYou are the FILE reviewer.\n",
    )
    task = {"description": "review", "prompt": "review app.py", "subagent_type": "reviewer"}
    server.reply_tool_calls([("call_1", "Task", json.dumps(task))])
    server.reply_text("no bugs found")
    server.reply_text("The reviewer found no bugs.")

    code, out, err = run(
        repo, "get a review", "--json", "--agents", json.dumps({"reviewer": REVIEWER})
    )

    assert code == 0, err
    main, child, main_again = bodies(server)
    task_tool = next(t for t in main["tools"] if t["function"]["name"] == "Task")
    assert "Reviews code for bugs" in task_tool["function"]["description"]
    assert "the file's reviewer" not in task_tool["function"]["description"]
    assert system_of(child).startswith("You are the session reviewer.")
    assert "FILE reviewer" not in system_of(child)
    assert tool_names(child) == ["Grep", "Read"]
    assert json.loads(out)["output"] == "The reviewer found no bugs."
    assert "no bugs found" in main_again["messages"][-1]["content"]


def test_session_agent_problems_are_reported_like_a_bad_file(
    repo: Path, server: FakeOpenAIServer
) -> None:
    server.reply_text("done")
    agents = {
        "broken": {"prompt": "no description here"},
        "odd": {**REVIEWER, "colour": "blue"},
    }

    code, _, err = run(repo, "hello", "--json", "--agents", json.dumps(agents))

    assert code == 0, err
    assert "--agents: broken is invalid: description is missing or empty" in err
    assert "--agents: odd: unknown key 'colour'" in err


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("{not json", "--agents is not valid JSON"),
        ('["reviewer"]', "--agents must be a JSON object of agents, not a list"),
    ],
)
def test_agents_that_are_not_a_json_object_stop_the_run_with_an_example(
    repo: Path, server: FakeOpenAIServer, given: str, says: str
) -> None:
    code, _, err = run(repo, "hello", "--agents", given)

    assert code == 2
    assert says in err and '{"reviewer": {"description"' in err
    assert server.requests == []


# -- initialPrompt -------------------------------------------------------------------------------


def test_an_agent_without_a_prompt_starts_from_its_initial_prompt(
    repo: Path, server: FakeOpenAIServer
) -> None:
    write(
        repo / ".claude" / "agents" / "builder.md",
        "---\nname: builder\ndescription: Builds\ninitialPrompt: Check that the build passes\n"
        "---\nYou build things.\n",
    )
    server.reply_text("the build passes")

    code, out, err = run(repo, "--json", "--agent", "builder")

    assert code == 0, err
    assert json.loads(out)["output"] == "the build passes"
    assert user_texts(bodies(server)[0]) == ["Check that the build passes"]


def test_a_given_prompt_wins_over_the_initial_prompt(repo: Path, server: FakeOpenAIServer) -> None:
    agents = {"builder": {**REVIEWER, "initialPrompt": "the initial one"}}
    server.reply_text("ok")

    code, _, err = run(
        repo, "the given one", "--json", "--agent", "builder", "--agents", json.dumps(agents)
    )

    assert code == 0, err
    assert user_texts(bodies(server)[0]) == ["the given one"]


def test_no_prompt_and_no_agent_is_a_clear_error(repo: Path, server: FakeOpenAIServer) -> None:
    code, _, err = run(repo)

    assert code == 2
    assert "No prompt given" in err and "initialPrompt with --agent NAME" in err
    assert server.requests == []


def test_an_agent_without_initial_prompt_needs_a_prompt(
    repo: Path, server: FakeOpenAIServer
) -> None:
    path = write(
        repo / ".claude" / "agents" / "builder.md",
        "---\nname: builder\ndescription: Builds\n---\nYou build things.\n",
    )

    code, _, err = run(repo, "--agent", "builder")

    assert code == 2
    assert "agent 'builder' has no initialPrompt" in err
    assert "set initialPrompt in" in err
    assert str(path) in err.replace(" ", "")  # Rich may break the long path
    assert server.requests == []


def test_an_unknown_agent_without_a_prompt_says_which_agents_exist(
    repo: Path, server: FakeOpenAIServer
) -> None:
    code, _, err = run(repo, "--agent", "nobody")

    assert code == 2
    assert "nobody" in err and "general-purpose" in err
    assert server.requests == []


# -- project instructions in a CLI run -------------------------------------------------------------


def test_a_cut_claude_md_is_a_progress_line_and_the_rest_reaches_the_model(
    repo: Path, server: FakeOpenAIServer
) -> None:
    write(repo / "CLAUDE.md", "RULE-ONE\n" + "y" * MAX_FILE_CHARS)
    write(repo / "AGENTS.md", "RULE-TWO")
    server.reply_stream(
        [
            chunk({"role": "assistant", "content": "done"}),
            chunk(finish_reason="stop"),
            chunk(usage_body=usage()),
        ]
    )

    code, out, err = run(repo, "hello")

    assert code == 0, err
    assert "done" in out
    assert "Project instructions:" in err and "is cut to its first" in err
    assert f"{repo / 'CLAUDE.md'}" in err.replace(" ", "")
    (body,) = bodies(server)
    system = system_of(body)
    assert system.index("RULE-ONE") < system.index("RULE-TWO")
    assert "was cut here" in system


def test_resume_takes_the_session_agents_again(repo: Path, server: FakeOpenAIServer) -> None:
    agents = json.dumps({"reviewer": REVIEWER})
    write_call = {"file_path": "notes.md", "content": "to review"}
    task = {"description": "review", "prompt": "review notes.md", "subagent_type": "reviewer"}
    server.reply_tool_calls([("call_w", "Write", json.dumps(write_call))])
    server.reply_tool_calls([("call_t", "Task", json.dumps(task))])
    server.reply_text("notes look fine")
    server.reply_text("Reviewed: fine.")
    env = {"COLUMNS": "2000", "NO_COLOR": "1"}
    run_args = ["run", "write then review", "--json", "--agents", agents, "--model", MODEL]
    started = runner.invoke(app, [*run_args, "--cwd", str(repo)], env=env)
    paused = json.loads(started.stdout)
    assert paused["status"] == "awaiting_human", started.stderr

    resume_args = ["resume", paused["task_id"], "--approve", "--json", "--agents", agents]
    resumed = runner.invoke(app, [*resume_args, "--cwd", str(repo)], env=env)

    assert resumed.exit_code == 0, resumed.stderr
    assert json.loads(resumed.stdout)["output"] == "Reviewed: fine."
    assert (repo / "notes.md").read_text() == "to review"
    child = bodies(server)[2]
    assert system_of(child).startswith("You are the session reviewer.")
