"""Failures `make eval` found with a real Qwen2.5-Coder-1.5B (Q4_K_M, in process, 2 cores),
replayed: each model below answers as the real one did, turn for turn (the calls and
arguments copied from the stored tasks of the eval's runs), and the test holds the harness to
what it does about it now.

Where the harness now asks something the recorded model never saw (a turn that must answer
without a tool), the replayed model answers from what it last read, as the real one does when
its grammar allows a reply only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from subagents.definitions.model import AgentDefinition
from subagents.messages import AssistantMessage, ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.models.tool_arguments import parse_tool_arguments
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response

Turn = tuple[str, dict[str, Any]]


def replay(
    turns: Sequence[Turn],
    *,
    then: Callable[[ModelRequest], str],
    name: str = "llamacpp:qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
) -> FunctionModel:
    """A model making the recorded ``turns`` in order, one call each, as llama.cpp returned
    them (the same ``call_0`` id); on a turn that must answer, or once they run out, ``then``."""

    def turn(request: ModelRequest) -> ModelResponse:
        made = sum(1 for m in request.messages if isinstance(m, AssistantMessage))
        if request.settings.tool_choice == "none" or made >= len(turns):
            return text_response(then(request))
        name, arguments = turns[made]
        call = parse_tool_arguments("call_0", name, json.dumps(arguments))
        return ModelResponse(tool_calls=(call,), stop_reason="tool_use")

    return FunctionModel(turn, name=name)


def last_result(request: ModelRequest) -> str:
    results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
    return results[-1].content.split("\n\n[loop guard]")[0] if results else ""


def subagents_answer(request: ModelRequest) -> str:
    """What the subagent said, from the last Task result: a main agent replying with it."""
    answer = last_result(request).split("\n\nagent_id")[0]
    return re.sub(r'^The [\w-]+ agent \(".*?"\) answered:\n', "", answer)


def calls_of(messages: Sequence[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for message in messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                yield call.name, call.arguments


# --- corpus-agent: the corpus's code-reviewer read one file until its context was full --------

REVIEW = {
    "description": "Review src/calc.py for bugs",
    "prompt": "Review the file src/calc.py for any bugs. Please provide a detailed explanation "
    "of the bug and suggest a fix.",
    "subagent_type": "code-reviewer",
}
READ_CALC: Turn = ("Read", {"file_path": "src/calc.py"})
GREP_CALC: Turn = ("Grep", {"pattern": "add(a, b) -> a - b"})
CODE_REVIEWER = AgentDefinition(  # the corpus file's frontmatter (voltagent, MIT)
    name="code-reviewer",
    description="Use this agent when you need to conduct comprehensive code reviews focusing "
    "on code quality, security vulnerabilities, and best practices.",
    system_prompt="You are a senior code reviewer.",
    tools=["Read", "Write", "Edit", "Bash", "Glob", "Grep"],
)


async def test_a_reviewer_reading_one_file_over_and_over_is_made_to_answer(
    tmp_path: Path,
) -> None:
    """Recorded: Read, Grep, Read, Grep, then Read 45 times more, each told it had the result,
    until the conversation no longer fit the 8,192-token context and the run failed."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    reviewer = replay(
        [READ_CALC, GREP_CALC, READ_CALC, GREP_CALC, *[READ_CALC] * 45],
        then=lambda request: "add() returns a - b: it subtracts instead of adding.",
    )
    main = replay([("Task", REVIEW)], then=subagents_answer)
    runtime = Runtime(
        cwd=tmp_path,
        model=main,
        agents=[CODE_REVIEWER],
        agent_models={"code-reviewer": reviewer},
        permission_mode="bypassPermissions",
    )
    result = await runtime.run(
        "Use the code-reviewer agent to review src/calc.py and tell me the bug it finds."
    )
    assert result.status == "completed", result.error
    assert result.output == "add() returns a - b: it subtracts instead of adding."
    # the fourth identical Read (the note came with the third) made the next turn answer
    choices = [request.settings.tool_choice for request in reviewer.requests]
    assert choices == [None] * 6 + ["none"]


