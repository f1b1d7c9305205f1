"""The suite: delegation tasks that do not depend on the model that runs them.

Each task is a workspace (files, one of which holds a secret word, and agent files in
``.claude/agents/``), a prompt for the main agent, and the agent that must do the work. A run
succeeds when a subagent of that type was started (the store holds its session) and the final
answer holds the secret. The secret is drawn afresh for every run, so no model (scripted or
real) can know it without the subagent reading it.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["TASKS", "AgentFile", "Outcome", "SuiteTask", "judge", "new_secret"]

_SECRET_LINE = "The secret word is: {secret}"
_FILLER = (
    "Meeting moved to Thursday; bring the budget sheet.",
    "Remember to water the plants on the balcony.",
    "The printer on floor 2 needs a new cartridge.",
    "Lunch order: two soups, one salad, no onions.",
    "Ask Dana about the release checklist before Friday.",
)


@dataclass(frozen=True, slots=True)
class AgentFile:
    name: str
    description: str
    tools: str  # as written in the frontmatter: "Read, Grep" or "[Read, Glob]"
    body: str = "Do exactly what you are asked, using your tools, and report what you found."

    def render(self) -> str:
        return (
            f"---\nname: {self.name}\ndescription: {self.description}\ntools: {self.tools}\n"
            f"model: inherit\n---\nYou are the {self.name} agent. {self.body}\n"
        )


@dataclass(frozen=True, slots=True)
class SuiteTask:
    name: str
    shape: str  # what this task varies, for the report
    prompt: str
    agent: str  # the subagent type that must be started
    agents: tuple[AgentFile, ...]
    secret_file: str
    other_files: tuple[str, ...] = ()
    filler_lines: int = 12

    def build(self, root: Path, secret: str) -> None:
        """Write the workspace into ``root`` (an empty directory)."""
        folder = root / ".claude" / "agents"
        folder.mkdir(parents=True)
        for agent in self.agents:
            (folder / f"{agent.name}.md").write_text(agent.render())
        rng = random.Random(self.name)  # the filler is fixed; only the secret changes
        for relative in (self.secret_file, *self.other_files):
            lines = [rng.choice(_FILLER) for _ in range(self.filler_lines)]
            if relative == self.secret_file:
                lines.insert(rng.randrange(len(lines) + 1), _SECRET_LINE.format(secret=secret))
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(lines) + "\n")


@dataclass(slots=True)
class Outcome:
    """What one run of one task showed."""

    success: bool
    subagent_started: bool
    answer_has_secret: bool
    status: str
    started_types: list[str] = field(default_factory=list)


def judge(task: SuiteTask, secret: str, output: str, status: str, types: list[str]) -> Outcome:
    """``types``: the agent types of the subagent sessions the store holds for the run."""
    started = task.agent in types
    has_secret = secret in output
    return Outcome(
        success=started and has_secret and status == "completed",
        subagent_started=started,
        answer_has_secret=has_secret,
        status=status,
        started_types=types,
    )


def new_secret() -> str:
    """A fresh word no model can guess (10 lowercase letters; not seeded on purpose)."""
    return "".join(random.SystemRandom().choice(string.ascii_lowercase) for _ in range(10))


_READER = AgentFile("notes-reader", "Reads note files and reports what they say.", "Read, Grep")
_REVIEWER = AgentFile("code-reviewer", "Reviews Python code for bugs and style.", "Read, Grep")
_DISTRACTORS = tuple(
    AgentFile(name, description, "Read")
    for name, description in (
        ("test-runner", "Runs the test suite and explains failures."),
        ("doc-writer", "Writes and updates documentation pages."),
        ("sql-helper", "Answers questions about SQL schemas and queries."),
        ("release-manager", "Prepares release notes and version bumps."),
    )
)

TASKS: tuple[SuiteTask, ...] = (
    SuiteTask(
        name="notes-reader",
        shape="one agent, Read",
        prompt="Use the notes-reader subagent to find the secret word in notes.txt, "
        "then tell me the word.",
        agent="notes-reader",
        agents=(_READER,),
        secret_file="notes.txt",
    ),
    SuiteTask(
        name="grep-folder",
        shape="Grep-only agent, secret somewhere in a folder",
        prompt="Use the finder subagent to find the secret word somewhere under docs/, "
        "then tell me the word.",
        agent="finder",
        agents=(AgentFile("finder", "Searches files for text with Grep.", "Grep"),),
        secret_file="docs/guide/setup.md",
        other_files=("docs/index.md", "docs/guide/faq.md", "docs/changelog.md"),
    ),
    SuiteTask(
        name="pick-by-description",
        shape="two agents, the prompt describes the right one without naming it",
        prompt="Ask the subagent that reads meeting minutes to find the secret word in "
        "minutes/march.txt, then tell me the word.",
        agent="minutes-reader",
        agents=(
            _REVIEWER,
            AgentFile("minutes-reader", "Reads meeting minutes and summarises them.", "Read"),
        ),
        secret_file="minutes/march.txt",
        other_files=("minutes/february.txt",),
    ),
    SuiteTask(
        name="long-hyphenated",
        shape="long hyphenated agent name",
        prompt="Use the release-notes-archive-reader subagent to find the secret word in "
        "archive/2024/notes.md, then tell me the word.",
        agent="release-notes-archive-reader",
        agents=(
            AgentFile(
                "release-notes-archive-reader",
                "Reads old release notes from the archive folder.",
                "[Read, Glob]",
            ),
        ),
        secret_file="archive/2024/notes.md",
    ),
    SuiteTask(
        name="six-agents",
        shape="six agents on offer, the right one named",
        prompt="Use the diary-reader subagent to find the secret word in diary.txt, "
        "then tell me the word.",
        agent="diary-reader",
        agents=(
            *_DISTRACTORS,
            _REVIEWER,
            AgentFile("diary-reader", "Reads the team diary.", "Read"),
        ),
        secret_file="diary.txt",
    ),
    SuiteTask(
        name="grep-long-log",
        shape="Grep-only agent, one long file",
        prompt="Use the log-scanner subagent to find the secret word in logs/app.log, "
        "then tell me the word.",
        agent="log-scanner",
        agents=(AgentFile("log-scanner", "Scans log files for lines that matter.", "Grep"),),
        secret_file="logs/app.log",
        filler_lines=400,
    ),
    SuiteTask(
        name="reader-among-two",
        shape="two agents, both can read, the named one must be used",
        prompt="Use the notes-reader subagent to find the secret word in inbox/todo.txt, "
        "then tell me the word.",
        agent="notes-reader",
        agents=(_REVIEWER, _READER),
        secret_file="inbox/todo.txt",
        other_files=("inbox/done.txt",),
    ),
    SuiteTask(
        name="single-word-agent",
        shape="single-word agent name, tools as a YAML list",
        prompt="Use the archivist subagent to find the secret word in vault/letter.txt, "
        "then tell me the word.",
        agent="archivist",
        agents=(AgentFile("archivist", "Finds things in the vault.", "[Read, Grep, Glob]"),),
        secret_file="vault/letter.txt",
    ),
)
