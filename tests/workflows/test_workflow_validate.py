"""Workflow validation: every kind of problem with its location, workflows that validate
clean, loading files (located syntax and model errors), dumping, rendering, and property-based
tests that random graphs give located problems and never an exception."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subagents.errors import WorkflowError, WorkflowValidationError
from subagents.tools.names import BUILTIN_TOOL_NAMES
from subagents.workflows.files import (
    MAX_WORKFLOW_FILE_BYTES,
    discover_workflows,
    dump_workflow,
    find_workflow,
    load_workflow_file,
    workflow_folders,
)
from subagents.workflows.graph import Workflow
from subagents.workflows.render import to_mermaid, to_text
from subagents.workflows.validate import WorkflowProblem, validate_workflow

AGENTS = {
    "reviewer": "active",
    "fixer": "active",
    "tester": "active",
    "writer": "active",
    "critic": "active",
    "broken": "invalid",
    "sleepy": "disabled",
}
TOOLS = list(BUILTIN_TOOL_NAMES)


def agent(name: str = "reviewer", **extra: Any) -> dict[str, Any]:
    return {"type": "agent", "agent": name, **extra}


def make(
    nodes: dict[str, Any], edges: list[dict[str, Any]], entry: str = "a", **fields: Any
) -> Workflow:
    return Workflow.model_validate(
        {"name": "wf", "nodes": nodes, "edges": edges, "entry_point": entry, **fields}
    )


def check(workflow: Workflow, **context: Any) -> list[WorkflowProblem]:
    context.setdefault("agents", AGENTS)
    context.setdefault("tools", TOOLS)
    return validate_workflow(workflow, **context)


def at(problems: list[WorkflowProblem], location: str) -> WorkflowProblem:
    """The one problem at ``location`` (fails listing them all when there is not exactly one)."""
    found = [p for p in problems if p.location == location]
    assert len(found) == 1, f"expected one problem at {location!r}, got {problems}"
    return found[0]


def errors(problems: list[WorkflowProblem]) -> list[WorkflowProblem]:
    return [p for p in problems if p.severity == "error"]


def review_fix_verify() -> Workflow:
    return make(
        {
            "review": agent("reviewer", prompt="Review {{ input }}", output="review"),
            "fix": agent("fixer", prompt="Fix:\n{{ review }}"),
            "verify": agent("tester", output="verdict"),
            "passed": {"type": "condition", "expression": "'PASS' in upper(verdict)"},
        },
        [
            {"from": "review", "to": "fix"},
            {"from": "fix", "to": "verify"},
            {"from": "verify", "to": "passed"},
            {"from": "passed", "to": {"true": "end", "false": "fix"}, "loop": True},
        ],
        entry="review",
        checkpoints=["fix"],
    )


# -- workflows that validate clean -------------------------------------------------------------


def test_review_fix_verify_with_a_loop_edge_is_clean() -> None:
    assert check(review_fix_verify()) == []


def test_reflection_loop_is_clean() -> None:
    workflow = make(
        {
            "draft": agent("writer", output="draft"),
            "critique": agent("critic", prompt="{{ draft }}", output="critique"),
            "approved": {"type": "condition", "expression": "'APPROVED' in upper(critique)"},
        },
        [
            {"from": "draft", "to": "critique"},
            {"from": "critique", "to": "approved"},
            {"from": "approved", "to": {"true": "end", "false": "draft"}},
        ],
        entry="draft",
        patterns=["reflection"],
        max_iterations=9,
    )
    assert check(workflow) == []


def test_fan_out_of_three_and_a_join_is_clean() -> None:
    workflow = make(
        {
            "files": {"type": "tool", "tool": "Glob", "arguments": {"pattern": "src/**/*.py"}},
            "bugs": agent("reviewer"),
            "tests": agent("tester"),
            "style": agent("critic"),
            "collect": {"type": "join"},
            "merge": agent("writer", prompt="{{ messages[-1].content }}"),
        },
        [
            {"from": "files", "to": ["bugs", "tests", "style"]},
            {"from": "bugs", "to": "collect"},
            {"from": "tests", "to": "collect"},
            {"from": "style", "to": "collect"},
            {"from": "collect", "to": "merge"},
        ],
        entry="files",
        patterns=["fan_out"],
    )
    assert check(workflow) == []


def test_a_callable_condition_from_code_is_not_parsed() -> None:
    workflow = make(
        {"a": {"type": "condition", "expression": lambda state: state.get("x")}, "b": agent()},
        [{"from": "a", "to": "b", "condition": lambda state: True}],
    )
    assert check(workflow) == []


def test_without_agents_and_tools_those_checks_are_skipped() -> None:
    workflow = make({"a": agent("nobody"), "b": {"type": "tool", "tool": "Nope"}}, [])
    problems = check(workflow, agents=None, tools=None)
    assert [p.location for p in problems] == ["nodes.b"]  # only: b is unreachable


# -- the shape ---------------------------------------------------------------------------------


def test_entry_point_must_be_a_node() -> None:
    problem = at(check(make({"review": agent()}, [], entry="reveiw")), "entry_point")
    assert "'reveiw' is not a node" in problem.message
    assert "did you mean 'review'" in problem.message


def test_entry_point_cannot_be_a_join() -> None:
    problem = at(check(make({"a": {"type": "join"}}, [])), "entry_point")
    assert "join" in problem.message and "start at another node" in problem.message


def test_no_nodes() -> None:
    problems = check(make({}, [], entry="a"))
    assert "no nodes" in at(problems, "nodes").message
    assert at(problems, "entry_point")


@pytest.mark.parametrize("name", ["end", "has space", "-dash", "dot.ted", "x" * 65])
def test_node_names(name: str) -> None:
    problems = check(make({"a": agent(), name: agent()}, [{"from": "a", "to": "end"}]))
    problem = next(p for p in problems if p.location == f"nodes.{name}")
    assert "rename" in problem.message or "letters, digits" in problem.message


def test_good_node_names_pass() -> None:
    nodes = {"a": agent(), "Fix_2": agent(), "verify-it": agent(), "3rd": agent()}
    edges = [{"from": "a", "to": "Fix_2"}, {"from": "Fix_2", "to": "verify-it"}]
    edges.append({"from": "verify-it", "to": "3rd"})
    assert check(make(nodes, edges)) == []


def test_edge_ends_must_be_nodes() -> None:
    workflow = make(
        {"a": agent(), "fix": agent()},
        [
            {"from": "a", "to": "fxi"},
            {"from": "ghost", "to": "fix"},
            {"from": "end", "to": "a"},
            {"from": "a", "to": {"approved": "nowhere", "default": "end"}, "condition": "x"},
        ],
    )
    problems = check(workflow)
    assert "did you mean 'fix'" in at(problems, "edges[0].to").message
    assert "'ghost' is not a node" in at(problems, "edges[1].from").message
    assert "no edge can leave 'end'" in at(problems, "edges[2].from").message
    assert "'nowhere' is not a node" in at(problems, "edges[3].to.approved").message


def test_a_mapping_edge_needs_a_condition_unless_from_condition_or_human() -> None:
    workflow = make(
        {
            "a": agent(),
            "ask": {"type": "human", "question": "Ship it?"},
            "c": {"type": "condition", "expression": "x > 1"},
        },
        [
            {"from": "a", "to": {"yes": "ask", "no": "c"}},
            {"from": "ask", "to": {"approve": "c", "reject": "end"}},
            {"from": "c", "to": {"true": "end", "false": "end"}},
        ],
    )
    problems = check(workflow)
    problem = at(problems, "edges[0].condition")
    assert "needs a condition" in problem.message and "agent node 'a'" in problem.message
    assert [p.location for p in problems] == ["edges[0].condition"]


def test_human_mapping_keys_that_never_match_are_warned() -> None:
    workflow = make(
        {"ask": {"type": "human"}, "b": agent()},
        [{"from": "ask", "to": {"approve": "b", "yes": "b", "default": "end"}}],
        entry="ask",
    )
    problem = at(check(workflow), "edges[0].to.yes")
    assert problem.severity == "warning" and "'approve'" in problem.message


def test_empty_mapping_and_fan_out() -> None:
    workflow = make(
        {"a": {"type": "condition", "expression": "x"}},
        [{"from": "a", "to": {}}, {"from": "a", "to": []}],
    )
    problems = check(workflow)
    assert "empty mapping" in at(problems, "edges[0].to").message
    assert "empty fan-out" in at(problems, "edges[1].to").message


def test_edges_after_one_that_always_matches_are_warned() -> None:
    workflow = make(
        {"a": agent(), "b": agent()},
        [{"from": "a", "to": "b"}, {"from": "a", "to": "end", "condition": "done"}],
    )
    problem = at(check(workflow), "edges[1]")
    assert problem.severity == "warning"
    assert "never taken" in problem.message and "edges[0]" in problem.message


def test_checkpoints_must_name_nodes() -> None:
    workflow = make(
        {"a": agent(), "fix": agent()}, [{"from": "a", "to": "fix"}], checkpoints=["a", "fxi"]
    )
    problem = at(check(workflow), "checkpoints[1]")
    assert "'fxi' is not a node" in problem.message and "did you mean 'fix'" in problem.message


def test_unknown_pattern() -> None:
    workflow = make({"a": agent()}, [], patterns=["reflection", "reflexion"])
    problem = at(check(workflow), "patterns[1]")
    assert "unknown pattern 'reflexion'" in problem.message
    assert "did you mean 'reflection'" in problem.message


def test_newer_schema_version() -> None:
    problem = at(check(make({"a": agent()}, [], schema_version=99)), "schema_version")
    assert "upgrade subagents" in problem.message


def test_output_fields_that_conditions_cannot_read_are_warned() -> None:
    workflow = make(
        {"a": agent(output="messages"), "b": agent(output="_secret")}, [{"from": "a", "to": "b"}]
    )
    problems = check(workflow)
    assert "append-only" in at(problems, "nodes.a.output").message
    assert at(problems, "nodes.b.output").severity == "warning"


# -- expressions -------------------------------------------------------------------------------


def test_conditions_must_parse() -> None:
    workflow = make(
        {"a": {"type": "condition", "expression": "score >"}, "b": agent()},
        [{"from": "a", "to": "b", "condition": "__import__('os')"}],
    )
    problems = check(workflow)
    assert "does not parse" in at(problems, "nodes.a.expression").message
    problem = at(problems, "edges[0].condition")
    assert "does not parse" in problem.message and "_" in problem.message


def test_templates_must_parse() -> None:
    workflow = make(
        {
            "a": agent(prompt="Review {{ input "),
            "ask": {"type": "human", "question": "OK {{ ().__class__ }}?"},
            "t": {
                "type": "tool",
                "tool": "Bash",
                "arguments": {"command": "echo {{ x + }}", "env": [{"v": "{{ a.__b }}"}]},
            },
        },
        [{"from": "a", "to": "ask"}, {"from": "ask", "to": "t"}],
    )
    problems = check(workflow)
    assert "never closed" in at(problems, "nodes.a.prompt").message
    assert "does not parse" in at(problems, "nodes.ask.question").message
    assert "does not parse" in at(problems, "nodes.t.arguments.command").message
    assert "does not parse" in at(problems, "nodes.t.arguments.env[0].v").message


# -- agents and tools --------------------------------------------------------------------------


def test_agents_must_exist_and_be_active() -> None:
    workflow = make(
        {"a": agent("fxer"), "b": agent("broken"), "c": agent("sleepy"), "d": agent("Fixer")},
        [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}, {"from": "c", "to": "d"}],
    )
    problems = check(workflow)
    unknown = at(problems, "nodes.a.agent").message
    assert "no agent called 'fxer'" in unknown and "did you mean 'fixer'" in unknown
    assert "'subagents agents list'" in unknown
    assert "is invalid" in at(problems, "nodes.b.agent").message
    assert "is disabled" in at(problems, "nodes.c.agent").message
    assert not [p for p in problems if p.location == "nodes.d.agent"]  # names are normalised


def test_tools_must_be_available() -> None:
    workflow = make(
        {
            "a": {"type": "tool", "tool": "Reed"},
            "b": {"type": "tool", "tool": "mcp__calc__add"},
            "c": {"type": "tool", "tool": "mcp__ghost__add"},
            "d": {"type": "tool", "tool": "mcp__calc"},
        },
        [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}, {"from": "c", "to": "d"}],
    )
    problems = check(workflow, mcp_servers=["calc"])
    assert "did you mean 'Read'" in at(problems, "nodes.a.tool").message
    assert not [p for p in problems if p.location == "nodes.b.tool"]
    assert "MCP server 'ghost' is not configured" in at(problems, "nodes.c.tool").message
    assert "mcp__SERVER__TOOL" in at(problems, "nodes.d.tool").message
    # without a list of servers, any well-formed MCP tool name is accepted
    unchecked = check(workflow)
    assert {p.location for p in unchecked} == {"nodes.a.tool", "nodes.d.tool"}


# -- fan-outs and joins ------------------------------------------------------------------------


def fan(
    extra_nodes: dict[str, Any], edges: list[dict[str, Any]], to: list[str] | None = None
) -> Workflow:
    nodes = {"start": agent(), "x": agent(), "y": agent(), "j": {"type": "join"}}
    nodes.update(extra_nodes)
    return make(nodes, [{"from": "start", "to": to or ["x", "y"]}, *edges], entry="start")


def test_fan_out_branches_must_reach_a_join() -> None:
    problems = check(fan({}, [{"from": "x", "to": "j"}, {"from": "y", "to": "end"}]))
    problem = at(problems, "edges[0].to[1]")
    assert "'y' never reaches a join node" in problem.message


def test_fan_out_branches_must_reach_the_same_join() -> None:
    workflow = fan({"k": {"type": "join"}}, [{"from": "x", "to": "j"}, {"from": "y", "to": "k"}])
    problem = at(check(workflow), "edges[0].to")
    assert "different joins" in problem.message and "'j'" in problem.message


def test_fan_out_branches_cannot_pass_human_nodes_or_fan_out_again() -> None:
    workflow = fan(
        {"ask": {"type": "human"}, "z": agent()},
        [
            {"from": "x", "to": "ask"},
            {"from": "ask", "to": "j"},
            {"from": "y", "to": ["z"]},
            {"from": "z", "to": "j"},
        ],
    )
    problems = check(workflow)
    assert "human node 'ask'" in at(problems, "edges[0].to[0]").message
    assert "nested fan-outs" in at(problems, "edges[0].to[1]").message


def test_fan_out_lists_nodes_once_and_never_end() -> None:
    workflow = fan({}, [{"from": "x", "to": "j"}], to=["x", "x", "end"])
    problems = check(workflow)
    assert "listed twice" in at(problems, "edges[0].to[1]").message
    assert "cannot be 'end'" in at(problems, "edges[0].to[2]").message


def test_a_join_must_be_reached_by_a_fan_out() -> None:
    workflow = make({"a": agent(), "j": {"type": "join"}}, [{"from": "a", "to": "j"}])
    problem = at(check(workflow), "nodes.j")
    assert "not reached by any fan-out" in problem.message


# -- reachability and cycles -------------------------------------------------------------------


def test_unreachable_nodes_are_errors() -> None:
    workflow = make({"a": agent(), "b": agent(), "lost": agent()}, [{"from": "a", "to": "b"}])
    problem = at(check(workflow), "nodes.lost")
    assert problem.severity == "error"
    assert "cannot be reached from the entry point 'a'" in problem.message


def test_a_cycle_needs_a_loop_pattern() -> None:
    workflow = make(
        {"a": agent(), "b": agent()},
        [{"from": "a", "to": "b"}, {"from": "b", "to": "a", "condition": "again"}],
        max_iterations=5,
    )
    problems = check(workflow)
    problem = at(problems, "edges[1]")  # the edge that goes back
    assert "cycle a -> b -> a is not allowed" in problem.message
    assert "loop: true" in problem.message and "reflection" in problem.message


def test_a_loop_edge_or_reflection_allows_the_cycle_but_it_needs_an_exit() -> None:
    edges: list[dict[str, Any]] = [{"from": "a", "to": "b"}, {"from": "b", "to": "a"}]
    edges[1]["loop"] = True
    problem = at(check(make({"a": agent(), "b": agent()}, edges)), "edges[1]")
    assert "cycle a -> b -> a never ends" in problem.message
    with_exit = [*edges[:1], {"from": "b", "to": "end", "condition": "done"}, edges[1]]
    assert check(make({"a": agent(), "b": agent()}, with_exit)) == []
    reflection: list[dict[str, Any]] = [
        {"from": "a", "to": "b"},
        {"from": "b", "to": {"true": "end", "false": "a"}, "condition": "done"},
    ]
    workflow = make({"a": agent(), "b": agent()}, reflection, patterns=["reflection"])
    assert check(workflow) == []


def test_a_self_loop_is_a_cycle() -> None:
    workflow = make({"a": agent()}, [{"from": "a", "to": "a"}])
    assert "cycle a -> a is not allowed" in at(check(workflow), "edges[0]").message


def test_a_loop_mark_on_an_edge_without_cycle_is_warned() -> None:
    workflow = make({"a": agent(), "b": agent()}, [{"from": "a", "to": "b", "loop": True}])
    problem = at(check(workflow), "edges[0].loop")
    assert problem.severity == "warning" and "closes no cycle" in problem.message


def test_problems_print_with_their_location() -> None:
    assert str(WorkflowProblem("nodes.a", "bad")) == "nodes.a: bad"
    assert str(WorkflowProblem("nodes.a", "odd", "warning")) == "nodes.a: warning: odd"


# -- loading files -----------------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


GOOD_YAML = """\
name: review
nodes:
  review: {type: agent, agent: reviewer, output: review}
  check: {type: condition, expression: "'LGTM' in upper(review)"}