# --- search: the finder gave Grep a file-name pattern, and the main agent started it again ----

FIND = {
    "description": "Find the Python file under src/ that defines the function parse_invoice",
    "prompt": "Find the Python file under src/ that defines the function parse_invoice",
    "subagent_type": "finder",
}
FINDER = AgentDefinition(
    name="finder",
    description="Finds where things are defined in the code base.",
    system_prompt="You search the code with Grep and Glob and report the file path you found.",
    tools=["Grep", "Glob", "Read"],
)


async def test_a_finder_grepping_a_file_pattern_hears_of_glob_and_its_parent_stops_retrying(
    tmp_path: Path,
) -> None:
    """Recorded: the finder sent Grep {"pattern": "src/**/*.py"} three times and was stopped
    as a loop; the main agent started it again and again (its results differed only by the
    failed subagent's agent_id), six times, until the run's time ran out."""
    (tmp_path / "src" / "billing").mkdir(parents=True)
    (tmp_path / "src" / "billing" / "invoices.py").write_text("def parse_invoice(text): ...\n")
    finder = replay([("Grep", {"pattern": "src/**/*.py"})] * 3, then=lambda request: "?")
    main = replay([("Task", FIND)] * 6, then=lambda request: "I could not find it.")
    store_path = tmp_path / "state.db"
    with open_store(store_path) as store:
        result = await Runtime(
            cwd=tmp_path,
            model=main,
            agents=[FINDER],
            agent_models={"finder": finder},
            store=store,
        ).run("Use the finder agent to find which Python file under src/ defines parse_invoice.")
        sessions = store.sessions(result.task_id or "")
    assert [s.agent_name for s in sessions].count("finder") == 3
    error = last_result(finder.requests[1])  # what the finder read after its first Grep
    assert "'src/**/*.py' looks like a pattern of file names: Glob finds files by name" in error
    # the same failing delegation is a loop for the main agent too: stopped at the third
    assert result.status == "failed"
    assert (result.error or "").startswith("Loop detected: Task")
    assert [name for name, _ in calls_of(result.messages)] == ["Task"] * 3


# --- nested: the lead started the same subagent with the same prompt again and again ----------

LEAD_TASK = {
    "description": "Find the code word 'secret' in the file 'docs/vault.txt'",
    "prompt": "Find the code word 'secret' in the file 'docs/vault.txt'",
    "subagent_type": "general-purpose",
}
LEAD = AgentDefinition(
    name="lead",
    description="Coordinates work: hands each question to the right specialist.",
    system_prompt="You do not read files yourself; start the right agent with the Task tool.",
    tools=["Task", "Read", "Glob"],
)


async def test_a_lead_starting_the_same_subagent_again_and_again_is_made_to_answer(
    tmp_path: Path,
) -> None:
    """Recorded: the lead started general-purpose with the same prompt, got the same answer
    ("I don't know how to find the code word ..."), and did it again, fourteen times."""
    stuck = "I don't know how to find the code word 'secret' in the file 'docs/vault.txt'."
    lead = replay([("Task", LEAD_TASK)] * 14, then=lambda request: "The lead could not find it.")
    general = replay([], then=lambda request: stuck)
    main = replay(
        [("Task", {**LEAD_TASK, "subagent_type": "lead"})],
        then=subagents_answer,
    )
    result = await Runtime(
        cwd=tmp_path,
        model=main,
        agents=[LEAD],
        agent_models={"lead": lead, "general-purpose": general},
    ).run("Ask the lead agent to find the code word in docs/vault.txt.")
    assert result.status == "completed", result.error
    assert result.output == "The lead could not find it."
    # one start: each Task made again got its answer back, then the lead had to answer
    assert len(general.requests) == 1
    assert len(lead.requests) == 5
    assert lead.requests[-1].settings.tool_choice == "none"


