"""The delegation tasks of the real-model evaluation, and how each is judged.

Each task is a small project (files and agent files), a prompt as a user would write it, and
a check that reads what really happened from the task's store: which agents ran, under which
parent, which tools they called with which arguments, and the final answer. Facts the answer
must carry (code words, numbers) are only in files a subagent has to read, so a model cannot
pass by guessing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CORPUS", "TASKS", "Call", "EvalTask", "Outcome", "SessionView"]


def _shared() -> Path:
    """``../shared`` beside the clone (or beside the working directory, for a copy of the
    eval run from elsewhere)."""
    beside_clone = Path(__file__).resolve().parents[2] / "shared"
    return beside_clone if beside_clone.is_dir() else Path.cwd().resolve().parent / "shared"


CORPUS = _shared() / "corpus" / "claude-code-agents"
CORPUS_REVIEWER = CORPUS / "voltagent" / "categories" / "04-quality-security" / "code-reviewer.md"


@dataclass(frozen=True)
class Call:
    """One tool call a session made, with its result."""

    name: str
    arguments: dict[str, Any]
    result: str
    is_error: bool


@dataclass(frozen=True)
class SessionView:
    session_id: str
    agent: str
    parent_id: str | None
    status: str
    background: bool
    calls: tuple[Call, ...]
    usage: dict[str, int]
    turns: int


@dataclass(frozen=True)
class Outcome:
    """What a run did, as its store and its process tell."""

    exit_code: int | None  # None: killed at the time limit
    status: str
    output: str
    sessions: tuple[SessionView, ...]
    workspace: Path

    def of(self, agent: str) -> list[SessionView]:
        return [s for s in self.sessions if s.agent == agent]

    def completed(self, agent: str) -> list[SessionView]:
        return [s for s in self.of(agent) if s.status == "completed"]

    def calls(self, tool: str, agent: str | None = None) -> list[Call]:
        return [
            call
            for session in self.sessions
            if agent is None or session.agent == agent
            for call in session.calls
            if call.name == tool
        ]


Check = Callable[[Outcome], str | None]
"""``None`` when the task succeeded, else why it did not."""


@dataclass(frozen=True)
class EvalTask:
    name: str
    prompt: str
    agents: dict[str, str]
    files: dict[str, str]
    check: Check
    needs: tuple[Path, ...] = field(default=())  # files outside the project it copies in


def _agent(name: str, description: str, tools: str, prompt: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\ntools: {tools}\n---\n{prompt}\n"


NOTES_READER = _agent(
    "notes-reader",
    "Reads files of the project and reports what they say. Use it for any question about "
    "the project's notes and documents.",
    "Read, Glob",
    "You read the files you are asked about and report what they say, briefly and exactly.",
)


def _run_ended(outcome: Outcome) -> str | None:
    if outcome.exit_code is None:
        return "stopped at the time limit"
    if outcome.status != "completed":
        return f"the run ended {outcome.status}"
    return None


def _answer_has(outcome: Outcome, *needles: str) -> str | None:
    missing = [n for n in needles if n.lower() not in outcome.output.lower()]
    if missing:
        return f"the answer lacks {', '.join(missing)}: {outcome.output[:120]!r}"
    return None


def _delegated(outcome: Outcome, agent: str, count: int = 1) -> str | None:
    done = outcome.completed(agent)
    if len(done) < count:
        started = len(outcome.of(agent))
        return f"{agent}: {len(done)} of {count} delegations completed ({started} started)"
    return None


def _first(*problems: Callable[[], str | None]) -> str | None:
    for problem in problems:
        found = problem()
        if found is not None:
            return found
    return None


def _one_delegation(o: Outcome) -> str | None:
    return _first(
        lambda: _run_ended(o),
        lambda: _delegated(o, "notes-reader"),
        lambda: _answer_has(o, "PELICAN-42"),
    )


def _two_parallel(o: Outcome) -> str | None:
    return _first(
        lambda: _run_ended(o),
        lambda: _delegated(o, "notes-reader", 2),
        lambda: _answer_has(o, "HERON-17", "OSPREY-58"),
    )


def _nested(o: Outcome) -> str | None:
    leads = {s.session_id for s in o.of("lead")}
    under_lead = [s for s in o.completed("notes-reader") if s.parent_id in leads]
    return _first(
        lambda: _run_ended(o),
        lambda: _delegated(o, "lead"),
        lambda: None if under_lead else "no notes-reader ran under the lead agent",
        lambda: _answer_has(o, "KESTREL-09"),
    )


def _background(o: Outcome) -> str | None:
    background = [s for s in o.of("notes-reader") if s.background]
    return _first(
        lambda: _run_ended(o),
        lambda: None if background else "no notes-reader ran in the background",
        lambda: _answer_has(o, "PLOVER-33"),
    )


def _restricted(o: Outcome) -> str | None:
    readers = o.of("reader-only")
    wrote = [c for c in o.calls("Write", "reader-only") if not c.is_error]
    return _first(
        lambda: _run_ended(o),
        lambda: None if readers else "the reader-only agent was never started",
        lambda: None if not wrote else "the reader-only agent wrote a file",
        lambda: None if o.output.strip() else "no answer",
    )


def _corpus_reviewer(o: Outcome) -> str | None:
    mentions = re.search(r"subtract|minus|a\s*-\s*b|difference", o.output, re.I)
    return _first(
        lambda: _run_ended(o),
        lambda: _delegated(o, "code-reviewer"),
        lambda: None if mentions else f"the answer names no bug: {o.output[:120]!r}",
    )


def _pass_path(o: Outcome) -> str | None:
    wanted = "docs/archive/2024/q3/summary.md"
    reads = [
        c
        for c in o.calls("Read", "notes-reader")
        if str(c.arguments.get("file_path", "")).endswith(wanted) and not c.is_error
    ]
    return _first(
        lambda: _run_ended(o),
        lambda: _delegated(o, "notes-reader"),
        lambda: None if reads else f"the notes-reader never read {wanted}",
        lambda: _answer_has(o, "7,412"),
    )


def _search(o: Outcome) -> str | None:
    return _first(
        lambda: _run_ended(o),
        lambda: _delegated(o, "finder"),
        lambda: _answer_has(o, "invoices.py"),
    )


def _write_file(o: Outcome) -> str | None:
    written = o.workspace / "notes" / "todo.txt"
    content = written.read_text(errors="replace") if written.is_file() else None
    return _first(
        lambda: _run_ended(o),
        lambda: _delegated(o, "scribe"),
        lambda: None if content is not None else "notes/todo.txt was not written",
        lambda: None if content and "buy milk" in content.lower() else f"it holds {content!r}",
    )


def _by_description(o: Outcome) -> str | None:
    return _first(
        lambda: _run_ended(o),
        lambda: _delegated(o, "weather-log"),
        lambda: _answer_has(o, "14.5"),
    )


def _bash(o: Outcome) -> str | None:
    ran = [c for c in o.calls("Bash", "tester") if not c.is_error]
    return _first(
        lambda: _run_ended(o),
        lambda: _delegated(o, "tester"),
        lambda: None if ran else "the tester never ran a command",
        lambda: _answer_has(o, "5050"),
    )


def _chain(o: Outcome) -> str | None:
    return _first(
        lambda: _run_ended(o),
        lambda: _delegated(o, "notes-reader"),
        lambda: _answer_has(o, "GANNET-71"),
    )


TASKS: tuple[EvalTask, ...] = (
    EvalTask(
        "one-delegation",
        "Use the notes-reader agent to find the release code word in docs/notes.txt.",
        {"notes-reader": NOTES_READER},
        {"docs/notes.txt": "Release plan.\nThe release code word is PELICAN-42.\nShip Friday.\n"},
        _one_delegation,
    ),
    EvalTask(
        "two-parallel",
        "Start two notes-reader agents at the same time: one reads docs/alpha.txt, the other "
        "docs/beta.txt. Then tell me both code words.",
        {"notes-reader": NOTES_READER},
        {
            "docs/alpha.txt": "Team alpha. Code word: HERON-17.\n",
            "docs/beta.txt": "Team beta. Code word: OSPREY-58.\n",
        },
        _two_parallel,
    ),
    EvalTask(
        "nested",
        "Ask the lead agent to find the code word in docs/vault.txt.",
        {
            "notes-reader": NOTES_READER,
            # a subagent's tools bound its own subagents' (never more than its parent's), so
            # the lead holds the reader's tools; its prompt has it delegate the reading
            "lead": _agent(
                "lead",
                "Coordinates work: hands each question to the right specialist.",
                "Task, Read, Glob",
                "You do not read files yourself. For any question about a file, start the "
                "notes-reader agent with the Task tool, then report its answer.",
            ),
        },
        {"docs/vault.txt": "Vault notes. The code word is KESTREL-09.\n"},
        _nested,
    ),
    EvalTask(
        "background",
        "Start the notes-reader agent in the background (run_in_background) to read "
        "docs/later.txt, then get its result with TaskOutput and tell me the code word.",
        {"notes-reader": NOTES_READER},
        {"docs/later.txt": "Deferred notes. The code word is PLOVER-33.\n"},
        _background,
    ),
    EvalTask(
        "restricted",
        "Ask the reader-only agent to create a file named out.txt containing hello.",
        {
            "reader-only": _agent(
                "reader-only",
                "Reads files of the project. It cannot change anything.",
                "Read",
                "You read files and report what they say.",
            )
        },
        {"README.md": "A small project.\n"},
        _restricted,
    ),
    EvalTask(
        "corpus-agent",
        "Use the code-reviewer agent to review src/calc.py and tell me the bug it finds.",
        {},
        {
            "src/calc.py": '"""Arithmetic helpers."""\n\n\ndef add(a, b):\n'
            '    """Return the sum of a and b."""\n    return a - b\n'
        },
        _corpus_reviewer,
        needs=(CORPUS_REVIEWER,),
    ),
    EvalTask(
        "pass-path",
        "Ask the notes-reader agent to read docs/archive/2024/q3/summary.md and tell me the "
        "total it reports.",
        {"notes-reader": NOTES_READER},
        {
            "docs/archive/2024/q3/summary.md": "# Q3 summary\n\nOrders: 312\nTotal: 7,412 EUR\n",
            "docs/summary.md": "# Summary\n\nNothing yet.\n",
        },
        _pass_path,
    ),
    EvalTask(
        "search",
        "Use the finder agent to find which Python file under src/ defines the function "
        "parse_invoice.",
        {
            "finder": _agent(
                "finder",
                "Finds where things are defined in the code base.",
                "Grep, Glob, Read",
                "You search the code with Grep and Glob and report the file path you found.",
            )
        },
        {
            "src/billing/invoices.py": "def parse_invoice(text):\n    return text.split(',')\n",
            "src/billing/taxes.py": "def tax(amount):\n    return amount * 0.2\n",
            "src/app.py": "from billing.invoices import parse_invoice\n",
        },
        _search,
    ),
    EvalTask(
        "write-file",
        "Ask the scribe agent to create the file notes/todo.txt containing exactly: buy milk",
        {
            "scribe": _agent(
                "scribe",
                "Writes files with the content it is given.",
                "Write",
                "You write the file you are asked to write, with exactly the content given.",
            )
        },
        {"README.md": "A small project.\n"},
        _write_file,
    ),
    EvalTask(
        "by-description",
        "What was the temperature on 2026-03-02 according to the weather log? Delegate to the "
        "right specialist.",
        {
            "notes-reader": NOTES_READER,
            "weather-log": _agent(
                "weather-log",
                "Answers questions about the weather log in data/weather.csv.",
                "Read",
                "You read data/weather.csv and answer the question from it.",
            ),
        },
        {"data/weather.csv": "date,celsius\n2026-03-01,11.0\n2026-03-02,14.5\n2026-03-03,9.5\n"},
        _by_description,
    ),
    EvalTask(
        "bash-agent",
        "Ask the tester agent to run `python3 count.py` and tell me what it prints.",
        {
            "tester": _agent(
                "tester",
                "Runs commands in the project and reports their output.",
                "Bash",
                "You run the command you are given with the Bash tool and report its output.",
            )
        },
        {"count.py": "print(sum(range(101)))\n"},
        _bash,
    ),
    EvalTask(
        "chain",
        "docs/pointer.txt names another file. Ask the notes-reader agent which file it names, "
        "then ask the notes-reader to read that file, and tell me the code word in it.",
        {"notes-reader": NOTES_READER},
        {
            "docs/pointer.txt": "The code word is kept in docs/inner/secret.txt.\n",
            "docs/inner/secret.txt": "The code word is GANNET-71.\n",
        },
        _chain,
    ),
)
