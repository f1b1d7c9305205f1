"""Safe workflow conditions and templates: what they accept and evaluate, what they refuse
(always a located WorkflowConditionError), and property tests that no input escapes as any
other exception."""

from __future__ import annotations

import ast
import inspect
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subagents.errors import WorkflowConditionError
from subagents.workflows import conditions
from subagents.workflows.conditions import (
    MAX_DEPTH,
    MAX_EXPRESSION_CHARS,
    Expression,
    evaluate_condition,
    expression_problem,
    parse_expression,
    render_template,
    route_key,
    template_problems,
)
from subagents.workflows.state import WorkflowMessage, WorkflowState


def make_state() -> dict[str, Any]:
    """A state as a run would have it after a writer and a reviewer answered."""
    state = WorkflowState(
        messages=[
            WorkflowMessage("user", "Write a haiku about rain", timestamp="2025-01-01T10:00:00"),
            WorkflowMessage(
                "assistant",
                "Soft rain on the roof",
                node="write",
                name="writer",
                timestamp="2025-01-01T10:00:05",
            ),
            WorkflowMessage(
                "assistant",
                "APPROVED: lovely",
                node="review",
                name="critic",
                timestamp="2025-01-01T10:00:09",
            ),
        ],
        next_action="approve",
        current_agent="critic",
        metadata={"score": 0.8, "attempts": 2, "tags": ["poem", "short"], "by": {"x": 1}},
        extra={"draft": "  Soft Rain  ", "count": 3, "empty": [], "ratio": 1.5},
    )
    return state.as_dict()


STATE = make_state()


def value_of(text: str, state: dict[str, Any] | None = None) -> Any:
    return parse_expression(text).evaluate(STATE if state is None else state)


# --------------------------------------------------------------------------- allowed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # constants and literals
        ("'text'", "text"),
        ("42", 42),
        ("2.5", 2.5),
        ("True", True),
        ("None", None),
        ("[1, 'a', None]", [1, "a", None]),
        ("(1, 2)", [1, 2]),
        # names, key access by attribute and subscript, negative indexes
        ("next_action", "approve"),
        ("count", 3),
        ("metadata.score", 0.8),
        ("metadata['attempts']", 2),
        ("metadata.by.x", 1),
        ("metadata.tags[0]", "poem"),
        ("metadata.tags[-1]", "short"),
        ("messages[-1].content", "APPROVED: lovely"),
        ("messages[-1]['name']", "critic"),
        ("messages[0].timestamp", "2025-01-01T10:00:00"),
        ("messages[count - 2].node", "write"),
        ("metadata[current_agent]", None),
        ("metadata[next_action + '_x']", None),
        ("draft[2]", "S"),
        ("[10, 20, 30][-1]", 30),
        # comparisons
        ("count == 3", True),
        ("count != 3", False),
        ("count < 4", True),
        ("count <= 3", True),
        ("metadata.score > 0.5", True),
        ("metadata.score >= 0.9", False),
        ("1 < count < 5", True),
        ("1 < count < 2", False),
        ("'b' > 'a'", True),
        ("'poem' in metadata.tags", True),
        ("'novel' not in metadata.tags", True),
        ("'score' in metadata", True),
        ("'APPROVED' in messages[-1].content", True),
        ("routing_key is None", True),
        ("next_action is not None", True),
        ("next_action in ['approve', 'modify']", True),
        ("next_action in ('reject',)", False),
        # boolean operators: short-circuit, Python values
        ("next_action == 'approve' and metadata.score >= 0.7", True),
        ("count > 5 or next_action", "approve"),
        ("missing or 'fallback'", "fallback"),
        ("empty and missing.x", []),
        ("not empty", True),
        ("not (count > 1 and ratio < 1)", True),
        # arithmetic
        ("-count", -3),
        ("-1.5 + ratio", 0.0),
        ("count + 1 - 10", -6),
        ("'a' + 'b'", "ab"),
        ("next_action + '!'", "approve!"),
        # functions
        ("len(messages)", 3),
        ("len(draft)", 13),
        ("len(metadata)", 4),
        ("lower(next_action) == 'approve'", True),
        ("upper(next_action)", "APPROVE"),
        ("strip(draft)", "Soft Rain"),
        ("str(count)", "3"),
        ("str(missing)", ""),
        ("str(metadata.tags)", '["poem", "short"]'),
        ("int('7') + int(2.9) + int(True)", 10),
        ("float('0.25')", 0.25),
        ("bool(empty)", False),
        ("bool(draft)", True),
        ("startswith(messages[-1].content, 'APPROVED')", True),
        ("endswith(messages[-1].content, 'lovely')", True),
        ("contains(metadata.tags, 'poem')", True),
        ("contains(missing, 'poem')", False),
        ("contains(draft, 'Rain')", True),
        ("last(messages)['name']", "critic"),
        ("last(empty)", None),
        ("last(missing)", None),
        ("get(metadata, 'score')", 0.8),
        ("get(metadata, 'nope')", None),
        ("get(metadata, 'nope', 5)", 5),
        ("get(metadata, 'nope', default='d')", "d"),
        ("get(messages, -1)['role']", "assistant"),
    ],
)
def test_allowed_constructs_evaluate(text: str, expected: Any) -> None:
    assert value_of(text) == expected


