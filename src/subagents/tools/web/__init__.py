"""What WebFetch and WebSearch share: their settings (``[web]`` in config.toml), the address
policy that keeps fetches off private networks, and the search backends.

Nothing here imports the HTTP client or the HTML converter at import time: config loading
imports :mod:`subagents.tools.web.settings`, and it must stay fast.
"""

from __future__ import annotations

__all__: list[str] = []
