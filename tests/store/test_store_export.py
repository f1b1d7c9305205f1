"""Export a task to readable files and import it back: the round trip is exact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store_records import (
    make_checkpoint,
    make_ledger,
    make_session,
    make_task,
    make_trace,
    write_steps,
)
from subagents.errors import StoreError, StoreVersionError
from subagents.store import StepWrite, TaskBundle
from subagents.store.export import export_task, import_task, session_file_name
from subagents.store.sqlite import SQLiteStore


def _rich_task(store: SQLiteStore) -> str:
    task = make_task(tags=["critical"], retention_days=30, settings={"permission_mode": "default"})
    store.create_task(task)
    main = make_session(task.id, "main")
    child = make_session(
        task.id, "main/call_1", parent_session_id="main", parent_tool_call_id="call_1", depth=1
    )
    write_steps(store, main, 3)
    write_steps(store, child, 2)
    store.commit(
        StepWrite(
            task_id=task.id,
            ledger=[make_ledger(task.id, "main/call_1", "call_9", status="completed", result="ok")],
            checkpoint=make_checkpoint(
                task.id,
                "main/call_1",
                position="awaiting_human",
                awaiting_human=True,
                question={"session_path": ["main", "main/call_1"], "tool": "Write"},
            ),
            traces=[make_trace(task.id, None, kind="session", data={"tokens": 12})],
        )
    )
    return task.id


def _assert_same(left: TaskBundle, right: TaskBundle) -> None:
    """Equal, except that the imported copy keeps the original's settings only as a note."""
    imported = right.task.settings["imported"]
    assert imported["settings"] == {k: str(v) for k, v in left.task.settings.items()}
    assert imported["workspace"] == left.task.workspace
    assert left.task.model_copy(update={"settings": {}}) == right.task.model_copy(
        update={"settings": {}}
    )
    assert left.sessions == right.sessions
    assert left.messages == right.messages
    assert left.checkpoints == right.checkpoints
    assert left.ledger == right.ledger
    assert left.traces == right.traces


