"""Short previews of untrusted values for error messages, in time bounded by the preview.

``repr(value)[:60]`` formats the whole value before cutting it: a 1 MiB list, a value that YAML
aliases expand a billion-fold, a cyclic structure or a 5,000-digit integer (whose ``repr``
raises) makes an error message cost seconds, gigabytes or an exception. :func:`preview` walks
the value instead, piece by piece, and stops as soon as it has ``limit`` characters. It never
recurses, so depth does not matter either.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterator, Mapping
from typing import Literal

__all__ = ["PreviewStyle", "preview", "shorten"]

PreviewStyle = Literal["python", "json"]
"""``python``: like ``repr`` (``'a'``, ``None``); ``json``: like JSON (``"a"``, ``null``)."""

_ELLIPSIS = "..."
_MAX_SHOWN_INT_BITS = 256  # about 77 digits; bigger integers are described, not printed


class _Text(str):
    """Punctuation the walker emits as is (as opposed to a value still to render)."""


def preview(value: object, limit: int = 60, *, style: PreviewStyle = "python") -> str:
    """At most ``limit`` characters showing ``value``; cut ones end with ``...``.

    The cost is proportional to ``limit``, whatever the size, depth or shape of ``value``.
    """
    limit = max(limit, len(_ELLIPSIS) + 1)
    parts: list[str] = []
    size = 0
    for piece in _pieces(value, style, limit + 1):
        parts.append(piece)
        size += len(piece)
        if size > limit:
            return "".join(parts)[: limit - len(_ELLIPSIS)] + _ELLIPSIS
    return "".join(parts)


def shorten(text: str, limit: int = 60) -> str:
    """``text`` as is when it has at most ``limit`` characters, else cut, ending with ``...``."""
    if len(text) <= limit:
        return text
    return text[: max(limit - len(_ELLIPSIS), 1)] + _ELLIPSIS


def _pieces(value: object, style: PreviewStyle, room: int) -> Iterator[str]:
    """The text of ``value`` in small pieces, depth-first with an explicit stack."""
    stack: list[Iterator[object]] = [iter((value,))]
    while stack:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
        elif isinstance(item, _Text):
            yield item
        elif isinstance(item, Mapping):
            yield "{"
            stack.append(_mapping_items(item))
        elif isinstance(item, list | tuple | set | frozenset):
            opening, closing = _brackets(item, style)
            yield opening
            stack.append(_sequence_items(item, closing))
        else:
            yield _scalar(item, style, room)


_END = object()


def _mapping_items(mapping: Mapping[object, object]) -> Iterator[object]:
    for index, (key, item) in enumerate(mapping.items()):
        if index:
            yield _Text(", ")
        yield key
        yield _Text(": ")
        yield item
    yield _Text("}")


def _sequence_items(items: object, closing: str) -> Iterator[object]:
    assert isinstance(items, list | tuple | set | frozenset)
    for index, item in enumerate(items):
        if index:
            yield _Text(", ")
        yield item
    yield _Text(closing)


def _brackets(items: object, style: PreviewStyle) -> tuple[str, str]:
    if style == "json" or isinstance(items, list):
        return "[", "]"
    if isinstance(items, tuple):
        return "(", ")"
    return "{", "}"


def _scalar(value: object, style: PreviewStyle, room: int) -> str:
    if isinstance(value, str):
        cut = value[:room]
        return _json_string(cut) if style == "json" else _repr_prefix(cut, value)
    if value is None or isinstance(value, bool):
        if style == "json":
            return "null" if value is None else str(value).lower()
        return repr(value)
    if isinstance(value, int):
        return _integer(value)
    if isinstance(value, float):
        if style == "json" and not math.isfinite(value):
            return _json_string(repr(value))
        return repr(value)
    if isinstance(value, bytes | bytearray):
        return _repr_prefix(bytes(value[:room]), bytes(value))
    if isinstance(value, dt.datetime | dt.date | dt.time | dt.timedelta):
        text = value.isoformat() if not isinstance(value, dt.timedelta) else str(value)
        return _json_string(text) if style == "json" else repr(text)
    return f"<{type(value).__name__}>"


def _repr_prefix(cut: str | bytes, whole: str | bytes) -> str:
    """``repr(cut)`` in the quotes ``repr(whole)`` uses, so that it starts ``repr(whole)``.

    Python quotes with ``"`` when the text holds ``'`` and no ``"``; a prefix can differ.
    """
    shown = repr(cut)
    single, double = ("'", '"') if isinstance(whole, str) else (b"'", b'"')
    wants_double = single in whole and double not in whole  # type: ignore[operator]
    prefix, body = shown[: shown.index(shown[-1])], shown[shown.index(shown[-1]) + 1 : -1]
    if wants_double and shown[-1] == "'":
        return f'{prefix}"{body}"'
    if not wants_double and shown[-1] == '"':
        return prefix + "'" + body.replace("'", "\\'") + "'"
    return shown


def _integer(value: int) -> str:
    bits = abs(value).bit_length()
    if bits <= _MAX_SHOWN_INT_BITS:
        return str(value)
    digits = int(bits * math.log10(2)) + 1
    return f"<a {digits:,}-digit number>"


def _json_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
