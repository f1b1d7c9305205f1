"""Where the repository's parts are, for a test in any folder of the suite."""

from __future__ import annotations

from pathlib import Path

__all__ = ["REPO", "TESTS"]

TESTS = Path(__file__).resolve().parent
"""The suite's root: its shared helpers, fixtures, scenarios and snapshots."""
REPO = TESTS.parent
