"""The catalogue of the built-in tools (subagents/tools/builtin/catalogue.py) says exactly what
the tools themselves say: their description, JSON Schema, flags and timeouts. builtin_tools()
shows a model the catalogue's and loads a tool's module only when the tool is used.

After changing a built-in tool, regenerate the catalogue:

    PYTHONPATH=src python tests/tools/test_builtin_tool_catalogue.py
"""

from __future__ import annotations

import dataclasses
import json
import pprint
import subprocess
import sys
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest

from paths import REPO
from subagents.tools.base import Tool, ToolContext, ToolRegistry
from subagents.tools.builtin import builtin_tools
from subagents.tools.deferred import DeferredTool
from subagents.tools.execution import execute_tool_call
from subagents.tools.web.settings import WebSettings

CATALOGUE = REPO / "src/subagents/tools/builtin/catalogue.py"

# name -> (module, attribute, made from the [web] settings)
SOURCES: dict[str, tuple[str, str, bool]] = {
    "Read": ("subagents.tools.builtin.read", "read_tool", False),
    "Write": ("subagents.tools.builtin.write", "write_tool", False),
    "Edit": ("subagents.tools.builtin.edit", "edit_tool", False),
    "Glob": ("subagents.tools.builtin.glob", "glob_tool", False),
    "Grep": ("subagents.tools.builtin.grep", "grep_tool", False),
    "LS": ("subagents.tools.builtin.ls", "ls_tool", False),
    "Bash": ("subagents.tools.builtin.bash", "bash_tool", False),
    "MultiEdit": ("subagents.tools.builtin.multiedit", "multi_edit_tool", False),
    "TodoWrite": ("subagents.tools.builtin.todowrite", "todo_write_tool", False),
    "WebFetch": ("subagents.tools.builtin.webfetch", "webfetch_tool", True),
    "WebSearch": ("subagents.tools.builtin.websearch", "websearch_tool", True),
}
# what the catalogue gives each tool besides its function and input model
SHOWN = (
    "name",
    "description",
    "parameters",
    "takes_context",
    "output_schema",
    "timeout_seconds",
    "fallback_tools",
    "read_only",
    "idempotent",
    "needs_approval",
    "writes_paths",
    "mcp_server",
    "compact_description",
)
CUSTOM_WEB = WebSettings(timeout=7.5)


def real_tool(name: str, web: WebSettings | None = None) -> Tool:
    module, attribute, from_settings = SOURCES[name]
    made = getattr(import_module(module), attribute)
    tool: Tool = made(web) if from_settings else made
    return tool


def shown(tool: Tool) -> dict[str, Any]:
    return {name: getattr(tool, name) for name in SHOWN}


def catalogue_entries() -> list[dict[str, Any]]:
    """The catalogue as it should be, from the tools themselves."""
    entries = []
    default_timeout = WebSettings().timeout
    for name, (module, attribute, from_settings) in SOURCES.items():
        tool = real_tool(name)
        entry = {key: value for key, value in shown(tool).items() if key != "timeout_seconds"}
        assert (tool.output_schema, tool.mcp_server, tool.compact_description) == (None,) * 3
        for key in ("output_schema", "mcp_server", "compact_description"):
            del entry[key]
        entry.update(module=module, attribute=attribute, from_web_settings=from_settings)
        if from_settings:  # the [web] timeout plus this many seconds
            assert tool.timeout_seconds is not None
            entry["timeout_after_web_timeout"] = tool.timeout_seconds - default_timeout
        else:
            entry["timeout_seconds"] = tool.timeout_seconds
        entries.append(entry)
    return entries


def render_catalogue() -> str:
    body = pprint.pformat(catalogue_entries(), indent=4, width=100, sort_dicts=False)
    return (
        '"""What the built-in tools show a model and the permission layer, without importing\n'
        "them (see subagents.tools.deferred). Generated from the tools by\n"
        "tests/tools/test_builtin_tool_catalogue.py, which checks it is current: do not edit.\n"
        '"""\n\n'
        "from typing import Any\n\n"
        '__all__ = ["BUILTIN_TOOLS"]\n\n'
        f"BUILTIN_TOOLS: list[dict[str, Any]] = {body}\n"
    )


def test_the_catalogue_is_what_the_tools_say() -> None:
    from subagents.tools.builtin.catalogue import BUILTIN_TOOLS

    assert catalogue_entries() == BUILTIN_TOOLS, (
        "regenerate it: PYTHONPATH=src python tests/tools/test_builtin_tool_catalogue.py"
    )


@pytest.mark.parametrize("web", [None, CUSTOM_WEB], ids=["default-web", "custom-web"])
def test_each_builtin_tool_shows_what_the_real_one_does(web: WebSettings | None) -> None:
    tools = builtin_tools(web)
    assert [tool.name for tool in tools] == list(SOURCES)
    for tool in tools:
        assert isinstance(tool, DeferredTool) and not tool.loaded
        real = real_tool(tool.name, web)
        assert shown(tool) == shown(real)
        assert tool.spec == real.spec
        loaded = [tool.loaded]  # none of that needed the tool's module
        input_model = tool.input_model
        loaded.append(tool.loaded)
        assert loaded == [False, True]
        assert input_model is not None and real.input_model is not None
        assert input_model.model_json_schema() == real.input_model.model_json_schema()


def test_the_precomputed_schemas_equal_the_generated_ones() -> None:
    from subagents.tools.schema import input_schema

    for tool in builtin_tools():
        assert tool.input_model is not None
        generated = input_schema(tool.input_model)
        # in the same order too: the request a provider gets is byte for byte the same
        assert json.dumps(tool.parameters) == json.dumps(generated), tool.name


def test_a_loaded_tool_is_the_module_s_tool() -> None:
    from subagents.tools.builtin.read import read_tool

    read = builtin_tools()[0]
    assert read.function is read_tool.function and read.input_model is read_tool.input_model
    assert dataclasses.replace(read, description="x").function is read_tool.function
    assert read == dataclasses.replace(read_tool)


async def test_a_deferred_tool_validates_and_runs_as_the_real_one(tmp_path: Path) -> None:
    from subagents.messages import ToolCall

    (tmp_path / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
    ctx = ToolContext(workspace=tmp_path)
    for arguments in ({"file_path": "notes.txt", "limit": 1}, {"file_path": 3}, {"path": "x"}):
        outcomes = []
        for tool in (builtin_tools()[0], real_tool("Read")):
            call = ToolCall(id="c1", name="Read", arguments=arguments)
            outcome = await execute_tool_call(call, ToolRegistry([tool]), ctx)
            outcomes.append((outcome.status, outcome.message.content))
        assert outcomes[0] == outcomes[1]


def test_building_the_builtin_tools_imports_none_of_them() -> None:
    code = (
        "import json, sys\n"
        "from subagents.tools.builtin import builtin_tools\n"
        "tools = builtin_tools()\n"
        "[tool.spec for tool in tools]\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    modules = set(json.loads(done.stdout))
    tool_modules = {f"subagents.tools.builtin.{m}" for m in ("read", "grep", "bash", "webfetch")}
    assert tool_modules.isdisjoint(modules)
    assert "subagents.tools.decorator" not in modules


if __name__ == "__main__":
    CATALOGUE.write_text(render_catalogue(), encoding="utf-8")
    subprocess.run([sys.executable, "-m", "ruff", "format", str(CATALOGUE)], check=True)
    print(f"wrote {CATALOGUE}")
