"""Safe conditions and templates over a workflow's state.

Workflow files come from repositories and other people, so a condition is never Python code: it
is parsed with :func:`ast.parse` and only a small whitelist of node types is accepted, then a
tiny interpreter below walks the tree. Nothing is ever handed to ``eval``, ``exec`` or
``compile``, there is no attribute access on Python objects (``a.b`` is a *key* lookup in a
dict) and no name, key or attribute may start with ``_``, so the usual sandbox escapes
(``().__class__.__mro__``, ``x.format``) have nothing to hold on to.

What an expression may contain:

- constants (strings, numbers, ``True``/``False``/``None``) and ``[...]`` / ``(...)`` lists;
- names, which read top-level state fields (a field not set yet reads as ``None``);
- key access: ``metadata.score``, ``metadata["score"]``, ``messages[-1].content``;
- comparisons ``== != < <= > >= in``, ``not in``, ``is None`` / ``is not None``;
- ``and``, ``or``, ``not``, unary ``-``, ``+`` on numbers or strings, ``-`` on numbers;
- calls, by bare name, of ``len lower upper strip str int float bool startswith endswith
  contains last get``.

Untrusted input is bounded: an expression has at most 2,000 characters and 32 levels, a string
built with ``+`` at most 100,000 characters, an integer stays within ±10**18, and a rendered
template at most 200,000 characters. Every refusal and every failure on the state is a
:class:`~subagents.errors.WorkflowConditionError` with the expression and the 0-based character
``position`` of the problem.

Templates are text with ``{{ expression }}`` placeholders; see :func:`render_template`.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar, cast

from subagents.errors import WorkflowConditionError
from subagents.workflows.graph import Condition

__all__ = [
    "ALLOWED_FUNCTIONS",
    "MAX_DEPTH",
    "MAX_EXPRESSION_CHARS",
    "MAX_INT",
    "MAX_RENDERED_CHARS",
    "MAX_STRING_CHARS",
    "Expression",
    "evaluate_condition",
    "expression_problem",
    "parse_expression",
    "render_template",
    "route_key",
    "template_problems",
]

MAX_EXPRESSION_CHARS = 2_000
"""Longest expression text accepted (each template placeholder counts on its own)."""

MAX_DEPTH = 32
"""Deepest expression tree accepted; keeps the interpreter's recursion small and bounded."""

MAX_STRING_CHARS = 100_000
"""Longest string ``+`` may build, so a loop of concatenations cannot eat the memory."""

MAX_INT = 10**18
"""Integers computed by an expression stay within ``±MAX_INT``."""

MAX_RENDERED_CHARS = 200_000
"""Longest text a template may render to; longer is an error, never a silent cut."""

_CACHE_SIZE = 256

_ALLOWED_HINT = (
    "allowed: fields and constants, key access (a.b, a['k'], a[-1]), comparisons "
    "(== != < <= > >= in, not in, is None, is not None), and/or/not, + and -, [lists], "
    "and the functions len, lower, upper, strip, str, int, float, bool, startswith, endswith, "
    "contains, last, get"
)
_RUNTIME_HINT = (
    "check the field's type, or guard it (for example 'x is not None and x > 3'); "
    "a field that is not set reads as None"
)

_UNEXPECTED = "unexpected failure:"
"""Prefix of the message for an exception the interpreter did not foresee (e.g. a Python
object in a code-built state whose ``==`` raises); tests check it never shows on plain data."""


# --------------------------------------------------------------------------- positions


