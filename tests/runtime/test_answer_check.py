"""Answers not taken as they came (subagents.runtime.answer_check): a tool call cut off at the
token limit is repaired when that is safe, else the turn is asked again; an answer caught in a
loop is asked again with a note and a penalty; what still goes wrong is said, never printed as
the answer in silence.

The first scenario is issue 30's: a real Qwen2.5-Coder-1.5B behind an OpenAI-compatible
server wrote its Task call as text, ``{"tool": "Task", "arguments": {... "prompt": "...``, the
prompt one sentence (copied from AskHuman's description) repeated until ``max_tokens`` cut it.
The run printed that fragment as its final answer and exited 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from fakes.openai_server import FakeOpenAIServer, chunk
from subagents.cli.app import app
from subagents.definitions.model import AgentDefinition
from subagents.messages import AssistantMessage, ToolResultMessage, UserMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.models.text_tools import TextToolCallModel
from subagents.runtime.answer_check import LOOP_PENALTY
from subagents.runtime.runtime import Runtime
from subagents.runtime.steps import ANSWER_REJECTED_STEP
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response, tool_call_response

ASK_HUMAN = "Use this tool to ask the user a question when you need clarification. "
NOTES_READER = AgentDefinition(
    name="notes-reader",
    description="Reads files of the project and reports what they say.",
    system_prompt="You read the files you are asked about and report what they say.",
    tools=["Read", "Glob"],
)
TASK = {
    "description": "Find the code word",
    "prompt": "Read docs/notes.txt and report the release code word.",
    "subagent_type": "notes-reader",
}


def the_issues_answer() -> ModelResponse:
    """What the 1.5B model wrote first: a Task call as bare JSON, cut inside its prompt."""
    arguments = {"description": "Find the code word", "subagent_type": "notes-reader"}
    head = json.dumps({"tool": "Task", "arguments": arguments})[:-2]
    text = head + ', "prompt": "Read docs/notes.txt and find the code word. ' + ASK_HUMAN * 40
    return ModelResponse(text=text[:2000], stop_reason="max_tokens", finish_reason="length")


def written_call(name: str, arguments: Mapping[str, object]) -> ModelResponse:
    """A call written as text, as the model writes it when it is not cut."""
    return text_response(json.dumps({"tool": name, "arguments": arguments}))


def notes_reader(request: ModelRequest) -> ModelResponse:
    results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
    if not results:
        return tool_call_response("Read", {"file_path": "docs/notes.txt"})
    found = re.search(r"PELICAN-\d+", results[-1].content)
    return text_response(f"The code word is {found.group(0) if found else 'missing'}.")


def last_result(request: ModelRequest) -> ToolResultMessage | None:
    last = request.messages[-1]
    return last if isinstance(last, ToolResultMessage) else None


def project(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("The release code word is PELICAN-42.\n")
    return tmp_path


def local_server_model(function: FunctionModel) -> TextToolCallModel:
    """The model as a local server serves it: calls written as text are read (``auto``)."""
    return TextToolCallModel(function, "auto")


def rejected_steps(store_path: Path, task_id: str) -> list[tuple[str, dict[str, object]]]:
    with open_store(store_path) as store:
        return [
            (record.message, dict(record.data))
            for record in store.traces(task_id)
            if record.step_name == ANSWER_REJECTED_STEP
        ]


async def test_the_issues_cut_runaway_task_call_is_asked_again_and_never_the_answer(
    tmp_path: Path,
) -> None:
    def main(request: ModelRequest) -> ModelResponse:
        result = last_result(request)
        if result is not None:
            return text_response(f"Done: {result.content.splitlines()[0]}")
        if isinstance(request.messages[-1], UserMessage) and len(request.messages) == 1:
            return the_issues_answer()
        return written_call("Task", TASK)  # told what went wrong, it writes a proper call

    model = FunctionModel(main, name="openai:qwen2.5-coder-1.5b")
    runtime = Runtime(
        cwd=project(tmp_path),
        model=local_server_model(model),
        agents=[NOTES_READER],
        agent_models={"notes-reader": FunctionModel(notes_reader)},
        store=open_store(tmp_path / "state.db"),
    )
    result = await runtime.run("Use the notes-reader agent to find the release code word.")

    assert result.status == "completed", result.error
    assert "PELICAN-42" in result.output
    assert ASK_HUMAN.strip() not in result.output and '"tool"' not in result.output
    retried = model.requests[1]
    assert retried.messages[:-1] == model.requests[0].messages  # the same turn, plus a note
    note = retried.messages[-1]
    assert isinstance(note, UserMessage) and "repeat 'Use this tool" in note.content
    assert retried.settings.frequency_penalty == LOOP_PENALTY
    # the history keeps the answer that was used, not the discarded one nor the note
    answers = [m for m in result.messages if isinstance(m, AssistantMessage)]
    assert all(ASK_HUMAN not in (m.content or "") for m in answers)
    assert all(m.content != note.content for m in result.messages if isinstance(m, UserMessage))
    assert result.task_id is not None
    ((message, data),) = rejected_steps(tmp_path / "state.db", result.task_id)
    assert data["kind"] == "repetition" and data["asked_again"] is True
    assert "repeat 'Use this tool to ask the user a question" in message


async def test_a_cut_call_asked_again_and_cut_again_reaches_the_model_as_a_tool_error(
    tmp_path: Path,
) -> None:
    cut = ModelResponse(
        text='<tool_call>\n{"name": "Write", "arguments": {"file_path": "a.txt", "content": "he',
        stop_reason="max_tokens",
    )

    def main(request: ModelRequest) -> ModelResponse:
        result = last_result(request)
        if result is None:
            return cut
        assert result.is_error and "cut off at the output token limit" in result.content
        return text_response("I could not write the file in one go.")

    model = FunctionModel(main)
    result = await Runtime(
        cwd=tmp_path, model=local_server_model(model), permission_mode="bypassPermissions"
    ).run("write a.txt")
    assert result.status == "completed"
    assert result.output == "I could not write the file in one go."
    assert len(model.requests) == 3  # cut, asked again and cut again, then the tool error
    assert "cut off at the output token limit in the middle of a Write call" in (
        model.requests[1].messages[-1].content
    )
    assert not (tmp_path / "a.txt").exists()


async def test_a_cut_call_of_a_read_only_tool_runs_its_repaired_arguments(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    cut = ModelResponse(
        text='<tool_call>\n{"name": "Read", "arguments": {"file_path": "notes.txt"',
        stop_reason="max_tokens",
    )

    def main(request: ModelRequest) -> ModelResponse:
        result = last_result(request)
        return cut if result is None else text_response(f"read: {result.content.strip()}")

    model = FunctionModel(main)
    result = await Runtime(cwd=tmp_path, model=local_server_model(model)).run("read notes.txt")
    assert "1\thello" in result.output and len(model.requests) == 2  # never asked again


async def test_a_cut_delegation_is_asked_again_rather_than_run_with_a_cut_prompt(
    tmp_path: Path,
) -> None:
    arguments = json.dumps(TASK)[:-40]
    cut = ModelResponse(
        text=f'<tool_call>\n{{"name": "Task", "arguments": {arguments}', stop_reason="max_tokens"
    )

    def main(request: ModelRequest) -> ModelResponse:
        result = last_result(request)
        if result is not None:
            return text_response(result.content.splitlines()[0])
        return cut if len(request.messages) == 1 else written_call("Task", TASK)

    model = FunctionModel(main)
    reader = FunctionModel(notes_reader)
    result = await Runtime(
        cwd=project(tmp_path),
        model=local_server_model(model),
        agents=[NOTES_READER],
        agent_models={"notes-reader": reader},
    ).run("find the code word")
    assert result.output == "The code word is PELICAN-42."
    first_prompt = reader.requests[0].messages[0].content
    assert first_prompt == TASK["prompt"]  # the whole prompt, not the cut one


async def test_a_looping_final_answer_is_asked_again_with_a_penalty(tmp_path: Path) -> None:
    def main(request: ModelRequest) -> ModelResponse:
        if request.settings.frequency_penalty is None:
            return text_response("The answer is 4. " + "The answer is four. " * 60)
        return text_response("The answer is 4.")

    model = FunctionModel(main)
    result = await Runtime(cwd=tmp_path, model=model).run("2+2?")
    assert result.output == "The answer is 4." and len(model.requests) == 2
    assert result.usage.requests == 2  # the discarded answer's tokens are counted too


async def test_a_loop_the_second_answer_keeps_is_cut_back_and_said(tmp_path: Path) -> None:
    loop = "Let me think again. " * 60
    model = FunctionModel(lambda request: text_response("First, the facts. " + loop))
    result = await Runtime(cwd=tmp_path, model=model).run("think")
    assert result.status == "completed"
    assert result.output.startswith("First, the facts. Let me think again.")
    assert result.output.count("Let me think again.") <= 2
    assert "[the passage above repeated" in result.output


async def test_turns_that_keep_looping_stop_the_session_with_a_loop_error(
    tmp_path: Path,
) -> None:
    loop = "Ask the user a question. " * 60

    def main(request: ModelRequest) -> ModelResponse:
        return tool_call_response("Glob", {"pattern": loop})

    model = FunctionModel(main)
    with open_store(tmp_path / "state.db") as store:
        result = await Runtime(cwd=tmp_path, model=model, store=store).run("look around")
    assert result.status == "failed"
    assert (result.error or "").startswith(
        "Loop detected: 3 answers of the model repeated one passage over and over"
    )
    assert result.task_id is not None and f"subagents resume {result.task_id[:8]}" in (
        result.error or ""
    )
    assert len(model.requests) == 6  # three turns, each asked twice; then it stops


@pytest.mark.parametrize("stop_reason", ["max_tokens", "end_turn"])
async def test_a_call_shaped_whole_answer_is_a_call_cut_or_not(
    tmp_path: Path, stop_reason: str
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    whole = json.dumps({"tool": "Read", "arguments": {"file_path": "a.txt"}})
    text = whole[:-2] if stop_reason == "max_tokens" else whole

    def main(request: ModelRequest) -> ModelResponse:
        result = last_result(request)
        if result is None:
            return ModelResponse(text=text, stop_reason=stop_reason)  # type: ignore[arg-type]
        return text_response(f"it says {result.content.strip()}")

    model = FunctionModel(main)
    result = await Runtime(cwd=tmp_path, model=local_server_model(model)).run("read a.txt")
    assert "1\talpha" in result.output


def run_the_issue_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *options: str
) -> Result:
    """The issue as its user met it: a local server set by OPENAI_BASE_URL, no key, the
    main agent's first answer a runaway Task call written as text. (Its user had no config
    and auto mode; a local server's default is now schema turns, so auto is set here.)"""
    root = project(tmp_path)
    (root / ".git").mkdir()
    (root / ".subagents").mkdir()
    (root / ".subagents" / "config.toml").write_text('[providers.openai]\ntool_calls = "auto"\n')
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "notes-reader.md").write_text(
        "---\nname: notes-reader\ndescription: Reads files of the project.\ntools: Read\n---\n"
        "You read the files you are asked about.\n"
    )
    read = json.dumps({"name": "Read", "arguments": {"file_path": "docs/notes.txt"}})
    with FakeOpenAIServer() as server:
        for text in (
            the_issues_answer().text,  # main: stopped as a loop, asked again
            json.dumps({"tool": "Task", "arguments": TASK}),  # main, told: a proper call
            f"<tool_call>\n{read}\n</tool_call>",  # the notes-reader
            "The code word is PELICAN-42.",
            "The release code word is PELICAN-42.",  # main, with the subagent's answer
        ):
            server.reply_stream([chunk({"content": text}), chunk(finish_reason="stop")])
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        prompt = "Use the notes-reader agent to find the release code word."
        return CliRunner().invoke(
            app, ["run", prompt, "--cwd", str(root), "--model", "openai:qwen", "--yes", *options]
        )


@pytest.mark.slow
def test_the_issue_on_the_command_line_prints_the_real_answer_and_says_what_it_discarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_the_issue_on_the_command_line(tmp_path, monkeypatch)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "The release code word is PELICAN-42."
    progress = " ".join(result.stderr.split())
    assert "main answer not taken as it came: the call's arguments repeat 'Use this" in progress
    assert "asked again" in progress and "notes-reader" in progress
    assert ASK_HUMAN.strip() not in result.stdout


def test_the_issue_in_stream_json_has_a_line_for_the_discarded_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_the_issue_on_the_command_line(
        tmp_path, monkeypatch, "--output-format", "stream-json"
    )
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    (rejected,) = [line for line in lines if line["type"] == "answer_rejected"]
    assert rejected["asked_again"] is True
    assert rejected["message"].startswith("the call's arguments repeat 'Use this tool")
    assert lines[-1]["output"] == "The release code word is PELICAN-42."