def test_whitespace_newlines_in_brackets_and_comments_are_fine() -> None:
    assert value_of("  count == 3  ") is True
    assert value_of("(count\n  + 1)") == 4
    assert value_of("count  # the number of drafts") == 3


@pytest.mark.parametrize(
    "text",
    [
        "missing",
        "missing.key",
        "missing.a.b[0]",
        "metadata.nope",
        "metadata['nope'].deeper",
        "messages[99]",
        "messages[-99].content",
        "messages.content",  # key access on a list
        "next_action.key",  # key access on a string
        "count.x",  # key access on a number
        "messages['role']",
        "draft[100]",
        "metadata.tags[True]",
    ],
)
def test_missing_fields_keys_and_indexes_read_as_none(text: str) -> None:
    assert value_of(text) is None


def test_names_lists_the_state_fields_read() -> None:
    expression = parse_expression(
        "len(messages) > 2 and get(metadata, key) == lower(next_action) or draft[index]"
    )
    assert expression.names() == {"messages", "metadata", "key", "next_action", "draft", "index"}
    assert parse_expression("len('x')").names() == set()


def test_expression_is_reusable_and_keeps_its_text() -> None:
    expression = parse_expression("count + 1")
    assert isinstance(expression, Expression)
    assert expression.text == "count + 1"
    assert isinstance(expression.tree, ast.Expression)
    assert expression.evaluate({"count": 1}) == 2
    assert expression.evaluate({"count": 5}) == 6
    assert "count + 1" in repr(expression)


# --------------------------------------------------------------------------- refused


