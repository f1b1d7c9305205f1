"""Grep: regex search over file contents, in pure Python (no ripgrep needed)."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from subagents.errors import ToolError
from subagents.tools.base import ToolContext
from subagents.tools.builtin._files import cut_line, glob_regex, iter_files, plural
from subagents.tools.decorator import tool
from subagents.tools.workspace import Workspace, workspace_of

__all__ = ["FILE_TYPES", "MAX_GREP_FILE_BYTES", "MAX_GREP_OUTPUT_CHARS", "grep_tool"]

MAX_GREP_OUTPUT_CHARS = 30_000
MAX_GREP_FILE_BYTES = 20 * 1024 * 1024

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
Binary files and version-control folders are skipped."""


@dataclass(slots=True)
class _FileHits:
    path: Path
    count: int = 0
    lines: list[str] = field(default_factory=list)


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
) -> str:
    workspace = workspace_of(ctx)
    regex = _compile(pattern, case_insensitive=case_insensitive, multiline=multiline)
    base = workspace.resolve(path or ".", must_exist=True)
    accept = _file_filter(base, glob, file_type)
    context = (
        before if before is not None else around or 0,
        after if after is not None else around or 0,
    )
    hits: list[_FileHits] = []
    too_big = 0
    for file in iter_files(workspace, base):
        if not accept(file):
            continue
        if _size(file) > MAX_GREP_FILE_BYTES:
            too_big += 1
            continue
        text = _read_text(file)
        if text is None:
            continue
        found = _search(file, text, regex, workspace, output_mode, multiline, line_numbers, context)
        if found.count:
            hits.append(found)
    where = workspace.display(base)
    skipped = (
        f"\n(skipped {plural(too_big, 'file')} larger than {MAX_GREP_FILE_BYTES // 2**20} MiB)"
        if too_big
        else ""
    )
    if not hits:
        return f"No matches for {pattern!r} in {where}.{skipped}"
    return _render(hits, workspace, output_mode, head_limit) + skipped


def _compile(pattern: str, *, case_insensitive: bool, multiline: bool) -> re.Pattern[str]:
    flags = re.IGNORECASE if case_insensitive else 0
    if multiline:
        flags |= re.MULTILINE | re.DOTALL
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise ToolError(
            f"Invalid regular expression {pattern!r}: {exc}. Fix the pattern (Python re syntax; "
            "escape literal characters such as ( [ { . * + ? with a backslash)."
        ) from exc
    except (OverflowError, RecursionError) as exc:
        raise ToolError(f"The regular expression {pattern!r} is too complex: {exc}.") from exc


def _file_filter(base: Path, glob: str | None, file_type: str | None) -> _Filter:
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
    regex = glob_regex(pattern) if pattern else None
    return _Filter(base, suffixes, regex, "/" in pattern, negate)


@dataclass(slots=True)
class _Filter:
    base: Path
    suffixes: tuple[str, ...] | None
    regex: re.Pattern[str] | None
    by_path: bool
    negate: bool

    def __call__(self, file: Path) -> bool:
        if self.suffixes is not None and file.suffix.lower() not in self.suffixes:
            return False
        if self.regex is None:
            return True
        subject = file.relative_to(self.base).as_posix() if self.by_path else file.name
        if file == self.base:
            subject = file.name
        return bool(self.regex.match(subject)) != self.negate


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
    file: Path,
    text: str,
    regex: re.Pattern[str],
    workspace: Workspace,
    mode: OutputMode,
    multiline: bool,
    line_numbers: bool,
    context: tuple[int, int],
) -> _FileHits:
    hits = _FileHits(file)
    lines = _split_lines(text)
    if mode == "files_with_matches":
        found = regex.search(text) if multiline else any(map(regex.search, lines))
        hits.count = 1 if found else 0
        return hits
    matched = _matched_lines(text, lines, regex, multiline)
    hits.count = len(matched) if not multiline else sum(1 for _ in regex.finditer(text))
    if mode == "content" and matched:
        hits.lines = _content_lines(workspace.display(file), lines, matched, line_numbers, context)
    return hits


def _split_lines(text: str) -> list[str]:
    """Lines split on newlines only, so that offsets into ``text`` map onto them."""
    lines = text.split("\n")
    if lines and not lines[-1]:
        lines.pop()
    return lines


def _matched_lines(
    text: str, lines: list[str], regex: re.Pattern[str], multiline: bool
) -> list[int]:
    """0-based indices of the lines that hold (part of) a match."""
    if not multiline:
        return [index for index, line in enumerate(lines) if regex.search(line)]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    found: set[int] = set()
    for match in regex.finditer(text):
        first = _line_of(starts, match.start())
        last = _line_of(starts, max(match.end() - 1, match.start()))
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


grep_tool = tool(name="Grep", description=_DESCRIPTION, read_only=True, idempotent=True)(grep_files)
