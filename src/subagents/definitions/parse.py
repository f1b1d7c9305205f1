"""Read agent definition files in every dialect. Nothing here raises.

A file that cannot be read or understood comes back as an ``invalid`` AgentDefinition whose
``validation_errors`` say what is wrong and what to do, so that one bad file never hides the
others.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from subagents.definitions.fields import definition_from_mapping
from subagents.definitions.frontmatter import read_frontmatter, split_frontmatter
from subagents.definitions.model import AgentDefinition, Dialect, Scope
from subagents.definitions.validate import validate_definition, validate_in_place

__all__ = [
    "AGENT_FILE_SUFFIXES",
    "MAX_AGENT_FILE_BYTES",
    "dialect_for_path",
    "parse_agent_file",
    "parse_agent_mapping",
    "parse_agent_text",
]

AGENT_FILE_SUFFIXES = (".md", ".markdown", ".toml", ".json")
MAX_AGENT_FILE_BYTES = 1 << 20

_DIALECT_BY_SUFFIX: dict[str, Dialect] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".toml": "codex-toml",
    ".json": "json",
}
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_REASON = (
    "contains a lone surrogate (an unpaired \\uD800-\\uDFFF escape), which is not valid "
    "text: remove it"
)
_TOO_DEEP = "is nested too deeply to read: flatten it"
_REPORT = "this is a bug in subagents; please report it with the file attached"


def dialect_for_path(path: Path) -> Dialect | None:
    """The dialect a file is written in, judged by its suffix; ``None`` if not an agent file."""
    return _DIALECT_BY_SUFFIX.get(path.suffix.lower())


def parse_agent_file(path: Path, *, scope: Scope = "explicit") -> AgentDefinition:
    """Read and validate one agent file. Never raises."""
    path = path if isinstance(path, Path) else Path(path)  # callers may pass a str
    dialect = dialect_for_path(path)
    if dialect is None:
        suffixes = ", ".join(AGENT_FILE_SUFFIXES)
        return _unreadable(
            path, scope, "markdown", f"is not an agent file: agent files end in {suffixes}"
        )
    try:
        text = _read_text(path)
    except _UnreadableFileError as exc:
        return _unreadable(path, scope, dialect, exc.reason)
    except Exception as exc:
        return _unreadable(path, scope, dialect, f"could not be read ({exc!r}): {_REPORT}")
    # Text decoded from UTF-8 cannot hold lone surrogates; skip that check.
    return _parse_text(text, dialect, scope, path)


def parse_agent_text(
    text: str,
    *,
    dialect: Dialect,
    scope: Scope = "explicit",
    source_path: Path | None = None,
) -> AgentDefinition:
    """Parse and validate the text of an agent definition. Never raises."""
    if _SURROGATE.search(text):
        return _unreadable(source_path, scope, dialect, _SURROGATE_REASON)
    return _parse_text(text, dialect, scope, source_path)


def _parse_text(
    text: str, dialect: Dialect, scope: Scope, source_path: Path | None
) -> AgentDefinition:
    try:
        text = text.removeprefix("\ufeff")
        if "\r" in text:
            text = text.replace("\r\n", "\n")
        if dialect == "markdown":
            draft = _from_markdown(text, scope, source_path)
        elif dialect == "codex-toml":
            draft = _from_toml(text, scope, source_path)
        elif dialect == "json":
            draft = _from_json(text, scope, source_path)
        else:
            return _unreadable(
                source_path, scope, dialect, "has no text form: build AgentDefinition(...) instead"
            )
        return validate_in_place(draft)
    except Exception as exc:
        return _unreadable(source_path, scope, dialect, f"could not be parsed ({exc!r}): {_REPORT}")


def parse_agent_mapping(
    data: Mapping[str, Any],
    *,
    name: str | None = None,
    dialect: Dialect = "json",
    scope: Scope = "explicit",
    source_path: Path | None = None,
) -> AgentDefinition:
    """Build and validate a definition from an already-decoded mapping. Never raises.

    For Claude Code's ``--agents '{"name": {"description": ..., "prompt": ...}}'``: pass each
    inner object with ``name=`` set to its key (a ``name`` inside the object wins).
    """
    try:
        given: object = data  # callers pass decoded JSON; check what it really is
        if not isinstance(given, Mapping):
            return _unreadable(
                source_path,
                scope,
                dialect,
                f"is a {type(given).__name__}, not an object: give the agent as "
                '{"description": ..., "prompt": ...}',
                name=name,
            )
        draft = definition_from_mapping(
            data, dialect=dialect, scope=scope, source_path=source_path, default_name=name
        )
        return validate_definition(draft)
    except Exception as exc:
        return _unreadable(
            source_path, scope, dialect, f"could not be parsed ({exc!r}): {_REPORT}", name=name
        )


def _from_markdown(text: str, scope: Scope, source_path: Path | None) -> AgentDefinition:
    frontmatter, body, first_line, warnings = split_frontmatter(text)
    if frontmatter is None:
        return definition_from_mapping(
            {},
            dialect="markdown",
            scope=scope,
            source_path=source_path,
            body=body.strip(),
            default_name=source_path.stem if source_path is not None else None,
            errors=[
                "there is no YAML frontmatter: start the file with a '---' line, then "
                "'name: ...' and 'description: ...', then a closing '---' line"
            ],
        )
    result = read_frontmatter(frontmatter, first_line)
    return definition_from_mapping(
        result.data or {},
        dialect="markdown",
        scope=scope,
        source_path=source_path,
        body=body,
        default_name=None if result.data is not None else _stem(source_path) or "unnamed",
        errors=result.errors,
        warnings=[*warnings, *result.warnings],
        unreadable=result.data is None,
    )


def _from_toml(text: str, scope: Scope, source_path: Path | None) -> AgentDefinition:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return _unreadable(
            source_path, scope, "codex-toml", f"is not valid TOML ({exc}): fix the TOML syntax"
        )
    except RecursionError:
        return _unreadable(source_path, scope, "codex-toml", _TOO_DEEP)
    return definition_from_mapping(data, dialect="codex-toml", scope=scope, source_path=source_path)


def _from_json(text: str, scope: Scope, source_path: Path | None) -> AgentDefinition:
    try:
        data = json.loads(text)
    except ValueError as exc:
        return _unreadable(source_path, scope, "json", f"is not valid JSON ({exc}): fix it")
    except RecursionError:
        return _unreadable(source_path, scope, "json", _TOO_DEEP)
    if "\\u" in text and _SURROGATE.search(json.dumps(data, ensure_ascii=False)):
        return _unreadable(source_path, scope, "json", _SURROGATE_REASON)
    if not isinstance(data, dict):
        return _unreadable(
            source_path,
            scope,
            "json",
            f"is a JSON {type(data).__name__}, not an object: write "
            '{"name": ..., "description": ..., "prompt": ...}',
        )
    return definition_from_mapping(
        data,
        dialect="json",
        scope=scope,
        source_path=source_path,
        default_name=_stem(source_path),
    )


def _stem(source_path: Path | None) -> str | None:
    return source_path.stem if source_path is not None else None


class _UnreadableFileError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _read_text(path: Path) -> str:
    """The file's text, or :class:`_UnreadableFileError` saying why not and what to do."""
    try:
        # O_NONBLOCK: opening a FIFO must not hang; it is rejected just below.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        if path.is_symlink():
            target = str(path.readlink())
            raise _UnreadableFileError(
                f"is a broken symlink (its target {target!r} does not exist): fix or remove it"
            ) from None
        raise _UnreadableFileError("does not exist: check the path") from None
    except PermissionError:
        raise _UnreadableFileError(
            f"cannot be read (permission denied): make it readable, e.g. chmod u+r '{path}'"
        ) from None
    except OSError as exc:
        raise _UnreadableFileError(
            f"cannot be opened ({exc.strerror or exc}): check the file and its folder"
        ) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise _UnreadableFileError(
                "is a directory, not a file: rename it so it does not end in an agent suffix"
            )
        if not stat.S_ISREG(info.st_mode):
            raise _UnreadableFileError("is not a regular file: agent files must be plain files")
        if info.st_size > MAX_AGENT_FILE_BYTES:
            raise _UnreadableFileError(_too_large(info.st_size))
        data = _read_all(fd, info.st_size)
    except OSError as exc:
        raise _UnreadableFileError(
            f"cannot be read ({exc.strerror or exc}): check the file"
        ) from None
    finally:
        os.close(fd)
    if len(data) > MAX_AGENT_FILE_BYTES:
        raise _UnreadableFileError(_too_large(len(data)))
    if b"\x00" in data:
        raise _UnreadableFileError(
            "is a binary file (it contains NUL bytes), not UTF-8 text: move it out of the "
            "agents folder"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _UnreadableFileError(
            f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}): "
            "re-save it as UTF-8"
        ) from None


