"""Issue 10: a Task schema weak models cannot get wrong quietly, and a small tool menu.

The model transcripts are shaped like a 1.5B instruct model's output: Task without
``subagent_type``, ``TaskCancel`` called with an agent type as its id, empty arguments.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subagents.config import Config, load_config
from subagents.definitions.model import AgentDefinition
from subagents.errors import ConfigError
from subagents.messages import ToolResultMessage, UserMessage
from subagents.models.base import ModelRequest, ModelResponse, ToolSpec
from subagents.runtime.pause import HumanDecision
from subagents.runtime.runtime import Runtime
from subagents.runtime.tool_menu import (
    COMPACT_DESCRIPTION_LIMIT,
    LEFT_OUT_OF_SMALL_MENUS,
    first_sentence,
)
from subagents.store.sqlite import open_store
from subagents.testing import (
    FunctionModel,
    ScriptedModel,
    text_response,
    tool_call_response,
    tool_calls_response,
)

STARTED_ID = re.compile(r"agent_id ([0-9a-f-]{36})")
RESUME_ID = re.compile(r'resume="([^"]+)"')
NOTES_READER = AgentDefinition(
    name="notes-reader",
    description="Reads notes.txt and reports what it says. Use it for any question about notes.",
    system_prompt="You read notes.",
    tools=["Read"],
)


def runtime(tmp_path: Path, main: Any, *agents: AgentDefinition, **kwargs: Any) -> Runtime:
    kwargs.setdefault("permission_mode", "bypassPermissions")
    return Runtime(cwd=tmp_path, agents=agents or (NOTES_READER,), model=main, **kwargs)


def config(tmp_path: Path, text: str) -> Config:
    (tmp_path / ".subagents").mkdir(exist_ok=True)
    (tmp_path / ".subagents" / "config.toml").write_text(text)
    return load_config(tmp_path)


def results(request: ModelRequest) -> list[ToolResultMessage]:
    return [m for m in request.messages if isinstance(m, ToolResultMessage)]


def offered(request: ModelRequest) -> set[str]:
    return {spec.name for spec in request.tools}


def spec_named(request: ModelRequest, name: str) -> ToolSpec:
    (spec,) = [s for s in request.tools if s.name == name]
    return spec


def spec_bytes(specs: Any) -> int:
    """What the tool specs weigh as a provider would send them (name, description, schema)."""
    return len(
        json.dumps(
            [
                {"name": s.name, "description": s.description, "parameters": s.parameters}
                for s in specs
            ]
        ).encode()
    )


# -- Task schema -------------------------------------------------------------------------------


async def test_the_task_schema_requires_subagent_type_and_non_empty_text(tmp_path: Path) -> None:
    main = ScriptedModel(["hi"])
    await runtime(tmp_path, main).run("go")
    schema = spec_named(main.requests[0], "Task").parameters
    assert set(schema["required"]) == {"description", "prompt", "subagent_type"}
    for name in ("description", "prompt", "subagent_type"):
        assert schema["properties"][name]["minLength"] == 1
    assert "default" not in schema["properties"]["subagent_type"]
    assert "resume" not in schema["required"]
    assert sorted(schema["properties"]["subagent_type"]["enum"]) == [
        "explore",
        "general-purpose",
        "notes-reader",
        "plan",
    ]


async def test_a_limited_subagent_s_task_schema_names_only_the_types_it_may_start(
    tmp_path: Path,
) -> None:
    lead = AgentDefinition(
        name="lead",
        description="Leads.",
        system_prompt="You lead.",
        tools=["Read", "Task(notes-reader)"],
    )
    child = ScriptedModel(["nothing to do"])
    main = ScriptedModel(
        [
            tool_call_response(
                "Task", {"description": "lead it", "prompt": "Lead.", "subagent_type": "lead"}
            ),
            "ok",
        ]
    )
    await runtime(tmp_path, main, lead, NOTES_READER, agent_models={"lead": child}).run("go")
    schema = spec_named(child.requests[0], "Task").parameters
    assert schema["properties"]["subagent_type"]["enum"] == ["notes-reader"]


async def test_task_without_subagent_type_is_a_tool_error_naming_the_types(tmp_path: Path) -> None:
    """The issue's first call, then the fix the error asks for."""
    (tmp_path / "notes.txt").write_text("The secret word is heliotrope.\n")
    reader = ScriptedModel(
        [tool_call_response("Read", {"file_path": "notes.txt"}), "The secret word is heliotrope."]
    )
    main = ScriptedModel(
        [
            tool_call_response(
                "Task", {"description": "find secret word", "prompt": "Find the secret word."}
            ),
            tool_call_response(
                "Task",
                {
                    "description": "find secret word",
                    "prompt": "Read notes.txt and tell me the secret word.",
                    "subagent_type": "notes-reader",
                },
            ),
            "The word is heliotrope.",
        ]
    )
    rt = runtime(tmp_path, main, agent_models={"notes-reader": reader})
    result = await rt.run("Use the notes-reader subagent to find the secret word in notes.txt.")

    refused, answered = results(main.requests[-1])
    assert refused.is_error
    assert "`subagent_type` is missing" in refused.content
    assert "notes-reader" in refused.content and "explore" in refused.content
    assert "Call Task again" in refused.content
    assert not answered.is_error and answered.content.startswith("The secret word is heliotrope.")
    assert result.output == "The word is heliotrope."
    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert spawn.subagent_type == "notes-reader"  # the refused call started nobody


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"description": "read notes", "prompt": ""}, ["`prompt` is empty"]),
        ({"description": "   ", "prompt": "Read notes.txt."}, ["`description` is empty"]),
        (
            {"description": "", "prompt": " \n\t"},
            ["`description` is empty", "`prompt` is empty", "these fixed"],
        ),
    ],
)
async def test_an_empty_prompt_or_description_is_a_tool_error_saying_what_to_put(
    tmp_path: Path, arguments: dict[str, str], expected: list[str]
) -> None:
    child = ScriptedModel([])  # never asked: nothing starts
    main = ScriptedModel(
        [tool_call_response("Task", {**arguments, "subagent_type": "notes-reader"}), "gave up"]
    )
    rt = runtime(tmp_path, main, agent_models={"notes-reader": child})
    await rt.run("go")
    (error,) = results(main.requests[-1])
    assert error.is_error and error.content.startswith("Task was not run:")
    for text in expected:
        assert text in error.content
    assert child.requests == [] and rt.last_delegation.handles == {}  # type: ignore[union-attr]


