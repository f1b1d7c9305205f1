"""Export a task to plain JSON files people can read and archive, and import it back.

Layout written under the chosen directory::

    tasks/{task_id}/
        export.json            format marker and counts
        task.json              the task record
        sessions.json          its sessions, in creation order
        messages/{session}.json  each session's messages, in order
        checkpoint_000.json    one file per checkpoint, named by its sequence
        ledger.json            the tool-effect ledger
        trace.json             the trace records

Import reads that folder back (a directory holding ``tasks/`` with exactly one task is
accepted too) and writes it in one transaction, checkpoint sequences unchanged.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, unquote

from pydantic import BaseModel

from subagents._preview import preview
from subagents.errors import StoreCorruptError, StoreError
from subagents.store.base import Store, TaskBundle
from subagents.store.codec import record_from_data
from subagents.store.records import (
    CheckpointRecord,
    SessionRecord,
    TaskRecord,
    ToolLedgerEntry,
    TraceRecord,
    is_safe_task_id,
    utc_now,
)

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "export_task", "import_task", "session_file_name"]

EXPORT_FORMAT = "subagents-task"
EXPORT_VERSION = 1

RecordT = TypeVar("RecordT", bound=BaseModel)

_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")
_CHECKPOINT_FILE = re.compile(r"checkpoint_(\d+)\.json")
_IMPORT_HINT = "give the folder 'subagents export' wrote (DIR/tasks/TASK_ID, or DIR)"


def session_file_name(session_id: str) -> str:
    """``messages/`` file name of a session: the id itself when it is a safe file name,
    else its percent-encoding (ids derived from tool calls may hold ``/`` or ``:``)."""
    if _SAFE_NAME.fullmatch(session_id) and session_id not in (".", ".."):
        return f"{session_id}.json"
    return quote(session_id, safe="").replace(".", "%2E") + ".json"


def export_task(store: Store, task_id: str, directory: Path) -> Path:
    """Write every record of the task (id or unique prefix); returns ``tasks/{id}``.

    A previous export of the task is replaced. Nothing outside ``DIR/tasks`` is ever removed:
    the id must be a plain folder name, and a symbolic link where the folder would be (or as
    ``tasks`` itself) is refused rather than followed.
    """
    bundle = store.load_bundle(task_id)
    _require_safe_id(bundle.task.id)
    tasks = Path(directory) / "tasks"
    target = tasks / bundle.task.id
    staging = tasks / f".{bundle.task.id}.partial"
    try:
        tasks.mkdir(parents=True, exist_ok=True)
        _refuse_links(tasks, target, staging)
        if staging.exists():
            shutil.rmtree(staging)
        (staging / "messages").mkdir(parents=True)
        _write_bundle(staging, bundle)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except OSError as error:
        raise StoreError(
            f"cannot write the export to {target} ({error.strerror or error})",
            hint="choose a directory you can write to",
        ) from None
    return target


def _require_safe_id(task_id: str) -> None:
    # TaskRecord validates its id; a record built with model_construct() skips that.
    if not is_safe_task_id(task_id):
        raise StoreError(
            f"the task id {preview(task_id, 60)} cannot name a folder (it is not a safe id)",
            hint="export tasks subagents created; re-import this one with a valid id",
        )


def _refuse_links(tasks: Path, *paths: Path) -> None:
    for path in (tasks, *paths):
        if path.is_symlink():
            raise StoreError(
                f"{path} is a symbolic link; the export does not write or remove through links",
                hint="remove the link or export into another directory",
            )
    real = tasks.resolve()
    for path in paths:
        if path.resolve().parent != real:
            raise StoreError(
                f"{path} is not inside {tasks}",
                hint="export into a plain directory you own",
            )


def _write_bundle(folder: Path, bundle: TaskBundle) -> None:
    _write_json(
        folder / "export.json",
        {
            "format": EXPORT_FORMAT,
            "version": EXPORT_VERSION,
            "task_id": bundle.task.id,
            "exported_at": utc_now().isoformat(),
            "sessions": len(bundle.sessions),
            "messages": sum(len(messages) for messages in bundle.messages.values()),
            "checkpoints": len(bundle.checkpoints),
            "ledger_entries": len(bundle.ledger),
            "trace_records": len(bundle.traces),
        },
    )
    _write_json(folder / "task.json", _plain(bundle.task))
    _write_json(folder / "sessions.json", [_plain(session) for session in bundle.sessions])
    for session_id, messages in bundle.messages.items():
        _write_json(folder / "messages" / session_file_name(session_id), messages)
    for checkpoint in bundle.checkpoints:
        _write_json(folder / f"checkpoint_{checkpoint.sequence:03d}.json", _plain(checkpoint))
    _write_json(folder / "ledger.json", [_plain(entry) for entry in bundle.ledger])
    _write_json(folder / "trace.json", [_plain(trace) for trace in bundle.traces])


def _plain(record: BaseModel) -> dict[str, Any]:
    return record.model_dump(mode="json")


def _write_json(path: Path, value: Any) -> None:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates cannot be UTF-8: escape them (json's ASCII mode keeps them exact).
        data = json.dumps(value, indent=2).encode("ascii")
    path.write_bytes(data + b"\n")


def import_task(store: Store, directory: Path, *, replace: bool = False) -> str:
    """Read an exported task back into ``store``; returns its id.

    A task with that id already in the store is a StoreError unless ``replace``.

    An imported task is not trusted: the workspace, permission mode and headless policy it
    names are set aside (kept under ``settings["imported"]`` for people to read), so that a
    resume runs it where and how the person resuming it says, and the tool calls it left
    pending are listed there too, to be asked about again (see ``Runtime.resume``).
    """
    folder = _task_folder(Path(directory))
    bundle = _read_bundle(folder)
    _mark_imported(bundle, folder)
    store.restore_bundle(bundle, replace=replace)
    return bundle.task.id


def _mark_imported(bundle: TaskBundle, folder: Path) -> None:
    task = bundle.task
    task.settings = {
        "imported": {
            "from": str(folder),
            "at": utc_now().isoformat(),
            "workspace": task.workspace,
            "settings": _bounded_settings(task.settings),
            "pending_calls": sorted(_pending_calls(bundle)),
        }
    }


def _bounded_settings(settings: dict[str, Any]) -> dict[str, str]:
    """The archive's own settings, as short strings: shown to people, never acted on."""
    return {str(key)[:100]: str(value)[:200] for key, value in list(settings.items())[:20]}