edges:
  - {from: review, to: check}
  - {from: check, to: {true: end, false: review}, loop: true}
entry_point: review
"""


def located(error: WorkflowValidationError) -> dict[str, str]:
    return dict(error.problems)


def test_load_a_good_file_with_yaml_boolean_keys(tmp_path: Path) -> None:
    workflow = load_workflow_file(write(tmp_path / "review.yaml", GOOD_YAML))
    assert workflow.edges[1].to == {"true": "end", "false": "review"}


def test_yaml_syntax_errors_are_located_by_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.yaml", "name: bad\nnodes:\n  a: [\n")
    with pytest.raises(WorkflowValidationError) as caught:
        load_workflow_file(path)
    ((location, message),) = caught.value.problems
    assert location.startswith("line ") and "not valid YAML" in message
    assert "subagents workflow validate" in str(caught.value)


def test_json_syntax_errors_are_located_by_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.json", '{"name": "bad",\n "nodes": }')
    with pytest.raises(WorkflowValidationError) as caught:
        load_workflow_file(path)
    assert located(caught.value) == {"line 2": "not valid JSON: Expecting value (column 11)"}


def test_model_errors_are_located_from_pydantic(tmp_path: Path) -> None:
    text = """\
nodes:
  a: {type: agent, agent: reviewer, promt: hi}
  b: {type: agnt}
  c: {agent: x}
  d: {type: condition, expression: 5}
  e: {type: tool}