def _resume_script(second_call: dict[str, Any]) -> tuple[FunctionModel, list[ToolResultMessage]]:
    """A main agent that starts notes-reader, then makes ``second_call`` (``resume`` filled in
    with the started agent's id where it says ``"ID"``), then answers."""
    seen: list[ToolResultMessage] = []

    def main_turn(request: ModelRequest) -> ModelResponse:
        done = results(request)
        if not done:
            return tool_call_response(
                "Task",
                {
                    "description": "read notes",
                    "prompt": "Read notes.",
                    "subagent_type": "notes-reader",
                },
            )
        if len(done) == 1:
            agent_id = RESUME_ID.findall(done[0].content)[0]
            arguments = {k: (agent_id if v == "ID" else v) for k, v in second_call.items()}
            return tool_call_response("Task", arguments)
        seen.extend(done)
        return text_response("done")

    return FunctionModel(main_turn), seen


async def test_resume_names_the_agents_type_and_a_mismatch_names_the_right_one(
    tmp_path: Path,
) -> None:
    main, seen = _resume_script(
        {"description": "again", "prompt": "And now?", "resume": "ID", "subagent_type": "explore"}
    )
    child = ScriptedModel(["first answer"])
    await runtime(tmp_path, main, agent_models={"notes-reader": child}).run("go")
    first, refused = seen
    assert 'subagent_type="notes-reader" to the Task tool to continue it' in first.content
    assert refused.is_error
    assert "is a 'notes-reader' agent, not 'explore'" in refused.content
    assert 'pass subagent_type="notes-reader" with resume' in refused.content
    assert len(child.requests) == 1  # the resumed agent did not run again


async def test_resume_without_subagent_type_is_told_the_resumed_agents_type(
    tmp_path: Path,
) -> None:
    main, seen = _resume_script({"description": "again", "prompt": "And now?", "resume": "ID"})
    child = ScriptedModel(["first answer"])
    await runtime(tmp_path, main, agent_models={"notes-reader": child}).run("go")
    refused = seen[1]
    assert refused.is_error and "`subagent_type` is missing" in refused.content
    assert "is a 'notes-reader' agent" in refused.content
    assert len(child.requests) == 1


