"""A library's log records, when nobody configured logging, as one line each on ours.

The SDKs we drive (``mcp``, OpenTelemetry's exporters) log what they tolerate or retry, some
with tracebacks. With no handler configured, Python prints WARNING and above on the person's
terminal; we say what matters ourselves, so their records go to our logger at debug level
instead. An application that configured logging keeps its own choice.
"""

from __future__ import annotations

import logging

__all__ = ["route_to_debug"]


class _Bridge(logging.Handler):
    def __init__(self, ours: logging.Logger, label: str) -> None:
        super().__init__()
        self.ours = ours
        self.label = label

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info is not None and record.exc_info[1] is not None:
            error = record.exc_info[1]
            first = str(error).strip().splitlines()[:1]
            text += f" ({type(error).__name__}{': ' + first[0] if first else ''})"
        self.ours.debug("%s: %s", self.label, text)


def route_to_debug(library: str, ours: logging.Logger) -> None:
    """Send ``library``'s records to ``ours`` at debug level, unless logging is configured
    (a handler on the root logger or on ``library``'s own)."""
    theirs = logging.getLogger(library)
    if theirs.handlers or logging.getLogger().handlers:
        return
    theirs.addHandler(_Bridge(ours, library))
    theirs.propagate = False