@pytest.mark.parametrize(
    ("text", "says", "at"),
    [
        ("eval('1')", "calling eval() is not allowed", "eval"),
        ("open('/etc/passwd')", "calling open()", "open"),
        ("__import__('os').system('id')", "method calls", "__import__"),
        ("__import__('os')", "starting with '_'", "__import__"),
        ("__class__", "starting with '_'", "__class__"),
        ("metadata.__class__", "starting with '_'", "__class__"),
        ("().__class__", "starting with '_'", "__class__"),
        ("().__class__.__bases__[0].__subclasses__()", "method calls", "()"),
        ("(().__class__.__bases__[0].__subclasses__)", "starting with '_'", "__subclasses__"),
        ("metadata['__dict__']", "starting with '_'", "'__dict__'"),
        ("metadata['_private']", "starting with '_'", "'_private'"),
        ("get(metadata, '_k')", "starting with '_'", "'_k'"),
        ("_hidden == 1", "starting with '_'", "_hidden"),
        ("len(draft).real", "not of a function's result", "len"),
        ("last(messages).content", "not of a function's result", "last"),
        ("'abc'.upper", "not of a literal", "'abc'"),
        ("draft.lower()", "method calls are not allowed", "draft"),
        ("metadata.get('x')", "method calls", "metadata"),
        ("lambda: 1", "lambda", "lambda"),
        ("[m for m in messages]", "comprehensions", "[m"),
        ("{k: 1 for k in messages}", "comprehensions", "{k"),
        ("any(m for m in messages)", "calling any()", "any"),
        ("import os", "not a valid expression", "import"),
        ("(n := 5)", "assignment expressions", "n :="),
        ("f'{draft}'", "f-strings", "f'"),
        ("2 ** 64", "the operator **", "2 **"),
        ("count * 2", "the operator *", "count"),
        ("count / 2", "the operator /", "count"),
        ("[*messages]", "starred", "*messages"),
        ("len(*messages)", "starred", "*messages"),
        ("get(**metadata)", "'**' arguments", "**metadata"),
        ("len(x=draft)", "no keyword argument x=", "x=draft"),
        ("len(draft, draft)", "takes 1 argument(s), got 2", "len"),
        ("get(metadata)", "takes 2 to 3 argument(s), got 1", "get"),
        ("{'a': 1}", "dict literals", "{'a'"),
        ("{1, 2}", "set literals", "{1"),
        ("1 if count else 2", "conditional expressions", "1 if"),
        ("draft[1:3]", "slices", "1:3"),
        ("count is 3", "only compare with None", "3"),
        ("~count", "unary operator ~", "~"),
        ("+count", "unary operator +", "+"),
        ("b'bytes'", "bytes constants", "b'"),
        ("1j", "complex constants", "1j"),
        ("...", "ellipsis constants", "..."),
        ("10 ** 19", "the operator **", "10"),
        ("10000000000000000000", "outside ±10**18", "1000"),
        ("count = 3", "not a valid expression", "= 3"),
        ("a; b", "not a valid expression", "; b"),
        ("", "empty", ""),
        ("   ", "empty", ""),
        ("count ==", "not a valid expression", ""),
        ("len(", "not a valid expression", "("),
        ("a\x00b", "NUL", "\x00"),
    ],
)
def test_refused_constructs_name_the_problem_and_where(text: str, says: str, at: str) -> None:
    with pytest.raises(WorkflowConditionError) as caught:
        parse_expression(text)
    error = caught.value
    assert says in error.message
    assert error.expression == text
    assert error.position is not None and 0 <= error.position <= len(text)
    assert text[error.position :].startswith(at), (error.position, text[error.position :])
    assert error.hint and "allowed" in error.hint
    assert expression_problem(text) == f"{error.message} (at character {error.position})"


def test_positions_count_characters_not_bytes() -> None:
    text = "'éü' == draft and x.__y"
    with pytest.raises(WorkflowConditionError) as caught:
        parse_expression(text)
    assert caught.value.position == text.index("__y")
    text = "('ö'\n  + metadata['_k'])"
    with pytest.raises(WorkflowConditionError) as caught:
        parse_expression(text)
    assert caught.value.position == text.index("'_k'")
    text = "  \n  len(ø, "
    with pytest.raises(WorkflowConditionError) as caught:
        parse_expression(text)
    assert caught.value.position == text.index("(")


def test_too_long_is_refused() -> None:
    text = " or ".join(["count == 1"] * 200)
    assert len(text) > MAX_EXPRESSION_CHARS
    with pytest.raises(WorkflowConditionError, match="2,000 allowed") as caught:
        parse_expression(text)
    assert caught.value.position == MAX_EXPRESSION_CHARS
    parse_expression(text[:MAX_EXPRESSION_CHARS].rsplit(" or ", 1)[0])  # just under: fine


@pytest.mark.parametrize(
    "text",
    [
        "-" * (MAX_DEPTH + 1) + "1",
        "not " * (MAX_DEPTH + 1) + "x",
        "a" + ".b" * (MAX_DEPTH + 1),
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
        "len(" * (MAX_DEPTH + 1) + "x" + ")" * (MAX_DEPTH + 1),
        "[" * 400 + "]" * 400,  # the Python parser's own limit
        "-" * 1999 + "1",
    ],
)
def test_too_deep_is_refused(text: str) -> None:
    with pytest.raises(WorkflowConditionError, match=r"nested|too deep") as caught:
        parse_expression(text)
    assert caught.value.position is not None


