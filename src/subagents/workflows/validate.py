"""Checking a workflow graph: every problem at once, each with where it is.

:func:`validate_workflow` never raises: a problem is a :class:`WorkflowProblem` whose
``location`` points into the file (``entry_point``, ``nodes.fix.agent``, ``edges[2].to.approved``,
``checkpoints[1]``) and whose message ends with what to do. It checks

- the shape: the entry point, node names, every edge's ends, mapping edges that route on
  nothing, edges that can never be taken, checkpoints, patterns, the schema version;
- the expressions: conditions parse, and so do the ``{{ ... }}`` placeholders of agent prompts,
  human questions and string tool arguments (a callable condition, from code, is not parsed);
- what the nodes name: active agents (with the closest names when unknown) and available tools,
  when the caller passes what exists (``None`` skips that check);
- the flow: every node is reachable from the entry point (an *error*: an unreachable node is
  almost always a misspelt edge, and the issue asks for them to be reported at load);
  fan-outs reach one join; join nodes are reached by a fan-out; a cycle is allowed only through
  a loop pattern (``reflection`` in ``patterns``, or an edge of the cycle marked ``loop: true``)
  and must have a way out.

Fan-outs are checked simply: from each branch, every path is followed up to the first join node;
a branch must reach a join, all branches the same one, and a branch may not pass through a human
node or start another fan-out on the way.
"""

from __future__ import annotations

import difflib
import re
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from subagents.workflows.graph import (
    END,
    WORKFLOW_PATTERNS,
    WORKFLOW_SCHEMA_VERSION,
    AgentNode,
    ConditionNode,
    Edge,
    HumanNode,
    JoinNode,
    MapNode,
    ToolNode,
    Workflow,
)

__all__ = [
    "HUMAN_ACTIONS",
    "NODE_NAME_PATTERN",
    "Severity",
    "WorkflowProblem",
    "problem_errors",
    "validate_workflow",
]

Severity = Literal["error", "warning"]

NODE_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$")
"""Node names: letters, digits, ``_`` and ``-`` (not starting with ``-``), at most 64."""

HUMAN_ACTIONS = ("approve", "reject", "modify")
"""What a person's decision at a human node can be; its mapping edges route on it."""

_Successors = Callable[[str], Iterable[tuple[int, str]]]

_MAX_LISTED = 8  # names listed in a message before "and N more"
_MAX_CYCLE_SHOWN = 8  # nodes of a cycle shown in a message
_MAX_ARGUMENT_DEPTH = 20  # how deep tool arguments are searched for templates


@dataclass(frozen=True, slots=True)
class WorkflowProblem:
    """One problem: where (``nodes.fix.agent``), what and what to do, and how bad."""

    location: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        prefix = "warning: " if self.severity == "warning" else ""
        return f"{self.location}: {prefix}{self.message}"


def problem_errors(problems: Collection[WorkflowProblem]) -> list[tuple[str, str]]:
    """The error-level problems as ``(location, message)`` pairs, for WorkflowValidationError."""
    return [(p.location, p.message) for p in problems if p.severity == "error"]


def validate_workflow(
    workflow: Workflow,
    *,
    agents: Mapping[str, str] | None,
    tools: Collection[str] | None,
    mcp_servers: Collection[str] | None = None,
) -> list[WorkflowProblem]:
    """Every problem of ``workflow``, in file order within each kind of check.

    ``agents`` maps agent names to their status (``active``, ``invalid``, ``disabled``);
    ``tools`` are the tool names available; ``mcp_servers`` the configured MCP servers, whose
    ``mcp__SERVER__TOOL`` names are accepted without starting them. ``None`` skips that check.
    """
    checker = _Checker(workflow, agents, tools, mcp_servers)
    try:
        checker.run()
    except Exception as error:  # a bug here must not hide the problems found so far
        checker.error(
            "workflow",
            f"validation stopped early ({type(error).__name__}: {error}); the problems above "
            "were found before it: please report this",
        )
    return checker.problems


