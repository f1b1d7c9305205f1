"""A prompt that asks for an agent by name (``@notes-reader``, "the notes-reader agent") gets a
line saying so, for the main agent: a real 1.5B model did the work itself in 7 samples of 8
without it, and delegated in 8 of 8 with it (subagents.runtime.mentions)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subagents.definitions.model import AgentDefinition
from subagents.messages import UserMessage
from subagents.runtime.mentions import mentioned_agents, subagent_opening, with_mentions
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import ScriptedModel, tool_call_response

NAMES = ("notes-reader", "plan", "explore", "code-reviewer")


@pytest.mark.parametrize(
    ("prompt", "asked"),
    [
        ("Use the notes-reader agent to find the code word.", ["notes-reader"]),
        ("@notes-reader what does docs/notes.txt say?", ["notes-reader"]),
        ("Ask Notes-Reader subagent, then code-reviewer agent", ["notes-reader", "code-reviewer"]),
        ("Hand it to the agent named plan.", ["plan"]),
        ("Start a sub-agent explore on it", ["explore"]),
        ("explore the repository and plan the change", []),  # words, not agents
        ("the notes-reader-v2 agent", []),  # another name
        ("read notes-reader.md and agents/plan.md", []),
    ],
)  # fmt: skip
def test_an_agent_is_asked_for_by_name_only_in_the_forms_people_use(
    prompt: str, asked: list[str]
) -> None:
    assert mentioned_agents(prompt, NAMES) == asked


def test_the_line_names_the_agent_and_leaves_the_prompt_as_written() -> None:
    prompt = "Use the notes-reader agent to find the code word."
    assert with_mentions(prompt, NAMES) == (
        f"{prompt}\n\n(subagents: the user asked for the agent notes-reader: start it with the "
        'Task tool, subagent_type "notes-reader".)'
    )
    assert with_mentions("What is 2 + 2?", NAMES) == "What is 2 + 2?"


@given(st.text(max_size=400), st.lists(st.text(min_size=1, max_size=30), max_size=8))
def test_any_prompt_and_any_names_are_searched_without_error(prompt: str, names: list[str]) -> None:
    asked = mentioned_agents(prompt, names)
    assert set(asked) <= set(names)
    assert with_mentions(prompt, names).startswith(prompt)


async def test_the_main_agent_reads_the_line_and_the_task_keeps_the_persons_words(
    tmp_path: Path,
) -> None:
    reader = AgentDefinition(
        name="notes-reader",
        description="Reads files.",
        system_prompt="You read files.",
        tools=["Read"],
    )
    main = ScriptedModel(["done"])
    prompt = "Use the notes-reader agent to find the code word."
    with open_store(tmp_path / "state.db") as store:
        result = await Runtime(cwd=tmp_path, model=main, agents=[reader], store=store).run(prompt)
        task = store.get_task(result.task_id or "")
    (opening,) = main.requests[0].messages
    assert isinstance(opening, UserMessage)
    assert opening.content.endswith('subagent_type "notes-reader".)')
    assert task.prompt == prompt


async def test_an_agent_it_may_not_start_is_not_named_to_it(tmp_path: Path) -> None:
    main = ScriptedModel(["done"])
    await Runtime(cwd=tmp_path, model=main).run("Use the notes-reader agent to look.")
    (opening,) = main.requests[0].messages
    assert opening.content == "Use the notes-reader agent to look."


async def test_a_lead_whose_file_says_to_start_an_agent_reads_the_line_too(
    tmp_path: Path,
) -> None:
    """make eval (nested, in process): a lead whose instructions said to start the
    notes-reader read the file itself with its own Read."""
    reader = AgentDefinition(
        name="notes-reader", description="Reads files.", system_prompt="You read files."
    )
    lead = AgentDefinition(
        name="lead",
        description="Coordinates work.",
        system_prompt="For any question about a file, start the notes-reader agent.",
        tools=["Task", "Read"],
    )
    ask_lead = {"description": "ask", "prompt": "Find the code word.", "subagent_type": "lead"}
    main = ScriptedModel([tool_call_response("Task", ask_lead), "done"])
    lead_model, reader_model = ScriptedModel(["asked"]), ScriptedModel(["read"])
    await Runtime(
        cwd=tmp_path,
        model=main,
        agents=[reader, lead],
        agent_models={"lead": lead_model, "notes-reader": reader_model},
    ).run("Ask the lead to find the code word.")
    (opening,) = lead_model.requests[0].messages
    assert opening.content == (
        "Find the code word.\n\n(subagents: your instructions ask for the agent notes-reader: "
        'start it with the Task tool, subagent_type "notes-reader".)'
    )
    assert not reader_model.requests  # the line asks; the lead decides


def test_a_subagent_opening_names_each_agent_once_prompt_first() -> None:
    names = ["plan", "notes-reader", "finder"]
    opening = subagent_opening(
        "Use the finder agent, then the plan agent.", "Start the notes-reader agent.", names
    )
    assert opening.endswith(
        "(subagents: your instructions ask for the agents finder, plan, notes-reader: start "
        'each with the Task tool, subagent_type "finder" / "plan" / "notes-reader".)'
    )
    assert subagent_opening("Read it.", "You read files.", names) == "Read it."
