"""Shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from fakes.sleep import RecordingSleep

# No test may pass or fail with the machine's load: hypothesis's per-example deadline would.
settings.register_profile("subagents", deadline=None)
settings.load_profile("subagents")

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPUS = SHARED / "corpus" / "claude-code-agents"


@pytest.fixture
def corpus_dir() -> Path:
    """The real Claude Code agent files beside the clone; skips where they are absent."""
    if not CORPUS.is_dir():
        pytest.skip(f"agent corpus not found at {CORPUS} (it lives in ../shared beside the clone)")
    return CORPUS


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test gets an empty home, so nobody's real ~/.claude/agents or config leaks in."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("SUBAGENTS_HOME", str(home))
    # a base URL of the machine's would make the hosted providers someone's local server
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    # pytest imports readline, which puts COLUMNS=80 / LINES in the environment that xdist
    # workers and subprocesses inherit; the CLI honours COLUMNS, so only a test sets it
    for name in ("COLUMNS", "LINES"):
        monkeypatch.delenv(name, raising=False)
        os.unsetenv(name)  # readline's value is below os.environ in a process that is not a worker
    return home


@pytest.fixture
def sleep() -> RecordingSleep:
    """The retry loop's sleep, recording its waits (``sleep.waits``) instead of waiting."""
    return RecordingSleep()
