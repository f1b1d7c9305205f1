"""The one YAML loader for files people and tools write: safe, fast, and bounded.

YAML aliases (``&a`` / ``*a``) make a half-kilobyte file stand for a structure of billions of
values: loading it is cheap (the loader shares the aliased objects), but anything that walks the
result afterwards (validation, copying, an error message) pays for the expansion. So the
document is first composed into its node graph, which is as small as the text, and measured
there:

- the number of values the document expands to, counted once per node (a node's count is
  remembered, so measuring costs one visit per node whatever the expansion);
- its nesting depth, through aliases too;
- aliases that refer to a node containing them (an infinite value);
- integers too long to convert in reasonable time (PyYAML converts ``1:00:00:...`` in
  quadratic time, and refuses decimals of more than 4,300 digits with a ``ValueError``).

Only a document within every limit is turned into Python values. Every failure is a
:class:`yaml.YAMLError`: :class:`YAMLLimitError` when a limit is crossed, a ``MarkedYAMLError``
(``ConstructorError`` for a value its type refuses, such as ``2024-13-45``) for the rest.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = [
    "MAX_YAML_ALIAS_VALUES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NUMBER_CHARS",
    "YAMLLimitError",
    "load_yaml",
    "yaml_problem",
]

MAX_YAML_ALIAS_VALUES = 10_000
"""How many values aliases may add to a document beyond the ones written out."""
MAX_YAML_DEPTH = 100
"""How deeply values may nest (agent files and MCP configs need fewer than ten levels)."""
MAX_YAML_NUMBER_CHARS = 1_000

# The C loader when PyYAML was built with libyaml: ten times faster. It recurses on the C stack,
# so text that could nest deeper than _C_LOADER_MAX_NESTING goes to the Python loader, which
# raises RecursionError instead of crashing the process.
_CLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_C_LOADER_MAX_NESTING = 2_000
_INT_TAG = "tag:yaml.org,2002:int"


class YAMLLimitError(yaml.YAMLError):
    """The document is beyond one of the loader's limits; ``problem`` says which and what to do.

    ``line`` is the 1-based line (of the text given to :func:`load_yaml`) where the offending
    value starts, when known.
    """

    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line


def load_yaml(
    text: str,
    *,
    what: str = "the document",
    max_alias_values: int = MAX_YAML_ALIAS_VALUES,
    max_depth: int = MAX_YAML_DEPTH,
) -> Any:
    """The value of one YAML document (``None`` when empty), loaded safely within the limits.

    ``what`` names the document in messages ("the frontmatter", "the file"). Raises a
    :class:`yaml.YAMLError` (a :class:`YAMLLimitError` for limits), never anything else.
    """
    # Each level of nesting needs one of these indicators, so their count bounds the depth.
    bound = sum(text.count(c) for c in "[{-:?")
    loader = (_CLoader if bound < _C_LOADER_MAX_NESTING else yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check(node, what, max_alias_values, max_depth)
        return loader.construct_document(node)
    except RecursionError:
        raise YAMLLimitError(f"{what} is nested too deeply: flatten the nested values") from None
    except (ValueError, TypeError, OverflowError) as error:
        # A scalar YAML resolves to a type whose constructor refuses it (2024-13-45, a huge
        # decimal integer): PyYAML lets the bare exception through.
        raise ConstructorError(None, None, f"a value cannot be read ({error})") from None
    finally:
        loader.dispose()


def yaml_problem(error: yaml.YAMLError, first_line: int = 1) -> tuple[int | None, str]:
    """``(line, problem)`` of a YAML error; ``first_line`` is the text's first line number."""
    if isinstance(error, YAMLLimitError):
        line = None if error.line is None else error.line + first_line - 1
        return line, error.problem
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    return (None if mark is None else mark.line + first_line), str(problem)


def _check(root: Node, what: str, max_alias_values: int, max_depth: int) -> None:
    order = _post_order(root, what, max_depth)
    # Values the document expands to, per node; capped so that the numbers stay small.
    cap = len(order) + max_alias_values + 1
    counts: dict[int, int] = {}
    for node in order:
        count = 1 + sum(counts[id(child)] for child in _children(node))
        counts[id(node)] = min(count, cap)
        if count >= cap:
            raise YAMLLimitError(
                f"{what} expands to more than {max_alias_values:,} values through YAML aliases "
                "(&/*): write the values out instead of repeating them with aliases",
                _line(node),
            )


def _post_order(root: Node, what: str, max_depth: int) -> list[Node]:
    """Every distinct node, children before parents; refuses cycles, depth and long numbers."""
    order: list[Node] = []
    state: dict[int, bool] = {}  # False: being visited (on the path); True: done
    height: dict[int, int] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            state[key] = True
            height[key] = 1 + max((height[id(child)] for child in _children(node)), default=0)
            if height[key] > max_depth:
                raise YAMLLimitError(
                    f"{what} nests values more than {max_depth} levels deep: flatten them",
                    _line(node),
                )
            order.append(node)
            continue
        if key in state:
            continue  # already measured through another alias
        state[key] = False
        _check_scalar(node, what)
        stack.append((node, True))
        for child in _children(node):
            seen = state.get(id(child))
            if seen is False:
                raise YAMLLimitError(
                    f"{what} has a value holding a YAML alias (*) of itself, which makes it "
                    "infinite: write the value out",
                    _line(child),
                )
            if seen is None:
                stack.append((child, False))
    return order


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_scalar(node: Node, what: str) -> None:
    if (
        isinstance(node, ScalarNode)
        and node.tag == _INT_TAG
        and len(node.value) > MAX_YAML_NUMBER_CHARS
    ):
        raise YAMLLimitError(
            f"{what} holds a number of more than {MAX_YAML_NUMBER_CHARS:,} characters: put it "
            "in quotes to make it text, or shorten it",
            _line(node),
        )


def _line(node: Node) -> int | None:
    mark = getattr(node, "start_mark", None)
    return None if mark is None else mark.line + 1