class _Checker:
    def __init__(
        self,
        workflow: Workflow,
        agents: Mapping[str, str] | None,
        tools: Collection[str] | None,
        mcp_servers: Collection[str] | None,
    ) -> None:
        self.workflow = workflow
        self.agents = agents
        self.tools = None if tools is None else set(tools)
        self.mcp_servers = None if mcp_servers is None else set(mcp_servers)
        self.problems: list[WorkflowProblem] = []
        self.nodes = workflow.nodes
        self.edges = workflow.edges
        # Node -> indexes of its outgoing edges, in file order.
        self.outgoing: dict[str, list[int]] = {}
        for index, edge in enumerate(self.edges):
            self.outgoing.setdefault(edge.from_, []).append(index)

    def error(self, location: str, message: str) -> None:
        self.problems.append(WorkflowProblem(location, message, "error"))

    def warning(self, location: str, message: str) -> None:
        self.problems.append(WorkflowProblem(location, message, "warning"))

    def run(self) -> None:
        self.check_header()
        self.check_nodes()
        self.check_entry_point()
        self.check_edges()
        self.check_checkpoints()
        self.check_fan_outs()
        reachable = self.check_reachable()
        self.check_cycles(reachable)

    # -- the workflow's own fields -------------------------------------------------------------

    def check_header(self) -> None:
        workflow = self.workflow
        if not workflow.name.strip():
            self.error("name", "the workflow has no name: set 'name' (the file's stem is usual)")
        if workflow.schema_version > WORKFLOW_SCHEMA_VERSION:
            self.error(
                "schema_version",
                f"schema_version {workflow.schema_version} is newer than this subagents "
                f"understands ({WORKFLOW_SCHEMA_VERSION}): upgrade subagents",
            )
        elif workflow.schema_version < 1:
            self.error(
                "schema_version",
                f"schema_version must be 1 or more, not {workflow.schema_version}: "
                f"write {WORKFLOW_SCHEMA_VERSION} or leave it out",
            )
        for index, pattern in enumerate(workflow.patterns):
            if pattern not in WORKFLOW_PATTERNS:
                self.error(
                    f"patterns[{index}]",
                    f"unknown pattern {pattern!r}{_did_you_mean(pattern, WORKFLOW_PATTERNS)}; "
                    f"the patterns are {', '.join(WORKFLOW_PATTERNS)}",
                )

    # -- nodes ---------------------------------------------------------------------------------

    def check_nodes(self) -> None:
        if not self.nodes:
            self.error("nodes", "the workflow has no nodes: add at least the entry point's node")
        for name, node in self.nodes.items():
            where = f"nodes.{name}"
            self.check_node_name(name, where)
            if isinstance(node, AgentNode):
                self.check_agent(node, where)
                if node.prompt is not None:
                    self.check_template(node.prompt, f"{where}.prompt")
                self.check_output(node.output, where)
            elif isinstance(node, ToolNode):
                self.check_tool(node, where)
                for text, location in _string_arguments(node.arguments, f"{where}.arguments"):
                    self.check_template(text, location)
                self.check_output(node.output, where)
            elif isinstance(node, MapNode):
                self.check_map(node, where)
            elif isinstance(node, ConditionNode):
                self.check_condition(node.expression, f"{where}.expression")
            elif isinstance(node, HumanNode):
                self.check_template(node.question, f"{where}.question")

    def check_map(self, node: MapNode, where: str) -> None:
        """A map node's body, as an agent or a tool node's, and the field it maps over."""
        if node.agent is not None:
            self.check_agent(AgentNode(agent=node.agent), where)
            if node.prompt is not None:
                self.check_template(node.prompt, f"{where}.prompt")
        if node.tool is not None:
            self.check_tool(ToolNode(tool=node.tool), where)
            for text, location in _string_arguments(node.arguments, f"{where}.arguments"):
                self.check_template(text, location)
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", node.over):
            self.error(
                f"{where}.over",
                f"{node.over!r} is not a state field a map can read: name a field (letters, "
                "digits and '_') that holds a list",
            )
        self.check_output(node.output, where)

    def check_node_name(self, name: str, where: str) -> None:
        if name == END:
            self.error(
                where,
                f"{END!r} is where edges go to end the run, so no node may be called so: "
                "rename the node",
            )
        elif not NODE_NAME_PATTERN.match(name):
            self.error(
                where,
                f"node name {name!r} is not allowed: use letters, digits, '_' and '-' "
                "(up to 64, not starting with '-')",
            )

    def check_output(self, output: str | None, where: str) -> None:
        if output is None:
            return
        if output == "messages":
            self.warning(
                f"{where}.output",
                "'messages' is append-only: the answer is appended there anyway; "
                "name another field to keep it apart",
            )
        elif not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", output):
            self.warning(
                f"{where}.output",
                f"conditions and templates cannot read a field called {output!r}: use letters, "
                "digits and '_', starting with a letter",
            )

    def check_agent(self, node: AgentNode, where: str) -> None:
        if self.agents is None:
            return
        location = f"{where}.agent"
        status = self.agents.get(node.agent)
        if status is None:
            status = self.agents.get(_normalise_agent(node.agent))
        if status is None:
            active = sorted(name for name, s in self.agents.items() if s == "active")
            closest = difflib.get_close_matches(_normalise_agent(node.agent), active, n=3)
            self.error(
                location,
                f"no agent called {node.agent!r}{_suggestion(closest)}. Active agents: "
                f"{_listing(active) or '(none)'}; 'subagents agents list' shows them all",
            )
        elif status == "invalid":
            self.error(
                location,
                f"agent {node.agent!r} is invalid: fix its file "
                "('subagents agents validate' says what is wrong)",
            )
        elif status == "disabled":
            self.error(
                location,
                f"agent {node.agent!r} is disabled: enable it in [subagents] of config.toml "
                "or use another agent",
            )
        elif status != "active":
            self.error(location, f"agent {node.agent!r} is {status}: use an active agent")

    def check_tool(self, node: ToolNode, where: str) -> None:
        if self.tools is None:
            return
        location = f"{where}.tool"
        name = node.tool
        if name in self.tools:
            return
        if name.startswith("mcp__"):
            self.check_mcp_tool(name, location)
            return
        closest = difflib.get_close_matches(name, sorted(self.tools), n=3)
        self.error(
            location,
            f"no tool called {name!r}{_suggestion(closest)}. Available: "
            f"{_listing(sorted(self.tools))}, or mcp__SERVER__TOOL for a configured MCP server",
        )

    def check_mcp_tool(self, name: str, location: str) -> None:
        server, _, tool = name[len("mcp__") :].partition("__")
        if not server or not tool or tool == "*":
            self.error(
                location,
                f"{name!r} does not name one MCP tool: write mcp__SERVER__TOOL "
                "('subagents mcp list --check' lists the tools)",
            )
            return
        if self.mcp_servers is None or server in self.mcp_servers:
            return
        closest = difflib.get_close_matches(server, sorted(self.mcp_servers), n=3)
        self.error(
            location,
            f"MCP server {server!r} is not configured{_suggestion(closest)}. Configured: "
            f"{_listing(sorted(self.mcp_servers)) or '(none)'}; add it to .mcp.json",
        )

    # -- expressions ---------------------------------------------------------------------------

    def check_condition(self, condition: object, location: str) -> None:
        if not isinstance(condition, str):
            return  # a callable from code: nothing to parse
        from subagents.workflows.conditions import expression_problem

        try:
            problem = expression_problem(condition)
        except Exception as error:  # the parser promises not to raise; be safe anyway
            problem = f"cannot be parsed ({type(error).__name__})"
        if problem:
            self.error(location, f"the condition does not parse: {problem}")

    def check_template(self, template: str, location: str) -> None:
        if "{{" not in template and "}}" not in template:
            return
        from subagents.workflows.conditions import template_problems

        try:
            problems = template_problems(template)
        except Exception as error:
            problems = [f"cannot be parsed ({type(error).__name__})"]
        for problem in problems:
            self.error(location, f"the template does not parse: {problem}")

    # -- the entry point, edges and checkpoints ------------------------------------------------

    def check_entry_point(self) -> None:
        entry = self.workflow.entry_point
        if entry in self.nodes:
            if isinstance(self.nodes[entry], JoinNode):
                self.error(
                    "entry_point",
                    f"the entry point {entry!r} is a join node, which only waits for a fan-out: "
                    "start at another node",
                )
            return
        self.error("entry_point", f"the entry point {entry!r} is not a node{self.nearest(entry)}")

    def check_edges(self) -> None:
        for index, edge in enumerate(self.edges):
            where = f"edges[{index}]"
            self.check_edge_from(edge, where)
            if isinstance(edge.to, str):
                self.check_target(edge.to, f"{where}.to")
            elif isinstance(edge.to, list):
                self.check_fan_out_targets(edge.to, f"{where}.to")
            else:
                self.check_mapping(edge, where)
            if edge.condition is not None:
                self.check_condition(edge.condition, f"{where}.condition")
        self.check_unreachable_edges()

    def check_edge_from(self, edge: Edge, where: str) -> None:
        if edge.from_ == END:
            self.error(f"{where}.from", f"no edge can leave {END!r}: the run is over there")
        elif edge.from_ not in self.nodes:
            self.error(f"{where}.from", f"{edge.from_!r} is not a node{self.nearest(edge.from_)}")

    def check_target(self, target: str, location: str) -> None:
        if target != END and target not in self.nodes:
            self.error(
                location,
                f"{target!r} is not a node{self.nearest(target)}; {END!r} ends the run",
            )

    def check_fan_out_targets(self, targets: list[str], location: str) -> None:
        if not targets:
            self.error(location, "an empty fan-out: list the nodes to run in parallel")
            return
        seen: set[str] = set()
        for index, target in enumerate(targets):
            where = f"{location}[{index}]"
            if target == END:
                self.error(where, f"a fan-out branch cannot be {END!r}: name a node")
            elif target not in self.nodes:
                self.error(where, f"{target!r} is not a node{self.nearest(target)}")
            elif target in seen:
                self.error(where, f"{target!r} is listed twice in the fan-out: list it once")
            seen.add(target)

    def check_mapping(self, edge: Edge, where: str) -> None:
        if not isinstance(edge.to, dict):
            return
        if not edge.to:
            self.error(
                f"{where}.to", "an empty mapping: map results to nodes, e.g. true: fix, false: end"
            )
        for key, target in edge.to.items():
            self.check_target(target, f"{where}.to.{key}")
        source = self.nodes.get(edge.from_)
        if edge.condition is None:
            if isinstance(source, HumanNode):
                unknown = [k for k in edge.to if k not in (*HUMAN_ACTIONS, "default")]
                for key in unknown:
                    self.warning(
                        f"{where}.to.{key}",
                        f"a person's action is {_or_list(list(HUMAN_ACTIONS))}, so {key!r} "
                        "never matches: use those keys or 'default', or add a condition",
                    )
            elif source is not None and not isinstance(source, ConditionNode):
                self.error(
                    f"{where}.condition",
                    f"a mapping edge from {source.type} node {edge.from_!r} needs a condition "
                    "to route on (only condition and human nodes give a result): add "
                    "'condition: EXPRESSION'",
                )

    def check_unreachable_edges(self) -> None:
        """Edges after one that always matches are never taken: almost always a mistake."""
        for source, indexes in self.outgoing.items():
            if source not in self.nodes:
                continue  # reported with the edge
            for position, index in enumerate(indexes):
                if not _always_matches(self.edges[index]):
                    continue
                for later in indexes[position + 1 :]:
                    self.warning(
                        f"edges[{later}]",
                        f"never taken: edges[{index}] from {source!r} always matches first "
                        "(the first matching edge is taken); give that one a condition or "
                        "move this one up",
                    )
                break

    def check_checkpoints(self) -> None:
        for index, name in enumerate(self.workflow.checkpoints):
            if name not in self.nodes:
                self.error(
                    f"checkpoints[{index}]",
                    f"{name!r} is not a node{self.nearest(name)}: a checkpoint names the node "
                    "before which a person confirms",
                )

    def nearest(self, name: str) -> str:
        closest = difflib.get_close_matches(name, sorted(self.nodes), n=3)
        if closest:
            return _suggestion(closest)
        if self.nodes:
            return f" (nodes: {_listing(list(self.nodes))})"
        return ""

    # -- fan-outs and joins --------------------------------------------------------------------

    def check_fan_outs(self) -> None:
        reached_joins: set[str] = set()
        for index, edge in enumerate(self.edges):
            if not isinstance(edge.to, list) or not edge.to:
                continue
            joins_of_edge: dict[str, list[int]] = {}
            for position, branch in enumerate(edge.to):
                if branch not in self.nodes:
                    continue  # reported with the edge
                where = f"edges[{index}].to[{position}]"
                joins = self.branch_joins(branch, where)
                if joins is None:
                    continue  # a problem was reported
                if not joins:
                    self.error(
                        where,
                        f"fan-out branch {branch!r} never reaches a join node: add a node of "
                        "type join after the branches and edges to it",
                    )
                for join in joins:
                    joins_of_edge.setdefault(join, []).append(position)
            reached_joins.update(joins_of_edge)
            if len(joins_of_edge) > 1:
                detail = "; ".join(
                    f"{join!r} from {', '.join(repr(edge.to[p]) for p in positions)}"
                    for join, positions in sorted(joins_of_edge.items())
                )
                self.error(
                    f"edges[{index}].to",
                    f"the branches of this fan-out reach different joins ({detail}): "
                    "lead every branch to the same join node",
                )
        for name, node in self.nodes.items():
            if isinstance(node, JoinNode) and name not in reached_joins:
                self.error(
                    f"nodes.{name}",
                    f"join node {name!r} is not reached by any fan-out, so it would wait for "
                    "nothing: lead the branches of a fan-out (to: [a, b]) to it, or remove it",
                )

    def branch_joins(self, start: str, where: str) -> set[str] | None:
        """The join nodes the paths from ``start`` reach first; ``None`` after a problem."""
        joins: set[str] = set()
        seen = {start}
        queue = deque([start])
        while queue:
            name = queue.popleft()
            node = self.nodes.get(name)
            if node is None:
                continue  # END, or an unknown name reported elsewhere
            if isinstance(node, JoinNode):
                joins.add(name)
                continue
            if isinstance(node, HumanNode):
                self.error(
                    where,
                    f"fan-out branch {start!r} passes through human node {name!r}: parallel "
                    "branches cannot wait for a person; ask before the fan-out or after the join",
                )
                return None
            for index in self.outgoing.get(name, []):
                edge = self.edges[index]
                if isinstance(edge.to, list):
                    self.error(
                        where,
                        f"fan-out branch {start!r} reaches another fan-out at edges[{index}]: "
                        "nested fan-outs are not supported; join first, then fan out again",
                    )
                    return None
                for target in self.workflow.targets(edge):
                    if target not in seen:
                        seen.add(target)
                        queue.append(target)
        return joins

    # -- reachability and cycles ---------------------------------------------------------------

    def successors(self, name: str) -> Iterator[tuple[int, str]]:
        """``(edge index, target node)`` for every edge out of ``name`` to an existing node."""
        for index in self.outgoing.get(name, []):
            for target in self.workflow.targets(self.edges[index]):
                if target in self.nodes:
                    yield index, target

    def check_reachable(self) -> dict[str, int]:
        """Report nodes the entry point cannot reach; return each reached node's BFS order."""
        entry = self.workflow.entry_point
        if entry not in self.nodes:
            return {}  # reported; every node would look unreachable
        order = {entry: 0}
        queue = deque([entry])
        while queue:
            name = queue.popleft()
            for _, target in self.successors(name):
                if target not in order:
                    order[target] = len(order)
                    queue.append(target)
        for name in self.nodes:
            if name not in order:
                self.error(
                    f"nodes.{name}",
                    f"node {name!r} cannot be reached from the entry point {entry!r}: add an "
                    "edge to it, or remove it",
                )
        return order

    def check_cycles(self, order: Mapping[str, int]) -> None:
        allowed_by_pattern = "reflection" in self.workflow.patterns
        in_cycle: set[int] = set()
        for component in _strongly_connected(list(self.nodes), self.successors):
            members = set(component)
            inner = [
                index
                for name in component
                for index, target in self.successors(name)
                if target in members
            ]
            if not inner:
                continue  # a single node without a self-loop
            inner = sorted(set(inner))
            in_cycle.update(inner)
            path = _cycle_path(component, members, self.successors, order)
            shown = _show_cycle(path)
            location = f"edges[{_closing_edge(inner, self.edges, members, order)}]"
            if not allowed_by_pattern and not any(self.edges[i].loop for i in inner):
                self.error(
                    location,
                    f"cycle {shown} is not allowed: mark the edge that closes it 'loop: true' "
                    "(max_iterations bounds it) or add 'reflection' to patterns",
                )
            elif not self.has_exit(members):
                self.error(
                    location,
                    f"cycle {shown} never ends: no edge leaves it; add an edge from one of "
                    f"its nodes to {END!r} or to a node outside it",
                )
        for index, edge in enumerate(self.edges):
            if edge.loop and index not in in_cycle and edge.from_ in self.nodes:
                self.warning(
                    f"edges[{index}].loop",
                    "marked 'loop: true' but closes no cycle: remove the mark or point the "
                    "edge back to an earlier node",
                )

    def has_exit(self, members: set[str]) -> bool:
        for name in members:
            for index in self.outgoing.get(name, []):
                for target in self.workflow.targets(self.edges[index]):
                    if target == END or target not in members:
                        return True
        return False


