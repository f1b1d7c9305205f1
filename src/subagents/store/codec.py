"""JSON encoding of stored rows: fast on the way in, version-checked on the way out.

Records and messages are written with Pydantic's Rust serializer (the model's
``__pydantic_serializer__``, as ``model_dump_json`` calls it; ``pydantic_core.to_json``), the
fastest path measured: about 4 us for a checkpoint against 13 us for ``model_dump`` +
``json.dumps``, 2 us for a 1 KB message against 8 us for ``json.dumps``.
Text that is not valid UTF-8 (lone surrogates, e.g. from a tool decoding bytes with
``surrogateescape``) is refused by that serializer, so such records fall back to ``json.dumps``,
whose ASCII escapes keep every character. Reading checks ``schema_version`` before anything
else can go wrong with a record written by a newer subagents.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from subagents.errors import StoreCorruptError, StoreError, StoreVersionError
from subagents.store.records import RECORD_SCHEMA_VERSION

__all__ = [
    "UPGRADE_ADVICE",
    "dump_json",
    "dump_record",
    "load_json",
    "load_record",
    "newer_version_error",
    "record_from_data",
]

RecordT = TypeVar("RecordT", bound=BaseModel)

UPGRADE_ADVICE = "upgrade with 'pip install -U subagents'"

_ENCODER = json.JSONEncoder(separators=(",", ":"))


def newer_version_error(what: str, version: int) -> StoreVersionError:
    return StoreVersionError(
        f"{what} was written by a newer subagents (schema {version}); "
        f"this one reads up to schema {RECORD_SCHEMA_VERSION}",
        hint=UPGRADE_ADVICE,
    )


def dump_record(record: BaseModel) -> str:
    try:
        # what model_dump_json() does, without its Python layer of keyword arguments (a step
        # encodes three or four records: a microsecond each)
        return record.__pydantic_serializer__.to_json(record).decode()
    except PydanticSerializationError:
        pass
    try:
        return json.dumps(record.model_dump(mode="json"), separators=(",", ":"))
    except (TypeError, ValueError, PydanticSerializationError) as error:
        raise StoreError(
            f"cannot store a {type(record).__name__}: {error}",
            hint="keep only JSON values (str, int, float, bool, None, lists, dicts) in it",
        ) from None


def dump_json(value: Any) -> str:
    """Compact JSON of a plain value (a message dict); ``TypeError`` when not JSON-ready."""
    try:
        return to_json(value).decode()
    except PydanticSerializationError:
        return _ENCODER.encode(value)


def load_json(text: str, *, where: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError) as error:
        raise _unreadable(where, str(error)) from None


def load_record(cls: type[RecordT], text: str, *, where: str) -> RecordT:
    """Decode one stored record; StoreVersionError when a newer subagents wrote it."""
    try:
        record = cls.model_validate_json(text)
    except ValidationError:
        # A newer record (unknown fields), lone-surrogate escapes that the Rust JSON parser
        # refuses, or real damage: the slow path tells them apart.
        return record_from_data(cls, load_json(text, where=where), where=where)
    version = getattr(record, "schema_version", RECORD_SCHEMA_VERSION)
    if version > RECORD_SCHEMA_VERSION:
        raise newer_version_error(where, version)
    return record


def record_from_data(cls: type[RecordT], data: Any, *, where: str) -> RecordT:
    """Validate decoded JSON as a record, refusing newer schema versions first."""
    if not isinstance(data, dict):
        raise _unreadable(where, "not a JSON object")
    version = data.get("schema_version", RECORD_SCHEMA_VERSION)
    if isinstance(version, int) and version > RECORD_SCHEMA_VERSION:
        raise newer_version_error(where, version)
    try:
        return cls.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first.get("loc", ())) or "(record)"
        raise _unreadable(where, f"{field}: {first.get('msg', 'invalid')}") from None


def _unreadable(where: str, reason: str) -> StoreCorruptError:
    return StoreCorruptError(
        f"{where} is unreadable ({reason})",
        hint="export the other tasks with 'subagents export', or move the store aside and "
        "run again",
    )