class _Locator:
    """Turns an AST position (line, UTF-8 byte column) into a 0-based character offset in the
    original text, which is what an editor or an error caret needs."""

    __slots__ = ("_lead", "_lines")

    def __init__(self, parsed: str, lead: int) -> None:
        self._lead = lead
        starts = [0]
        # compile() treats \r\n, \r and \n alike as line ends, so line numbers count all three
        starts.extend(match.end() for match in re.finditer(r"\r\n|\r|\n", parsed))
        ends = [*starts[1:], len(parsed)]
        self._lines = [(start, parsed[start:end]) for start, end in zip(starts, ends, strict=True)]

    def at_line(self, lineno: int | None, column: int) -> int:
        """``column`` counted in characters on line ``lineno`` (1-based)."""
        if not lineno or lineno > len(self._lines):
            return self._lead
        return self._lead + self._lines[lineno - 1][0] + max(column, 0)

    def at_bytes(self, lineno: int | None, byte_column: int | None) -> int:
        """``byte_column`` is a UTF-8 byte offset, as in ``ast`` nodes."""
        if not lineno or lineno > len(self._lines) or byte_column is None:
            return self._lead
        line = self._lines[lineno - 1][1]
        head = line.encode("utf-8", "surrogatepass")[:byte_column]
        return self.at_line(lineno, len(head.decode("utf-8", "ignore")))

    def of(self, node: ast.AST) -> int:
        return self.at_bytes(getattr(node, "lineno", None), getattr(node, "col_offset", None))

    def end_of(self, node: ast.AST) -> int:
        return self.at_bytes(
            getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
        )


# --------------------------------------------------------------------------- parsing


class Expression:
    """A parsed, whitelisted expression: build it with :func:`parse_expression`, evaluate it
    as often as needed (it keeps no state between evaluations, so it is safe to share)."""

    __slots__ = ("_locator", "text", "tree")

    def __init__(self, text: str, tree: ast.Expression, locator: _Locator) -> None:
        self.text = text
        self.tree = tree
        self._locator = locator

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"

    def evaluate(self, state: Mapping[str, Any]) -> Any:
        """The expression's value over ``state`` (see the module docstring for the rules)."""
        return _Evaluator(self, state).value(self.tree.body)

    def names(self) -> set[str]:
        """The top-level state fields the expression reads (function names excluded), so a
        validator can warn about fields no node ever sets."""
        called = {id(node.func) for node in ast.walk(self.tree) if isinstance(node, ast.Call)}
        return {
            node.id
            for node in ast.walk(self.tree)
            if isinstance(node, ast.Name) and id(node) not in called
        }

    def position(self, node: ast.AST) -> int:
        """The 0-based character offset of ``node`` in :attr:`text`."""
        return self._locator.of(node)

    def error(
        self, message: str, node: ast.AST, hint: str = _RUNTIME_HINT
    ) -> WorkflowConditionError:
        """The error for a failure at ``node``, so the caller can point at the culprit."""
        return WorkflowConditionError(
            message, expression=self.text, position=self.position(node), hint=hint
        )


def parse_expression(text: str) -> Expression:
    """Parse ``text`` and check every node against the whitelist.

    Raises :class:`WorkflowConditionError` (and nothing else, whatever the text) naming what is
    not allowed, where, and what is.
    """
    if not isinstance(cast(object, text), str):  # files may hold anything
        raise WorkflowConditionError(
            f"an expression must be text, got {_type_name(text)}", position=0, hint=_ALLOWED_HINT
        )
    if len(text) > MAX_EXPRESSION_CHARS:
        raise WorkflowConditionError(
            f"the expression is {len(text):,} characters long, more than the "
            f"{MAX_EXPRESSION_CHARS:,} allowed",
            expression=text,
            position=MAX_EXPRESSION_CHARS,
            hint="split it, or compute the value in a tool or agent node",
        )
    # compile() refuses leading indentation; a condition written as ' x' is still fine
    stripped = text.lstrip(" \t\r\n\f\v")
    locator = _Locator(stripped, len(text) - len(stripped))
    tree = _parse_tree(text, stripped, locator)
    _Checker(text, locator).check(tree.body, 1)
    return Expression(text, tree, locator)


