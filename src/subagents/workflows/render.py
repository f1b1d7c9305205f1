"""Showing a workflow: a Mermaid diagram, and a plain listing for the terminal.

:func:`to_mermaid` writes a ``flowchart TD``: node ids are ``n0``, ``n1``... (a node's name
could be a Mermaid keyword such as ``end``), its name and what it runs are the label. Shapes
say the node type: agent ``[box]``, tool ``[[subroutine]]``, condition ``{rhombus}``, human
``[/parallelogram/]``, join ``((circle))``; the run starts at ``([start])`` and ends at
``([end])``. Edge labels are the mapping keys and conditions; a fan-out's edges are thick, loop
edges dotted. Label text is escaped with Mermaid's ``#code;`` entities, so quotes, ``|``, ``<``
and the like in a condition cannot break the diagram.

:func:`to_text` lists the nodes in the order a run meets them, each with its outgoing edges,
in lines of at most ``width`` characters.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from subagents._preview import shorten
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

__all__ = ["node_summary", "to_mermaid", "to_text"]

_LABEL_CHARS = 60  # of a condition or prompt shown in a diagram label
_ESCAPES = {
    "#": "#35;",
    '"': "#34;",
    "<": "#60;",
    ">": "#62;",
    "|": "#124;",
    "`": "#96;",
    "[": "#91;",
    "]": "#93;",
    "{": "#123;",
    "}": "#125;",
}
_SHAPES = {
    "agent": ('["', '"]'),
    "tool": ('[["', '"]]'),
    "condition": ('{"', '"}'),
    "human": ('[/"', '"/]'),
    "join": ('(("', '"))'),
}


def _escape(text: str, limit: int = _LABEL_CHARS) -> str:
    """``text`` on one line, shortened, safe inside a quoted Mermaid label."""
    flat = " ".join(text.split())
    return "".join(_ESCAPES.get(c, c) for c in shorten(flat, limit))


def _condition_text(condition: Any) -> str:
    if condition is None:
        return ""
    if isinstance(condition, str):
        return condition
    return f"{getattr(condition, '__name__', type(condition).__name__)}()"


def node_summary(node: Any) -> str:
    """What a node does, in a few words: ``agent: reviewer``, ``condition: score > 3``."""
    if isinstance(node, AgentNode):
        return f"agent: {node.agent}"
    if isinstance(node, ToolNode):
        return f"tool: {node.tool}"
    if isinstance(node, ConditionNode):
        return f"condition: {_condition_text(node.expression)}"
    if isinstance(node, HumanNode):
        return f"human: {node.question}"
    if isinstance(node, JoinNode):
        return "join"
    return str(getattr(node, "type", "node"))


def to_mermaid(workflow: Workflow) -> str:
    """A Mermaid ``flowchart TD`` of the workflow (also of an invalid one: a name no node has
    is drawn as a node marked ``missing``)."""
    ids: dict[str, str] = {name: f"n{index}" for index, name in enumerate(workflow.nodes)}
    lines = ["flowchart TD", "    start([start])"]
    for name, node in workflow.nodes.items():
        opening, closing = _SHAPES.get(str(getattr(node, "type", "")), ('["', '"]'))
        label = f"{_escape(name)}<br/>{_escape(node_summary(node))}"
        if isinstance(node, JoinNode):
            label = _escape(name)
        lines.append(f"    {ids[name]}{opening}{label}{closing}")
    uses_end = any(END in workflow.targets(edge) for edge in workflow.edges)
    if uses_end:
        lines.append("    stop([end])")

    def target_id(name: str) -> str:
        if name == END:
            return "stop"
        if name not in ids:
            ids[name] = f"n{len(ids)}"
            lines.append(f'    {ids[name]}["{_escape(name)}<br/>(missing)"]')
        return ids[name]

    body: list[str] = []
    body.append(f"    start --> {target_id(workflow.entry_point)}")
    for edge in workflow.edges:
        body.extend(_mermaid_edges(edge, target_id(edge.from_), target_id))
    checkpoints = [ids[name] for name in workflow.checkpoints if name in ids]
    if checkpoints:
        body.append("    classDef checkpoint stroke-width:3px,stroke-dasharray:4 2")
        body.append(f"    class {','.join(checkpoints)} checkpoint")
    return "\n".join([*lines, *body]) + "\n"


def _mermaid_edges(edge: Edge, source: str, target_id: Any) -> list[str]:
    arrow = "-.->" if edge.loop else "-->"
    condition = _condition_text(edge.condition)
    if isinstance(edge.to, dict):
        prefix = f"{condition} = " if condition else ""
        return [
            f'    {source} {arrow}|"{_escape(prefix + key)}"| {target_id(target)}'
            for key, target in edge.to.items()
        ]
    label = condition
    if edge.loop:
        label = f"{label} (loop)" if label else "loop"
    if isinstance(edge.to, list):
        fan = "==>" if not edge.loop else arrow
        text = f'|"{_escape(label)}"|' if label else ""
        return [f"    {source} {fan}{text} {target_id(target)}" for target in edge.to]
    text = f'|"{_escape(label)}"|' if label else ""
    return [f"    {source} {arrow}{text} {target_id(edge.to)}"]


def to_text(workflow: Workflow, *, width: int = 80) -> str:
    """The workflow as lines for a terminal: a header, then each node (in the order a run
    meets them) with its outgoing edges. No line is longer than ``width``."""
    lines = [f"workflow {workflow.name}"]
    if workflow.description:
        lines.append(f"  {' '.join(workflow.description.split())}")
    facts = [f"entry: {workflow.entry_point}", f"max {workflow.max_iterations} node runs"]
    if workflow.patterns:
        facts.append(f"patterns: {', '.join(workflow.patterns)}")
    if workflow.checkpoints:
        facts.append(f"confirm before: {', '.join(workflow.checkpoints)}")
    lines.append("  " + " · ".join(facts))
    for name in _run_order(workflow):
        node = workflow.nodes[name]
        lines.append("")
        lines.append(f"{name}  ({node_summary(node)})")
        outgoing = workflow.outgoing(name)
        if not outgoing:
            lines.append(f"  -> {END} (no edge leaves it)")
        for edge in outgoing:
            lines.extend(_text_edges(edge))
    return "\n".join(shorten(line, width) for line in lines) + "\n"


def _text_edges(edge: Edge) -> list[str]:
    loop = "  [loop]" if edge.loop else ""
    condition = _condition_text(edge.condition)
    when = f"  when {condition}" if condition else ""
    if isinstance(edge.to, dict):
        head = f"  on {condition}:" if condition else "  on the result:"
        return [head, *(f"    {key} -> {target}{loop}" for key, target in edge.to.items())]
    if isinstance(edge.to, list):
        return [f"  => {', '.join(edge.to)} (in parallel){when}{loop}"]
    return [f"  -> {edge.to}{when}{loop}"]


def _run_order(workflow: Workflow) -> list[str]:
    """Nodes breadth-first from the entry point, then the ones it cannot reach."""
    order: list[str] = []
    seen: set[str] = set()
    queue = deque([workflow.entry_point] if workflow.entry_point in workflow.nodes else [])
    seen.update(queue)
    while queue:
        name = queue.popleft()
        order.append(name)
        for edge in workflow.outgoing(name):
            for target in workflow.targets(edge):
                if target in workflow.nodes and target not in seen:
                    seen.add(target)
                    queue.append(target)
    order.extend(name for name in workflow.nodes if name not in seen)
    return order