# --- eval a5 (in process) and a6 (llama-cpp-python's server) -----------------------------------

NOTES_READER = AgentDefinition(
    name="notes-reader",
    description="Reads files of the project and reports what they say.",
    system_prompt="You read the files you are asked about and report what they say.",
    tools=["Read", "Glob"],
)


def reader_task(prompt: str) -> dict[str, Any]:
    return {"description": "Read a file", "prompt": prompt, "subagent_type": "notes-reader"}


async def test_a_reader_given_a_file_name_without_its_folder_reads_the_one_file_of_that_name(
    tmp_path: Path,
) -> None:
    """Recorded (chain): the main agent asked for 'pointer.txt', the reader read
    WORKSPACE/pointer.txt, heard only that it did not exist, and the main agent asked again,
    three times. Told the path in the workspace (eval b4, in process), the reader answered
    with the error. The one file of that name is read, and the reader is told so."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "pointer.txt").write_text("The code word is kept in docs/secret.txt.\n")
    reader = replay([("Read", {"file_path": str(tmp_path / "pointer.txt")})], then=last_result)
    main = replay(
        [("Task", reader_task("Read the file 'pointer.txt' and report what it says."))],
        then=subagents_answer,
    )
    result = await Runtime(
        cwd=tmp_path, model=main, agents=[NOTES_READER], agent_models={"notes-reader": reader}
    ).run("docs/pointer.txt names another file. Ask the notes-reader agent which file it names.")
    read = last_result(reader.requests[1])
    assert read.startswith(
        f"({tmp_path / 'pointer.txt'} does not exist; this is docs/pointer.txt, the file of "
        "that name there)"
    )
    assert "docs/secret.txt" in result.output


async def test_a_missing_file_whose_name_several_files_have_is_still_refused(
    tmp_path: Path,
) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "notes.txt").write_text(f"{folder}\n")
    reader = replay([("Read", {"file_path": "notes.txt"})], then=last_result)
    main = replay([("Task", reader_task("Read notes.txt."))], then=lambda request: "done")
    await Runtime(
        cwd=tmp_path, model=main, agents=[NOTES_READER], agent_models={"notes-reader": reader}
    ).run("Ask the notes-reader agent to read notes.txt.")
    refused = last_result(reader.requests[1])
    assert refused.endswith(
        "files of that name are at a/notes.txt, b/notes.txt: use one of these paths."
    )


async def test_a_reader_that_dropped_a_part_of_the_workspace_path_reads_the_file_inside(
    tmp_path: Path,
) -> None:
    """Recorded (pass-path, evals a8 and b1): the workspace was /tmp/eval/pass-path-1 and the
    reader asked for /tmp/eval/docs/archive/2024/q3/summary.md: refused as outside, it gave
    up; told the path inside, it answered with the error, three times."""
    workspace = tmp_path / "pass-path-1"
    (workspace / "docs" / "archive" / "2024" / "q3").mkdir(parents=True)
    (workspace / "docs" / "archive" / "2024" / "q3" / "summary.md").write_text("Total: 7,412\n")
    dropped = tmp_path / "docs" / "archive" / "2024" / "q3" / "summary.md"
    reader = replay([("Read", {"file_path": str(dropped)})], then=last_result)
    main = replay(
        [("Task", reader_task("Read docs/archive/2024/q3/summary.md and report the total."))],
        then=lambda request: "done",
    )
    await Runtime(
        cwd=workspace, model=main, agents=[NOTES_READER], agent_models={"notes-reader": reader}
    ).run("Ask the notes-reader agent to read docs/archive/2024/q3/summary.md.")
    read = last_result(reader.requests[1])
    assert read.startswith(
        f"({dropped} is outside the workspace; this is docs/archive/2024/q3/summary.md, "
        "the file of that name there)\n"
    )
    assert read.endswith("1\tTotal: 7,412")


@pytest.mark.parametrize("pattern", ["parse_invoice src/**/*.py", "src/**/*.py parse_invoice"])
async def test_a_finder_writing_grep_as_a_command_line_finds_the_file(
    tmp_path: Path, pattern: str
) -> None:
    """Recorded (search, evals a5 and a8): Grep with the files in the pattern, three times,
    each an invalid expression, then stopped as a loop; its parent started it again."""
    (tmp_path / "src" / "billing").mkdir(parents=True)
    (tmp_path / "src" / "billing" / "invoices.py").write_text("def parse_invoice(text): ...\n")
    finder = replay([("Grep", {"pattern": pattern})], then=last_result)
    main = replay([("Task", FIND)], then=lambda request: last_result(request))
    result = await Runtime(
        cwd=tmp_path, model=main, agents=[FINDER], agent_models={"finder": finder}
    ).run("Use the finder agent to find which Python file under src/ defines parse_invoice.")
    assert result.status == "completed", result.error
    assert "src/billing/invoices.py" in result.output
    assert [name for name, _ in calls_of(result.messages)] == ["Task"]


async def test_an_unasked_background_start_is_not_on_a_small_models_menu(tmp_path: Path) -> None:
    """Recorded (corpus-agent, nested, pass-path, search): the main agent, its grammar built
    from a Task schema with run_in_background, set it unasked, answered at once with the
    'started in the background' text, and started the same agent again when its result came:
    four times in 300 s. Without it on the menu, the same call runs in the foreground."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "vault.txt").write_text("The code word is KESTREL-09.\n")
    reader = replay([("Read", {"file_path": "docs/vault.txt"})], then=last_result)
    main = replay(
        [("Task", reader_task("Find the code word in docs/vault.txt"))],
        then=subagents_answer,
    )
    result = await Runtime(
        cwd=tmp_path, model=main, agents=[NOTES_READER], agent_models={"notes-reader": reader}
    ).run("Ask the notes-reader agent to find the code word in docs/vault.txt.")
    (task,) = [spec for spec in main.requests[0].tools if spec.name == "Task"]
    assert "run_in_background" not in task.parameters["properties"]
    assert "KESTREL-09" in result.output
    assert len(main.requests) == 2  # the call, then the answer: no second start