# -- graph helpers -----------------------------------------------------------------------------


def _strongly_connected(names: list[str], successors: _Successors) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (a long chain must not recurse)."""
    index_of: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in names:
        if root in index_of:
            continue
        work: list[tuple[str, Iterator[str]]] = []
        index_of[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        work.append((root, iter([t for _, t in successors(root)])))
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index_of:
                    index_of[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter([t for _, t in successors(child)])))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index_of[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index_of[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components


def _cycle_path(
    component: list[str], members: set[str], successors: _Successors, order: Mapping[str, int]
) -> list[str]:
    """A shortest cycle through the component's earliest node (by distance from the entry)."""
    start = min(component, key=lambda name: (order.get(name, len(order)), name))
    parent: dict[str, str] = {}
    queue = deque([start])
    seen = {start}
    while queue:
        name = queue.popleft()
        for _, target in successors(name):
            if target not in members:
                continue
            if target == start:
                path = [name]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return [*reversed(path), start]
            if target not in seen:
                seen.add(target)
                parent[target] = name
                queue.append(target)
    return [start, start]


def _show_cycle(path: list[str]) -> str:
    if len(path) <= _MAX_CYCLE_SHOWN:
        return " -> ".join(path)
    return " -> ".join([*path[: _MAX_CYCLE_SHOWN - 2], "...", path[-2], path[-1]])


