"""Spans reach a real OTLP receiver on 127.0.0.1 while the run goes (HTTP and gRPC, through the
official exporters): one trace per task, a subagent under the Task call that started it, the
provider's own words for finish reasons, response ids and models, MCP attributes on MCP tools,
content only when asked for and redacted, attribute names as the conventions publish them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fakes.openai_server import FakeOpenAIServer
from fakes.otlp_receiver import ReceivedSpan, grpc_receiver, http_receiver
from mcp_servers.harness import stdio_calc
from paths import REPO
from subagents.cli.app import app
from subagents.messages import ToolCall
from subagents.models.base import ModelRequest, ModelResponse
from subagents.models.openai import OpenAIChatModel
from subagents.redaction import Redactor
from subagents.runtime.events import EventBus
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel
from subagents.tracing.otlp import start_live_export

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`

SECRET = "sk-ant-api03-" + "Q" * 90  # an Anthropic key's shape: redacted wherever it shows
CLIENT, INTERNAL = 3, 1  # SpanKind in OTLP
EXAMPLE_WORKFLOWS = REPO / "examples" / "workflow-project"


def _convention_names() -> set[str]:
    """Every attribute name the semantic conventions publish for GenAI, MCP and errors."""
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes, mcp_attributes
    from opentelemetry.semconv.attributes import error_attributes

    return {
        value
        for module in (gen_ai_attributes, mcp_attributes, error_attributes)
        for name, value in vars(module).items()
        if name.isupper() and isinstance(value, str)
    }


def _standard_keys(spans: list[ReceivedSpan]) -> set[str]:
    return {
        key
        for span in spans
        for key in span.attributes
        if key.startswith(("gen_ai.", "mcp.", "error."))
    }


@pytest.fixture(autouse=True)
def quick_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "20")  # ms: spans leave as soon as they end


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def _helper(root: Path) -> None:
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "helper.md").write_text(
        "---\nname: helper\ndescription: Reads notes.\ntools: Read\n---\nRead what you are told.\n"
    )


async def test_spans_arrive_during_the_run_nested_and_in_the_providers_words(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    _helper(tmp_path)
    (tmp_path / "notes.txt").write_text("the notes\n")
    server.reply_tool_calls([("call_read", "Read", '{"file_path": "notes.txt"}')])
    server.reply_text("I read them.")
    arrived_during_run: list[bool] = []

    with http_receiver() as receiver:

        async def main(request: ModelRequest) -> ModelResponse:
            if len(request.messages) == 1:
                task = {
                    "description": "read",
                    "prompt": "read notes.txt",
                    "subagent_type": "helper",
                }
                return ModelResponse(
                    tool_calls=(ToolCall("call_task", "Task", task),), stop_reason="tool_use"
                )
            # the subagent's spans (and the Task call's) must be at the receiver by now
            arrived = await asyncio.to_thread(receiver.wait_for, 6)
            arrived_during_run.append(arrived)
            return ModelResponse(text="done")

        helper = OpenAIChatModel("gpt-test", base_url=server.base_url, api_key="k", max_retries=0)
        events = EventBus()
        environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        live = start_live_export(events, redactor=Redactor(), environ=environ)
        assert live is not None
        runtime = Runtime(
            cwd=tmp_path,
            model=FunctionModel(main, name="scripted:main"),
            agent_models={"helper": helper},
            permission_mode="bypassPermissions",
            events=events,
            mcp_servers={},
        )
        try:
            result = await runtime.run("read the notes with the helper")
        finally:
            await runtime.aclose()
            await helper.aclose()
            assert live.close() is None  # nothing lost
        assert result.status == "completed", result.error
        assert receiver.wait_for(8)
        spans = receiver.spans

    assert arrived_during_run == [True]
    assert len({span.trace_id for span in spans}) == 1  # one trace per task
    assert {span.service for span in spans} == {"subagents"}
    by_name = {span.name: span for span in spans}
    main_agent, child = by_name["invoke_agent main"], by_name["invoke_agent helper"]
    task_call = by_name["execute_tool Task"]
    assert main_agent.parent_span_id == ""
    assert task_call.parent_span_id == main_agent.span_id
    assert child.parent_span_id == task_call.span_id  # the subagent under its Task call
    read = by_name["execute_tool Read"]
    assert read.parent_span_id == child.span_id and read.kind == INTERNAL
    assert read.attributes["gen_ai.tool.call.id"] == "call_read"
    assert "gen_ai.tool.call.arguments" not in read.attributes  # content is opt-in
    helper_chats = [s for s in spans if s.name == "chat gpt-test"]
    assert [s.attributes["gen_ai.response.finish_reasons"] for s in helper_chats] == [
        ["tool_calls"],  # OpenAI's words, not ours ("tool_use")
        ["stop"],
    ]
    for chat in helper_chats:
        assert chat.kind == CLIENT and chat.parent_span_id == child.span_id
        assert chat.attributes["gen_ai.response.id"] == "chatcmpl-1"
        assert chat.attributes["gen_ai.response.model"] == "gpt-test"
        assert chat.attributes["gen_ai.provider.name"] == "openai"
        assert chat.attributes["gen_ai.usage.input_tokens"] == 11
    assert child.attributes["gen_ai.agent.name"] == "helper"
    assert _standard_keys(spans) <= _convention_names()


async def test_grpc_export_with_content_redacted_and_mcp_attributes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "secret.txt").write_text(f"key={SECRET}\n")
    calls = iter(
        [
            (ToolCall("call_read", "Read", {"file_path": "secret.txt"}),),
            (ToolCall("call_add", "mcp__calc__add", {"a": 2, "b": 3}),),
        ]
    )

    async def respond(request: ModelRequest) -> ModelResponse:
        step = next(calls, None)
        if step is None:
            return ModelResponse(text="done")
        return ModelResponse(tool_calls=step, stop_reason="tool_use")

    with grpc_receiver() as receiver:
        environ = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
        }
        events = EventBus()
        live = start_live_export(events, redactor=Redactor([SECRET]), environ=environ)
        assert live is not None
        runtime = Runtime(
            cwd=tmp_path,
            model=FunctionModel(respond, name="scripted:main"),
            permission_mode="bypassPermissions",
            events=events,
            mcp_servers={"calc": stdio_calc()},
        )
        try:
            result = await runtime.run("read it, then add")
        finally:
            await runtime.aclose()
            assert live.close() is None
        assert result.status == "completed", result.error
        assert receiver.wait_for(6)
        spans = receiver.spans

    by_name = {span.name: span for span in spans}
    read, add = by_name["execute_tool Read"], by_name["execute_tool mcp__calc__add"]
    assert "[REDACTED]" in read.attributes["gen_ai.tool.call.result"]
    assert all(SECRET not in str(span.attributes) for span in spans)
    assert add.attributes["mcp.method.name"] == "tools/call"
    assert add.attributes["gen_ai.tool.call.result"] == "5"
    assert "mcp.method.name" not in read.attributes
    # a scripted model gives no finish reason of its own: ours stands in
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert chats[-1].attributes["gen_ai.response.finish_reasons"] == ["end_turn"]
    assert _standard_keys(spans) <= _convention_names()


def test_trace_otel_sends_a_stored_task_and_says_when_nothing_got_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def respond(request: ModelRequest) -> ModelResponse:
        if len(request.messages) == 1:
            call = ToolCall("call_ls", "LS", {"path": "."})
            return ModelResponse(tool_calls=(call,), stop_reason="tool_use")
        return ModelResponse(text="listed")

    (tmp_path / ".git").mkdir()
    with open_store(tmp_path / "state.db") as store:
        runtime = Runtime(
            cwd=tmp_path,
            model=FunctionModel(respond, name="scripted:main"),
            store=store,
            mcp_servers={},
        )
        result = runtime.run_sync("list")
    store_arg = ["--store", str(tmp_path / "state.db"), "--cwd", str(tmp_path)]
    with http_receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        sent = CliRunner().invoke(app, ["trace", str(result.task_id), "--otel", *store_arg])
        assert sent.exit_code == 0, sent.output
        assert receiver.wait_for(4)
    assert f"sent {len(receiver.spans)} spans of task {result.task_id}" in sent.stdout
    assert {span.name for span in receiver.spans} == {
        "invoke_agent main",
        "chat main",
        "execute_tool LS",
    }
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")  # nobody there
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")
    lost = CliRunner().invoke(app, ["trace", str(result.task_id), "--otel", *store_arg])
    assert lost.exit_code == 1
    assert "did not reach the OpenTelemetry collector at http://127.0.0.1:9" in lost.stderr


def test_run_otel_from_the_command_line(
    tmp_path: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    config = root / ".subagents" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        f'[providers.openai]\nbase_url = "{server.base_url}"\nmax_retries = 0\n'
        'tool_calls = "auto"\n'
    )
    server.reply_text("hello there")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    with http_receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        ran = CliRunner().invoke(
            app,
            [
                "run",
                "hi",
                "--cwd",
                str(root),
                "--model",
                "openai:gpt-test",
                "--no-store",
                "--otel",
                "--json",
            ],
        )
        assert ran.exit_code == 0, ran.output
        assert receiver.wait_for(2)
    chat = receiver.named("chat gpt-test")[0]
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert receiver.named("invoke_agent main")


async def test_a_workflows_nodes_and_their_agents_are_one_trace(tmp_path: Path) -> None:
    import shutil

    from scenarios import workflow_agents
    from subagents.workflows.files import load_workflow_file

    project = tmp_path / "project"
    shutil.copytree(EXAMPLE_WORKFLOWS, project)
    workflow = load_workflow_file(project / ".subagents" / "workflows" / "draft-critique.yaml")
    with http_receiver() as receiver:
        events = EventBus()
        environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        live = start_live_export(events, redactor=Redactor(), environ=environ)
        assert live is not None
        runtime = Runtime(
            cwd=project,
            agent_models=workflow_agents.models(),
            permission_mode="bypassPermissions",
            events=events,
            mcp_servers={},
        )
        try:
            result = await runtime.run_workflow(workflow, "a topic")
        finally:
            await runtime.aclose()
            assert live.close() is None
        assert result.status == "completed", result.error
        spans = receiver.spans  # close() flushed them: the receiver answered each export
    assert len({span.trace_id for span in spans}) == 1  # the workflow is one trace
    by_id = {span.span_id: span for span in spans}
    (root,) = [span for span in spans if span.parent_span_id == ""]
    assert root.name == "workflow draft-critique"
    nodes = [span for span in spans if span.name.startswith("workflow_node ")]
    assert nodes and all(node.parent_span_id == root.span_id for node in nodes)
    agents = [span for span in spans if span.name.startswith("invoke_agent ")]
    assert agents and all(by_id[a.parent_span_id].name.startswith("workflow_node ") for a in agents)
    assert by_id[agents[0].parent_span_id].attributes["subagents.workflow.name"] == "draft-critique"
