"""Permission modes and the approver: approve, deny, modify, headless."""

from __future__ import annotations

from pathlib import Path

import pytest

from subagents.errors import ConfigError
from subagents.messages import ToolCall
from subagents.tools.base import ToolContext, ToolRegistry
from subagents.tools.builtin import builtin_tools
from subagents.tools.execution import ToolOutcome, execute_tool_call
from subagents.tools.permissions import (
    ApprovalDecision,
    ApprovalRequest,
    PermissionMode,
    PermissionPolicy,
)


class RecordingApprover:
    """Answers every request with ``decision`` and keeps the requests it saw."""

    def __init__(self, decision: ApprovalDecision) -> None:
        self.decision = decision
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return self.decision


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    (tmp_path / "notes.txt").write_text("hello\n")
    return ToolContext(workspace=tmp_path, agent_id="agent-7", agent_type="reviewer")


async def call(
    ctx: ToolContext, policy: PermissionPolicy, name: str, **arguments: object
) -> ToolOutcome:
    registry = ToolRegistry(builtin_tools())
    return await execute_tool_call(
        ToolCall("call-9", name, dict(arguments)), registry, ctx, permissions=policy
    )


async def test_bypass_runs_everything_without_asking(ctx: ToolContext) -> None:
    approver = RecordingApprover(ApprovalDecision(approved=False))
    policy = PermissionPolicy("bypassPermissions", approver=approver)
    outcome = await call(ctx, policy, "Bash", command="echo ran")
    assert outcome.status == "ok" and outcome.message.content == "ran\n"
    assert approver.requests == []


async def test_plan_mode_allows_only_read_only_tools(ctx: ToolContext) -> None:
    approver = RecordingApprover(ApprovalDecision(approved=True))
    policy = PermissionPolicy("plan", approver=approver)
    read = await call(ctx, policy, "Read", file_path="notes.txt")
    write = await call(ctx, policy, "Write", file_path="x.txt", content="x")
    assert read.status == "ok"
    assert write.status == "denied" and write.message.is_error
    assert "plan mode is read-only" in write.message.content
    assert not (ctx.workspace / "x.txt").exists()
    assert approver.requests == []


async def test_accept_edits_approves_edits_and_asks_for_the_rest(ctx: ToolContext) -> None:
    approver = RecordingApprover(ApprovalDecision(approved=False, reason="not today"))
    policy = PermissionPolicy("acceptEdits", approver=approver)
    edit = await call(
        ctx, policy, "Edit", file_path="notes.txt", old_string="hello", new_string="bye"
    )
    bash = await call(ctx, policy, "Bash", command="echo no")
    assert edit.status == "ok"
    assert (ctx.workspace / "notes.txt").read_text() == "bye\n"
    assert bash.status == "denied"
    assert bash.message.content == "Permission denied: not today"
    assert [r.tool_name for r in approver.requests] == ["Bash"]


async def test_default_mode_asks_with_the_full_request(ctx: ToolContext) -> None:
    approver = RecordingApprover(ApprovalDecision(approved=True))
    policy = PermissionPolicy(approver=approver)
    read = await call(ctx, policy, "Read", file_path="notes.txt")
    write = await call(ctx, policy, "Write", file_path="new.txt", content="hi")
    assert read.status == write.status == "ok"
    assert approver.requests == [
        ApprovalRequest(
            tool_name="Write",
            arguments={"file_path": "new.txt", "content": "hi"},
            agent_id="agent-7",
            agent_type="reviewer",
            tool_call_id="call-9",
        )
    ]


async def test_denial_without_reason_still_tells_the_model_what_to_do(ctx: ToolContext) -> None:
    policy = PermissionPolicy(approver=RecordingApprover(ApprovalDecision(approved=False)))
    outcome = await call(ctx, policy, "Write", file_path="a.txt", content="x")
    assert outcome.status == "denied"
    assert "the user denied this call of Write" in outcome.message.content
    assert not (ctx.workspace / "a.txt").exists()


async def test_approver_can_modify_the_arguments(ctx: ToolContext) -> None:
    modified = {"file_path": "safe.txt", "content": "reviewed"}
    policy = PermissionPolicy(
        approver=RecordingApprover(ApprovalDecision(approved=True, arguments=modified))
    )
    outcome = await call(ctx, policy, "Write", file_path="danger.txt", content="raw")
    assert outcome.status == "ok"
    assert (ctx.workspace / "safe.txt").read_text() == "reviewed"
    assert not (ctx.workspace / "danger.txt").exists()


async def test_modified_arguments_are_validated(ctx: ToolContext) -> None:
    policy = PermissionPolicy(
        approver=RecordingApprover(ApprovalDecision(approved=True, arguments={"file_path": 3}))
    )
    outcome = await call(ctx, policy, "Write", file_path="a.txt", content="x")
    assert outcome.status == "error"
    assert "(as modified by the approver)" in outcome.message.content
    assert "- content: required, but missing" in outcome.message.content


async def test_headless_deny_names_the_settings(ctx: ToolContext) -> None:
    outcome = await call(ctx, PermissionPolicy(), "Bash", command="echo hi")
    assert outcome.status == "denied"
    assert "--permission-mode" in outcome.message.content
    assert "headless" in outcome.message.content


async def test_headless_allow_runs(ctx: ToolContext) -> None:
    outcome = await call(ctx, PermissionPolicy(headless="allow"), "Bash", command="echo hi")
    assert outcome.status == "ok" and outcome.message.content == "hi\n"


async def test_failing_approver_means_denied(ctx: ToolContext) -> None:
    async def broken(request: ApprovalRequest) -> ApprovalDecision:
        raise RuntimeError("terminal closed")

    outcome = await call(ctx, PermissionPolicy(approver=broken), "Bash", command="echo hi")
    assert outcome.status == "denied"
    assert "RuntimeError: terminal closed" in outcome.message.content


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "plan", "bypassPermissions"])
async def test_read_only_tools_never_ask(ctx: ToolContext, mode: PermissionMode) -> None:
    approver = RecordingApprover(ApprovalDecision(approved=False))
    outcome = await call(ctx, PermissionPolicy(mode, approver=approver), "Grep", pattern="hello")
    assert outcome.status == "ok"
    assert approver.requests == []


def test_unknown_mode_and_headless_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="--permission-mode"):
        PermissionPolicy("yolo")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'allow' or 'deny'"):
        PermissionPolicy(headless="maybe")  # type: ignore[arg-type]