def _read_all(fd: int, size: int) -> bytes:
    data = os.read(fd, size + 1)
    if len(data) <= size:
        return data  # a short read of a regular file: at its end
    # The file grew since fstat (or reports no size): read on, up to just past the limit.
    chunks = [data]
    total = len(data)
    while total <= MAX_AGENT_FILE_BYTES:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _too_large(size: int) -> str:
    return (
        f"is too large ({size:,} bytes; the limit is {MAX_AGENT_FILE_BYTES:,}): agent files "
        "hold instructions, not data - shorten it or move reference material elsewhere"
    )


def _unreadable(
    path: Path | None,
    scope: Scope,
    dialect: Dialect,
    reason: str,
    *,
    name: str | None = None,
) -> AgentDefinition:
    """An invalid definition standing in for a file that could not be read."""
    where = f"{path}" if path is not None else "the agent definition"
    error = f"{where} {reason}"
    try:
        draft = definition_from_mapping(
            {},
            dialect=dialect,
            scope=scope,
            source_path=path,
            default_name=name or _stem(path) or "unnamed",
            errors=[error],
            unreadable=True,
        )
        return validate_definition(draft)
    except Exception:  # e.g. a caller passed a scope that is not one of ours
        return AgentDefinition.model_construct(
            name=name or "unnamed",
            description="",
            system_prompt="",
            source_path=path,
            parse_errors=[error],
            validation_errors=[error],
            unreadable=True,
        )