def test_depth_at_the_limit_is_fine() -> None:
    assert value_of("(" * 150 + "1" + ")" * 150) == 1  # parentheses do not deepen the tree
    assert value_of("-" * (MAX_DEPTH - 1) + "1") == -1
    assert value_of("a" + ".b" * (MAX_DEPTH - 1), {"a": None}) is None


def test_the_module_never_evals_execs_or_compiles() -> None:
    tree = ast.parse(inspect.getsource(conditions))
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not called & {"eval", "exec", "compile", "__import__", "setattr", "delattr"}
    # getattr only ever reads a fixed attribute (ast positions, a callable's __qualname__)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr":
            assert isinstance(node.args[1], ast.Constant)


# --------------------------------------------------------------------------- runtime errors


@pytest.mark.parametrize(
    ("text", "says", "at"),
    [
        ("None > 3", "cannot compare None > int", "None"),
        ("missing > 3", "cannot compare None > int", "missing"),
        ("1 < count < missing", "cannot compare int < None", "count"),
        ("[1] < [2]", "cannot compare list < list", "[1]"),
        ("True < 2", "cannot compare bool < int", "True"),
        ("len(5)", "len() needs a string, list or dict, got int", "len"),
        ("len(missing)", "got None", "len"),
        ("'a' - 1", "cannot apply - to str and int", "'a'"),
        ("count + '1'", "cannot apply + to int and str", "count"),
        ("True + 1", "cannot apply + to bool and int", "True"),
        ("metadata.tags + ['x']", "cannot apply + to list and list", "metadata"),
        ("-draft", "unary - to str", "-draft"),
        ("'a' in count", "'in' needs a string, list or dict, got int", "'a'"),
        ("'a' not in missing", "'not in' needs a string, list or dict, got None", "'a'"),
        ("1 in draft", "needs a string to look for, got int", "1"),
        ("[1] in metadata", "a list cannot be a key", "[1]"),
        ("metadata[[1]]", "a list cannot be a key", "metadata"),
        ("messages[-1][lower('_X')]", "starting with '_'", "messages"),
        ("lower(count)", "lower() needs a string, got int", "lower"),
        ("strip(None)", "strip() needs a string, got None", "strip"),
        ("startswith(1, 'a')", "startswith() needs a string", "startswith"),
        ("endswith(draft, 1)", "endswith() needs a string", "endswith"),
        ("int('abc')", "int() cannot read 'abc'", "int"),
        ("int(missing)", "int() needs a number or a string, got None", "int"),
        ("float('x')", "float() cannot read 'x'", "float"),
        ("float([1])", "float() needs a number", "float"),
        ("contains(count, 1)", "contains() needs a string, list or dict, got int", "contains"),
        ("last(metadata)", "last() needs a list or string, got dict", "last"),
    ],
)
def test_wrong_types_at_runtime_are_located_errors(text: str, says: str, at: str) -> None:
    expression = parse_expression(text)
    with pytest.raises(WorkflowConditionError) as caught:
        expression.evaluate(STATE)
    error = caught.value
    assert says in error.message
    assert error.expression == text
    assert error.position is not None
    assert text[error.position :].startswith(at), (error.position, text[error.position :])
    assert error.hint


def test_computed_underscore_keys_are_refused() -> None:
    with pytest.raises(WorkflowConditionError, match="starting with '_'"):
        value_of("metadata[key]", {"metadata": {"_k": 1}, "key": "_k"})