async def test_a_main_agent_starting_the_same_background_agent_again_is_made_to_answer(
    tmp_path: Path,
) -> None:
    """Recorded (background, eval a8): asked for a background start and TaskOutput, the main
    agent did both, then started the same agent in the background again, eleven times until
    the time ran out: each start's text named a new agent_id, so no two results matched."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "later.txt").write_text("The code word is PLOVER-33.\n")
    start = {**reader_task("Read the file docs/later.txt"), "run_in_background": True}

    def main_turn(request: ModelRequest) -> ModelResponse:
        if request.settings.tool_choice == "none":
            return text_response("The code word is PLOVER-33.")
        made = sum(1 for m in request.messages if isinstance(m, AssistantMessage))
        if made % 2 == 0:
            call = parse_tool_arguments("call_0", "Task", json.dumps(start))
        else:
            started = last_result(request)
            agent_id = started.split("agent_id ", 1)[1].split(".", 1)[0]
            call = parse_tool_arguments("call_0", "TaskOutput", json.dumps({"agent_id": agent_id}))
        return ModelResponse(tool_calls=(call,), stop_reason="tool_use")

    main = FunctionModel(main_turn, name="llamacpp:qwen2.5-coder-1.5b.gguf")
    reader = replay([("Read", {"file_path": "docs/later.txt"})], then=last_result)
    result = await Runtime(
        cwd=tmp_path, model=main, agents=[NOTES_READER], agent_models={"notes-reader": reader}
    ).run(
        "Start the notes-reader agent in the background (run_in_background) to read "
        "docs/later.txt, then get its result with TaskOutput and tell me the code word."
    )
    assert result.status == "completed", result.error
    assert result.output == "The code word is PLOVER-33."
    starts = [name for name, _ in calls_of(result.messages) if name == "Task"]
    assert len(starts) == 4  # the fourth start alike is the last: the next turn must answer


async def test_a_main_agent_starting_one_delegation_again_is_made_to_answer_whatever_it_said(
    tmp_path: Path,
) -> None:
    """Recorded (restricted, server path, eval a8): the main agent started reader-only with
    one prompt again and again; each time the subagent worded its failure differently, so no
    two results matched, until the time ran out."""
    reader_only = AgentDefinition(
        name="reader-only",
        description="Reads files of the project. It cannot change anything.",
        system_prompt="You read files and report what they say.",
        tools=["Read"],
    )
    ask = {
        "description": "Create a file named out.txt containing hello.",
        "prompt": "Create a file named out.txt containing hello.",
        "subagent_type": "reader-only",
    }
    answers = iter(f"I cannot write files (attempt {n})." for n in range(1, 100))
    reader = replay([], then=lambda request: next(answers))
    main = replay([("Task", ask)] * 20, then=lambda request: "reader-only cannot write files.")
    result = await Runtime(
        cwd=tmp_path, model=main, agents=[reader_only], agent_models={"reader-only": reader}
    ).run("Ask the reader-only agent to create a file named out.txt containing hello.")
    assert result.status == "completed", result.error
    assert result.output == "reader-only cannot write files."
    # one start, its answer given back to each start alike, until the main agent had to answer
    assert len(reader.requests) == 1 and not (tmp_path / "out.txt").exists()
    starts = [name for name, _ in calls_of(result.messages) if name == "Task"]
    assert len(starts) == 4


@pytest.mark.parametrize(
    ("model_name", "compact"),
    [("llamacpp:qwen2.5-coder-1.5b.gguf", True), ("openai:gpt-5", False)],
)
async def test_a_subagents_answer_ends_with_what_its_parent_can_do_next(
    tmp_path: Path, model_name: str, compact: bool
) -> None:
    """Recorded (eval b1: two-parallel, nested, corpus-agent): told to pass resume "to the
    Task tool to continue it", a small main agent, whose compact Task shows no resume, made
    the same Task again after each answer. A small model's parent is told the subagent has
    finished; a hosted one's keeps how to resume it."""
    (tmp_path / "notes.txt").write_text("The code word is KESTREL-09.\n")
    reader = replay([("Read", {"file_path": "notes.txt"})], then=last_result)
    main = replay([("Task", reader_task("Read notes.txt."))], then=last_result, name=model_name)
    result = await Runtime(
        cwd=tmp_path, model=main, agents=[NOTES_READER], agent_models={"notes-reader": reader}
    ).run("Ask the notes-reader agent for the code word in notes.txt.")
    assert result.status == "completed", result.error
    assert "KESTREL-09" in result.output
    finished = (
        '(the subagent has finished; its answer is above. The user asked: "Ask the '
        'notes-reader agent for the code word in notes.txt." If a step of that is still to do, '
        "do it now; otherwise reply to the user.)"
    )
    assert (finished in result.output) is compact
    assert ('resume="' in result.output) is not compact
    # eval c3/c4 (two-parallel, server): given two bare answers, the main agent wrote
    # "[insert code words]" 8 samples of 8; told which agent answered which Task, 0 of 8
    assert ('The notes-reader agent ("Read a file") answered:\n' in result.output) is compact