edges:
  - {from: a, to: 5}
  - {frm: a, to: b}
entry_point: a
max_iterations: 0
colour: red
"""
    with pytest.raises(WorkflowValidationError) as caught:
        load_workflow_file(write(tmp_path / "model.yaml", text))
    problems = located(caught.value)
    assert "did you mean 'prompt'" in problems["nodes.a.promt"]
    assert "unknown node type 'agnt'" in problems["nodes.b.type"]
    assert "no 'type'" in problems["nodes.c.type"]
    assert "must be an expression (text)" in problems["nodes.d.expression"]
    assert "needs 'tool'" in problems["nodes.e.tool"]
    assert "node name, a list of node names" in problems["edges[0].to"]
    assert "did you mean 'from'" in problems["edges[1].frm"]
    assert "needs 'from'" in problems["edges[1].from"]
    assert "greater than or equal to 1" in problems["max_iterations"]
    assert "not a field of a workflow" in problems["colour"]
    assert caught.value.workflow == "model"  # the stem, for a file without a name


def test_graph_problems_are_reported_at_load_all_at_once(tmp_path: Path) -> None:
    text = GOOD_YAML.replace("entry_point: review", "entry_point: start").replace(
        "to: check}", "to: chek}"
    )
    with pytest.raises(WorkflowValidationError) as caught:
        load_workflow_file(write(tmp_path / "review.yaml", text))
    problems = located(caught.value)
    assert {"entry_point", "edges[0].to"} <= set(problems)
    unchecked = load_workflow_file(tmp_path / "review.yaml", check=False)
    assert unchecked.entry_point == "start"


def test_a_name_other_than_the_stem_is_kept_with_a_warning(tmp_path: Path) -> None:
    warnings: list[WorkflowProblem] = []
    workflow = load_workflow_file(write(tmp_path / "other.yaml", GOOD_YAML), warnings=warnings)
    assert workflow.name == "review"
    assert [(w.location, w.severity) for w in warnings] == [("name", "warning")]
    assert "'other'" in warnings[0].message


@pytest.mark.parametrize(
    ("content", "expected"),
    [("", "the file is empty"), ("- a\n- b\n", "the file is a list")],
)
def test_a_file_that_is_not_a_mapping(tmp_path: Path, content: str, expected: str) -> None:
    with pytest.raises(WorkflowValidationError) as caught:
        load_workflow_file(write(tmp_path / "odd.yaml", content))
    assert expected in located(caught.value)["file"]


def test_files_are_bounded(tmp_path: Path) -> None:
    big = write(tmp_path / "big.yaml", "# " + "x" * MAX_WORKFLOW_FILE_BYTES + "\n")
    with pytest.raises(WorkflowError, match="too large"):
        load_workflow_file(big)
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for level in range(1, 8):
        bomb += f"{'abcdefgh'[level]}: &{'abcdefgh'[level]} " + (
            "[" + ", ".join([f"*{'abcdefgh'[level - 1]}"] * 10) + "]\n"
        )
    with pytest.raises(WorkflowValidationError) as caught:
        load_workflow_file(write(tmp_path / "bomb.yaml", bomb))
    assert "aliases" in next(iter(located(caught.value).values()))
    with pytest.raises(WorkflowError, match="no such workflow file"):
        load_workflow_file(tmp_path / "missing.yaml")


def test_dump_round_trips(tmp_path: Path) -> None:
    workflow = review_fix_verify()
    text = dump_workflow(workflow)
    assert "from: review" in text and "description" not in text
    again = load_workflow_file(write(tmp_path / "wf.yaml", text))
    assert again == workflow


def test_a_callable_condition_cannot_be_dumped() -> None:
    workflow = make({"a": agent()}, [{"from": "a", "to": "end", "condition": lambda s: True}])
    with pytest.raises(WorkflowError, match=r"edges\[0\].condition"):
        dump_workflow(workflow)


# -- discovery ---------------------------------------------------------------------------------


def test_discovery_project_over_user_and_same_folder_conflicts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    sub = repo / "pkg"
    user_review = write(home / ".subagents" / "workflows" / "review.yaml", GOOD_YAML)
    write(home / ".subagents" / "workflows" / "solo.yml", GOOD_YAML)
    root_review = write(repo / ".subagents" / "workflows" / "review.yaml", GOOD_YAML)
    near_review = write(sub / ".subagents" / "workflows" / "review.json", "{}")
    near_yaml = write(sub / ".subagents" / "workflows" / "review.yaml", GOOD_YAML)
    write(sub / ".subagents" / "workflows" / ".hidden.yaml", GOOD_YAML)
    write(sub / ".subagents" / "workflows" / "notes.txt", "not a workflow")
    folders = workflow_folders(sub, home=home)
    assert folders[0] == home / ".subagents" / "workflows"
    assert folders[-1] == sub / ".subagents" / "workflows"
    found = discover_workflows(sub, home=home)
    assert list(found) == ["review", "solo"]
    review = found["review"]
    assert (review.path, review.scope) == (near_yaml, "project")
    assert review.overrides == (root_review, user_review)
    assert review.conflicts == (near_review,)
    assert found["solo"].scope == "user"
    assert find_workflow("review", sub, home=home) == near_yaml
    assert find_workflow(str(near_review), sub, home=home) == near_review
    with pytest.raises(WorkflowError) as caught:
        find_workflow("reveiw", sub, home=home)
    assert "available: review, solo" in caught.value.message
    assert "Did you mean 'review'" in caught.value.message
    assert caught.value.hint is not None and "workflow list" in caught.value.hint
    with pytest.raises(WorkflowError, match="no such workflow file"):
        find_workflow("missing.yaml", sub, home=home)


# -- rendering ---------------------------------------------------------------------------------


def test_mermaid_shapes_labels_and_escaping() -> None:
    workflow = make(
        {
            "a": agent(),
            "t": {"type": "tool", "tool": "Bash"},
            "c": {"type": "condition", "expression": 'x == "a|b" and y < 3'},
            "ask": {"type": "human", "question": 'Say "yes"'},
            "end_": {"type": "join"},
        },
        [
            {"from": "a", "to": "t"},
            {"from": "t", "to": "c"},
            {"from": "c", "to": {"true": "ask", "false": "a"}, "loop": True},
            {"from": "ask", "to": "end"},
        ],
    )
    diagram = to_mermaid(workflow)
    lines = diagram.splitlines()
    assert lines[0] == "flowchart TD"
    assert '    n0["a<br/>agent: reviewer"]' in lines
    assert '    n1[["t<br/>tool: Bash"]]' in lines
    assert any(line.startswith('    n2{"c<br/>condition: x == #34;a#124;b#34;') for line in lines)
    assert any(line.startswith('    n3[/"ask<br/>human: Say #34;yes#34;"/]') for line in lines)
    assert '    n4(("end_"))' in lines
    assert '    n2 -.->|"false"| n0' in lines
    assert "    n3 --> stop" in lines and "    stop([end])" in lines
    assert "a|b" not in diagram and '"yes"' not in diagram and "< 3" not in diagram


def test_text_listing_fits_the_width() -> None:
    workflow = review_fix_verify()
    text = to_text(workflow)
    assert "review  (agent: reviewer)" in text
    assert "    false -> fix  [loop]" in text
    assert all(len(line) <= 80 for line in text.splitlines())


# -- property-based: random graphs never raise -------------------------------------------------

NAMES = st.one_of(
    st.sampled_from(["a", "b", "c", "d", "j", "end", "End", "-x", "a b", "", "_"]),
    st.text(max_size=6),
)
EXPRESSIONS = st.one_of(
    st.sampled_from(
        ["x > 1", "metadata.score >= 3", "'A' in upper(last(messages).content)", "not done"]
    ),
    st.text(max_size=20),
    st.sampled_from(["{{", "}}", "__class__", "().__class__", "a" * 3000, "(" * 100]),
)
TEMPLATES = st.one_of(st.text(max_size=20), EXPRESSIONS.map(lambda e: f"x {{{{ {e} }}}} y"))


def nodes_strategy() -> st.SearchStrategy[dict[str, Any]]:
    node = st.one_of(
        st.builds(
            lambda a, p, o: {"type": "agent", "agent": a, "prompt": p, "output": o},
            st.sampled_from([*AGENTS, "nobody", "Fixer", ""]),
            st.none() | TEMPLATES,
            st.none() | st.sampled_from(["out", "messages", "_x", "a.b"]),
        ),
        st.builds(
            lambda t, arg: {"type": "tool", "tool": t, "arguments": {"x": arg, "y": [arg]}},
            st.sampled_from(["Read", "Bash", "Nope", "mcp__calc__add", "mcp__x", "mcp__"]),
            TEMPLATES,
        ),
        st.builds(lambda e: {"type": "condition", "expression": e}, EXPRESSIONS),
        st.builds(lambda q: {"type": "human", "question": q}, TEMPLATES),
        st.just({"type": "join"}),
    )
    return st.dictionaries(NAMES, node, max_size=7)


TARGETS = st.one_of(
    NAMES,
    st.lists(NAMES, max_size=4),
    st.dictionaries(st.sampled_from(["true", "false", "default", "approve", "x"]), NAMES),
)
EDGES = st.lists(
    st.fixed_dictionaries(
        {"from": NAMES, "to": TARGETS},
        optional={"condition": st.none() | EXPRESSIONS, "loop": st.booleans()},
    ),
    max_size=10,
)


@st.composite
def workflows(draw: st.DrawFn) -> Workflow:
    nodes = draw(nodes_strategy())
    entry = draw(st.one_of(NAMES, st.sampled_from(sorted(nodes) or ["a"])))
    return Workflow.model_validate(
        {
            "name": draw(NAMES),
            "nodes": nodes,
            "edges": draw(EDGES),
            "entry_point": entry,
            "patterns": draw(st.lists(st.sampled_from(["reflection", "react", "fan_out", "x"]))),
            "checkpoints": draw(st.lists(NAMES, max_size=3)),
            "schema_version": draw(st.sampled_from([0, 1, 2])),
        }
    )


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    workflows(),
    st.none() | st.just(AGENTS),
    st.none() | st.just(TOOLS),
    st.none() | st.just(["calc"]),
)
def test_random_graphs_give_located_problems_never_exceptions(
    workflow: Workflow,
    agents: dict[str, str] | None,
    tools: list[str] | None,
    servers: list[str] | None,
) -> None:
    problems = validate_workflow(workflow, agents=agents, tools=tools, mcp_servers=servers)
    assert isinstance(problems, list)
    for problem in problems:
        assert isinstance(problem, WorkflowProblem)
        assert problem.location.strip() and problem.message.strip()
        assert problem.severity in ("error", "warning")
        assert "validation stopped early" not in problem.message  # no internal exception
    # the renderings cope with any graph too
    assert to_mermaid(workflow).startswith("flowchart TD\n")
    assert all(len(line) <= 80 for line in to_text(workflow).splitlines())


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflows())
def test_random_graphs_round_trip_through_a_file(workflow: Workflow) -> None:
    text = dump_workflow(workflow)
    loaded = _load_text(text, "wf.yaml", check=False)
    assert loaded == workflow


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=12,
)
_FILE_DATA = st.fixed_dictionaries(
    {},
    optional={
        "name": _VALUES,
        "nodes": st.dictionaries(st.text(max_size=4), _VALUES, max_size=3) | _VALUES,
        "edges": st.lists(
            st.dictionaries(st.sampled_from(["from", "to", "condition", "loop"]), _VALUES),
            max_size=3,
        )
        | _VALUES,
        "entry_point": _VALUES,
        "max_iterations": _VALUES,
        "extra": _VALUES,
    },
)


def _load_text(text: str, file_name: str, *, check: bool = True) -> Workflow:
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / file_name
        path.write_text(text, encoding="utf-8")
        return load_workflow_file(path, check=check)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), _FILE_DATA.map(json.dumps)), st.booleans())
def test_any_file_loads_or_gives_located_problems(text: str, as_json: bool) -> None:
    try:
        _load_text(text, "wf.json" if as_json else "wf.yaml")
    except WorkflowValidationError as error:
        assert error.problems
        for location, message in error.problems:
            assert location.strip() and message.strip()
    except WorkflowError as error:
        assert error.hint