def test_results_are_bounded() -> None:
    big = "x" * 60_000
    with pytest.raises(WorkflowConditionError, match="100,000 characters"):
        value_of("big + big", {"big": big})
    assert len(value_of("big + 'y'", {"big": big})) == 60_001
    with pytest.raises(WorkflowConditionError, match=r"outside ±10\*\*18"):
        value_of("n + n", {"n": 10**18})
    with pytest.raises(WorkflowConditionError, match=r"outside ±10\*\*18"):
        value_of("-n - 2", {"n": 10**18})
    with pytest.raises(WorkflowConditionError, match=r"outside ±10\*\*18"):
        value_of("int(digits)", {"digits": "1" * 30})
    with pytest.raises(WorkflowConditionError, match="cannot convert"):
        value_of("int(x)", {"x": float("inf")})
    assert value_of("n - 1", {"n": 10**18}) == 10**18 - 1


def test_objects_that_misbehave_in_a_code_built_state_become_errors() -> None:
    class Touchy:
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no comparing me")

        __hash__ = object.__hash__

    with pytest.raises(WorkflowConditionError, match="RuntimeError: no comparing me") as caught:
        value_of("1 == thing", {"thing": Touchy()})
    assert caught.value.position == 0


# --------------------------------------------------------------------------- conditions


def test_evaluate_condition_with_an_expression() -> None:
    assert evaluate_condition("metadata.score >= 0.7", STATE) is True
    assert evaluate_condition("metadata.score >= 0.7", {"metadata": {"score": 0.1}}) is False
    with pytest.raises(WorkflowConditionError, match="calling foo"):
        evaluate_condition("foo()", STATE)


def test_evaluate_condition_caches_parsed_expressions_within_a_bound() -> None:
    conditions._cached_expression.cache_clear()
    for _ in range(3):
        evaluate_condition("count == 3", STATE)
    info = conditions._cached_expression.cache_info()
    assert (info.hits, info.misses) == (2, 1)
    for index in range(300):
        evaluate_condition(f"count == {index}", STATE)
    assert conditions._cached_expression.cache_info().currsize <= 256


def test_evaluate_condition_with_a_callable_gets_a_copy() -> None:
    seen: list[dict[str, Any]] = []

    def decide(state: dict[str, Any]) -> str:
        seen.append(state)
        state["next_action"] = "changed"
        return "yes" if state["count"] == 3 else "no"

    assert evaluate_condition(decide, STATE) == "yes"
    assert STATE["next_action"] == "approve"
    assert seen[0] is not STATE


def test_a_callable_that_raises_becomes_a_condition_error() -> None:
    def broken(state: dict[str, Any]) -> bool:
        raise ValueError("boom")

    with pytest.raises(WorkflowConditionError) as caught:
        evaluate_condition(broken, STATE)
    assert "the condition function" in caught.value.message
    assert "broken raised ValueError: boom" in caught.value.message
    assert isinstance(caught.value.__cause__, ValueError)


def test_a_condition_that_is_neither_text_nor_callable_is_an_error() -> None:
    with pytest.raises(WorkflowConditionError, match="got int"):
        evaluate_condition(5, STATE)  # type: ignore[arg-type]
    with pytest.raises(WorkflowConditionError, match="must be text"):
        parse_expression(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "key"),
    [
        (True, "true"),
        (False, "false"),
        (None, "none"),
        (3, "3"),
        (0, "0"),
        (2.5, "2.5"),
        ("approve", "approve"),
        ("  approved \n", "approved"),
        ("", ""),
        ([1, 2], "[1, 2]"),
    ],
)
def test_route_key(value: Any, key: str) -> None:
    assert route_key(value) == key


def test_route_key_survives_objects_whose_str_raises() -> None:
    class Opaque:
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert route_key(Opaque()) == "Opaque"


# --------------------------------------------------------------------------- templates


def test_render_template_replaces_placeholders() -> None:
    template = (
        "Review this ({{ len(messages) }} messages, score {{metadata.score}}):\n"
        "{{ messages[-2].content }}{{ missing }} tags={{ metadata.tags }} by={{ metadata.by }}"
        " ok={{ next_action == 'approve' }}"
    )
    assert render_template(template, STATE) == (
        "Review this (3 messages, score 0.8):\n"
        'Soft rain on the roof tags=["poem", "short"] by={"x": 1} ok=True'
    )


