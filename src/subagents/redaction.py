"""Keep secrets out of everything that is written down or shown: the store, traces, exports,
OpenTelemetry spans and what the CLI prints.

Three kinds of secret become ``[REDACTED]``:

1. *Known credentials*: exact values the caller passes in (the provider keys and MCP tokens of
   the configuration, see :func:`subagents.secrets.known_credentials`) and, by default, the
   values of environment variables whose names look secret (see :func:`looks_like_secret_name`).
2. *Token formats* (:data:`TOKEN_FORMATS`): strings shaped like a credential, whoever issued
   them: GitHub, AWS, Slack, Stripe, GitLab, npm, Hugging Face, Google, OpenAI and Anthropic
   keys, JWTs, PEM private key blocks, passwords in URLs. What says which kind of token it was
   (``ghp_``, ``AKIA``, a URL's user and host) is kept.
3. *Keyed secrets* (:data:`KEYED_FORMATS`): the value assigned to a key that names a secret:
   ``password=...``, ``"token": "..."``, ``secret: ...``, ``Authorization: Bearer ...``,
   ``aws_secret_access_key = ...``; the key is kept. An unquoted value counts only when it is
   not a plain name, so that ``token = get_token()`` and ``password=password`` in code stay.

Cost. The redactor runs on every step of every stored run, so a text without secrets must be
cheap. Known credentials are found with ``in``. Every token format starts at an *anchor*
character (``_ - : / I z J``) and checks what must come before it (``ghp`` before ``_``)
with a look-behind; the formats of one anchor are one regular expression, which starts with
that literal, so the engine jumps from one occurrence of it to the next, and it only runs when
the anchor is in the text at all (a ``memchr``). Keyed secrets are found from their keys: a
few substring searches in the lower-cased text (``word``, ``oken``, ``key``, ...), only when
the text holds ``=`` or ``:``, then one anchored match at each hit. (One expression for all
formats, trying every key at every ``=`` and ``:``, costs two to five times more on code and
logs; ``bench/bench_redact.py`` measures it.) Every repetition that could fail after it is
bounded or possessive, so the time is linear in the text.

:meth:`Redactor.value` walks nested JSON-like values to :data:`DEPTH_LIMIT` levels; deeper
parts become :data:`TRUNCATED`, so no input can exhaust the stack, here or in the JSON encoder
that writes the result. Dict keys are redacted as well.

:meth:`Redactor.shared_value` is :meth:`Redactor.value` for the store's hot path: it encodes a
value once and looks in the JSON text for what every secret leaves there, whatever JSON's
escapes did next to it: a known credential (escaped as JSON escapes it), each token format's
*trace* (``_TOKEN_TRACES``: the format without its negative look-arounds, in characters JSON
never escapes, or allowing for their escapes), a secret's key followed by its operator
(``password\\": `` as well as ``password=``). Finding none, no string in the value can change,
and the value itself is returned; finding one, the value is walked as :meth:`Redactor.value`
walks it. Either way the stored JSON is the same (``tests/core/test_redact_shared.py``). Small
values gain most (a message with a few strings: the walk's calls cost more than the scan); one
above 2 KB of JSON is walked, its long strings being what both scan.

:class:`StreamRedactor` redacts text that arrives in pieces (a streamed answer): it holds back
the short tail that could still turn out to be, or to start, a secret.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_core import PydanticSerializationError, to_json

__all__ = [
    "DEPTH_LIMIT",
    "KEYED_FORMATS",
    "REDACTED",
    "TOKEN_FORMATS",
    "TRUNCATED",
    "KeyedFormat",
    "Redactor",
    "StreamRedactor",
    "TokenFormat",
    "looks_like_secret_name",
    "secret_env_values",
]

REDACTED = "[REDACTED]"
DEPTH_LIMIT = 100
TRUNCATED = f"[TRUNCATED: nested deeper than {DEPTH_LIMIT} levels]"

# A known value shorter than this is not treated as a secret: redacting "1" or "true"
# everywhere would garble the record without protecting anything.
_MIN_SECRET_LENGTH = 8
# No format matches fewer characters than this (``://u:p@`` is the shortest).
_MIN_MATCH_LENGTH = 7
# Up to this length one expression for all token formats is cheaper than one per anchor.
_SHORT_TEXT = 256


# -- names -------------------------------------------------------------------------------------

_NAME_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_SECRET_LAST_WORDS = frozenset(
    {
        "apikey",
        "auth",
        "authorization",
        "cookie",
        "cred",
        "creds",
        "credential",
        "credentials",
        "key",
        "passphrase",
        "passwd",
        "password",
        "pat",
        "pwd",
        "secret",
        "token",
    }
)
_SECRET_ENDINGS = ("password", "passwd", "secret", "token", "apikey")
# Names whose last word reads like a secret's but that every shell sets to something else:
# PWD is the working directory, not a password (redacting it blanked every path under it).
_NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})


@functools.lru_cache(maxsize=4096)  # the environment's names, asked about at every run
def looks_like_secret_name(name: str) -> bool:
    """Whether a variable or header named ``name`` holds a secret: its last word says so
    (``GITHUB_TOKEN``, ``DB_PASSWORD``, ``apiKey``, ``X-Api-Key``, ``MY_LLM_CRED``)."""
    if name in _NOT_SECRET_NAMES:
        return False
    words = _NAME_WORDS.findall(name)
    if not words:
        return False
    last = words[-1].lower()
    return last in _SECRET_LAST_WORDS or last.endswith(_SECRET_ENDINGS)


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables named like secrets (``environ``: ``os.environ``)."""
    if environ is None or environ is os.environ:
        return list(_process_secret_values())
    return _secret_values(environ)