async def test_resume_with_the_right_type_continues_the_agent(tmp_path: Path) -> None:
    main, seen = _resume_script(
        {
            "description": "again",
            "prompt": "And now?",
            "resume": "ID",
            "subagent_type": "Notes_Reader",  # spelling of the type does not matter
        }
    )
    child = ScriptedModel(["first answer", "second answer"])
    rt = runtime(tmp_path, main, agent_models={"notes-reader": child})
    await rt.run("go")
    assert seen[1].content.startswith("second answer")
    contents = [getattr(m, "content", "") for m in child.requests[1].messages]
    assert contents == ["Read notes.", "first answer", "And now?"]
    assert len(rt.last_delegation.handles) == 1  # type: ignore[union-attr]


async def test_an_agent_type_given_as_resume_is_told_to_start_one(tmp_path: Path) -> None:
    main = ScriptedModel(
        [
            tool_call_response(
                "Task",
                {
                    "description": "read",
                    "prompt": "Read notes.",
                    "subagent_type": "notes-reader",
                    "resume": "notes-reader",
                },
            ),
            "ok",
        ]
    )
    await runtime(tmp_path, main).run("go")
    (error,) = results(main.requests[-1])
    assert error.is_error and "'notes-reader' is an agent type, not an agent_id" in error.content
    assert "leave out `resume`" in error.content


# -- the menu: TaskOutput / TaskCancel -----------------------------------------------------------


async def test_the_menu_offers_task_output_and_cancel_only_while_a_background_agent_is_live(
    tmp_path: Path,
) -> None:
    release = asyncio.Event()

    async def background_child(request: ModelRequest) -> ModelResponse:
        await release.wait()
        return text_response("background report")

    menus: list[set[str]] = []
    names: list[list[str]] = []

    def main_turn(request: ModelRequest) -> ModelResponse:
        menus.append(offered(request))
        names.append([spec.name for spec in request.tools])
        done = results(request)
        if not done:
            return tool_call_response(
                "Task",
                {
                    "description": "read notes",
                    "prompt": "Read notes.",
                    "subagent_type": "notes-reader",
                    "run_in_background": True,
                },
            )
        if len(done) == 1:
            agent_id = STARTED_ID.findall(done[0].content)[0]
            release.set()
            return tool_call_response("TaskOutput", {"agent_id": agent_id})
        return text_response("read it")

    rt = runtime(
        tmp_path,
        FunctionModel(main_turn),
        agent_models={"notes-reader": FunctionModel(background_child)},
    )
    result = await rt.run("go")
    assert result.output == "read it"
    before, running, after = menus
    assert "Task" in before and not before & {"TaskOutput", "TaskCancel"}
    assert {"Task", "TaskOutput", "TaskCancel", "SendMessage", "ListAgents"} <= running
    # the result was read: gone again, and with no subagent running nobody to message
    assert not after & {"TaskOutput", "TaskCancel", "SendMessage", "ListAgents"}
    assert after == before
    # the quiet menu is a prefix of the full one (a provider's prompt cache survives)
    quiet_names, full_names = names[0], names[1]
    assert full_names[: len(quiet_names)] == quiet_names
    assert full_names[len(quiet_names) :] == [
        "SendMessage",
        "ListAgents",
        "TaskOutput",
        "TaskCancel",
    ]


async def test_a_background_result_that_arrives_unread_keeps_the_tools_until_it_is_seen(
    tmp_path: Path,
) -> None:
    """The notification is delivered with the next turn, so that turn's menu no longer has
    them; while the agent runs, they are there."""
    release = asyncio.Event()

    async def background_child(request: ModelRequest) -> ModelResponse:
        await release.wait()
        return text_response("background report")

    menus: list[set[str]] = []

    def main_turn(request: ModelRequest) -> ModelResponse:
        menus.append(offered(request))
        last = request.messages[-1]
        if not results(request):
            return tool_call_response(
                "Task",
                {
                    "description": "read notes",
                    "prompt": "Read notes.",
                    "subagent_type": "notes-reader",
                    "run_in_background": True,
                },
            )
        if isinstance(last, UserMessage) and "task-notification" in last.content:
            return text_response("saw it")
        release.set()
        return text_response("waiting")

    rt = runtime(
        tmp_path,
        FunctionModel(main_turn),
        agent_models={"notes-reader": FunctionModel(background_child)},
    )
    result = await rt.run("go")
    assert result.output == "saw it"
    assert len(menus) == 3
    assert "TaskOutput" in menus[1] and "TaskOutput" not in menus[2]


