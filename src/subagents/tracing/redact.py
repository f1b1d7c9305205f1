"""Keep secrets out of everything that is written down: traces, the store, exports, logs.

Redacted are the values of environment variables whose names look secret (``*_KEY``,
``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``, ``*_CREDENTIALS``), any extra secrets the caller
knows (API keys from config), ``Authorization`` header values and strings shaped like provider
keys (``sk-...``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["REDACTED", "Redactor", "secret_env_values"]

REDACTED = "[REDACTED]"
_SECRET_NAME = re.compile(
    r"(_KEY|_TOKEN|_SECRET|PASSWORD|_CREDENTIALS|_PAT)$|^(API_KEY|TOKEN)$", re.I
)
_SHAPES = re.compile(
    r"(?i)(?P<header>(authorization|x-api-key|api-key)[\"']?\s*[:=]\s*[\"']?"
    r"(bearer\s+|basic\s+)?)[A-Za-z0-9._~+/=-]{8,}"
    r"|\bsk-(ant-)?[A-Za-z0-9_-]{16,}"
)
# A value shorter than this is not treated as a secret: redacting "1" or "true" everywhere
# would garble the record without protecting anything.
_MIN_SECRET_LENGTH = 8


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables named like secrets."""
    env = os.environ if environ is None else environ
    return [
        value
        for name, value in env.items()
        if _SECRET_NAME.search(name) and len(value) >= _MIN_SECRET_LENGTH
    ]


class Redactor:
    """Replaces known secrets and secret-shaped strings with ``[REDACTED]``."""

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[str] = (), *, include_environment: bool = True) -> None:
        found = [s for s in secrets if s and len(s) >= _MIN_SECRET_LENGTH]
        if include_environment:
            found += secret_env_values()
        # longest first, so that a secret containing another is replaced whole
        self._secrets = sorted(set(found), key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        if "sk-" in value or "uthoriz" in value or "api-key" in value.lower():
            value = _SHAPES.sub(_replace_shape, value)
        return value

    def value(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value (dicts, lists, strings)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value


def _replace_shape(match: re.Match[str]) -> str:
    header = match.group("header")
    return f"{header}{REDACTED}" if header else REDACTED