def test_render_template_keeps_text_and_writes_unicode_json() -> None:
    assert render_template("no placeholders } { }} here", STATE) == "no placeholders } { }} here"
    assert render_template("", STATE) == ""
    assert render_template("{{ x }}", {"x": {"name": "Zoë"}}) == '{"name": "Zoë"}'
    assert render_template("[{{ x }}]", {"x": None}) == "[]"


def test_unclosed_placeholder_is_located() -> None:
    template = "Hello {{ name }} and {{ other"
    with pytest.raises(WorkflowConditionError, match="never closed") as caught:
        render_template(template, STATE)
    assert caught.value.position == template.rindex("{{")
    assert caught.value.expression == template


def test_placeholder_errors_are_located_in_the_template() -> None:
    template = "A {{ count }} B {{ draft.lower() }}"
    with pytest.raises(WorkflowConditionError, match="method calls") as caught:
        render_template(template, STATE)
    assert caught.value.expression == template
    assert caught.value.position == template.index("draft.lower")
    template = "x {{ missing > 1 }}"
    with pytest.raises(WorkflowConditionError, match="cannot compare") as caught:
        render_template(template, STATE)
    assert caught.value.position == template.index("missing")


def test_rendered_output_is_capped_never_truncated() -> None:
    state = {"big": "x" * 90_000}
    assert len(render_template("{{ big }}{{ big }}", state)) == 180_000
    with pytest.raises(WorkflowConditionError, match="200,000 characters"):
        render_template("{{ big }}{{ big }}{{ big }}", state)
    with pytest.raises(WorkflowConditionError, match="200,000 characters"):
        render_template("y" * 200_001, state)


def test_template_problems_lists_every_problem() -> None:
    assert template_problems("fine {{ count }} and {{ get(metadata, 'k', 1) }}") == []
    assert template_problems("no placeholders") == []
    template = "a {{ foo() }} b {{ x.__y }} c {{ }} d {{ unclosed"
    problems = template_problems(template)
    assert len(problems) == 4
    assert "calling foo()" in problems[0]
    assert f"(at character {template.index('foo')})" in problems[0]
    assert "__y" in problems[1] and f"(at character {template.index('__y')})" in problems[1]
    assert "empty" in problems[2]
    assert "never closed" in problems[3]
    assert f"(at character {template.rindex('{{')})" in problems[3]


def test_expression_problem() -> None:
    assert expression_problem("metadata.score > 0.5") is None
    problem = expression_problem("x.y()")
    assert problem is not None and "method calls" in problem and "(at character 0)" in problem


# --------------------------------------------------------------------------- properties

PYTHONISH = st.lists(
    st.sampled_from(
        [
            *"abxy_.()[]{}'\"0123456789+-*/<>=!,: \n\\é#@%~",
            *["len", "get", "not ", " and ", " or ", " in ", " is ", "None", "lambda"],
            *["__", "f'", "**", "messages", "metadata"],
        ]
    ),
    max_size=40,
).map("".join)


def assert_located(error: WorkflowConditionError, text: str) -> None:
    assert error.position is not None
    assert 0 <= error.position <= len(text)
    assert not error.message.startswith(conditions._UNEXPECTED), error.message


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(text=st.one_of(st.text(max_size=120), PYTHONISH))
def test_any_text_parses_or_is_refused_with_a_position(text: str) -> None:
    try:
        expression = parse_expression(text)
    except WorkflowConditionError as error:
        assert_located(error, text)
        assert expression_problem(text) is not None
    else:
        assert isinstance(expression.names(), set)
        assert expression_problem(text) is None


FIELDS = ["messages", "metadata", "next_action", "count", "draft", "missing"]

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**19), 10**19)
    | st.floats(allow_nan=True)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["a", "b", "role", "content", "_x"]), children, max_size=4
        )
    ),
    max_leaves=12,
)

STATES = st.dictionaries(st.sampled_from(FIELDS), JSON_VALUES, max_size=6)