def _secret_values(env: Mapping[str, str]) -> list[str]:
    return [
        value
        for name, value in env.items()
        if len(value) >= _MIN_SECRET_LENGTH and looks_like_secret_name(name)
    ]


_process_env_seen: tuple[dict[Any, Any], list[str]] | None = None


def _process_secret_values() -> list[str]:
    """:func:`secret_env_values` of this process, read again only when its environment
    changed. Every run asks at its start, and reading decodes each variable (about 1 µs
    apiece); a copy of CPython's raw table, compared with the last one read, costs well
    under one."""
    global _process_env_seen
    raw = getattr(os.environ, "_data", None)
    if not isinstance(raw, dict):  # not CPython's os.environ: read it every time
        return _secret_values(os.environ)
    seen = _process_env_seen
    if seen is not None and seen[0] == raw:
        return seen[1]
    snapshot = dict(raw)
    values = _secret_values(os.environ)
    _process_env_seen = (snapshot, values)
    return values


# -- formats -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TokenFormat:
    """A secret known by its shape.

    Each of ``patterns`` starts with a single literal character, its anchor; what must come
    before the anchor is checked with a look-behind (``_(?<=ghp_)...``). A group named
    ``secret`` marks the part that is replaced (the rest of the match is kept); without one
    the whole match is. Patterns use no other capturing groups.
    """

    name: str
    patterns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class KeyedFormat:
    """A secret known by the key it is assigned to.

    ``keys`` (lower case) name the secret: any key ending with one of them counts, in any case
    (``DB_PASSWORD``, ``client_secret``). ``value`` is matched right after the key: a closing
    quote, the operator (``=`` or ``:``) and the value, whose group ``secret`` is replaced.
    """

    name: str
    keys: tuple[str, ...]
    value: str


# After a key: maybe its closing quote, spaces, ``=`` or ``:`` (not ``==`` or ``:=``).
_OPERATOR = r"""["']?[ \t]{0,16}[:=](?!=)[ \t]{0,16}"""
# Characters that end an unquoted value; the value has at least four characters, is no plain
# (dotted) name, does not start like a flag or a $VARIABLE, and is not called or indexed.
_VALUE_END = r"""\s"'`,;&()<>{}\[\]="""
_UNQUOTED_VALUE = (
    rf"(?![-$])(?=[^{_VALUE_END}]{{4}})(?=[^{_VALUE_END}]{{0,512}}?[^{_VALUE_END}A-Za-z_.])"
    rf"(?P<secret>[^{_VALUE_END}]{{4,512}}+)(?![^{_VALUE_END}]|[(\[{{<])"
)
_QUOTED_VALUE = (
    r"""(?:"(?P<secret>(?:[^"\\\n]|\\.){1,256})"|'(?P<secret>(?:[^'\\\n]|\\.){1,256})')"""
)

