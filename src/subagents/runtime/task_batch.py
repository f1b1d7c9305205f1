"""TaskBatch: one agent type run over a list of items, from a model's tool call.

A model that fans out with one Task call per item fills its own context with every answer.
TaskBatch takes the list, the agent type, a prompt with ``{{ item }}`` (and ``{{ index }}``),
and optionally an ``output_schema``; it runs one subagent per item, at most
``max_concurrent`` at a time, and answers with a compact summary (counts, a line per item) and
the path of a JSON Lines file holding every result whole, which the model reads only where it
needs to. Each item is a subagent like a Task's, with an id derived from the call and its
index: a parent restarted mid-batch finds the finished items and does not run them again.

The delegation runs the items (:meth:`subagents.runtime.delegation.Delegation`); this module
holds what the model is told, the prompts, the summary and the results file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from subagents.runtime.result import SpawnResult

__all__ = [
    "MAX_BATCH_ITEMS",
    "TASK_BATCH_DESCRIPTION",
    "BatchItem",
    "TaskBatchInput",
    "item_prompt",
    "results_file",
    "summary",
    "write_results",
]

MAX_BATCH_ITEMS = 1000
_LINE_CHARS = 120  # of each item's answer in the summary
_SUMMARY_ITEMS = 50  # lines of the summary, at most; the file has them all

TASK_BATCH_DESCRIPTION = (
    "Run one agent type over a list of items, one subagent per item, several at a time. "
    "Use it instead of many Task calls when the same work applies to each item of a list "
    "(files, URLs, records): you get a short summary, and a file with every result that you "
    "Read where you need it. Write `{{ item }}` in the prompt where the item goes."
)


class TaskBatchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(description="A short (3-5 word) description of the batch")
    subagent_type: str = Field(description="The type of agent to run for each item")
    prompt: str = Field(
        description="The task for each item; {{ item }} stands for the item, {{ index }} for "
        "its place in the list"
    )
    items: list[Any] = Field(
        min_length=1, max_length=MAX_BATCH_ITEMS, description="The items, one subagent each"
    )
    output_schema: dict[str, Any] | None = Field(
        default=None,
        description="Optional: a JSON Schema each item's answer must match",
    )
    max_concurrent: int | None = Field(
        default=None, ge=1, le=100, description="Optional: how many items run at once"
    )


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One item's outcome: its place, the item, and its subagent's result."""

    index: int
    item: Any
    spawn: SpawnResult


def item_prompt(template: str, item: Any, index: int) -> str:
    """The prompt of one item: ``{{ item }}`` and ``{{ index }}`` replaced (an item that is
    not text as JSON); a prompt without ``{{ item }}`` gets the item after it."""
    shown = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
    text = template
    found = False
    for spelling in ("{{ item }}", "{{item}}"):
        found = found or spelling in text
        text = text.replace(spelling, shown)
    for spelling in ("{{ index }}", "{{index}}"):
        text = text.replace(spelling, str(index))
    return text if found else f"{text.rstrip()}\n\nItem: {shown}"


def results_file(workspace: Path, call_id: str) -> Path:
    """Where the results of the TaskBatch call ``call_id`` are written."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in call_id)[:80] or "batch"
    return workspace / ".subagents" / "batches" / f"{safe}.jsonl"


def write_results(path: Path, items: list[BatchItem]) -> None:
    """Every item's result, whole, one JSON object a line, in the list's order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for entry in items:
        spawn = entry.spawn
        record: dict[str, Any] = {
            "index": entry.index,
            "item": entry.item,
            "status": spawn.status,
            "agent_id": spawn.agent_id,
        }
        if spawn.success:
            record["result"] = _value(spawn.summary)
        else:
            record["error"] = spawn.error
            record["partial"] = spawn.summary
        lines.append(json.dumps(record, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _value(answer: str) -> Any:
    """A typed answer (JSON) as its value, any other answer as its text."""
    try:
        return json.loads(answer)
    except (json.JSONDecodeError, RecursionError):
        return answer


def summary(items: list[BatchItem], shown_path: str) -> str:
    """What the model gets back: counts, a line per item (the first 50), and the file."""
    failed = [entry for entry in items if not entry.spawn.success]
    lines = [
        f"{len(items) - len(failed)} of {len(items)} items completed"
        + (
            f", {len(failed)} did not ({', '.join(str(e.index) for e in failed[:20])})"
            if failed
            else ""
        )
        + f". Every result, whole, one JSON object a line (index, item, status, result or "
        f"error): {shown_path}"
    ]
    for entry in items[:_SUMMARY_ITEMS]:
        spawn = entry.spawn
        text = spawn.summary if spawn.success else f"FAILED ({spawn.status}): {spawn.error}"
        one_line = " ".join(text.split())
        if len(one_line) > _LINE_CHARS:
            one_line = one_line[: _LINE_CHARS - 1] + "…"
        lines.append(f"[{entry.index}] {one_line}")
    if len(items) > _SUMMARY_ITEMS:
        lines.append(f"... and {len(items) - _SUMMARY_ITEMS} more in the file")
    return "\n".join(lines)