def _closing_edge(
    inner: list[int], edges: list[Edge], members: set[str], order: Mapping[str, int]
) -> int:
    """The edge of a cycle that goes back (to a node no later from the entry): the one to mark."""
    far = len(order)
    for index in inner:
        edge = edges[index]
        source = order.get(edge.from_, far)
        for target in _edge_targets(edge):
            if target in members and order.get(target, far) <= source:
                return index
    return inner[0]


def _edge_targets(edge: Edge) -> list[str]:
    if isinstance(edge.to, str):
        return [edge.to]
    if isinstance(edge.to, list):
        return list(edge.to)
    return list(edge.to.values())


def _always_matches(edge: Edge) -> bool:
    if edge.condition is not None:
        return False
    if isinstance(edge.to, dict):
        return "default" in edge.to
    return True


def _string_arguments(value: Any, location: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    """Every string among tool arguments (nested too), with its location."""
    if depth > _MAX_ARGUMENT_DEPTH:
        return
    if isinstance(value, str):
        yield value, location
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _string_arguments(item, f"{location}.{key}", depth + 1)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _string_arguments(item, f"{location}[{index}]", depth + 1)


# -- wording -----------------------------------------------------------------------------------


def _normalise_agent(name: str) -> str:
    from subagents.definitions.validate import normalise_name

    return normalise_name(name)


def _suggestion(closest: list[str]) -> str:
    return f" (did you mean {_or_list(closest)}?)" if closest else ""


def _did_you_mean(name: str, choices: Collection[str]) -> str:
    closest = difflib.get_close_matches(name, sorted(choices), n=1)
    return f" (did you mean {closest[0]!r}?)" if closest else ""


def _or_list(names: list[str]) -> str:
    quoted = [repr(name) for name in names]
    if len(quoted) <= 1:
        return "".join(quoted)
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _listing(names: list[str]) -> str:
    shown = ", ".join(names[:_MAX_LISTED])
    if len(names) > _MAX_LISTED:
        shown += f" and {len(names) - _MAX_LISTED} more"
    return shown
