"""Split a Markdown agent file into its YAML frontmatter and body, and read the frontmatter.

Three readers, tried in order:

1. a fast reader for the common shape (one ``key: value`` per line, plain or simply quoted
   values). It only accepts lines whose meaning in YAML is certain and otherwise gives up, so
   its result always equals what YAML would produce;
2. PyYAML's safe loader (the C one when available), through :func:`subagents._yaml.load_yaml`,
   which refuses alias bombs, cycles and runaway nesting before any value is built;
3. when YAML rejects the text (real files often have an unquoted ``: `` inside
   ``description``), a lenient line-based ``key: value`` reading, with a warning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

__all__ = ["FrontmatterResult", "read_frontmatter", "split_frontmatter"]

_CLOSING = re.compile(r"^---[ \t]*$", re.MULTILINE)
_LEADING_BLANK_LINES = re.compile(r"(?:[ \t]*\n)+")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")

# Characters YAML reads as themselves on one line: printable, minus every line break YAML 1.1
# knows (NEL, LS, PS). Each class is written as what it leaves out: re compiles a class of a
# few small ranges in a fraction of the time the same class spelled as its wide ranges takes
# (about 7 ms of every process that reads an agent file, the built-in agents included).
_NOT_PRINTABLE = r"\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff"
_NOT_IN_DOUBLE = _NOT_PRINTABLE + r"\x22\x5c"  # '"' and backslash
_NOT_IN_SINGLE = _NOT_PRINTABLE + r"\x27"  # "'"
_NOT_IN_PLAIN = _NOT_PRINTABLE + r"\x23\x3a"  # '#' and ':'
_NOT_VISIBLE = _NOT_PRINTABLE + r"\x20"  # and the space
_SIMPLE_LINE = re.compile(
    r"([A-Za-z_][A-Za-z0-9_-]*): +"
    r"(?:"
    rf'"([^{_NOT_IN_DOUBLE}]*)"'
    rf"|'([^{_NOT_IN_SINGLE}]*)'"
    rf"|([A-Za-z](?:[^{_NOT_IN_PLAIN}]|:(?=[^{_NOT_VISIBLE}]))*?)"
    r") *",
)
# Plain words PyYAML turns into booleans or null (its YAML 1.1 resolvers), and their values.
_SPECIAL_WORDS: dict[str, bool | None] = {
    w: value
    for base, value in (
        ("yes", True),
        ("no", False),
        ("true", True),
        ("false", False),
        ("on", True),
        ("off", False),
        ("null", None),
    )
    for w in (base, base.capitalize(), base.upper())
}
_LENIENT_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]+(.*))?")


@dataclass(slots=True)
class FrontmatterResult:
    """What reading a frontmatter block produced; ``data`` is ``None`` when nothing usable."""

    data: dict[Any, Any] | None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def split_frontmatter(text: str) -> tuple[str | None, str, int, list[str]]:
    """Return ``(frontmatter, body, first_line, warnings)`` for normalised text (``\\n`` ends).

    ``frontmatter`` is ``None`` when the file does not start with a ``---`` line.
    ``first_line`` is the 1-based line number of the frontmatter's first line, for messages.
    """
    start = 0
    blank = _LEADING_BLANK_LINES.match(text)
    if blank:
        start = blank.end()
    line_end = text.find("\n", start)
    first = text[start:] if line_end < 0 else text[start:line_end]
    if first.rstrip() != "---":
        return None, text, 0, []
    first_line = text.count("\n", 0, start) + 2
    if line_end < 0:
        return "", "", first_line, ["the frontmatter has no closing '---' line; add one"]
    fm_start = line_end + 1
    closing = _CLOSING.search(text, fm_start)
    if closing is not None:
        return text[fm_start : closing.start()], _body(text[closing.end() :]), first_line, []
    # No closing line: assume the frontmatter ends at the first blank line.
    blank = _BLANK_LINE.search(text, fm_start - 1)
    if blank is None:
        frontmatter, body = text[fm_start:], ""
    else:
        frontmatter, body = text[fm_start : blank.start()], text[blank.start() :]
    warning = (
        "the frontmatter has no closing '---' line; it was assumed to end at the first blank "
        "line - add a '---' line after the last key"
    )
    return frontmatter, _body(body), first_line, [warning]


def _body(raw: str) -> str:
    blank = _LEADING_BLANK_LINES.match(raw)
    if blank:
        raw = raw[blank.end() :]
    return raw.rstrip()


def _fast_read(frontmatter: str) -> dict[str, Any] | None:
    """Read the common one-``key: value``-per-line shape, or return ``None`` to defer to YAML."""
    data: dict[str, Any] = {}
    for line in frontmatter.split("\n"):
        match = _SIMPLE_LINE.fullmatch(line)
        if match is None:
            if line.strip(" "):  # only lines of spaces are blank to both readers
                return None
            continue
        key, double, single, plain = match.groups()
        if key in _SPECIAL_WORDS:
            return None
        if plain is not None:
            # read as YAML reads them: built-in agents say `omitClaudeMd: true`
            data[key] = _SPECIAL_WORDS.get(plain, plain)
        else:
            data[key] = double if double is not None else single
    return data


def _yaml_problem(exc: yaml.YAMLError, first_line: int) -> str:
    from subagents._yaml import yaml_problem

    line, problem = yaml_problem(exc, first_line)
    return problem if line is None else f"line {line}: {problem}"


def read_frontmatter(frontmatter: str, first_line: int = 2) -> FrontmatterResult:
    """Read a frontmatter block into a mapping; never raises."""
    fast = _fast_read(frontmatter)
    if fast is not None:
        return FrontmatterResult(fast)
    # PyYAML loads only for a frontmatter the fast reader leaves to it (not the built-in
    # agents'): about 16 ms
    import yaml

    from subagents._yaml import YAMLLimitError, load_yaml

    try:
        loaded = load_yaml(frontmatter, what="the frontmatter")
    except YAMLLimitError as exc:
        # Not a syntax slip that a line-based reading could recover from: the file says so.
        return FrontmatterResult(None, errors=[_yaml_problem(exc, first_line)])
    except yaml.YAMLError as exc:
        return _lenient(frontmatter, _yaml_problem(exc, first_line))
    if loaded is None:
        return FrontmatterResult({})
    if not isinstance(loaded, dict):
        kind = type(loaded).__name__
        return FrontmatterResult(
            None,
            errors=[
                f"the frontmatter is a YAML {kind}, not a mapping: write one 'key: value' per "
                "line (name, description, tools, model, ...)"
            ],
        )
    return FrontmatterResult(loaded)


def _lenient(frontmatter: str, problem: str) -> FrontmatterResult:
    """Read ``key: value`` lines (continuations indented) after YAML rejected the block."""
    chunks: list[tuple[str, list[str]]] = []
    for line in frontmatter.split("\n"):
        if not line.strip() or line.startswith("#"):
            if chunks:
                chunks[-1][1].append(line)
            continue
        if line[0] in " \t":
            if not chunks:
                return _unreadable(problem)
            chunks[-1][1].append(line)
            continue
        match = _LENIENT_KEY.fullmatch(line.rstrip())
        if match is None:
            return _unreadable(problem)
        chunks.append((match.group(1), [line]))
    if not chunks:
        return _unreadable(problem)
    data: dict[str, Any] = {}
    unquoted: list[str] = []
    for key, lines in chunks:
        value, ok = _chunk_value(key, lines)
        if not ok:
            unquoted.append(key)
        data.setdefault(key, value)
    keys = ", ".join(repr(k) for k in unquoted) or "the offending key"
    warning = (
        f"the frontmatter is not valid YAML ({problem}); it was read line by line instead - "
        f"quote the value of {keys} to make it valid YAML"
    )
    return FrontmatterResult(data, warnings=[warning])


def _chunk_value(key: str, lines: list[str]) -> tuple[Any, bool]:
    """The value of one ``key: ...`` chunk: YAML's reading if it has one, else the raw text."""
    simple = _fast_read(lines[0]) if len(lines) == 1 else None
    if simple is not None and key in simple:
        return simple[key], True
    import yaml

    from subagents._yaml import load_yaml

    try:
        loaded = load_yaml("\n".join(lines), what="the frontmatter")
    except yaml.YAMLError:
        loaded = None
    else:
        if isinstance(loaded, dict) and len(loaded) == 1 and key in loaded:
            return loaded[key], True
    first = lines[0].split(":", 1)[1].strip()
    rest = [line.strip() for line in lines[1:] if line.strip() and not line.startswith("#")]
    return " ".join([first, *rest]).strip(), False


def _unreadable(
    problem: str, hint: str = "put values that contain ': ' in quotes"
) -> FrontmatterResult:
    return FrontmatterResult(
        None, errors=[f"the frontmatter is not valid YAML ({problem}): fix it, e.g. {hint}"]
    )