CHAIN = (
    "docs/pointer.txt names another file. Ask the notes-reader agent which file it names, then "
    "ask the notes-reader to read that file, and tell me the code word in it."
)


async def test_after_the_first_step_of_two_the_main_agent_is_reminded_of_the_second(
    tmp_path: Path,
) -> None:
    """Recorded (chain, both paths, eval c1): told to reply "if it answers the user's
    request", the main agent replied with the first step's answer (the file's name) 4 times of
    4; told again what the user asked, it started the second step 4 of 4. Its second turn
    here is the real model's, made after the reminder."""
    (tmp_path / "docs" / "inner").mkdir(parents=True)
    (tmp_path / "docs" / "pointer.txt").write_text(
        "The code word is kept in docs/inner/secret.txt.\n"
    )
    (tmp_path / "docs" / "inner" / "secret.txt").write_text("The code word is GANNET-71.\n")
    pointer = reader_task("Read the file 'pointer.txt' and report which file it names.")
    secret = reader_task("Read the file 'inner/secret.txt' and report what it says.")

    def reader_turn(request: ModelRequest) -> ModelResponse:
        if any(isinstance(m, ToolResultMessage) for m in request.messages):
            return text_response(last_result(request))
        named = re.match(r"Read the file '([^']+)'", request.messages[0].content)
        assert named is not None
        call = parse_tool_arguments("call_0", "Read", json.dumps({"file_path": named[1]}))
        return ModelResponse(tool_calls=(call,), stop_reason="tool_use")

    reader = FunctionModel(reader_turn, name="llamacpp:qwen2.5-coder-1.5b.gguf")

    def main_turn(request: ModelRequest) -> str:
        told = last_result(request)
        assert f'The user asked: "{CHAIN}" If a step of that is still to do, do it now' in told
        return subagents_answer(request)

    main = replay([("Task", pointer), ("Task", secret)], then=main_turn)
    result = await Runtime(
        cwd=tmp_path, model=main, agents=[NOTES_READER], agent_models={"notes-reader": reader}
    ).run(CHAIN)
    assert result.status == "completed", result.error
    assert "GANNET-71" in result.output