def test_export_writes_the_documented_layout(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as store:
        task_id = _rich_task(store)
        folder = export_task(store, task_id[:8], tmp_path / "out")
    assert folder == tmp_path / "out" / "tasks" / task_id
    names = sorted(path.name for path in folder.iterdir())
    assert names == [
        "checkpoint_000.json",
        "checkpoint_001.json",
        "checkpoint_002.json",
        "checkpoint_003.json",
        "checkpoint_004.json",
        "checkpoint_005.json",
        "export.json",
        "ledger.json",
        "messages",
        "sessions.json",
        "task.json",
        "trace.json",
    ]
    assert sorted(path.name for path in (folder / "messages").iterdir()) == [
        "main%2Fcall_1.json",
        "main.json",
    ]
    task = json.loads((folder / "task.json").read_text())
    assert task["id"] == task_id and task["schema_version"] == 1
    marker = json.loads((folder / "export.json").read_text())
    assert marker["format"] == "subagents-task" and marker["checkpoints"] == 6
    assert json.loads((folder / "checkpoint_005.json").read_text())["awaiting_human"] is True
    assert (folder / "sessions.json").read_text().startswith("[\n  {")  # indented, readable


def test_round_trip_into_another_store_is_exact(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as source, SQLiteStore(tmp_path / "b.db") as target:
        task_id = _rich_task(source)
        export_task(source, task_id, tmp_path / "out")
        assert import_task(target, tmp_path / "out") == task_id  # the export root works too
        _assert_same(source.load_bundle(task_id), target.load_bundle(task_id))
        assert target.integrity_check() == []
        # the imported task goes on where it stopped
        saved = target.commit(
            StepWrite(task_id=task_id, checkpoint=make_checkpoint(task_id, "main"))
        )
        assert saved is not None and saved.sequence == 6


def test_importing_an_existing_task_needs_replace(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as store:
        task_id = _rich_task(store)
        folder = export_task(store, task_id, tmp_path / "out")
        with pytest.raises(StoreError, match="already exists") as error:
            import_task(store, folder)
        assert "--replace" in str(error.value)
        write_steps(store, store.get_session("main"), 1, start=3)  # diverge after the export
        assert import_task(store, folder, replace=True) == task_id
        assert len(store.messages("main")) == 3
        assert len(store.checkpoints(task_id)) == 6


def test_exporting_twice_replaces_the_folder(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as store:
        task_id = _rich_task(store)
        export_task(store, task_id, tmp_path / "out")
        write_steps(store, store.get_session("main"), 1, start=3)
        folder = export_task(store, task_id, tmp_path / "out")
    assert (folder / "checkpoint_006.json").exists()
    assert not list((tmp_path / "out" / "tasks").glob(".*partial"))


def test_import_refuses_what_is_not_an_export(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as store:
        with pytest.raises(StoreError, match="no exported task") as missing:
            import_task(store, tmp_path)
        assert "subagents export" in str(missing.value)
        task_id = _rich_task(store)
        folder = export_task(store, task_id, tmp_path / "out")
        (folder / "sessions.json").write_text("{not json")
        with pytest.raises(StoreError, match=r"sessions\.json is not valid JSON"):
            import_task(store, folder, replace=True)
        (folder / "sessions.json").write_text('[{"session_id": "x"}]')
        with pytest.raises(StoreError, match=r"sessions\.json is not a valid export"):
            import_task(store, folder, replace=True)


def test_import_refuses_messages_without_their_session(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as store:
        task_id = _rich_task(store)
        folder = export_task(store, task_id, tmp_path / "out")
        (folder / "messages" / "ghost.json").write_text("[]")
        with pytest.raises(StoreError, match="session 'ghost'"):
            import_task(store, folder, replace=True)


def test_import_refuses_a_task_from_a_newer_subagents(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as store:
        task_id = _rich_task(store)
        folder = export_task(store, task_id, tmp_path / "out")
        data = json.loads((folder / "task.json").read_text())
        data["schema_version"] = 3
        (folder / "task.json").write_text(json.dumps(data))
        with pytest.raises(StoreVersionError, match="pip install -U subagents"):
            import_task(store, folder, replace=True)


def test_several_exported_tasks_need_one_folder(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as store:
        first = _rich_task(store)
        task = make_task()
        store.create_task(task)
        export_task(store, first, tmp_path / "out")
        export_task(store, task.id, tmp_path / "out")
        with pytest.raises(StoreError, match="2 exported tasks"):
            import_task(store, tmp_path / "out")


@pytest.mark.parametrize(
    ("session_id", "name"),
    [
        ("3f2b-uuid", "3f2b-uuid.json"),
        ("main/call_1", "main%2Fcall_1.json"),
        ("..", "%2E%2E.json"),
        (".hidden", "%2Ehidden.json"),
        ("a:b c", "a%3Ab%20c.json"),
    ],
)
def test_session_file_names_are_safe(session_id: str, name: str) -> None:
    assert session_file_name(session_id) == name


# Lone surrogates included: tools decoding bytes with surrogateescape produce them.
_CHARACTERS = st.characters() | st.characters(categories=["Cs"])
_JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(_CHARACTERS, max_size=30)
)
_JSON = st.recursive(
    _JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(_CHARACTERS, max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
_MESSAGES = st.lists(st.dictionaries(st.text(max_size=10), _JSON, max_size=5), max_size=6)


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(messages=_MESSAGES)
def test_any_json_messages_round_trip(tmp_path: Path, messages: list[dict[str, Any]]) -> None:
    source_path, target_path = tmp_path / "h-a.db", tmp_path / "h-b.db"
    for path in (source_path, target_path):
        path.unlink(missing_ok=True)
    with SQLiteStore(source_path) as source, SQLiteStore(target_path) as target:
        task = make_task()
        source.create_task(task)
        session = make_session(task.id, "s")
        source.commit(
            StepWrite(
                task_id=task.id,
                session=session,
                messages=[("s", seq, item) for seq, item in enumerate(messages)],
            )
        )
        assert source.messages("s") == messages
        folder = export_task(source, task.id, tmp_path / "h-out")
        import_task(target, folder)
        assert target.messages("s") == messages
        _assert_same(source.load_bundle(task.id), target.load_bundle(task.id))