@pytest.mark.parametrize("tool", ["TaskCancel", "TaskOutput"])
async def test_task_cancel_without_a_background_agent_says_so_and_how_to_start_one(
    tmp_path: Path, tool: str
) -> None:
    """The issue's loop: TaskCancel {"agent_id": "notes-reader"} with nothing running."""
    main = ScriptedModel([tool_call_response(tool, {"agent_id": "notes-reader"}), "ok"])
    await runtime(tmp_path, main).run("go")
    assert "TaskCancel" not in offered(main.requests[0])
    (error,) = results(main.requests[-1])
    assert error.is_error
    assert f"{tool} cannot be used now: you have no background subagent" in error.content
    assert "'notes-reader' is an agent type" in error.content
    assert 'call Task with subagent_type="notes-reader"' in error.content
    assert "not available" not in error.content and "nknown tool" not in error.content


async def test_an_unknown_tool_is_refused_naming_only_the_tools_on_this_turns_menu(
    tmp_path: Path,
) -> None:
    """Listing the hidden TaskOutput / TaskCancel in the refusal would put them back in front
    of a weak model."""
    main = ScriptedModel([tool_call_response("Summarise", {"text": "notes"}), "ok"])
    await runtime(tmp_path, main).run("go")
    (error,) = results(main.requests[-1])
    assert error.is_error and "'Summarise' is not available to this agent" in error.content
    listed = set(error.content.partition("available: ")[2].partition(".")[0].split(", "))
    assert listed == offered(main.requests[0])
    assert not listed & {"TaskOutput", "TaskCancel"}


@pytest.mark.parametrize("name", ["notes-reader", "Notes-Reader"])
async def test_an_agent_called_as_a_tool_is_told_to_start_it_with_task(
    tmp_path: Path, name: str
) -> None:
    """Told to "use the notes-reader subagent", small models call notes-reader itself."""
    main = ScriptedModel([tool_call_response(name, {"file": "notes.txt"}), "ok"])
    await runtime(tmp_path, main).run("go")
    (error,) = results(main.requests[-1])
    assert error.is_error
    assert f"{name!r} is an agent, not a tool" in error.content
    assert 'call Task with subagent_type="notes-reader"' in error.content


async def test_a_subagent_without_task_calling_an_agent_name_gets_the_plain_refusal(
    tmp_path: Path,
) -> None:
    def model(request: ModelRequest) -> ModelResponse:
        if "You read notes." not in request.system:  # the main agent
            if results(request):
                return text_response("done")
            arguments = {
                "description": "read",
                "prompt": "read notes",
                "subagent_type": "notes-reader",
            }
            return tool_call_response("Task", arguments)
        if results(request):
            return text_response(results(request)[-1].content)
        return tool_call_response("notes-reader", {})

    result = await runtime(tmp_path, FunctionModel(model)).run("go")
    assert (
        "'notes-reader' is not available to this agent; available: Read."
        in result.messages[-2].content
    )


async def test_task_output_for_an_unknown_id_without_background_agents_points_at_task(
    tmp_path: Path,
) -> None:
    main = ScriptedModel([tool_call_response("TaskOutput", {"agent_id": "abc"}), "ok"])
    await runtime(tmp_path, main).run("go")
    (error,) = results(main.requests[-1])
    assert error.is_error and "no background subagent" in error.content
    assert "call Task" in error.content


