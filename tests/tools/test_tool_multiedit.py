"""MultiEdit on real files: edits in order, all or none, with Edit's rules and permissions."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subagents.messages import ToolCall
from subagents.tools.base import ToolContext, ToolRegistry
from subagents.tools.builtin import builtin_tools
from subagents.tools.builtin.multiedit import MAX_EDITS
from subagents.tools.execution import ToolOutcome, execute_tool_call
from subagents.tools.permissions import ApprovalDecision, ApprovalRequest, PermissionPolicy
from subagents.tools.protected import ProtectedPaths

_REGISTRY = ToolRegistry(builtin_tools())


async def multi_edit(
    workspace: Path, file_path: str, edits: list[dict[str, Any]], **options: Any
) -> ToolOutcome:
    call = ToolCall("call-1", "MultiEdit", {"file_path": file_path, "edits": edits})
    return await execute_tool_call(call, _REGISTRY, ToolContext(workspace=workspace), **options)


def edit(old: str, new: str, *, replace_all: bool = False) -> dict[str, Any]:
    return {"old_string": old, "new_string": new, "replace_all": replace_all}


async def test_edits_apply_in_order_each_on_the_previous_result(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f():\n    return 1\n")
    outcome = await multi_edit(
        tmp_path,
        "m.py",
        [edit("return 1", "return 2"), edit("return 2", "return 3"), edit("def f", "def g")],
    )
    assert outcome.status == "ok", outcome.message.content
    assert outcome.message.content == "Edited m.py: applied 3 edits, replaced 3 occurrences."
    assert (tmp_path / "m.py").read_text() == "def g():\n    return 3\n"


async def test_replace_all_counts_every_occurrence(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("a = 1\nb = 1\nc = 1\n")
    outcome = await multi_edit(
        tmp_path, "m.py", [edit("= 1", "= 2", replace_all=True), edit("c = 2", "c = 9")]
    )
    assert outcome.message.content == "Edited m.py: applied 2 edits, replaced 4 occurrences."
    assert (tmp_path / "m.py").read_text() == "a = 2\nb = 2\nc = 9\n"


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        ([edit("x = 1", "x = 2"), edit("missing", "y")], "Edit 2 of 2 failed: old_string was not"),
        ([edit("x = 1", "x = 2"), edit("= 2", "= 3")], "Edit 2 of 2 failed: old_string occurs 2"),
        ([edit("x", "x")], "Edit 1 of 1 failed: old_string and new_string are the same"),
        ([edit("x = 1", "x = 2"), edit("", "z")], "Edit 2 of 2 failed: old_string is empty"),
    ],
)
async def test_one_failing_edit_leaves_the_file_untouched(
    tmp_path: Path, edits: list[dict[str, Any]], expected: str
) -> None:
    original = "x = 1\ny = 2\n"
    (tmp_path / "m.py").write_text(original)
    outcome = await multi_edit(tmp_path, "m.py", edits)
    assert outcome.status == "error"
    assert outcome.message.content.startswith(expected), outcome.message.content
    assert "No edit was applied; m.py is unchanged." in outcome.message.content
    assert (tmp_path / "m.py").read_text() == original


async def test_a_new_file_is_created_from_an_empty_first_old_string(tmp_path: Path) -> None:
    outcome = await multi_edit(
        tmp_path, "pkg/new.py", [edit("", "VALUE = 1\nOTHER = 1\n"), edit("OTHER = 1", "OTHER = 2")]
    )
    assert outcome.status == "ok", outcome.message.content
    assert outcome.message.content == "Created pkg/new.py and applied 2 edits."
    assert (tmp_path / "pkg" / "new.py").read_text() == "VALUE = 1\nOTHER = 2\n"


async def test_a_failed_creation_writes_nothing(tmp_path: Path) -> None:
    outcome = await multi_edit(tmp_path, "new.py", [edit("", "a\n"), edit("b", "c")])
    assert outcome.status == "error"
    assert "Edit 2 of 2 failed" in outcome.message.content
    assert "new.py was not created" in outcome.message.content
    assert not (tmp_path / "new.py").exists()


async def test_bad_arguments_and_paths_are_tool_errors(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    (tmp_path / "b.bin").write_bytes(b"\0\0")
    (tmp_path / "latin.txt").write_bytes("café".encode("latin-1"))
    cases: list[tuple[str, list[dict[str, Any]], str]] = [
        ("m.py", [], "edits"),
        ("missing.py", [edit("a", "b")], "does not exist"),
        ("b.bin", [edit("a", "b")], "binary file"),
        ("latin.txt", [edit("caf", "tea")], "MultiEdit only changes UTF-8 files"),
        ("../outside.py", [edit("", "x")], "outside the workspace"),
        ("m.py", [{"old_string": "x", "new_string": "y", "bogus": 1}], "bogus"),
        ("m.py", [edit("x", "y")] * (MAX_EDITS + 1), f"limit of {MAX_EDITS}"),
    ]
    for file_path, edits, expected in cases:
        outcome = await multi_edit(tmp_path, file_path, edits)
        assert outcome.status == "error", (file_path, outcome.message.content)
        assert expected in outcome.message.content, outcome.message.content
    assert (tmp_path / "m.py").read_text() == "x = 1\n"
    assert not (tmp_path.parent / "outside.py").exists()


async def test_crlf_line_endings_are_kept(tmp_path: Path) -> None:
    (tmp_path / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    outcome = await multi_edit(tmp_path, "dos.txt", [edit("one", "1"), edit("two", "2")])
    assert outcome.status == "ok"
    assert (tmp_path / "dos.txt").read_bytes() == b"1\r\n2\r\n"


class Recording:
    def __init__(self, approved: bool) -> None:
        self.approved = approved
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return ApprovalDecision(approved=self.approved, reason=None if self.approved else "no")


async def test_permissions_treat_multiedit_like_edit(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    asked = Recording(approved=False)
    default = PermissionPolicy("default", approver=asked)
    refused = await multi_edit(tmp_path, "m.py", [edit("1", "2")], permissions=default)
    assert refused.status == "denied"
    assert [r.tool_name for r in asked.requests] == ["MultiEdit"]

    accepting = PermissionPolicy("acceptEdits", approver=Recording(approved=False))
    done = await multi_edit(tmp_path, "m.py", [edit("1", "2")], permissions=accepting)
    assert done.status == "ok" and (tmp_path / "m.py").read_text() == "x = 2\n"

    plan = PermissionPolicy("plan")
    planned = await multi_edit(tmp_path, "m.py", [edit("2", "3")], permissions=plan)
    assert planned.status == "denied" and "plan mode is read-only" in planned.message.content
    assert (tmp_path / "m.py").read_text() == "x = 2\n"


async def test_protected_paths_are_refused_even_in_accept_edits(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {}}')
    policy = PermissionPolicy(
        "acceptEdits", headless="allow", protected=ProtectedPaths.for_workspace(tmp_path)
    )
    outcome = await multi_edit(tmp_path, ".mcp.json", [edit("{}", '{"x": 1}')], permissions=policy)
    assert outcome.status == "denied"
    assert ".mcp.json is protected" in outcome.message.content
    assert (tmp_path / ".mcp.json").read_text() == '{"mcpServers": {}}'


# --- all or none, for any edits -----------------------------------------------------------------

_TEXT = st.text(alphabet="ab\n", max_size=30)
_EDITS = st.lists(
    st.fixed_dictionaries(
        {"old_string": st.text(alphabet="ab\n", max_size=4), "new_string": _TEXT},
        optional={"replace_all": st.booleans()},
    ),
    min_size=1,
    max_size=5,
)


def _expected(text: str, edits: list[dict[str, Any]]) -> str | None:
    """What the file should hold after the edits, or None when one of them must fail."""
    for item in edits:
        old, new = item["old_string"], item["new_string"]
        count = text.count(old) if old else 0
        if old == new or not old or count == 0 or (count > 1 and not item.get("replace_all")):
            return None
        text = text.replace(old, new)
    return text


@pytest.mark.slow
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(original=_TEXT, edits=_EDITS)
def test_all_edits_or_none(tmp_path: Path, original: str, edits: list[dict[str, Any]]) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(original.encode())
    outcome = asyncio.run(multi_edit(tmp_path, "f.txt", edits))
    expected = _expected(original, edits)
    written = target.read_bytes().decode()
    if expected is None:
        assert outcome.status == "error"
        assert written == original
    else:
        assert outcome.status == "ok", outcome.message.content
        assert written == expected


# --- an agent file that names MultiEdit and TodoWrite, end to end ---------------------------------


async def test_an_agent_file_naming_multiedit_and_todowrite_gets_and_uses_them(
    tmp_path: Path,
) -> None:
    from subagents.messages import ToolResultMessage
    from subagents.models.base import ModelRequest, ModelResponse
    from subagents.runtime.runtime import Runtime
    from subagents.testing import FunctionModel, text_response, tool_call_response

    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "bulk-editor.md").write_text(
        "---\nname: bulk-editor\ndescription: Renames things across a file.\n"
        "tools: Read, MultiEdit, TodoWrite\n---\nYou rename.\n"
    )
    (tmp_path / "m.py").write_text("old_name = 1\nprint(old_name)\n")
    plan: list[tuple[str, dict[str, Any]]] = [
        ("TodoWrite", {"todos": [{"content": "Rename", "status": "in_progress"}]}),
        (
            "MultiEdit",
            {
                "file_path": "m.py",
                "edits": [edit("old_name", "new_name", replace_all=True), edit("1", "2")],
            },
        ),
    ]

    def editor(request: ModelRequest) -> ModelResponse:
        done = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        assert not any(m.is_error for m in done), [m.content for m in done]
        if len(done) < len(plan):
            return tool_call_response(*plan[len(done)])
        return text_response("renamed")

    def main(request: ModelRequest) -> ModelResponse:
        if any(isinstance(m, ToolResultMessage) for m in request.messages):
            return text_response("main done")
        arguments = {"description": "rename", "prompt": "rename", "subagent_type": "bulk-editor"}
        return tool_call_response("Task", arguments)

    runtime = Runtime(
        cwd=tmp_path,
        model=FunctionModel(main, name="scripted:main"),
        agent_models={"bulk-editor": FunctionModel(editor, name="scripted:editor")},
        permission_mode="acceptEdits",
    )
    record = runtime.inventory.records["bulk-editor"]
    assert record.status == "active"
    assert record.effective_tools == ["Read", "MultiEdit", "TodoWrite"]
    assert not [w for w in record.definition.warnings if "MultiEdit" in w or "TodoWrite" in w]
    result = await runtime.run("rename old_name")
    assert result.status == "completed", result.error
    assert (tmp_path / "m.py").read_text() == "new_name = 2\nprint(new_name)\n"


@pytest.mark.slow
async def test_edits_that_would_blow_the_text_up_are_refused(tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("a" * 1000)
    doubling = [edit("a", "aa", replace_all=True)] * 20  # 1000 * 2**20 characters
    outcome = await multi_edit(tmp_path, "m.txt", doubling)
    assert outcome.status == "error"
    assert outcome.message.content.startswith("Edit 17 of 20 failed: this replacement would")
    assert "more than the limit" in outcome.message.content
    assert (tmp_path / "m.txt").read_text() == "a" * 1000
