"""Hook matchers as Claude Code reads them, for config files, agent files and the hooks that
run them."""

from __future__ import annotations

import re

__all__ = ["compile_matcher"]


def compile_matcher(matcher: str | None) -> re.Pattern[str] | None:
    """A hook matcher as Claude Code reads it: empty or ``*`` for all, else a regular
    expression that must match the whole name (``Bash``, ``Edit|Write``, ``mcp__github__.*``).

    Raises ``ValueError`` saying what is wrong with an invalid expression.
    """
    if matcher is None or matcher.strip() in ("", "*"):
        return None
    try:
        return re.compile(matcher)
    except (re.error, RecursionError, OverflowError) as error:
        raise ValueError(
            f"matcher {matcher!r} is not a valid regular expression ({error}); use a tool "
            "name, names joined by '|', or '*' for all"
        ) from None