TOKEN_FORMATS: tuple[TokenFormat, ...] = (
    TokenFormat("github-token", (r"_(?<=gh[pousr]_)(?P<secret>[A-Za-z0-9]{30,255})",)),
    TokenFormat(
        "github-fine-grained-token", (r"_(?<=github_)pat_(?P<secret>[A-Za-z0-9_]{22,255})",)
    ),
    TokenFormat(
        "aws-access-key-id",
        (r"I(?<=A[KS]I)(?<![A-Za-z0-9]A[KS]I)A(?P<secret>[A-Z0-9]{16})(?![A-Za-z0-9])",),
    ),
    TokenFormat("slack-token", (r"-(?<=xox[bpars]-)(?P<secret>[A-Za-z0-9-]{10,255})",)),
    TokenFormat("slack-app-token", (r"-(?<=xapp-)(?P<secret>[A-Za-z0-9-]{10,255})",)),
    TokenFormat(
        "slack-webhook",
        (r"/(?<=hooks\.slack\.com/)services/(?P<secret>[A-Za-z0-9_/-]{8,255})",),
    ),
    TokenFormat(
        "private-key",
        (
            r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:\s{0,8}[A-Za-z-]{1,40}: [^\n]*)*"  # headers of encrypted keys (Proc-Type: ...)
            r"[A-Za-z0-9+/=\s\\]*"  # the body; \\ for keys inside JSON strings ("\n")
            r"(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)?",
        ),
    ),
    TokenFormat("url-password", (r"://[^\s:/?#@]{1,64}:(?P<secret>[^\s/?#@]{1,128})@",)),
    TokenFormat("google-api-key", (r"z(?<=AIz)a(?P<secret>[0-9A-Za-z_-]{35})",)),
    TokenFormat("stripe-live-key", (r"_(?<=[sr]k_)live_(?P<secret>[0-9A-Za-z]{20,255})",)),
    TokenFormat("gitlab-token", (r"-(?<=glpat-)(?P<secret>[0-9A-Za-z_-]{20,255})",)),
    TokenFormat("npm-token", (r"_(?<=npm_)(?P<secret>[A-Za-z0-9]{36,255})",)),
    TokenFormat("huggingface-token", (r"_(?<=hf_)(?P<secret>[A-Za-z0-9]{30,255})",)),
    TokenFormat(
        "jwt",
        (r"J(?<=eyJ)(?<![A-Za-z0-9_-]eyJ)(?P<secret>[A-Za-z0-9_-]{8,256}\.eyJ[A-Za-z0-9_.-]*)",),
    ),
    TokenFormat(
        "openai-anthropic-key",
        (r"-(?<=sk-)(?<![A-Za-z0-9_]sk-)(?P<secret>[A-Za-z0-9_-]{16,512})",),
    ),
)
"""Every shape of secret the redactor recognises, one entry per format (tests/core/test_redact.py
has an example of each). Where two match at the same place the earlier entry wins."""

KEYED_FORMATS: tuple[KeyedFormat, ...] = (
    KeyedFormat(
        "aws-secret-access-key",
        ("aws_secret_access_key", "aws-secret-access-key"),
        rf"""{_OPERATOR}["']?(?P<secret>[A-Za-z0-9/+]{{40}})(?![A-Za-z0-9/+])""",
    ),
    KeyedFormat(
        "authorization-header",
        ("authorization", "api-key"),
        rf"""{_OPERATOR}["']?(?:(?i:bearer|basic|token|apikey)[ \t]{{1,8}})?"""
        r"(?P<secret>[A-Za-z0-9_.~+/=][A-Za-z0-9_.~+/=-]{7,4095})",
    ),
    KeyedFormat(
        "secret-assignment",
        (
            "password",
            "passwd",
            "passphrase",
            "pwd",
            "secret",
            "token",
            "apikey",
            "api_key",
            "accesskey",
            "access_key",
            "access-key",
            "secret_key",
            "secret-key",
            "private_key",
        ),
        rf"{_OPERATOR}(?:{_QUOTED_VALUE}|{_UNQUOTED_VALUE})",
    ),
)
"""Keys whose values are secrets, one entry per kind of value. Where a key fits several
entries (``aws_secret_access_key`` ends with ``access_key``) the first whose value matches
wins."""