def _parse_tree(text: str, stripped: str, locator: _Locator) -> ast.Expression:
    """``ast.parse`` in eval mode, every way it can fail turned into a located error."""

    def refuse(message: str, position: int) -> WorkflowConditionError:
        return WorkflowConditionError(
            message, expression=text, position=min(position, len(text)), hint=_ALLOWED_HINT
        )

    if not stripped.strip():
        raise refuse("the expression is empty", len(text))
    try:
        with warnings.catch_warnings():
            # SyntaxWarning / DeprecationWarning about the user's text are noise here
            warnings.simplefilter("ignore")
            return ast.parse(stripped, mode="eval")
    except SyntaxError as error:
        if error.offset is None and "\x00" in text:
            raise refuse("the expression contains a NUL character", text.index("\x00")) from None
        position = locator.at_line(error.lineno, (error.offset or 1) - 1)
        raise refuse(f"not a valid expression: {error.msg}", position) from None
    except (RecursionError, MemoryError):
        raise refuse("the expression is nested too deeply", 0) from None
    except (ValueError, OverflowError) as error:  # e.g. surrogates that cannot be encoded
        raise refuse(f"the expression cannot be read: {error}", 0) from None


_FUNCTION_ARITY: dict[str, tuple[int, int]] = {
    "len": (1, 1),
    "lower": (1, 1),
    "upper": (1, 1),
    "strip": (1, 1),
    "str": (1, 1),
    "int": (1, 1),
    "float": (1, 1),
    "bool": (1, 1),
    "startswith": (2, 2),
    "endswith": (2, 2),
    "contains": (2, 2),
    "last": (1, 1),
    "get": (2, 3),
}

ALLOWED_FUNCTIONS = tuple(_FUNCTION_ARITY)
"""The functions an expression may call, by bare name."""

_REFUSED_NODES: dict[type[ast.AST], str] = {
    ast.Lambda: "lambda",
    ast.ListComp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.GeneratorExp: "generator expressions",
    ast.JoinedStr: "f-strings",
    ast.FormattedValue: "f-strings",
    ast.NamedExpr: "assignment expressions (:=)",
    ast.Starred: "starred expressions (*x)",
    ast.Dict: "dict literals",
    ast.Set: "set literals",
    ast.IfExp: "conditional expressions (x if c else y)",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Slice: "slices (a[1:2])",
}


