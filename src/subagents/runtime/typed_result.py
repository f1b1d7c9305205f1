"""Typed results: an agent whose file gives an ``outputSchema`` (a JSON Schema) must end with
an answer that is JSON matching it.

Its system prompt says so, with the schema. Its final answer is read as JSON (a fenced
```json block is taken as its content); one that does not parse or match is answered once
with what is wrong, and the agent's next answer is taken or refused: the session then fails,
its parent told why. An answer that matches is passed on as compact JSON, so a parent or a
workflow reads values, not prose.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["schema_prompt", "typed_answer", "typed_retry_note"]

_FENCED = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.DOTALL)
_SHOWN_PROBLEMS = 3
_MAX_SCHEMA_CHARS = 20_000


def schema_prompt(schema: dict[str, Any]) -> str:
    """The system prompt's section that asks for the typed result."""
    shown = json.dumps(schema, indent=2, ensure_ascii=False)[:_MAX_SCHEMA_CHARS]
    return (
        "\n\n# Your final answer\n"
        "When you are done, answer with JSON only (no other text) that matches this JSON "
        f"Schema:\n```json\n{shown}\n```"
    )


def typed_answer(schema: dict[str, Any], answer: str) -> tuple[str | None, str | None]:
    """``(the answer as compact JSON, None)`` when it matches ``schema``, else ``(None, what
    is wrong)``."""
    from jsonschema import Draft202012Validator

    text = answer.strip()
    fenced = _FENCED.match(text)
    if fenced is not None:
        text = fenced.group(1).strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return None, f"it is not JSON ({error.msg} at line {error.lineno}, column {error.colno})"
    except RecursionError:  # a model's answer nested deeper than any result needs
        return None, "it is JSON nested too deeply to read"
    errors = sorted(Draft202012Validator(schema).iter_errors(value), key=lambda e: list(e.path))
    if errors:
        problems = "; ".join(_problem(error) for error in errors[:_SHOWN_PROBLEMS])
        more = len(errors) - _SHOWN_PROBLEMS
        return None, problems + (f"; and {more} more" if more > 0 else "")
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")), None


def typed_retry_note(problem: str) -> str:
    """What an agent is told when its final answer does not match its schema."""
    return (
        f"Your final answer does not match the JSON Schema you were given: {problem}. Answer "
        "again with JSON only that matches it."
    )


def _problem(error: Any) -> str:
    where = "/".join(str(part) for part in error.path) or "the top level"
    return f"at {where}: {error.message[:200]}"