# Substrings, one of which ends every key above: keys are looked for at these, in the
# lower-cased text, so each must be rare in ordinary text.
_KEY_ENDINGS = ("word", "wd", "phrase", "cret", "oken", "key", "zation")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

# What a match of each token format leaves in the JSON encoding of the string that holds it:
# the format's pattern without its negative look-arounds (next to a match, an escaped newline
# leaves ``n``, a quote ``\``) and with its shortest secret. The rest uses only characters JSON
# never escapes, but for the user and password of a URL, whose pattern allows six characters
# (``\u001b``) for each one the format allows. Each starts with its anchor, as the formats do.
_TOKEN_TRACES: dict[str, str] = {
    "github-token": r"_(?<=gh[pousr]_)[A-Za-z0-9]{30}",
    "github-fine-grained-token": r"_(?<=github_)pat_[A-Za-z0-9_]{22}",
    "aws-access-key-id": r"I(?<=A[KS]I)A[A-Z0-9]{16}",
    "slack-token": r"-(?<=xox[bpars]-)[A-Za-z0-9-]{10}",
    "slack-app-token": r"-(?<=xapp-)[A-Za-z0-9-]{10}",
    "slack-webhook": r"/(?<=hooks\.slack\.com/)services/[A-Za-z0-9_/-]{8}",
    "private-key": r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY",
    "url-password": r"://[^\s:/?#@]{1,384}:[^\s/?#@]{1,768}@",
    "google-api-key": r"z(?<=AIz)a[0-9A-Za-z_-]{35}",
    "stripe-live-key": r"_(?<=[sr]k_)live_[0-9A-Za-z]{20}",
    "gitlab-token": r"-(?<=glpat-)[0-9A-Za-z_-]{20}",
    "npm-token": r"_(?<=npm_)[A-Za-z0-9]{36}",
    "huggingface-token": r"_(?<=hf_)[A-Za-z0-9]{30}",
    "jwt": r"J(?<=eyJ)[A-Za-z0-9_-]{8,256}\.eyJ",
    "openai-anthropic-key": r"-(?<=sk-)[A-Za-z0-9_-]{16}",
}
# A keyed secret's operator (see ``_OPERATOR``) as JSON encodes it, in the lower-cased text: a
# quote becomes ``\"`` and a tab ``\t``.
_ENCODED_OPERATOR = re.compile(r"""(?:\\"|')?(?: |\\t){0,16}[:=]""")
# A colon of a string, in JSON text: not right after a key's closing quote (see _holds_operator).
_STRING_COLON = re.compile(r':(?<!":)')

# The longest look-behind of any token pattern, and the longest stretch of text a secret
# needs before it is recognised (a quoted value of 256 characters and its key, URL
# credentials): a stream holds back at least their sum.
_LOOKBEHIND = 32
_STREAM_HOLD = 320 + _LOOKBEHIND
# A stream never holds back more than this: a longer unfinished secret is released redacted.
_STREAM_MAX_PENDING = 65_536


@dataclass(frozen=True, slots=True)
class _Keyed:
    keys: tuple[str, ...]
    value: re.Pattern[str]


@dataclass(frozen=True, slots=True)
class _Scanner:
    tokens: tuple[tuple[str, re.Pattern[str]], ...]  # (anchor, its formats)
    all_tokens: re.Pattern[str]  # every anchor's formats in one expression, for short texts
    keyed: tuple[_Keyed, ...]
    all_keys: tuple[str, ...]
    longest_key: int