class _Checker:
    """Walks a freshly parsed tree and refuses anything outside the whitelist; also bounds
    the depth, which is what keeps :class:`_Evaluator`'s recursion safe."""

    def __init__(self, text: str, locator: _Locator) -> None:
        self._text = text
        self._locator = locator

    def refusal(
        self, message: str, node: ast.AST, position: int | None = None
    ) -> WorkflowConditionError:
        """The error for ``node``; callers raise it, so every refusal reads as a ``raise``."""
        return WorkflowConditionError(
            message,
            expression=self._text,
            position=self._locator.of(node) if position is None else position,
            hint=_ALLOWED_HINT,
        )

    def check(self, node: ast.expr, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self.refusal(f"the expression is nested more than {MAX_DEPTH} levels deep", node)
        if isinstance(node, ast.Constant):
            self._constant(node)
        elif isinstance(node, ast.Name):
            self._name(node.id, node)
        elif isinstance(node, ast.Attribute):
            self._attribute(node, depth)
        elif isinstance(node, ast.Subscript):
            self._subscript(node, depth)
        elif isinstance(node, ast.Compare):
            self._compare(node, depth)
        elif isinstance(node, ast.BoolOp):
            self._children(node.values, depth)
        elif isinstance(node, ast.UnaryOp):
            self._unary(node, depth)
        elif isinstance(node, ast.BinOp):
            self._binary(node, depth)
        elif isinstance(node, ast.List | ast.Tuple):
            self._children(node.elts, depth)
        elif isinstance(node, ast.Call):
            self._call(node, depth)
        else:
            what = _REFUSED_NODES.get(type(node), type(node).__name__)
            raise self.refusal(f"not allowed in a condition: {what}", node)

    def _children(self, nodes: list[ast.expr], depth: int) -> None:
        for child in nodes:
            self.check(child, depth + 1)

    def _constant(self, node: ast.Constant) -> None:
        value = node.value
        if value is None or isinstance(value, str | bool | float):
            return
        if isinstance(value, int):
            if abs(value) > MAX_INT:
                raise self.refusal(f"the number {value} is outside ±10**18", node)
            return
        raise self.refusal(f"{_type_name(value)} constants are not allowed", node)

    def _name(self, name: str, node: ast.AST, position: int | None = None) -> None:
        if name.startswith("_"):
            raise self.refusal(
                f"names, keys and attributes starting with '_' are not allowed: {name}",
                node,
                position,
            )

    def _attribute(self, node: ast.Attribute, depth: int) -> None:
        # the name sits at the end of the node: point at it, not at the start of 'a.b.c'
        self._name(node.attr, node, self._locator.end_of(node) - len(node.attr))
        if isinstance(node.value, ast.Call | ast.Constant | ast.List | ast.Tuple):
            # '.x' reads a key of a field's value; on a call's result or a literal it would
            # look like Python attribute access, the shape of every sandbox escape
            raise self.refusal(
                f"'.{node.attr}' only reads a key of a field's value, not of "
                f"{_node_kind(node.value)} (use get(value, key) or value[key])",
                node,
            )
        self.check(node.value, depth + 1)

    def _subscript(self, node: ast.Subscript, depth: int) -> None:
        index = node.slice
        if isinstance(index, ast.Constant) and isinstance(index.value, str):
            self._name(index.value, index)
        self.check(node.value, depth + 1)
        self.check(index, depth + 1)

    def _compare(self, node: ast.Compare, depth: int) -> None:
        for comparison, right in zip(node.ops, node.comparators, strict=True):
            is_none = isinstance(right, ast.Constant) and right.value is None
            if isinstance(comparison, ast.Is | ast.IsNot) and not is_none:
                raise self.refusal("'is' and 'is not' may only compare with None", right)
        self.check(node.left, depth + 1)
        self._children(node.comparators, depth)

    def _unary(self, node: ast.UnaryOp, depth: int) -> None:
        if not isinstance(node.op, ast.Not | ast.USub):
            symbol = {ast.UAdd: "+", ast.Invert: "~"}.get(type(node.op), "?")
            raise self.refusal(f"the unary operator {symbol} is not allowed (only - and not)", node)
        self.check(node.operand, depth + 1)

    def _binary(self, node: ast.BinOp, depth: int) -> None:
        if not isinstance(node.op, ast.Add | ast.Sub):
            symbol = _BINARY_SYMBOLS.get(type(node.op), type(node.op).__name__)
            raise self.refusal(f"the operator {symbol} is not allowed (only + and -)", node)
        self.check(node.left, depth + 1)
        self.check(node.right, depth + 1)

    def _call(self, node: ast.Call, depth: int) -> None:
        name = self._function_name(node)
        low, high = _FUNCTION_ARITY[name]
        for keyword in node.keywords:
            if keyword.arg is None:
                raise self.refusal("'**' arguments are not allowed", keyword)
            if name != "get" or keyword.arg != "default":
                raise self.refusal(f"{name}() takes no keyword argument {keyword.arg}=", keyword)
        count = len(node.args) + len(node.keywords)
        if not low <= count <= high or (node.keywords and len(node.args) != 2):
            wanted = str(low) if low == high else f"{low} to {high}"
            raise self.refusal(f"{name}() takes {wanted} argument(s), got {count}", node)
        if name == "get" and len(node.args) > 1:
            key = node.args[1]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                self._name(key.value, key)
        self._children(node.args, depth)
        self._children([keyword.value for keyword in node.keywords], depth)

    def _function_name(self, node: ast.Call) -> str:
        func = node.func
        if isinstance(func, ast.Name) and func.id in _FUNCTION_ARITY:
            return func.id
        if isinstance(func, ast.Name):
            self._name(func.id, func)
        if isinstance(func, ast.Attribute):
            raise self.refusal(
                f"method calls are not allowed (.{func.attr}(...)); call a function by name, "
                "for example lower(x) rather than x.lower()",
                node,
            )
        shown = f"{func.id}()" if isinstance(func, ast.Name) else "this"
        raise self.refusal(
            f"calling {shown} is not allowed; the functions are {', '.join(ALLOWED_FUNCTIONS)}",
            node,
        )


_BINARY_SYMBOLS: dict[type[ast.AST], str] = {
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitAnd: "&",
    ast.BitXor: "^",
}


def _node_kind(node: ast.AST) -> str:
    return "a function's result" if isinstance(node, ast.Call) else "a literal"


# --------------------------------------------------------------------------- evaluation


class _Refused(Exception):
    """An operation met values of the wrong type or size; the evaluator adds the position of
    the node it was evaluating, which the helpers below do not know."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Evaluator:
    """Walks a checked tree over one state. Recursion is bounded by :data:`MAX_DEPTH`."""

    def __init__(self, expression: Expression, state: Mapping[str, Any]) -> None:
        self._expression = expression
        self._state = state

    def value(self, node: ast.expr) -> Any:
        try:
            return self._dispatch(node)
        except WorkflowConditionError:
            raise  # already located at the innermost node
        except _Refused as problem:
            raise self._expression.error(problem.message, node) from None
        except Exception as error:  # state built in code may hold objects whose == raises
            raise self._expression.error(
                f"{_UNEXPECTED} {type(error).__name__}: {error}", node
            ) from None

    def _dispatch(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self._state.get(node.id)
        if isinstance(node, ast.Attribute):
            return _lookup(self.value(node.value), node.attr)
        if isinstance(node, ast.Subscript):
            return _lookup(self.value(node.value), self.value(node.slice))
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.BoolOp):
            return self._boolean(node)
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand)
            return (not operand) if isinstance(node.op, ast.Not) else _negate(operand)
        if isinstance(node, ast.BinOp):
            return _arithmetic(node.op, self.value(node.left), self.value(node.right))
        if isinstance(node, ast.List | ast.Tuple):
            return [self.value(element) for element in node.elts]
        if isinstance(node, ast.Call):
            return self._call(node)
        raise _Refused(f"{type(node).__name__} cannot be evaluated")  # the checker stops these

    def _compare(self, node: ast.Compare) -> bool:
        """Chained like Python: ``a < b < c`` is ``a < b and b < c``, evaluated lazily."""
        left_node = node.left
        left = self.value(left_node)
        for comparison, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.value(right_node)
            try:
                holds = _compare(comparison, left, right)
            except _Refused as problem:  # point at this pair, not at the start of a chain
                raise self._expression.error(problem.message, left_node) from None
            if not holds:
                return False
            left_node, left = right_node, right
        return True

    def _boolean(self, node: ast.BoolOp) -> Any:
        """``and`` / ``or`` short-circuit and return the deciding value, as in Python."""
        result: Any = None
        for operand in node.values:
            result = self.value(operand)
            if isinstance(node.op, ast.And) != bool(result):
                return result
        return result

    def _call(self, node: ast.Call) -> Any:
        assert isinstance(node.func, ast.Name)  # the checker allows nothing else
        arguments = [self.value(argument) for argument in node.args]
        arguments.extend(self.value(keyword.value) for keyword in node.keywords)
        return _FUNCTIONS[node.func.id](*arguments)


def _type_name(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def _is_number(value: Any) -> bool:
    """Numbers for arithmetic and ordering; ``True + 1`` is more likely a mistake than a sum."""
    return isinstance(value, int | float) and not isinstance(value, bool)


_T = TypeVar("_T")


def _bounded(value: _T) -> _T:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        raise _Refused("the result is outside ±10**18")
    return value


def _key_ok(key: Any) -> None:
    if isinstance(key, str) and key.startswith("_"):
        raise _Refused(f"keys starting with '_' are not allowed: {key}")


def _lookup(container: Any, key: Any) -> Any:
    """Key access that never fails on missing data: an absent key, an index out of range, or a
    container that is not a dict or list reads as ``None`` (the field is not set yet)."""
    _key_ok(key)
    if isinstance(container, Mapping):
        if not (key is None or isinstance(key, str | int | float)):
            raise _Refused(f"a {_type_name(key)} cannot be a key")
        return container.get(key)
    if isinstance(container, list | tuple | str) and isinstance(key, int):
        if isinstance(key, bool) or not -len(container) <= key < len(container):
            return None
        return container[key]
    return None


def _negate(value: Any) -> Any:
    if not _is_number(value):
        raise _Refused(f"cannot apply unary - to {_type_name(value)}")
    return _bounded(-value)


def _arithmetic(kind: ast.operator, left: Any, right: Any) -> Any:
    symbol = "+" if isinstance(kind, ast.Add) else "-"
    if _is_number(left) and _is_number(right):
        return _bounded(left + right if symbol == "+" else left - right)
    if symbol == "+" and isinstance(left, str) and isinstance(right, str):
        if len(left) + len(right) > MAX_STRING_CHARS:
            raise _Refused(f"a string built with + would exceed {MAX_STRING_CHARS:,} characters")
        return left + right
    raise _Refused(f"cannot apply {symbol} to {_type_name(left)} and {_type_name(right)}")


_ORDERINGS: dict[type[ast.cmpop], tuple[str, Callable[[Any, Any], Any]]] = {
    ast.Lt: ("<", operator.lt),
    ast.LtE: ("<=", operator.le),
    ast.Gt: (">", operator.gt),
    ast.GtE: (">=", operator.ge),
}


def _compare(comparison: ast.cmpop, left: Any, right: Any) -> bool:
    if isinstance(comparison, ast.Eq):
        return bool(left == right)
    if isinstance(comparison, ast.NotEq):
        return bool(left != right)
    if isinstance(comparison, ast.Is):
        return left is None
    if isinstance(comparison, ast.IsNot):
        return left is not None
    if isinstance(comparison, ast.In):
        return _contains(right, left, "'in'")
    if isinstance(comparison, ast.NotIn):
        return not _contains(right, left, "'not in'")
    symbol, holds = _ORDERINGS[type(comparison)]
    if (_is_number(left) and _is_number(right)) or (
        isinstance(left, str) and isinstance(right, str)
    ):
        return bool(holds(left, right))
    raise _Refused(f"cannot compare {_type_name(left)} {symbol} {_type_name(right)}")


def _contains(container: Any, item: Any, what: str) -> bool:
    if isinstance(container, str):
        if not isinstance(item, str):
            raise _Refused(f"{what} a string needs a string to look for, got {_type_name(item)}")
        return item in container
    if isinstance(container, list | tuple):
        return item in container
    if isinstance(container, Mapping):
        if not (item is None or isinstance(item, str | int | float)):
            raise _Refused(f"a {_type_name(item)} cannot be a key")
        return item in container
    raise _Refused(f"{what} needs a string, list or dict, got {_type_name(container)}")


# --------------------------------------------------------------------------- functions


def _needs_text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _Refused(f"{name}() needs a string, got {_type_name(value)}")
    return value


def _fn_len(value: Any) -> int:
    if not isinstance(value, str | list | tuple | Mapping):
        raise _Refused(f"len() needs a string, list or dict, got {_type_name(value)}")
    return len(value)


def _fn_lower(value: Any) -> str:
    return _needs_text("lower", value).lower()


def _fn_upper(value: Any) -> str:
    return _needs_text("upper", value).upper()


def _fn_strip(value: Any) -> str:
    return _needs_text("strip", value).strip()


def _fn_str(value: Any) -> str:
    """Written the way templates write values, so ``str(x)`` and ``{{ x }}`` agree."""
    return _as_text(value)


def _fn_int(value: Any) -> int:
    if isinstance(value, bool | int):
        return _bounded(int(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Refused(f"int() cannot convert {value}")
        return _bounded(int(value))
    if isinstance(value, str):
        try:
            return _bounded(int(value.strip()))
        except ValueError:
            raise _Refused(f"int() cannot read {value[:40]!r} as a whole number") from None
    raise _Refused(f"int() needs a number or a string, got {_type_name(value)}")


def _fn_float(value: Any) -> float:
    if isinstance(value, bool | int | float):
        try:
            return float(value)
        except OverflowError:
            raise _Refused("float() got a number too large") from None
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            raise _Refused(f"float() cannot read {value[:40]!r} as a number") from None
    raise _Refused(f"float() needs a number or a string, got {_type_name(value)}")


def _fn_bool(value: Any) -> bool:
    return bool(value)


def _fn_startswith(text: Any, prefix: Any) -> bool:
    return _needs_text("startswith", text).startswith(_needs_text("startswith", prefix))


def _fn_endswith(text: Any, suffix: Any) -> bool:
    return _needs_text("endswith", text).endswith(_needs_text("endswith", suffix))


def _fn_contains(container: Any, item: Any) -> bool:
    """``item in container``, except that a field not set yet (None) contains nothing."""
    return False if container is None else _contains(container, item, "contains()")


def _fn_last(sequence: Any) -> Any:
    """The last element, ``None`` for an empty or unset sequence (no index error to guard)."""
    if sequence is None:
        return None
    if not isinstance(sequence, list | tuple | str):
        raise _Refused(f"last() needs a list or string, got {_type_name(sequence)}")
    return sequence[-1] if sequence else None


def _fn_get(container: Any, key: Any, default: Any = None) -> Any:
    """Key access with a fallback; a key whose value is ``None`` also gets the default."""
    found = _lookup(container, key)
    return default if found is None else found


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": _fn_len,
    "lower": _fn_lower,
    "upper": _fn_upper,
    "strip": _fn_strip,
    "str": _fn_str,
    "int": _fn_int,
    "float": _fn_float,
    "bool": _fn_bool,
    "startswith": _fn_startswith,
    "endswith": _fn_endswith,
    "contains": _fn_contains,
    "last": _fn_last,
    "get": _fn_get,
}


# --------------------------------------------------------------------------- conditions


@lru_cache(maxsize=_CACHE_SIZE)
def _cached_expression(text: str) -> Expression:
    """Conditions are re-evaluated on every pass through a loop; parse each text once.
    (lru_cache is a bounded dict keyed by the text, and thread-safe; failures are not kept.)"""
    return parse_expression(text)


def evaluate_condition(condition: Condition, state: Mapping[str, Any]) -> Any:
    """The value a condition gives over ``state``: an expression string is parsed (once) and
    evaluated; a callable gets a copy of the state, and whatever it raises becomes a
    :class:`WorkflowConditionError` so the runner has a single error to report."""
    if isinstance(condition, str):
        return _cached_expression(condition).evaluate(state)
    function: object = condition
    if not callable(function):  # a hand-built node could hold anything
        raise WorkflowConditionError(
            f"a condition must be an expression or a callable, got {_type_name(function)}",
            position=0,
            hint=_ALLOWED_HINT,
        )
    name = getattr(function, "__qualname__", None) or repr(function)
    try:
        return function(dict(state))
    except WorkflowConditionError:
        raise
    except Exception as error:
        raise WorkflowConditionError(
            f"the condition function {name} raised {type(error).__name__}: {error}",
            expression=f"<function {name}>",
            hint="fix the function, or catch the error inside it and return a value",
        ) from error


def route_key(value: Any) -> str:
    """The key an edge's mapping looks up for a condition's value. Total: any value gives a
    key, so a surprising value falls through to the ``default`` entry rather than raising."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float):
        return str(value)
    try:
        return str(value).strip()
    except Exception:
        return type(value).__name__


def expression_problem(text: str) -> str | None:
    """Why ``text`` is not a valid expression (with its position), or None; for validation."""
    try:
        _cached_expression(text)
    except WorkflowConditionError as error:
        return _describe(error)
    return None


def _describe(error: WorkflowConditionError) -> str:
    if error.position is None:
        return error.message
    return f"{error.message} (at character {error.position})"


# --------------------------------------------------------------------------- templates

_OPEN = "{{"
_CLOSE = "}}"


@dataclass(frozen=True, slots=True)
class _Piece:
    """A stretch of a template: literal text, or the expression inside one ``{{ }}``;
    ``start`` is where that text begins in the template."""

    start: int
    text: str
    is_expression: bool


def _split_template(template: str) -> tuple[list[_Piece], WorkflowConditionError | None]:
    """The template's pieces, and the error for an unclosed ``{{`` if there is one (the
    pieces then stop before it). The first ``}}`` closes a placeholder, even inside quotes."""
    pieces: list[_Piece] = []
    cursor = 0
    while True:
        opening = template.find(_OPEN, cursor)
        if opening < 0:
            break
        closing = template.find(_CLOSE, opening + len(_OPEN))
        if closing < 0:
            unclosed = WorkflowConditionError(
                "'{{' is never closed with '}}'",
                expression=template,
                position=opening,
                hint="close the placeholder: {{ expression }}",
            )
            _add_text(pieces, template, cursor, opening)
            return pieces, unclosed
        _add_text(pieces, template, cursor, opening)
        inner = opening + len(_OPEN)
        pieces.append(_Piece(inner, template[inner:closing], True))
        cursor = closing + len(_CLOSE)
    _add_text(pieces, template, cursor, len(template))
    return pieces, None


def _add_text(pieces: list[_Piece], template: str, start: int, end: int) -> None:
    if end > start:
        pieces.append(_Piece(start, template[start:end], False))


def _in_template(
    error: WorkflowConditionError, template: str, piece: _Piece
) -> WorkflowConditionError:
    """Re-locate an expression's error in the whole template."""
    shown = piece.text.strip()
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return WorkflowConditionError(
        f"in the placeholder {{{{ {shown} }}}}: {error.message}",
        expression=template,
        position=piece.start + (error.position or 0),
        hint=error.hint,
    )


def render_template(template: str, state: Mapping[str, Any]) -> str:
    """Replace each ``{{ expression }}`` with its value over ``state`` (None as nothing,
    dicts and lists as JSON, anything else as ``str()``); the rest is kept as written."""
    pieces, unclosed = _split_template(template)
    if unclosed is not None:
        raise unclosed
    parts: list[str] = []
    length = 0
    for piece in pieces:
        text = piece.text if not piece.is_expression else _render_piece(template, piece, state)
        length += len(text)
        if length > MAX_RENDERED_CHARS:
            raise WorkflowConditionError(
                f"the rendered template would be longer than {MAX_RENDERED_CHARS:,} characters",
                expression=template,
                position=piece.start,
                hint="render a smaller value (for example last(messages).content, or len(x))",
            )
        parts.append(text)
    return "".join(parts)


def _render_piece(template: str, piece: _Piece, state: Mapping[str, Any]) -> str:
    try:
        return _as_text(_cached_expression(piece.text).evaluate(state))
    except WorkflowConditionError as error:
        raise _in_template(error, template, piece) from None


def template_problems(template: str) -> list[str]:
    """Every parse problem in ``template``'s placeholders, located; empty when it is fine.
    Never raises, so a validator can list all problems of a file at once."""
    if not isinstance(cast(object, template), str):
        return [f"a template must be text, got {_type_name(template)}"]
    pieces, unclosed = _split_template(template)
    problems: list[str] = []
    for piece in pieces:
        if not piece.is_expression:
            continue
        try:
            _cached_expression(piece.text)
        except WorkflowConditionError as error:
            problems.append(_describe(_in_template(error, template, piece)))
    if unclosed is not None:
        problems.append(_describe(unclosed))
    return problems


def _as_text(value: Any) -> str:
    """How a value appears in rendered text: None as nothing, containers as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping | list | tuple):
        try:
            return json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):  # circular, or keys json cannot write
            return str(value)
    return str(value)