async def test_a_small_models_subagent_is_given_the_users_own_words(tmp_path: Path) -> None:
    """Recorded (write-file, server, eval c1): the main agent gave the scribe the Write tool's
    description as its prompt, and the scribe wrote "Hello, world!" to file.txt. With the
    user's words beside the prompt it wrote notes/todo.txt in 4 samples of 4 (0 of 4 without);
    its call here is the real model's, made with them."""
    asked = "Ask the scribe agent to create the file notes/todo.txt containing exactly: buy milk"
    garbled = {
        "description": "Create the file notes/todo.txt containing exactly: buy milk",
        "prompt": "Write a file in the workspace, replacing it if it exists; missing parent "
        "folders are created.",
        "subagent_type": "scribe",
    }
    scribe = replay(
        [("Write", {"file_path": "notes/todo.txt", "content": "buy milk"})], then=last_result
    )
    main = replay([("Task", garbled)], then=last_result)
    await Runtime(
        cwd=tmp_path,
        model=main,
        agents=[SCRIBE],
        agent_models={"scribe": scribe},
        permission_mode="acceptEdits",
    ).run(asked)
    opening = scribe.requests[0].messages[0].content
    assert opening == (
        f'{garbled["prompt"]}\n\n(subagents: for context, the user\'s own words: "{asked}")'
    )
    assert (tmp_path / "notes" / "todo.txt").read_text() == "buy milk"
    lines = main.requests[0].messages[0].content.splitlines()
    assert lines[-1].endswith(", and pass the request on in the prompt, in the user's words.)")


async def test_a_hosted_models_subagent_gets_its_task_prompt_alone(tmp_path: Path) -> None:
    """Claude Code's behaviour where models write their own briefs: no quoted user's words,
    and the mention line does not ask for them."""
    scribe = replay([], then=lambda request: "done", name="openai:gpt-5")
    main = replay([("Task", SCRIBE_TASK)], then=last_result, name="openai:gpt-5")
    await Runtime(cwd=tmp_path, model=main, agents=[SCRIBE], agent_models={"scribe": scribe}).run(
        "Ask the scribe agent to write notes/todo.txt."
    )
    assert scribe.requests[0].messages[0].content == SCRIBE_TASK["prompt"]
    assert "user's words" not in main.requests[0].messages[0].content


SCRIBE = AgentDefinition(
    name="scribe",
    description="Writes files with the content it is given.",
    system_prompt="You write the file you are asked to write, with exactly the content given.",
    tools=["Write"],
)
SCRIBE_TASK = {
    "description": "Write the todo file",
    "prompt": "Write notes/todo.txt containing: buy milk",
    "subagent_type": "scribe",
}