async def test_a_subagent_allowed_to_delegate_gets_the_same_small_menu(tmp_path: Path) -> None:
    lead = AgentDefinition(
        name="lead", description="Leads.", system_prompt="You lead.", tools=["Read", "Task"]
    )
    child = ScriptedModel(["nothing to do"])
    main = ScriptedModel(
        [
            tool_call_response(
                "Task", {"description": "lead it", "prompt": "Lead.", "subagent_type": "lead"}
            ),
            "ok",
        ]
    )
    await runtime(tmp_path, main, lead, NOTES_READER, agent_models={"lead": child}).run("go")
    assert offered(child.requests[0]) == {"Read", "Task", "TaskBatch"}  # TaskBatch comes with Task


# -- the menu: AskHuman ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("with_store", "headless", "offered_ask"),
    [
        (False, "deny", False),  # no store: the run cannot pause, nobody could answer
        (True, "deny", True),  # durable: the run pauses, `subagents resume` answers
        (True, "pause", True),  # what `subagents run` uses with its store
        (True, "allow", False),  # `subagents run --yes`: nobody will be asked
    ],
)
async def test_ask_human_is_offered_only_when_someone_can_answer(
    tmp_path: Path, with_store: bool, headless: str, offered_ask: bool
) -> None:
    main = ScriptedModel(["hi"])
    if with_store:
        with open_store(tmp_path / "state.db") as store:
            await runtime(tmp_path, main, store=store, headless=headless).run("go")
    else:
        await runtime(tmp_path, main, headless=headless).run("go")
    assert ("AskHuman" in offered(main.requests[0])) is offered_ask


async def test_an_ask_human_call_where_nobody_can_answer_is_refused_not_paused(
    tmp_path: Path,
) -> None:
    main = ScriptedModel([tool_call_response("AskHuman", {"question": "Which port?"}), "8080"])
    with open_store(tmp_path / "state.db") as store:
        result = await runtime(tmp_path, main, store=store, headless="allow").run("go")
    assert result.status == "completed" and result.question is None
    (error,) = results(main.requests[-1])
    assert error.is_error and "AskHuman" in error.content


async def test_a_paused_question_is_still_answered_when_the_run_resumes(tmp_path: Path) -> None:
    main = ScriptedModel([tool_call_response("AskHuman", {"question": "Which port?"})])
    with open_store(tmp_path / "state.db") as store:
        paused = await runtime(tmp_path, main, store=store, headless="pause").run("go")
        assert paused.question is not None and paused.question.kind == "ask_human"
        again = ScriptedModel(["using the port"])
        decision = HumanDecision("approve", values={"answer": "8080"})
        done = await runtime(tmp_path, again, store=store, headless="pause").resume(
            paused.task_id or "", decision
        )
    assert done.status == "completed"
    (answer,) = results(again.requests[0])
    assert answer.content == "The person answered: 8080"


# -- compact description profile -------------------------------------------------------------------


async def test_the_compact_profile_shortens_descriptions_and_hides_optional_parameters(
    tmp_path: Path,
) -> None:
    full = ScriptedModel(["hi"])
    (tmp_path / "full").mkdir()
    (tmp_path / "compact").mkdir()
    await runtime(tmp_path / "full", full).run("go")
    compact = ScriptedModel(["hi"])
    settings = config(tmp_path / "compact", '[providers.test]\ntool_descriptions = "compact"\n')
    await runtime(tmp_path / "compact", compact, config=settings).run("go")

    full_specs, compact_specs = full.requests[0].tools, compact.requests[0].tools
    # the main agent lists no tools: the small menu leaves out what others do better
    kept = [s.name for s in full_specs if s.name not in LEFT_OUT_OF_SMALL_MENUS]
    assert [s.name for s in compact_specs] == kept
    assert {"MultiEdit", "LS", "TodoWrite", "TaskBatch"} <= offered(full.requests[0]) - set(kept)
    grep_full, grep_compact = (
        spec_named(full.requests[0], "Grep"),
        spec_named(compact.requests[0], "Grep"),
    )
    assert spec_bytes([grep_compact]) * 5 < spec_bytes([grep_full])
    assert grep_compact.description == (
        "Search file contents with a regular expression (Python `re` syntax, like ripgrep's)."
    )
    assert set(grep_compact.parameters["properties"]) == {"pattern"}
    assert grep_compact.parameters["required"] == ["pattern"]
    assert "title" not in json.dumps(grep_compact.parameters)
    task = spec_named(compact.requests[0], "Task")
    assert set(task.parameters["properties"]) == {"description", "prompt", "subagent_type"}
    assert "- notes-reader: Reads notes.txt and reports what it says." in task.description
    assert "Use it for any question" not in task.description
    for spec in compact_specs:
        assert len(spec.description.split("\n", 1)[0]) <= COMPACT_DESCRIPTION_LIMIT
    assert spec_bytes(compact_specs) * 2 < spec_bytes(full_specs)