@functools.cache
def _scanner() -> _Scanner:
    """The formats compiled: one expression per anchor, holding every token format that
    starts with it, and one per keyed format.

    Built on first use, not at import, so that the CLI's start-up does not pay for it.
    """
    groups: dict[str, list[str]] = {}
    count = 0

    def number_secret(_: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return f"(?P<secret{count}>"

    for token_format in TOKEN_FORMATS:
        for pattern in token_format.patterns:
            anchor, rest = pattern[0], pattern[1:]
            groups.setdefault(anchor, []).append(re.sub(r"\(\?P<secret>", number_secret, rest))
    by_anchor = [f"{re.escape(anchor)}(?:{'|'.join(rests)})" for anchor, rests in groups.items()]
    tokens = tuple(
        (anchor, re.compile(pattern)) for anchor, pattern in zip(groups, by_anchor, strict=True)
    )
    keyed = tuple(
        _Keyed(keyed_format.keys, re.compile(re.sub(r"\(\?P<secret>", number_secret, value)))
        for keyed_format in KEYED_FORMATS
        for value in [keyed_format.value]
    )
    all_keys = tuple(key for keyed_format in KEYED_FORMATS for key in keyed_format.keys)
    unfound = [key for key in all_keys if not key.endswith(_KEY_ENDINGS)]
    if unfound:  # a key the search would never find
        raise ValueError(f"keys {unfound} end with none of {_KEY_ENDINGS}")
    longest = max(len(key) for key in all_keys)
    return _Scanner(tokens, re.compile("|".join(by_anchor)), keyed, all_keys, longest)


# A secret found: where the text it was recognised by starts (a key, a token's prefix), and
# the start and end of what is replaced.
_Found = tuple[int, int, int]


def _found(text: str) -> list[_Found]:
    scanner = _scanner()
    found: list[_Found] = []
    if len(text) <= _SHORT_TEXT:
        patterns = [scanner.all_tokens]
    else:  # the cheap check: no format of an anchor absent from the text can be there
        patterns = [pattern for anchor, pattern in scanner.tokens if anchor in text]
    for pattern in patterns:
        for match in pattern.finditer(text):
            group = match.lastgroup
            start, end = match.span(group) if group is not None else match.span()
            found.append((match.start(), start, end))
    if "=" in text or ":" in text:
        found += _keyed(text, scanner)
    return found


def _keyed(text: str, scanner: _Scanner) -> list[_Found]:
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters lower-case to two; keep the positions
        lowered = text.translate(_ASCII_LOWER)
    found: list[_Found] = []
    for ending in _KEY_ENDINGS:
        at = lowered.find(ending)
        while at >= 0:
            key_end = at + len(ending)
            if lowered.endswith(scanner.all_keys, 0, key_end):
                for keyed in scanner.keyed:
                    if not lowered.endswith(keyed.keys, 0, key_end):
                        continue
                    match = keyed.value.match(text, key_end)
                    if match is not None:
                        start, end = match.span(match.lastgroup or 0)
                        found.append((max(key_end - scanner.longest_key, 0), start, end))
                        break
            at = lowered.find(ending, key_end)
    return found


def _render(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span (overlapping ones merged) replaced by ``[REDACTED]``."""
    pieces: list[str] = []
    done = 0
    for start, end in sorted(spans):
        if end <= done:
            continue
        if start < done:  # overlaps the previous span, which already says [REDACTED]
            done = end
            continue
        pieces.append(text[done:start])
        pieces.append(REDACTED)
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


# -- traces of secrets in JSON text -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tracer:
    tokens: tuple[tuple[str, re.Pattern[str]], ...]  # (anchor, its traces)
    all_keys: tuple[str, ...]


@functools.cache
def _tracer() -> _Tracer:
    """:data:`_TOKEN_TRACES` compiled as the formats are (one expression per anchor), once
    they are checked to cover every token format."""
    names = {token_format.name for token_format in TOKEN_FORMATS}
    if names != set(_TOKEN_TRACES):  # a format the fast path would not look for
        raise ValueError(f"token formats and their traces differ: {names ^ set(_TOKEN_TRACES)}")
    groups: dict[str, list[str]] = {}
    for pattern in _TOKEN_TRACES.values():
        groups.setdefault(pattern[0], []).append(pattern[1:])
    by_anchor = [f"{re.escape(anchor)}(?:{'|'.join(rests)})" for anchor, rests in groups.items()]
    tokens = tuple(
        (anchor, re.compile(pattern)) for anchor, pattern in zip(groups, by_anchor, strict=True)
    )
    return _Tracer(tokens, _scanner().all_keys)


def _holds_trace(encoded: str) -> bool:
    """Whether the JSON text ``encoded`` holds the trace of a token format or of a keyed
    secret: when it does not, no string it encodes holds either."""
    tracer = _tracer()
    for anchor, pattern in tracer.tokens:
        if anchor in encoded and pattern.search(encoded) is not None:
            return True
    return _holds_operator(encoded) and _holds_key(encoded.lower(), tracer.all_keys)


def _holds_operator(encoded: str) -> bool:
    """Whether a string in the JSON text ``encoded`` may hold ``=`` or a ``:`` after some other
    character. JSON's own colons follow the closing quote of a key; a string's colon follows
    another character, or an escaped quote (``\\":``)."""
    return "=" in encoded or '\\":' in encoded or _STRING_COLON.search(encoded) is not None


def _holds_key(lowered: str, all_keys: tuple[str, ...]) -> bool:
    """Whether a secret's key followed by its operator (as JSON encodes them) is in
    ``lowered``, found as :func:`_keyed` finds keys. Lower-casing the whole text lower-cases
    every character a string lower-cased alone would (and a few more)."""
    for ending in _KEY_ENDINGS:
        at = lowered.find(ending)
        while at >= 0:
            key_end = at + len(ending)
            if lowered.endswith(all_keys, 0, key_end) and _ENCODED_OPERATOR.match(lowered, key_end):
                return True
            at = lowered.find(ending, key_end)
    return False


def _nested_to_the_limit(value: Any, encoded: str) -> bool:
    """Whether ``value`` (encoded as ``encoded``) holds a container :data:`DEPTH_LIMIT`
    levels down, which :meth:`Redactor.value` cuts. Each container opens a bracket in its
    JSON, so with fewer brackets none can; else its containers are gathered level by level."""
    if encoded.count("[") + encoded.count("{") <= DEPTH_LIMIT:
        return False
    level = [value] if isinstance(value, dict | list | tuple) else []
    for _ in range(DEPTH_LIMIT):
        level = [
            inner
            for container in level
            for inner in (container.values() if isinstance(container, dict) else container)
            if isinstance(inner, dict | list | tuple)
        ]
        if not level:
            return False
    return True


def _scan_first(encoded: str) -> bool:
    """Whether to scan the JSON text ``encoded`` before walking its value (see
    :data:`_SHARED_SCAN_MAX`): short, or many keys (each a string followed by ``":``). A
    string holding ``":`` counts too; either way the outcome is the same, only its cost."""
    size = len(encoded)
    return size <= _SHARED_SCAN_MAX or encoded.count('":') * _SCANNED_CHARS_PER_KEY >= size


def _json_text(value: Any) -> str | None:
    """``value`` as compact JSON with non-ASCII characters as they are; None when it is not
    JSON (a cycle, a lone surrogate, an object the encoder does not know, too deep)."""
    try:
        return to_json(value).decode()
    except (PydanticSerializationError, ValueError, TypeError):
        return None


# -- the redactor ------------------------------------------------------------------------------

_CACHE_MIN_LENGTH = 256
# Above this many characters of JSON, one long string is most of a value and scanning the JSON
# costs what scanning that string does, plus the encoding: the walk is as cheap (measured on
# messages of code and of prose, from 100 characters to 10 KB). Unless the value is many
# short fields (a message with hundreds of tool calls): the walk then costs six times the
# scan (3.0 against 0.5 ms for 500 Task calls, 78 KB), so it is scanned first when it has a
# key for every _SCANNED_CHARS_PER_KEY characters or fewer.
_SHARED_SCAN_MAX = 2048
_SCANNED_CHARS_PER_KEY = 128
_CLEAN_CACHE_SIZE = 256
_CACHE_MAX_LENGTH = 65_536
_CACHE_SIZE = 32
_SHORT_CACHE_SIZE = 4096


class Redactor:
    """Replaces known secrets, token formats and keyed secrets with ``[REDACTED]``.

    ``secrets`` are exact values to redact (values under 8 characters are ignored); with
    ``include_environment`` the values of secret-named environment variables are added.
    """

    __slots__ = ("_cache", "_clean", "_encoded_secrets", "_secrets", "_short_cache")

    def __init__(self, secrets: Iterable[str] = (), *, include_environment: bool = True) -> None:
        found = [s for s in secrets if s and len(s) >= _MIN_SECRET_LENGTH]
        if include_environment:
            found += secret_env_values()
        # longest first, so that a secret containing another is replaced whole
        self._secrets = tuple(sorted(set(found), key=len, reverse=True))
        # as they are inside JSON strings (one JSON cannot encode is in no JSON text)
        self._encoded_secrets = tuple(
            encoded[1:-1] for encoded in map(_json_text, self._secrets) if encoded is not None
        )
        # Records repeat themselves: the same keys and short values in every message, and the
        # same tool result in the message, the trace record and the ledger of one step.
        self._short_cache: dict[str, str] = {}
        self._cache: dict[str, str] = {}
        self._clean: set[str] = set()  # JSON texts :meth:`shared_value` found nothing in

    @property
    def longest_secret(self) -> int:
        """The length of the longest known credential (0 without any)."""
        return len(self._secrets[0]) if self._secrets else 0

    def text(self, value: str) -> str:
        size = len(value)
        if size < _MIN_MATCH_LENGTH:  # shorter than any secret
            return value
        if size > _CACHE_MAX_LENGTH:
            return self._redact(value)
        short = size < _CACHE_MIN_LENGTH
        cache = self._short_cache if short else self._cache
        redacted = cache.get(value)
        if redacted is None:
            redacted = self._redact(value)
            if short and len(cache) >= _SHORT_CACHE_SIZE:
                cache.clear()
            elif not short and len(cache) >= _CACHE_SIZE:
                del cache[next(iter(cache))]  # the oldest
            cache[value] = redacted
        return redacted

    def _redact(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        if len(value) < _MIN_MATCH_LENGTH:
            return value
        found = _found(value)
        return _render(value, [(start, end) for _, start, end in found]) if found else value

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where the secrets in ``text`` are, with the key or prefix they were recognised by,
        as (start, end) in order; they may overlap."""
        spans = [(context, end) for context, _, end in _found(text)]
        for secret in self._secrets:
            start = text.find(secret)
            while start >= 0:
                spans.append((start, start + len(secret)))
                start = text.find(secret, start + 1)
        return sorted(spans)

    def value(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value (dicts, lists, tuples, strings), dict
        keys included; containers deeper than :data:`DEPTH_LIMIT` become :data:`TRUNCATED`."""
        return self._value(value, 0)

    def shared_value(self, value: Any) -> Any:
        """:meth:`value`, or ``value`` itself when one scan of its JSON shows that redacting
        would change none of its strings (see :meth:`may_redact`) and it is not nested to
        :data:`DEPTH_LIMIT`: what the store writes of either is the same. The result may be
        ``value``: neither may be changed afterwards."""
        encoded = _json_text(value)
        if encoded is not None and self._is_clean(value, encoded):
            return value
        return self._value(value, 0)

    def json(self, value: Any) -> str | None:
        """The JSON of :meth:`value` (compact, as ``pydantic_core.to_json`` writes it): the
        text of ``value`` itself, encoded once, when one scan of it shows that redacting would
        change nothing (as :meth:`shared_value` decides); None when ``value`` is not JSON (a
        lone surrogate, say: the caller encodes :meth:`value` of it its own way)."""
        encoded = _json_text(value)
        if encoded is None:
            return None
        if self._is_clean(value, encoded):
            return encoded
        return _json_text(self._value(value, 0))

    def _is_clean(self, value: Any, encoded: str) -> bool:
        """Whether one scan of ``encoded`` (``value``'s JSON) shows that :meth:`value` would
        return it unchanged; texts found so are remembered (a call's arguments are in its
        ledger entries and its trace). False also when walking costs no more than the scan."""
        if not _scan_first(encoded):
            return False
        clean = self._clean
        if encoded in clean:
            return True
        if self.may_redact(encoded) or _nested_to_the_limit(value, encoded):
            return False
        if len(clean) >= _CLEAN_CACHE_SIZE:
            clean.clear()
        clean.add(encoded)
        return True

    def may_redact(self, encoded: str) -> bool:
        """Whether :meth:`text` could change a string of the value whose JSON is ``encoded``
        (as ``pydantic_core.to_json`` writes it: non-ASCII characters as they are). False is
        certain: no string holds a known credential, a token format or a keyed secret."""
        for secret in self._encoded_secrets:
            if secret in encoded:
                return True
        return _holds_trace(encoded)

    def _value(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self.text(value) if len(value) >= _MIN_MATCH_LENGTH else value
        if not isinstance(value, dict | list | tuple):
            return value
        if depth >= DEPTH_LIMIT:
            return TRUNCATED
        if isinstance(value, dict):
            return self._mapping(value, depth + 1)
        return [self._value(item, depth + 1) for item in value]

    def _mapping(self, mapping: dict[Any, Any], depth: int) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key, item in mapping.items():
            # keys are mostly short names: skip the call for those (and for short strings)
            if isinstance(key, str) and len(key) >= _MIN_MATCH_LENGTH:
                key = self.text(key)
                if key in result:  # two secrets as keys: keep both entries
                    key = _unused_key(key, result)
            result[key] = self._value(item, depth)
        return result

    def stream(self) -> StreamRedactor:
        """A :class:`StreamRedactor` using this redactor."""
        return StreamRedactor(self)


def _unused_key(key: str, taken: Mapping[Any, Any]) -> str:
    number = 2
    while f"{key} ({number})" in taken:
        number += 1
    return f"{key} ({number})"


class StreamRedactor:
    """Redacts text that arrives in pieces, such as a model's streamed answer.

    :meth:`feed` returns the part of the text so far that can be shown: all but a tail that
    could still be, or start, a secret (the rest of the line up to a few hundred characters,
    or an unfinished private key block). :meth:`close` returns the rest. The pieces joined
    hold no secret that the text in one piece would not: a secret split across pieces is
    caught whole.
    """

    __slots__ = ("_hold", "_pending", "_redactor")

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._pending = ""
        self._hold = max(_STREAM_HOLD, redactor.longest_secret + _LOOKBEHIND)

    def feed(self, text: str) -> str:
        self._pending += text
        cut = self._safe_cut()
        if cut <= 0:
            return ""
        shown, self._pending = self._pending[:cut], self._pending[cut:]
        return self._redactor.text(shown)

    def close(self) -> str:
        """Everything still held back, redacted; the stream is empty afterwards."""
        rest, self._pending = self._pending, ""
        return self._redactor.text(rest)

    def _safe_cut(self) -> int:
        """The longest prefix of the pending text that redacts the same alone as followed by
        any text: it ends ``hold`` characters before the end, or at the end of a line (only
        private key blocks span lines), and not inside a secret nor within a look-behind's
        reach of one. A secret that runs to the end may still grow, so it is held."""
        text = self._pending
        end = len(text)
        if end > _STREAM_MAX_PENDING:
            return end
        cut = max(end - self._hold, text.rfind("\n") + 1)
        block = text.rfind("-----BEGIN")
        if block >= 0:
            closing = text.find("-----END", block)
            if closing < 0 or text.find("-----", closing + 8) < 0:  # a key block still coming
                cut = min(cut, block)
        if cut <= 0:
            return 0
        for start, stop in reversed(self._redactor.spans(text)):
            if cut > start - _LOOKBEHIND and (cut < stop or stop >= end):
                cut = start - _LOOKBEHIND
        return max(cut, 0)
