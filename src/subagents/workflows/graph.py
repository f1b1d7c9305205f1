"""The workflow graph: nodes, edges and the workflow itself, as read from a file or built in code.

A workflow is a fixed shape of work: nodes (an agent, a tool, a condition, a person, a join)
joined by edges. It runs from ``entry_point``; after each node the first of its outgoing edges
that matches says where to go, and a node with no outgoing edge ends the run. The special
target ``end`` ends it too.

An edge's ``to`` is one of

- a node name: go there (when the edge has a ``condition``, only if it holds);
- a list of node names: a **fan-out**, the nodes run in parallel, each branch up to the
  ``join`` node they lead to, which waits for all of them and merges their updates;
- a mapping of condition results to node names: evaluate ``condition`` (for a ``condition``
  node, by default its result; for a ``human`` node, the person's action), look the result up
  (``true``/``false`` for booleans), else take the ``default`` entry.

Cycles are allowed only through the loop patterns: a workflow that lists ``reflection`` in
``patterns``, or an edge marked ``loop: true``. Every cycle must have a way out, and
``max_iterations`` bounds the node executions of one run.

Conditions and templates are safe expressions over the state (see
:mod:`subagents.workflows.conditions`); in code a condition may also be a Python callable, which
takes the state and returns the value to route on (such a workflow cannot be saved to a file).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "END",
    "WORKFLOW_PATTERNS",
    "WORKFLOW_SCHEMA_VERSION",
    "AgentNode",
    "Condition",
    "ConditionNode",
    "Edge",
    "HumanNode",
    "JoinNode",
    "MapNode",
    "Node",
    "ToolNode",
    "Workflow",
]

WORKFLOW_SCHEMA_VERSION = 1
"""The ``schema_version`` this subagents writes; files above it are refused."""

END = "end"
"""The edge target that ends the run (no node may have this name)."""

WORKFLOW_PATTERNS = ("react", "reflection", "fan_out")
"""The patterns a workflow may declare; ``reflection`` allows a generator-critic cycle."""

Condition = str | Callable[[dict[str, Any]], Any]
"""A safe expression over the state, or (in code) a callable taking the state as a dict."""

_NODE_CONFIG = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


class AgentNode(BaseModel):
    """Run an agent of the inventory. ``prompt`` is a template over the state (default: the
    run's input); the answer is appended to ``messages`` and, with ``output``, also stored in
    that state field."""

    model_config = _NODE_CONFIG

    type: Literal["agent"] = "agent"
    agent: str
    prompt: str | None = None
    output: str | None = None
    description: str = ""


class ToolNode(BaseModel):
    """Call a tool. String values in ``arguments`` are templates over the state; the result
    is appended to ``messages`` and, with ``output``, also stored in that state field."""

    model_config = _NODE_CONFIG

    type: Literal["tool"] = "tool"
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    output: str | None = None
    description: str = ""


class MapNode(BaseModel):
    """Run a body once for each item of the list in the state field ``over`` (or of the JSON
    list its text holds, as a tool node's output does): an agent
    (``agent``, ``prompt``) or a tool (``tool``, ``arguments``), whose templates see the item
    as ``as`` (default ``item``) and its place in the list as ``index``. At most
    ``max_concurrent`` items run at once, and each is durable on its own: a resumed map runs
    only the items not finished (a tool item whose call was in flight follows
    ``[subagents] interrupted_tool_calls``). The results go to ``output`` in the list's order;
    with ``outputSchema`` each must be JSON matching it (an agent is held to it as by its
    file's ``outputSchema``). ``on_item_error``: ``fail`` stops the workflow (once the items
    in flight end), ``skip`` leaves the item out, ``collect`` keeps ``{"error": ...}`` in its
    place."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    type: Literal["map"] = "map"
    over: str
    as_: str = Field(default="item", alias="as", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    agent: str | None = None
    prompt: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    max_concurrent: int = Field(default=4, ge=1, le=1000)
    output: str | None = None
    output_schema: dict[str, Any] | None = Field(default=None, alias="outputSchema")
    on_item_error: Literal["fail", "skip", "collect"] = "fail"
    description: str = ""

    @model_validator(mode="after")
    def _one_body(self) -> MapNode:
        if (self.agent is None) == (self.tool is None):
            raise ValueError(
                "a map node runs an agent or a tool for each item: give `agent` (with "
                "`prompt`) or `tool` (with `arguments`), not both and not neither"
            )
        if self.output_schema is not None:
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(self.output_schema)
            except SchemaError as error:
                message = f"outputSchema is not a valid JSON Schema: {error.message}"
                raise ValueError(message) from None
        return self


class ConditionNode(BaseModel):
    """Evaluate ``expression`` over the state; its result becomes ``routing_key``, on which
    the node's outgoing edges route."""

    model_config = _NODE_CONFIG

    type: Literal["condition"] = "condition"
    expression: Condition
    description: str = ""


class HumanNode(BaseModel):
    """Ask a person ``question`` (a template over the state). The run pauses until they
    approve, reject or modify; their action becomes ``next_action``, their message is
    appended, and their ``state_updates`` (``--set key=value``) are applied."""

    model_config = _NODE_CONFIG

    type: Literal["human"] = "human"
    question: str = "Continue?"
    description: str = ""


class JoinNode(BaseModel):
    """Wait for the parallel branches that lead here, then merge their updates: messages are
    appended in the order of the fan-out's list, other fields taken in that order too."""

    model_config = _NODE_CONFIG

    type: Literal["join"] = "join"
    description: str = ""


Node = Annotated[
    AgentNode | ToolNode | MapNode | ConditionNode | HumanNode | JoinNode,
    Field(discriminator="type"),
]


class Edge(BaseModel):
    """Where to go after ``from``: see the module docstring for the shapes of ``to``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, arbitrary_types_allowed=True)

    from_: str = Field(alias="from")
    to: str | list[str] | dict[str, str]
    condition: Condition | None = None
    loop: bool = False
    """Marks the edge that closes a deliberate loop (bounded by ``max_iterations``)."""

    @field_validator("to", mode="before")
    @classmethod
    def _keys_as_written(cls, value: Any) -> Any:
        """YAML reads ``{true: end}`` with a boolean key: route on ``"true"`` as meant."""
        if isinstance(value, dict):
            return {_key_text(key): target for key, target in value.items()}
        return value


def _key_text(key: Any) -> Any:
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "none"
    if isinstance(key, int | float):
        return str(key)
    return key


class Workflow(BaseModel):
    """A graph of nodes and edges, run from ``entry_point``. ``checkpoints`` are nodes before
    which a person confirms; ``max_iterations`` bounds the node executions of one run."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    schema_version: int = WORKFLOW_SCHEMA_VERSION
    name: str
    description: str = ""
    patterns: list[str] = Field(default_factory=list)
    nodes: dict[str, Node]
    edges: list[Edge] = Field(default_factory=list)
    entry_point: str
    checkpoints: list[str] = Field(default_factory=list)
    max_iterations: int = Field(default=50, ge=1)

    def outgoing(self, node: str) -> list[Edge]:
        """The edges leaving ``node``, in file order (the first that matches is taken)."""
        return [edge for edge in self.edges if edge.from_ == node]

    def targets(self, edge: Edge) -> list[str]:
        """Every node (or ``end``) ``edge`` may lead to."""
        if isinstance(edge.to, str):
            return [edge.to]
        if isinstance(edge.to, list):
            return list(edge.to)
        return list(edge.to.values())

    def to_file_dict(self) -> dict[str, Any]:
        """The workflow as its YAML / JSON file holds it (``from`` spelled as in files)."""
        return self.model_dump(mode="json", by_alias=True, exclude_defaults=False)