async def test_the_small_menu_shows_every_tool_an_agent_file_lists_and_runs_the_others(
    tmp_path: Path,
) -> None:
    lister = AgentDefinition(
        name="lister",
        description="Lists folders.",
        system_prompt="You list folders.",
        tools=["LS", "TodoWrite", "Read"],
    )
    sub = ScriptedModel([tool_call_response("LS", {"path": "."}), "listed"])
    main = ScriptedModel(
        [
            tool_call_response("LS", {"path": "."}),  # not on its menu, still its tool
            tool_call_response(
                "Task", {"description": "list", "prompt": "list .", "subagent_type": "lister"}
            ),
            "done",
        ]
    )
    settings = config(tmp_path, '[providers.test]\ntool_descriptions = "compact"\n')
    result = await runtime(
        tmp_path, main, lister, config=settings, agent_models={"lister": sub}
    ).run("go")
    assert result.status == "completed"
    assert "LS" not in offered(main.requests[0])
    assert not results(main.requests[1])[0].is_error  # the LS call ran
    assert offered(sub.requests[0]) >= {"LS", "TodoWrite", "Read"}


async def test_a_hidden_optional_parameter_still_works_in_the_compact_profile(
    tmp_path: Path,
) -> None:
    (tmp_path / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    main = ScriptedModel(
        [tool_call_response("Read", {"file_path": "long.txt", "offset": 9, "limit": 1}), "ok"]
    )
    settings = config(tmp_path, '[providers.test]\ntool_descriptions = "compact"\n')
    await runtime(tmp_path, main, config=settings).run("go")
    assert "offset" not in spec_named(main.requests[0], "Read").parameters["properties"]
    (read,) = results(main.requests[-1])
    assert not read.is_error and "line 9" in read.content and "line 8" not in read.content


async def test_the_compact_profile_offers_run_in_background_when_the_prompt_asks_for_it(
    tmp_path: Path,
) -> None:
    """Shown it unasked, a 1.5B model set it (make eval: 3 runs of 12), answered before its
    subagent had and started it again; hidden, it could not start one when asked to."""
    main = ScriptedModel(
        [
            tool_call_response(
                "Task",
                {
                    "description": "read",
                    "prompt": "Read notes.txt.",
                    "subagent_type": "notes-reader",
                    "run_in_background": True,
                },
            ),
            "started",
            "ok",
        ]
    )
    child = ScriptedModel(["read it"])
    settings = config(tmp_path, '[providers.test]\ntool_descriptions = "compact"\n')
    ran = runtime(tmp_path, main, config=settings, agent_models={"notes-reader": child})
    await ran.run("Start the notes-reader in the Background, then wait for it.")
    task = spec_named(main.requests[0], "Task")
    assert "run_in_background" in task.parameters["properties"]
    assert "TaskOutput" in offered(main.requests[1])
    assert child.requests  # it ran, in the background


async def test_the_profile_follows_the_provider_of_each_sessions_model(tmp_path: Path) -> None:
    """Main on a compact provider, its subagent on a full one."""
    child = ScriptedModel(["read"], name="hosted:big")
    main = ScriptedModel(
        [
            tool_call_response(
                "Task", {"description": "read", "prompt": "Read.", "subagent_type": "notes-reader"}
            ),
            "ok",
        ],
        name="local:small",
    )
    settings = config(tmp_path, '[providers.local]\ntool_descriptions = "compact"\n')
    await runtime(tmp_path, main, config=settings, agent_models={"notes-reader": child}).run("go")
    main_read = spec_named(main.requests[0], "Read")
    child_read = spec_named(child.requests[0], "Read")
    assert "offset" not in main_read.parameters["properties"]
    assert "offset" in child_read.parameters["properties"]
    assert len(main_read.description) < len(child_read.description)


def test_a_bad_profile_name_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="tool_descriptions"):
        config(tmp_path, '[providers.ollama]\ntool_descriptions = "tiny"\n')