async def finder_told(tmp_path: Path, call: Turn) -> str:
    """What the finder read after making ``call``, the main agent having handed it FIND."""
    finder = replay([call], then=last_result)
    main = replay([("Task", FIND)], then=lambda request: "done")
    await Runtime(cwd=tmp_path, model=main, agents=[FINDER], agent_models={"finder": finder}).run(
        "Use the finder agent to find which Python file under src/ defines parse_invoice."
    )
    return last_result(finder.requests[1])


async def test_a_finder_grepping_for_a_file_path_is_told_what_to_search_for(
    tmp_path: Path,
) -> None:
    """Recorded (search, in process, eval b3 and c2): the finder grepped for
    src/parse_invoice.py to find where parse_invoice is defined, found nothing, and said so;
    told what to search for instead, it made the same call twice more and made an answer up.
    It is shown the lines that hold the name."""
    (tmp_path / "src" / "billing").mkdir(parents=True)
    (tmp_path / "src" / "billing" / "invoices.py").write_text("def parse_invoice(text): ...\n")
    told = await finder_told(tmp_path, ("Grep", {"pattern": "src/parse_invoice.py"}))
    assert told.startswith("No matches for 'src/parse_invoice.py'")
    assert told.endswith(
        "'src/parse_invoice.py' looks like a file name: Grep searches the contents of files; "
        "Glob finds files by name. The lines that hold its name without the extension, "
        "'parse_invoice':\nsrc/billing/invoices.py:1:def parse_invoice(text): ..."
    )
    (tmp_path / "src" / "billing" / "invoices.py").write_text("def parse(text): ...\n")
    told = await finder_told(tmp_path, ("Grep", {"pattern": "src/parse_invoice.py"}))
    assert told.endswith("Its name without the extension, 'parse_invoice', is in no file either.")


async def test_a_finder_globbing_one_folder_hears_of_the_files_below_it(tmp_path: Path) -> None:
    """Recorded (search, server, eval c3): the finder globbed ``**/src/*.py``, saw src/app.py
    alone (parse_invoice is in src/billing/) and answered with it. The files one folder
    deeper are named."""
    (tmp_path / "src" / "billing").mkdir(parents=True)
    (tmp_path / "src" / "billing" / "invoices.py").write_text("def parse_invoice(text): ...\n")
    (tmp_path / "src" / "billing" / "taxes.py").write_text("def tax(amount): ...\n")
    (tmp_path / "src" / "app.py").write_text("from billing.invoices import parse_invoice\n")
    told = await finder_told(tmp_path, ("Glob", {"pattern": "**/src/*.py"}))
    assert told.splitlines() == [
        "src/app.py",
        "(1 file in .)",
        "(`*` stays within one folder: 2 files in subfolders match '**/src/**/*.py': "
        "src/billing/invoices.py, src/billing/taxes.py)",
    ]


async def test_a_finder_grepping_a_file_name_and_a_folder_as_one_command_finds_the_file(
    tmp_path: Path,
) -> None:
    """Recorded (search, in process, eval c4): the finder grepped ``parse_invoice.py src/.*``
    three times, found nothing, and said the function was defined nowhere."""
    (tmp_path / "src" / "billing").mkdir(parents=True)
    (tmp_path / "src" / "billing" / "invoices.py").write_text("def parse_invoice(text): ...\n")
    told = await finder_told(tmp_path, ("Grep", {"pattern": "parse_invoice.py src/.*"}))
    assert told.startswith("No matches for 'parse_invoice.py src/.*'")
    assert told.endswith(
        "'parse_invoice.py' looks like a file name: Grep searches the contents of files; Glob "
        "finds files by name. The lines that hold its name without the extension, "
        "'parse_invoice':\nsrc/billing/invoices.py:1:def parse_invoice(text): ..."
    )