def _pending_calls(bundle: TaskBundle) -> set[str]:
    """Ids of the tool calls in the archive that have no result yet, in every session."""
    pending: set[str] = set()
    for messages in bundle.messages.values():
        answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
        for message in messages:
            if message.get("role") != "assistant":
                continue
            calls = message.get("tool_calls")
            for call in calls if isinstance(calls, list) else ():
                call_id = call.get("id") if isinstance(call, dict) else None
                if isinstance(call_id, str) and call_id not in answered:
                    pending.add(call_id)
    return pending


def _task_folder(directory: Path) -> Path:
    if (directory / "task.json").is_file():
        return directory
    candidates = sorted(path.parent for path in directory.glob("tasks/*/task.json"))
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        shown = ", ".join(str(path) for path in candidates[:5])
        raise StoreError(
            f"{directory} holds {len(candidates)} exported tasks ({shown})",
            hint="import them one at a time: give one DIR/tasks/TASK_ID folder",
        )
    raise StoreError(f"no exported task in {directory} (no task.json)", hint=_IMPORT_HINT)


def _read_bundle(folder: Path) -> TaskBundle:
    task = _task(folder / "task.json")
    sessions = _records(SessionRecord, folder / "sessions.json")
    messages: dict[str, list[dict[str, Any]]] = {}
    for session in sessions:
        path = folder / "messages" / session_file_name(session.session_id)
        if path.exists():
            messages[session.session_id] = _messages(path)
    _refuse_strays(folder, {session.session_id for session in sessions})
    checkpoints = [
        _record(CheckpointRecord, _read_json(path), path) for path in _checkpoint_files(folder)
    ]
    return TaskBundle(
        task=task,
        sessions=sessions,
        messages=messages,
        checkpoints=checkpoints,
        ledger=_records(ToolLedgerEntry, folder / "ledger.json"),
        traces=_records(TraceRecord, folder / "trace.json"),
    )


def _task(path: Path) -> TaskRecord:
    data = _read_json(path)
    if isinstance(data, dict) and "id" in data and not is_safe_task_id(data["id"]):
        raise StoreError(
            f"{path}: the task id {preview(data['id'], 60)} is refused: a task id names a "
            "folder, so it must be 1 to 128 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit",
            hint="give the task a valid id in task.json (e.g. a new UUID), then import again",
        )
    return _record(TaskRecord, data, path)


def _refuse_strays(folder: Path, session_ids: set[str]) -> None:
    """A messages file without its session would be silently dropped: refuse instead."""
    messages_dir = folder / "messages"
    if not messages_dir.is_dir():
        return
    for path in sorted(messages_dir.glob("*.json")):
        session_id = unquote(path.name.removesuffix(".json"))
        if session_id not in session_ids:
            raise StoreError(
                f"{path}: messages of session {session_id!r}, which sessions.json does not list",
                hint="restore the session in sessions.json or remove the file, then import again",
            )


def _checkpoint_files(folder: Path) -> list[Path]:
    numbered = []
    for path in folder.glob("checkpoint_*.json"):
        match = _CHECKPOINT_FILE.fullmatch(path.name)
        if match:
            numbered.append((int(match.group(1)), path))
    return [path for _, path in sorted(numbered)]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except FileNotFoundError:
        raise StoreError(f"{path} is missing from the export", hint=_IMPORT_HINT) from None
    except OSError as error:
        raise StoreError(
            f"cannot read {path} ({error.strerror or error})", hint="check its permissions"
        ) from None
    except ValueError as error:
        raise StoreError(
            f"{path} is not valid JSON ({error})",
            hint="restore the file from the original export",
        ) from None
    except RecursionError:
        raise StoreError(
            f"{path} nests values too deeply to read",
            hint="restore the file from the original export",
        ) from None


def _record(cls: type[RecordT], data: Any, path: Path) -> RecordT:
    try:
        return record_from_data(cls, data, where=str(path))
    except StoreCorruptError as error:
        raise StoreError(
            f"{path} is not a valid export ({error.message})",
            hint="restore the file from the original export",
        ) from None


def _records(cls: type[RecordT], path: Path) -> list[RecordT]:
    if not path.exists():
        return []
    data = _read_json(path)
    if not isinstance(data, list):
        raise StoreError(
            f"{path} should hold a JSON list", hint="restore the file from the original export"
        )
    return [_record(cls, item, path) for item in data]


def _messages(path: Path) -> list[dict[str, Any]]:
    data = _read_json(path)
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise StoreError(
            f"{path} should hold a JSON list of message objects",
            hint="restore the file from the original export",
        )
    return data