# -- first sentence (the compact description) ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Read a file. Returns lines.", "Read a file."),
        ("Use a glob, e.g. *.py. Then more.", "Use a glob, e.g. *.py."),
        ("One paragraph\nwrapped here.\n\nSecond paragraph.", "One paragraph wrapped here."),
        ("No full stop at all", "No full stop at all"),
        ("  ", ""),
        ("Version 1.5 is fine. Next.", "Version 1.5 is fine."),
    ],
)
def test_first_sentence(text: str, expected: str) -> None:
    assert first_sentence(text) == expected


def test_a_first_sentence_over_the_limit_is_cut_visibly() -> None:
    text = "word " * 100
    short = first_sentence(text, 50)
    assert len(short) <= 50 and short.endswith("...")


@given(st.text(max_size=600), st.integers(min_value=10, max_value=300))
def test_first_sentence_is_bounded_single_line_and_taken_from_the_text(
    text: str, limit: int
) -> None:
    short = first_sentence(text, limit)
    assert len(short) <= limit
    assert "\n" not in short
    words = short.removesuffix("...").split()
    assert " ".join(words) in " ".join(text.split())


def test_compact_schemas_keep_every_required_parameter_at_every_level(tmp_path: Path) -> None:
    from subagents.runtime.tool_menu import compact_spec
    from subagents.tools.builtin import builtin_tools

    def walk(full: dict[str, Any], compact: dict[str, Any]) -> None:
        assert "title" not in compact
        properties = full.get("properties", {})
        required = [name for name in full.get("required", []) if name in properties]
        if "properties" in full:
            assert list(compact["properties"]) == required
            assert compact["required"] == required
        for name in required:
            kept, original = compact["properties"][name], properties[name]
            assert kept.get("type") == original.get("type")
            assert kept.get("enum") == original.get("enum")
            if isinstance(original.get("items"), dict):
                walk(original["items"], kept["items"])

    for tool in builtin_tools(load_config(tmp_path).web):
        walk(tool.parameters, compact_spec(tool).parameters)
    todo = next(t for t in builtin_tools(load_config(tmp_path).web) if t.name == "TodoWrite")
    item = compact_spec(todo).parameters["properties"]["todos"]["items"]
    assert set(item["properties"]) == {"content", "status"}  # activeForm, id, priority hidden


async def test_a_stored_task_with_an_old_form_task_call_still_resumes(tmp_path: Path) -> None:
    """A task stored before subagent_type was required, paused with a Task call (resume, no
    subagent_type) still open: it resumes, and that call gets an error the model can fix."""
    old_form = {"description": "again", "prompt": "And now?", "resume": "some-agent-id"}
    first = ScriptedModel(
        [
            tool_calls_response(
                [("AskHuman", {"question": "Go on?"}), ("Task", old_form)], text="asking"
            )
        ]
    )
    with open_store(tmp_path / "state.db") as store:
        paused = await runtime(tmp_path, first, store=store, headless="pause").run("go")
        assert paused.status == "awaiting_human"
        again = ScriptedModel(["finished without it"])
        done = await runtime(tmp_path, again, store=store, headless="pause").resume(
            paused.task_id or "", HumanDecision("approve", values={"answer": "yes"})
        )
    assert done.status == "completed" and done.output == "finished without it"
    answer, task_error = results(again.requests[0])
    assert answer.content == "The person answered: yes"
    assert task_error.is_error and "`subagent_type` is missing" in task_error.content


_names = st.sampled_from(["a", "b", "title", "description", "required", "properties", "x-y"])
_leaf = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer", "boolean"])},
    optional={"title": st.text(max_size=5), "description": st.text(max_size=300)},
)
_schemas = st.recursive(
    _leaf,
    lambda inner: (
        st.builds(
            lambda props, required, title: {
                "type": "object",
                "title": title,
                "properties": props,
                "required": [name for name in required if name in props],
            },
            st.dictionaries(_names, inner, max_size=4),
            st.lists(_names, max_size=4),
            st.text(max_size=5),
        )
        | st.builds(lambda item: {"type": "array", "items": item}, inner)
    ),
    max_leaves=12,
)


