"""Workflows: graphs of agents, tools, conditions and people, run as durable tasks.

Build one in code (:class:`Workflow` with :class:`AgentNode`, :class:`ToolNode`,
:class:`ConditionNode`, :class:`HumanNode`, :class:`JoinNode` and :class:`Edge`) or keep it in
``.subagents/workflows/NAME.yaml`` (:func:`load_workflow_file`, :func:`find_workflow`), check it
with :func:`validate_workflow`, and run it with
:meth:`subagents.runtime.runtime.Runtime.run_workflow`.
"""

from __future__ import annotations

from subagents.workflows.graph import (
    END,
    AgentNode,
    ConditionNode,
    Edge,
    HumanNode,
    JoinNode,
    ToolNode,
    Workflow,
)
from subagents.workflows.state import StateUpdate, WorkflowMessage, WorkflowState

__all__ = [
    "END",
    "AgentNode",
    "ConditionNode",
    "Edge",
    "HumanNode",
    "JoinNode",
    "StateUpdate",
    "ToolNode",
    "Workflow",
    "WorkflowMessage",
    "WorkflowState",
]