ATOMS = st.one_of(
    st.sampled_from(FIELDS),
    st.integers(-(10**18), 10**18).map(str),
    st.sampled_from(["0.5", "-1", "'a'", "'content'", "''", "None", "True", "False", "[]"]),
)


def _grow(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    pair = st.tuples(children, children)
    key_access = st.one_of(
        st.sampled_from([".a", ".content", ".role", "[0]", "[-1]", "['b']"]),
        children.map(lambda x: f"[{x}]"),
    )
    return st.one_of(
        st.tuples(st.sampled_from(FIELDS), st.lists(key_access, min_size=1, max_size=3)).map(
            lambda p: p[0] + "".join(p[1])
        ),
        children.map(lambda x: f"({x}).a"),
        pair.map(lambda p: f"({p[0]})[{p[1]}]"),
        st.tuples(children, children, st.sampled_from(["==", "!=", "<", "<=", ">", ">="])).map(
            lambda p: f"({p[0]}) {p[2]} ({p[1]})"
        ),
        pair.map(lambda p: f"({p[0]}) in ({p[1]})"),
        pair.map(lambda p: f"({p[0]}) not in ({p[1]})"),
        children.map(lambda x: f"({x}) is None"),
        pair.map(lambda p: f"({p[0]}) and ({p[1]})"),
        pair.map(lambda p: f"({p[0]}) or ({p[1]})"),
        children.map(lambda x: f"not ({x})"),
        children.map(lambda x: f"-({x})"),
        pair.map(lambda p: f"({p[0]}) + ({p[1]})"),
        pair.map(lambda p: f"({p[0]}) - ({p[1]})"),
        pair.map(lambda p: f"[{p[0]}, {p[1]}]"),
        st.tuples(
            st.sampled_from(["len", "lower", "upper", "strip", "str", "int", "float", "bool"]),
            children,
        ).map(lambda p: f"{p[0]}({p[1]})"),
        st.tuples(st.sampled_from(["startswith", "endswith", "contains", "get"]), pair).map(
            lambda p: f"{p[0]}({p[1][0]}, {p[1][1]})"
        ),
        children.map(lambda x: f"last({x})"),
        st.tuples(children, children, children).map(lambda p: f"get({p[0]}, {p[1]}, {p[2]})"),
    )


EXPRESSIONS = st.recursive(ATOMS, _grow, max_leaves=12)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(text=EXPRESSIONS, state=STATES)
def test_well_formed_expressions_evaluate_or_fail_cleanly(text: str, state: dict[str, Any]) -> None:
    try:
        expression = parse_expression(text)
    except WorkflowConditionError as error:  # too deep, too long, or '.a' on a call or literal
        assert_located(error, text)
        assert any(reason in error.message for reason in ("nested", "2,000", "only reads a key")), (
            error.message
        )
        return
    assert expression.names() <= set(FIELDS)
    try:
        value = expression.evaluate(state)
    except WorkflowConditionError as error:
        assert_located(error, text)
    else:
        route_key(value)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    template=st.one_of(
        st.text(max_size=120),
        st.lists(st.one_of(st.text(max_size=10), st.just("{{"), st.just("}}"), PYTHONISH)).map(
            "".join
        ),
    ),
    state=STATES,
)
def test_render_template_never_raises_anything_else(template: str, state: dict[str, Any]) -> None:
    problems = template_problems(template)
    try:
        rendered = render_template(template, state)
    except WorkflowConditionError as error:
        assert error.position is not None and 0 <= error.position <= len(template)
        assert not error.message.startswith(conditions._UNEXPECTED), error.message
    else:
        assert problems == []
        assert isinstance(rendered, str)
        if "{{" not in template:
            assert rendered == template


@settings(max_examples=200, deadline=None)
@given(value=st.one_of(JSON_VALUES, st.builds(object), st.complex_numbers(), st.binary()))
def test_route_key_is_total(value: Any) -> None:
    key = route_key(value)
    assert isinstance(key, str)
    assert key == key.strip()