@given(_schemas)
def test_compacting_any_schema_keeps_its_required_shape(schema: dict[str, Any]) -> None:
    from subagents.runtime.tool_menu import _required_only

    def check(full: dict[str, Any], compact: dict[str, Any]) -> None:
        assert "title" not in compact and compact.get("type") == full.get("type")
        if "description" in full:
            assert len(compact["description"]) <= COMPACT_DESCRIPTION_LIMIT
        if "properties" in full:
            assert list(compact["properties"]) == [
                name for name in full["properties"] if name in full["required"]
            ]
            for name, prop in compact["properties"].items():
                check(full["properties"][name], prop)
        if "items" in full:
            check(full["items"], compact["items"])

    before = json.dumps(schema, sort_keys=True)
    check(schema, _required_only(schema))
    assert json.dumps(schema, sort_keys=True) == before  # the tool's own schema is untouched


FULL_FOR_LLAMACPP = '[providers.llamacpp]\ntool_descriptions = "full"\n'
FULL_FOR_OPENAI = '[providers.openai]\ntool_descriptions = "full"\n'
REMOTE_OLLAMA = '[providers.ollama]\nbase_url = "https://gpu.example.com/v1"\n'
ON_THIS_MACHINE = "http://127.0.0.1:8080/v1"


@pytest.mark.parametrize(
    ("model_name", "config_text", "base_url_variable", "compact"),
    [
        ("llamacpp:/models/small.gguf", "", None, True),  # in-process small model: compact
        ("llamacpp:/m/small.gguf", FULL_FOR_LLAMACPP, None, False),
        ("ollama:qwen2.5:1.5b", "", None, True),  # a local server
        ("ollama:qwen2.5:1.5b", REMOTE_OLLAMA, None, False),
        ("openai:qwen", "", ON_THIS_MACHINE, True),  # OPENAI_BASE_URL, as users set it
        ("openai:gpt-5", "", None, False),  # the hosted API
        ("openai:gpt-5", "", "https://api.openai.com/v1", False),
        ("openai:qwen", FULL_FOR_OPENAI, ON_THIS_MACHINE, False),
    ],
)
async def test_the_default_profile_is_compact_for_local_servers_and_in_process_models(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    model_name: str,
    config_text: str,
    base_url_variable: str | None,
    compact: bool,
) -> None:
    if base_url_variable is not None:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url_variable)
    main = ScriptedModel(["hi"], name=model_name)
    await runtime(tmp_path, main, config=config(tmp_path, config_text)).run("go")
    read = spec_named(main.requests[0], "Read")
    assert ("offset" not in read.parameters["properties"]) is compact


async def test_the_issue_transcript_reaches_the_subagent_by_following_the_errors(
    tmp_path: Path,
) -> None:
    """Issue 10's 1.5B model: Task without subagent_type, then TaskCancel with the agent's type
    as its id. Each error says what to do; a model that follows it reaches the subagent."""
    (tmp_path / "notes.txt").write_text("The secret word is heliotrope.\n")
    reader = ScriptedModel(
        [tool_call_response("Read", {"file_path": "notes.txt"}), "The secret word is heliotrope."]
    )

    def small_model(request: ModelRequest) -> ModelResponse:
        done = results(request)
        if not done:
            return tool_call_response(
                "Task", {"description": "find the secret word", "prompt": "Find the secret word."}
            )
        last = done[-1].content
        if "`subagent_type` is missing" in last:
            return tool_call_response("TaskCancel", {"agent_id": "notes-reader"})
        hint = re.search(r'call Task with subagent_type="([^"]+)"', last)
        if hint is not None:
            return tool_call_response(
                "Task",
                {
                    "description": "find the secret word",
                    "prompt": "Read notes.txt and tell me the secret word.",
                    "subagent_type": hint.group(1),
                },
            )
        return text_response(last.split("\n", 1)[0])

    main = FunctionModel(small_model)
    rt = runtime(tmp_path, main, agent_models={"notes-reader": reader})
    result = await rt.run(
        "Use the notes-reader subagent to find the secret word in notes.txt, then tell me the word."
    )
    assert result.status == "completed" and result.output == "The secret word is heliotrope."
    assert result.turns == 4
    for request in main.requests:  # never offered: no background agent was ever started
        assert not offered(request) & {"TaskOutput", "TaskCancel"}
