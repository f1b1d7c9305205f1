"""Whether a process a test started (through a tool, a hook) still runs."""

from __future__ import annotations

import time

import psutil

__all__ = ["is_gone"]


def is_gone(pid: int, within: float = 5.0) -> bool:
    """True once ``pid`` no longer runs (a zombie waiting for its reaper counts as gone)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.02)
    return False
