"""Grep: regex search over file contents, in pure Python (no ripgrep needed).

Patterns run on the ``regex`` package in its ``re``-compatible mode (``V0``), with a time
budget per call shared by all the files searched (see :class:`~._files.Deadline`).
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from subagents.errors import ToolError
from subagents.tools.base import Tool, ToolContext
from subagents.tools.builtin._files import Deadline, cut_line, glob_regex, plural
from subagents.tools.builtin._ignore import INCLUDE_IGNORED_DESCRIPTION, SearchFilter
from subagents.tools.builtin._matcher import LineMatcher, line_starts, split_lines
from subagents.tools.decorator import tool
from subagents.tools.rules import unreadable_files
from subagents.tools.workspace import Workspace, workspace_of

if TYPE_CHECKING:
    import regex

__all__ = [
    "FILE_TYPES",
    "GREP_TIME_BUDGET_SECONDS",
    "MAX_GREP_FILE_BYTES",
    "MAX_GREP_OUTPUT_CHARS",
    "grep_tool",
    "make_grep_tool",
]

MAX_GREP_OUTPUT_CHARS = 30_000
MAX_GREP_FILE_BYTES = 20 * 1024 * 1024
GREP_TIME_BUDGET_SECONDS = 20.0
"""How long one Grep call may spend matching, over all its files, before it stops with an
error (a catastrophically backtracking pattern would otherwise run for hours)."""

# ripgrep's `--type` names for the languages models ask for most, by file extension.
FILE_TYPES: dict[str, tuple[str, ...]] = {
    "c": (".c", ".h"),
    "cpp": (".cpp", ".cc", ".cxx", ".hpp", ".hh", ".hxx", ".h"),
    "cs": (".cs",),
    "css": (".css", ".scss", ".sass", ".less"),
    "go": (".go",),
    "html": (".html", ".htm"),
    "java": (".java",),
    "js": (".js", ".jsx", ".mjs", ".cjs"),
    "json": (".json",),
    "kotlin": (".kt", ".kts"),
    "lua": (".lua",),
    "md": (".md", ".markdown"),
    "php": (".php",),
    "py": (".py", ".pyi"),
    "rb": (".rb",),
    "rust": (".rs",),
    "sh": (".sh", ".bash", ".zsh"),
    "sql": (".sql",),
    "swift": (".swift",),
    "toml": (".toml",),
    "ts": (".ts", ".tsx", ".mts", ".cts"),
    "txt": (".txt",),
    "xml": (".xml",),
    "yaml": (".yaml", ".yml"),
}

OutputMode = Literal["files_with_matches", "content", "count"]

_DESCRIPTION = """\
Search file contents with a regular expression (Python `re` syntax, like ripgrep's). \
`output_mode`: "files_with_matches" (default) lists the files that match, newest first; \
"content" shows the matching lines (with `-n` line numbers, `-A`/`-B`/`-C` context lines); \
"count" gives matches per file. Narrow the search with `path` (a folder or file), `glob` \
(e.g. "*.py" or "src/**/*.{ts,tsx}") or `type` (e.g. "py", "js", "rust"). `-i` ignores case; \
`multiline` lets `.` and the pattern span lines. `head_limit` keeps only the first N entries. \
Binary files and version-control folders are skipped; like ripgrep, so are files that \
.gitignore, .ignore or .git/info/exclude exclude and hidden files (names starting with '.'), \
unless `include_ignored` is true or `path` names them itself."""


@dataclass(slots=True)
class _FileHits:
    path: Path
    count: int = 0
    lines: list[str] = field(default_factory=list)


def make_grep_tool(*, time_budget_seconds: float = GREP_TIME_BUDGET_SECONDS) -> Tool:
    """The Grep tool; each call stops after ``time_budget_seconds``, spread over all its files."""

    def grep_files(
        pattern: Annotated[str, Field(description="Regular expression to search for.")],
        ctx: ToolContext,
        path: Annotated[
            str | None, Field(description="File or folder to search (default: workspace root).")
        ] = None,
        glob: Annotated[
            str | None, Field(description='Only search files matching this glob, e.g. "*.py".')
        ] = None,
        file_type: Annotated[
            str | None, Field(alias="type", description='File type to search, e.g. "py", "js".')
        ] = None,
        output_mode: Annotated[
            OutputMode, Field(description="files_with_matches (default), content or count.")
        ] = "files_with_matches",
        case_insensitive: Annotated[
            bool, Field(alias="-i", description="Ignore case when matching.")
        ] = False,
        line_numbers: Annotated[
            bool, Field(alias="-n", description="Show line numbers (content mode; default true).")
        ] = True,
        after: Annotated[
            int | None, Field(alias="-A", ge=0, description="Lines to show after each match.")
        ] = None,
        before: Annotated[
            int | None, Field(alias="-B", ge=0, description="Lines to show before each match.")
        ] = None,
        around: Annotated[
            int | None, Field(alias="-C", ge=0, description="Lines to show around each match.")
        ] = None,
        head_limit: Annotated[
            int | None, Field(ge=1, description="Keep only the first N lines or entries.")
        ] = None,
        multiline: Annotated[
            bool, Field(description="Let the pattern span lines ('.' also matches newlines).")
        ] = False,
        include_ignored: Annotated[bool, Field(description=INCLUDE_IGNORED_DESCRIPTION)] = False,
    ) -> str:
        deadline = Deadline.after("Grep", time_budget_seconds)
        query = _Query(
            pattern=pattern,
            path=path,
            glob=glob,
            file_type=file_type,
            output_mode=output_mode,
            case_insensitive=case_insensitive,
            line_numbers=line_numbers,
            context=(
                before if before is not None else around or 0,
                after if after is not None else around or 0,
            ),
            head_limit=head_limit,
            multiline=multiline,
            include_ignored=include_ignored,
        )
        split = _files_taken_out(query)
        note = ""
        if split is not None:
            query, note = split
        return note + _grep(workspace_of(ctx), query, deadline, unreadable_files(ctx, grep))

    grep = tool(name="Grep", description=_DESCRIPTION, read_only=True, idempotent=True)(grep_files)
    return grep


@dataclass(frozen=True, slots=True)
class _Query:
    pattern: str
    path: str | None
    glob: str | None
    file_type: str | None
    output_mode: OutputMode
    case_insensitive: bool
    line_numbers: bool
    context: tuple[int, int]  # lines before, lines after
    head_limit: int | None
    multiline: bool
    include_ignored: bool = False


def _grep(
    workspace: Workspace,
    query: _Query,
    deadline: Deadline,
    unreadable: Callable[[Path], bool] | None = None,
) -> str:
    matcher = _compile(query, deadline)
    base = workspace.resolve(query.path or ".", must_exist=True)
    accept = _file_filter(base, query.glob, query.file_type, deadline)
    hits: list[_FileHits] = []
    too_big = refused = 0
    search = SearchFilter(workspace, include_ignored=query.include_ignored)
    for file in search.files(base):
        if not accept(file):
            continue
        if unreadable is not None and unreadable(file):  # a Read(...) deny or ask rule
            refused += 1
            continue
        if _size(file) > MAX_GREP_FILE_BYTES:
            too_big += 1
            continue
        text = _read_text(file)
        if text is None:
            continue
        found = _search(file, text, matcher, workspace, query)
        if found.count:
            hits.append(found)
    where = workspace.display(base)
    skipped = (
        f"\n(skipped {plural(too_big, 'file')} larger than {MAX_GREP_FILE_BYTES // 2**20} MiB)"
        if too_big
        else ""
    )
    notes = search.notes_text()
    skipped += f"\n{notes}" if notes else ""
    if refused:
        kept_out = plural(refused, "file")
        skipped += f"\n(left out {kept_out} that permission rules keep from being read)"
    if not hits:
        ignored = search.skipped_note()
        skipped += f"\n{ignored}" if ignored else ""
        missed = f"No matches for {query.pattern!r} in {where}.{skipped}"
        return missed + _by_its_name(workspace, query, deadline, unreadable)
    return _render(hits, workspace, query.output_mode, query.head_limit) + skipped


_NAME_MATCHES_SHOWN = 20


def _by_its_name(
    workspace: Workspace,
    query: _Query,
    deadline: Deadline,
    unreadable: Callable[[Path], bool] | None,
) -> str:
    """When a pattern that matched nothing is a file's name or path, the lines that hold the
    name without its extension, and a note saying Grep reads contents: a 1.5B finder grepped
    for ``parse_invoice.py`` to find where ``parse_invoice`` is defined, and, told what to
    search for instead, made the same call twice more and made an answer up; it also wrote
    the name and a folder as one grep command line (``parse_invoice.py src/.*``)."""
    words = query.pattern.split(maxsplit=2)
    names = [found for word in words if (found := _FILE_NAME.fullmatch(word))]
    if len(names) != 1 or len(words) > 2:
        return ""
    name, stem = names[0].group(0), names[0].group("stem")
    note = (
        f"\n{name!r} looks like a file name: Grep searches the contents of files; Glob finds "
        "files by name."
    )
    by_name = dataclasses.replace(
        query,
        pattern=re.escape(stem),
        output_mode="content",
        line_numbers=True,
        head_limit=min(query.head_limit or _NAME_MATCHES_SHOWN, _NAME_MATCHES_SHOWN),
    )
    lines = _grep(workspace, by_name, deadline, unreadable)
    if lines.startswith("No matches"):
        return f"{note} Its name without the extension, {stem!r}, is in no file either."
    return f"{note} The lines that hold its name without the extension, {stem!r}:\n{lines}"


_FILE_NAME = re.compile(r"(?:[\w.*-]+/)*(?P<stem>\w[\w-]*)\.[A-Za-z]{1,5}")


def _compile(query: _Query, deadline: Deadline) -> LineMatcher:
    import regex  # at the first search, not at every start (~10 ms)

    flags = regex.IGNORECASE if query.case_insensitive else 0
    if query.multiline:
        flags |= regex.MULTILINE | regex.DOTALL
    pattern = query.pattern
    try:
        return LineMatcher.compile(pattern, flags, deadline)
    except regex.error as exc:
        raise ToolError(
            f"Invalid regular expression {pattern!r}: {exc}. Fix the pattern (Python re syntax; "
            "escape literal characters such as ( [ { . * + ? with a backslash)."
            + _glob_hint(pattern)
        ) from exc
    except (OverflowError, RecursionError, ValueError, MemoryError) as exc:
        raise ToolError(f"The regular expression {pattern!r} is too complex: {exc}.") from exc


def _files_taken_out(query: _Query) -> tuple[_Query, str] | None:
    """A pattern that is not a valid expression because it holds the files to search at one
    end (``parse_invoice src/**/*.py``, as one writes a grep command, or ``src/**/*.py
    parse_invoice``), read as the text and the files, with a note saying so; ``None`` for any
    other pattern."""
    if query.glob is not None or query.path is not None:
        return None
    pattern = query.pattern.strip()
    text, _, files = pattern.rpartition(" ")
    if "*" not in files:  # the files first?
        files, _, text = pattern.partition(" ")
    text = text.strip()
    if not text or "*" not in files or " " in files:
        return None
    import regex

    try:
        regex.compile(query.pattern)
        return None  # valid as it is: searched as it is
    except regex.error:
        pass
    try:
        regex.compile(text)
    except regex.error:
        return None
    note = (
        f"(The pattern {query.pattern!r} was read as the text {text!r} in the files "
        f"{files}: give the text as `pattern` and the files as `glob`.)\n"
    )
    return dataclasses.replace(query, pattern=text, glob=files), note


def _glob_hint(pattern: str) -> str:
    """What to say to a model that gave a file-name pattern (``src/**/*.py``) for the text to
    search: small models mix up Grep and Glob."""
    if "**" not in pattern and not pattern.startswith(("*.", "*/")):
        return ""
    return (
        f" {pattern!r} looks like a pattern of file names: Glob finds files by name; Grep "
        "searches inside them (give the files as `glob` and the text as `pattern`)."
    )


def _file_filter(
    base: Path, glob: str | None, file_type: str | None, deadline: Deadline
) -> _Filter:
    suffixes: tuple[str, ...] | None = None
    if file_type is not None:
        suffixes = FILE_TYPES.get(file_type.lower().lstrip("."))
        if suffixes is None:
            suffixes = (f".{file_type.lower().lstrip('.')}",) if file_type.isalnum() else None
        if suffixes is None:
            raise ToolError(
                f"Unknown file type {file_type!r}; use one of {', '.join(FILE_TYPES)}, or a "
                "glob such as '*.ext'."
            )
    pattern = glob or ""
    negate = pattern.startswith("!")  # ripgrep's '!*.md': every file except these
    pattern = pattern.removeprefix("!")
    compiled = glob_regex(pattern) if pattern else None
    return _Filter(base, suffixes, compiled, "/" in pattern, negate, deadline)


@dataclass(slots=True)
class _Filter:
    base: Path
    suffixes: tuple[str, ...] | None
    glob: regex.Pattern[str] | None
    by_path: bool
    negate: bool
    deadline: Deadline

    def __call__(self, file: Path) -> bool:
        if self.suffixes is not None and file.suffix.lower() not in self.suffixes:
            return False
        if self.glob is None:
            return True
        subject = file.relative_to(self.base).as_posix() if self.by_path else file.name
        if file == self.base:
            subject = file.name
        try:
            matched = self.glob.match(subject, timeout=self.deadline.remaining())
        except TimeoutError:
            raise self.deadline.expired() from None
        return bool(matched) != self.negate


def _size(file: Path) -> int:
    try:
        return file.stat().st_size
    except OSError:
        return 0


def _read_text(file: Path) -> str | None:
    """The file's text; ``None`` for binary or unreadable files."""
    try:
        data = file.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def _search(
    file: Path, text: str, matcher: LineMatcher, workspace: Workspace, query: _Query
) -> _FileHits:
    hits = _FileHits(file)
    lines = split_lines(text)
    if query.output_mode == "files_with_matches":
        if query.multiline:
            hits.count = 1 if matcher.matches_text(text) else 0
        else:
            hits.count = len(matcher.matching_lines(text, lines, first_only=True))
        return hits
    if query.multiline:
        spans = matcher.spans(text)
        matched = _lines_of_spans(text, lines, spans)
        hits.count = len(spans)
    else:
        matched = matcher.matching_lines(text, lines)
        hits.count = len(matched)
    if query.output_mode == "content" and matched:
        shown = workspace.display(file)
        hits.lines = _content_lines(shown, lines, matched, query.line_numbers, query.context)
    return hits


def _lines_of_spans(text: str, lines: list[str], spans: list[tuple[int, int]]) -> list[int]:
    """0-based indices of the lines that hold (part of) a match."""
    starts = line_starts(text)
    found: set[int] = set()
    for start, end in spans:
        first = _line_of(starts, start)
        last = _line_of(starts, max(end - 1, start))
        found.update(range(first, min(last, len(lines) - 1) + 1))
    return sorted(found)


def _line_of(starts: list[int], offset: int) -> int:
    return bisect.bisect_right(starts, offset) - 1


def _content_lines(
    shown: str,
    lines: list[str],
    matched: list[int],
    line_numbers: bool,
    context: tuple[int, int],
) -> list[str]:
    before, after = context
    is_match = set(matched)
    out: list[str] = []
    last_printed = -1
    for index in matched:
        start = max(index - before, last_printed + 1, 0)
        end = min(index + after, len(lines) - 1)
        if out and start > last_printed + 1:
            out.append("--")
        for line_index in range(start, end + 1):
            separator = ":" if line_index in is_match else "-"
            number = f"{line_index + 1}{separator}" if line_numbers else ""
            out.append(f"{shown}{separator}{number}{cut_line(lines[line_index].rstrip(chr(13)))}")
        last_printed = max(last_printed, end)
    return out


def _render(
    hits: list[_FileHits], workspace: Workspace, mode: OutputMode, head_limit: int | None
) -> str:
    if mode == "files_with_matches":
        hits.sort(key=lambda hit: (-_mtime(hit.path), str(hit.path)))
        entries = [workspace.display(hit.path) for hit in hits]
        header = f"Found {plural(len(entries), 'file')}"
        unit = "files"
    elif mode == "count":
        entries = [f"{workspace.display(hit.path)}:{hit.count}" for hit in hits]
        total = sum(hit.count for hit in hits)
        header = f"Found {plural(total, 'match')} in {plural(len(hits), 'file')}"
        unit = "files"
    else:
        entries = [line for hit in hits for line in hit.lines]
        header = ""
        unit = "lines"
    return _capped(header, entries, head_limit, unit)


def _capped(header: str, entries: list[str], head_limit: int | None, unit: str) -> str:
    limit = head_limit if head_limit is not None else len(entries)
    shown: list[str] = []
    size = len(header)
    for entry in entries[:limit]:
        if size + len(entry) + 1 > MAX_GREP_OUTPUT_CHARS and shown:
            break
        shown.append(entry)
        size += len(entry) + 1
    body = "\n".join([header, *shown] if header else shown)
    if len(shown) < len(entries):
        reason = (
            f"head_limit is {head_limit}"
            if head_limit is not None and len(shown) == head_limit
            else f"the output reached {MAX_GREP_OUTPUT_CHARS} characters"
        )
        body += (
            f"\n(showing the first {len(shown)} of {len(entries)} {unit} because {reason}; "
            "narrow the search with path, glob or type to see the rest)"
        )
    return body


def _mtime(file: Path) -> float:
    try:
        return file.stat().st_mtime
    except OSError:
        return 0.0


grep_tool = make_grep_tool()
