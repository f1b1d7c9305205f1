"""Where the items of a workflow task's map nodes stand, read from the store (for ``subagents
tasks show``): while the map runs and after.

A map node's item ``i`` of the execution ``KEY`` (``each#0``) is the tool call ``KEY/i`` in
the workflow session's ledger (a tool body) or the session ``node_session_id(task, KEY/i)``
(an agent body); an item with neither has not started. The list is the one the node maps
over, in the state of the task's last workflow checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from subagents.workflows.graph import MapNode
from subagents.workflows.runner import (
    definition_of,
    list_to_map,
    node_session_id,
    stored_input,
    workflow_session_id,
)

if TYPE_CHECKING:
    from subagents.store.base import Store
    from subagents.store.records import TaskRecord

__all__ = ["ItemStatus", "MapStatus", "map_statuses"]

_PREVIEW_CHARS = 100


@dataclass(frozen=True, slots=True)
class ItemStatus:
    """One item: its place, the item, ``done`` / ``failed`` / ``running`` / ``queued``, and
    the start of its result or error."""

    index: int
    item: Any
    status: str
    preview: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "item": self.item,
            "status": self.status,
            "preview": self.preview,
        }


@dataclass(slots=True)
class MapStatus:
    """One execution of a map node: its node, key, and items."""

    node: str
    key: str
    items: list[ItemStatus] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for item in self.items if item.status == status)

    def counts(self) -> str:
        return ", ".join(
            f"{self.count(status)} {status}" for status in ("done", "running", "queued", "failed")
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "key": self.key,
            "total": len(self.items),
            **{status: self.count(status) for status in ("done", "running", "queued", "failed")},
            "items": [item.to_dict() for item in self.items],
        }


def map_statuses(store: Store, task: TaskRecord) -> list[MapStatus]:
    """Every map node execution of workflow task ``task`` that the store can place: those
    finished (in the path taken) and the one running. Empty for any other task."""
    if "workflow" not in task.settings:
        return []
    try:
        workflow = definition_of(task)
    except Exception:  # a code-built graph, or an unreadable one: nothing to show
        return []
    maps = {name: node for name, node in workflow.nodes.items() if isinstance(node, MapNode)}
    if not maps:
        return []
    session_id = workflow_session_id(task.id)
    checkpoint = store.latest_checkpoint(task.id, session_id)
    progress = checkpoint.state.get("workflow") if checkpoint is not None else None
    if checkpoint is None:  # its first node runs: the state is the input it was given
        given = stored_input(task)
        fields = given if isinstance(given, dict) else {"input": given}
        progress = {"main": {"cursor": workflow.entry_point, "state": fields}}
    if not isinstance(progress, dict):
        return []
    lane = progress.get("main") or {}
    state = (lane.get("state") or {}) if isinstance(lane, dict) else {}
    executions = [
        (str(visit.get("node")), str(visit.get("key")))
        for visit in progress.get("path") or ()
        if isinstance(visit, dict) and visit.get("node") in maps
    ]
    cursor = lane.get("cursor") if isinstance(lane, dict) else None
    if cursor in maps and task.status != "completed":
        counts = lane.get("counts") or {}
        executions.append((cursor, f"{lane.get('prefix', '')}{cursor}#{counts.get(cursor, 0)}"))
    ledger = {entry.tool_call_id: entry for entry in store.ledger(task.id, session_id)}
    found = []
    for name, key in executions:
        node = maps[name]
        items = list_to_map(state.get(node.over))
        if not isinstance(items, list):
            continue
        found.append(
            MapStatus(
                name,
                key,
                [_item(store, task, node, key, ledger, i, it) for i, it in enumerate(items)],
            )
        )
    return found


def _item(
    store: Store,
    task: TaskRecord,
    node: MapNode,
    key: str,
    ledger: dict[str, Any],
    index: int,
    item: Any,
) -> ItemStatus:
    item_key = f"{key}/{index}"
    if node.tool is not None:
        entry = ledger.get(item_key)
        if entry is None:
            return ItemStatus(index, item, "queued")
        if entry.status == "started":
            return ItemStatus(index, item, "running")
        failed = entry.status == "failed" or entry.is_error
        return ItemStatus(index, item, "failed" if failed else "done", _preview(entry.result))
    from subagents.errors import StoreError

    try:
        session = store.get_session(node_session_id(task.id, item_key))
    except StoreError:
        return ItemStatus(index, item, "queued")
    status = {"completed": "done", "error": "failed", "cancelled": "failed"}.get(
        session.status, "running"
    )
    return ItemStatus(index, item, status, _preview(session.summary))


def _preview(text: str | None) -> str:
    one_line = " ".join((text or "").split())
    return one_line if len(one_line) <= _PREVIEW_CHARS else one_line[: _PREVIEW_CHARS - 1] + "…"
