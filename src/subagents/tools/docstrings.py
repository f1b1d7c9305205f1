"""Reading a tool's description and its parameters' descriptions from a docstring.

Google (``Args:``), NumPy (``Parameters`` + dashes) and Sphinx (``:param name:``) styles are
understood; anything else simply yields no parameter descriptions.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

__all__ = ["ParsedDocstring", "parse_docstring"]

_GOOGLE_ARGS = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:\s*$", re.IGNORECASE)
_GOOGLE_SECTION = re.compile(
    r"^(Returns?|Yields?|Raises|Examples?|Notes?|Warnings?|See Also|Attributes|Todo)\s*:\s*$",
    re.IGNORECASE,
)
_GOOGLE_ITEM = re.compile(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_HEADER = re.compile(r"^-{3,}\s*$")
_NUMPY_ITEM = re.compile(r"^(\w+)\s*(:.*)?$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


@dataclass(slots=True)
class ParsedDocstring:
    description: str = ""
    params: dict[str, str] = field(default_factory=dict)


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """The first paragraph and the per-parameter descriptions of ``doc``."""
    if not doc:
        return ParsedDocstring()
    lines = inspect.cleandoc(doc).splitlines()
    parsed = ParsedDocstring(description=_first_paragraph(lines))
    parsed.params.update(_google_params(lines))
    parsed.params.update(_numpy_params(lines))
    parsed.params.update(_sphinx_params(lines))
    return parsed


def _first_paragraph(lines: list[str]) -> str:
    paragraph: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped:
            if paragraph:
                break
            continue
        is_section = (
            _GOOGLE_ARGS.match(stripped)
            or _GOOGLE_SECTION.match(stripped)
            or stripped.startswith(":param")
        )
        if is_section:
            break
        paragraph.append(stripped)
    return " ".join(paragraph)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _google_params(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    inside = False
    item_indent: int | None = None
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        if _GOOGLE_ARGS.match(stripped) and _indent(line) == 0:
            inside, item_indent, current = True, None, None
            continue
        if not inside:
            continue
        if stripped and _indent(line) == 0:
            inside = False
            continue
        if not stripped:
            continue
        if item_indent is None:
            item_indent = _indent(line)
        match = _GOOGLE_ITEM.match(stripped)
        if _indent(line) == item_indent and match:
            current = match.group(1).lstrip("*")
            params[current] = match.group(3).strip()
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return params


def _numpy_params(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    start = None
    for index in range(len(lines) - 1):
        is_heading = lines[index].strip().lower() in {"parameters", "params", "arguments"}
        if is_heading and _NUMPY_HEADER.match(lines[index + 1].strip()):
            start = index + 2
            break
    if start is None:
        return params
    current: str | None = None
    for index in range(start, len(lines)):
        line = lines[index]
        stripped = line.strip()
        next_line = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if stripped and _NUMPY_HEADER.match(next_line):
            break  # the next section begins
        if not stripped:
            continue
        match = _NUMPY_ITEM.match(stripped)
        if _indent(line) == 0 and match:
            current = match.group(1)
            params[current] = ""
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return params


def _sphinx_params(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        match = _SPHINX_PARAM.match(stripped)
        if match:
            current = match.group(1)
            params[current] = match.group(2).strip()
        elif stripped.startswith(":") or not stripped:
            current = None
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return params
