"""The store's fast path of redaction (``Redactor.shared_value``: one scan of a value's JSON,
a walk only when the scan finds something) stores exactly what the walk (``Redactor.value``)
stores, whatever JSON's escapes do around a secret, wherever the secret sits (a dict key, a
value, deep inside), and whatever characters surround it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import to_json

from secret_samples import AWS_SECRET, BEARER, EXAMPLES, FORMAT_SECRETS, ORDINARY
from subagents.redaction import DEPTH_LIMIT, TOKEN_FORMATS, Redactor
from subagents.store.codec import dump_json

KNOWN = "kn0wn-Credential-value-42"
# A known credential with characters JSON escapes: only its escaped form is in the JSON text.
KNOWN_ESCAPED = 'k3y"with\\quote\nand\tcontrol\x01'

# Characters JSON escapes, others it leaves but Python counts as spaces or line ends, and
# letters that lower-case to ASCII (the Kelvin sign) or to two characters (dotted I).
AWKWARD = ['"', "\\", "\n", "\t", "\r", "\x01", "\x08", "\x0c", "\x1f", "\x7f", "\u2028", "\x85"]
AWKWARD += ["\u212a", "\u0130", "\u017f", "é", "\U0001f600", " ", "'", ":", "=", "@", "/"]

# Pieces secrets are made of and found by: keys, operators, prefixes, whole secrets.
PIECES = [
    *FORMAT_SECRETS,
    KNOWN,
    KNOWN_ESCAPED,
    AWS_SECRET,
    BEARER,
    *[text for examples in EXAMPLES.values() for text, _, _ in examples],
    "password",
    "PASSWORD",
    "pass\u212aword",  # not a key: "k" is the Kelvin sign, which lower-cases to "k"
    "api\u212aey",
    "token",
    "Authorization",
    "aws_secret_access_key",
    "client_secret",
    "=",
    ": ",
    '"',
    "'",
    "\t",
    " = ",
    "Bearer ",
    "https://",
    "user:",
    "@host",
    "ghp_",
    "sk-",
    "eyJ",
    "AKIA",
    "-----BEGIN RSA PRIVATE KEY-----",
    "hunter2!",
    "s3cr3t-value",
    "password\t= hunter2!",
    'token": "abc12345"',
    "secret:\tvalue-123",
    'https://us"er:pa\\ss@example.com',  # a URL's user and password JSON escapes
    "https://" + "u\x01" * 30 + ":p\x02ss@example.com",  # longer once escaped
]

fragments = st.one_of(
    st.sampled_from(PIECES),
    st.sampled_from(AWKWARD),
    st.text(max_size=12),
)
texts = st.lists(fragments, max_size=8).map("".join)
values = st.recursive(
    st.one_of(texts, st.integers(), st.booleans(), st.none()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(texts, inner, max_size=4),
    ),
    max_leaves=12,
)


def redactor() -> Redactor:
    return Redactor([KNOWN, KNOWN_ESCAPED], include_environment=False)


def stored(value: Any) -> str:
    return dump_json(value)


# One redactor for every example, so that what it remembers of earlier ones is tested too.
REMEMBERING = redactor()


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(value=values)
def test_the_fast_path_stores_what_the_walk_stores(value: Any) -> None:
    expected = stored(redactor().value(value))
    assert stored(REMEMBERING.shared_value(value)) == expected
    assert stored(REMEMBERING.shared_value(value)) == expected  # asked again


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(
    before=st.sampled_from(AWKWARD),
    after=st.sampled_from(AWKWARD),
    piece=st.sampled_from(PIECES),
    as_key=st.booleans(),
    depth=st.integers(min_value=0, max_value=4),
)
def test_a_secret_next_to_any_escape_is_found_in_a_key_or_a_value(
    before: str, after: str, piece: str, as_key: bool, depth: int
) -> None:
    text = before + piece + after
    value: Any = {text: 1} if as_key else {"content": text}
    for _ in range(depth):
        value = {"nested": [value]}
    assert stored(redactor().shared_value(value)) == stored(redactor().value(value))


@pytest.mark.parametrize(
    ("name", "text"),
    [(name, text) for name, examples in EXAMPLES.items() for text, _, _ in examples],
)
@pytest.mark.parametrize("around", ["", "\n", '"', "\\", "\t", "\x01", "\u2028"])
def test_every_format_leaves_a_trace_in_json_whatever_surrounds_it(
    name: str, text: str, around: str
) -> None:
    encoded = to_json({"content": around + text + around}).decode()
    assert redactor().may_redact(encoded), name


def test_every_token_format_has_an_example_checked_above() -> None:
    assert {token_format.name for token_format in TOKEN_FORMATS} <= set(EXAMPLES)


def test_a_known_credential_that_json_escapes_is_still_found() -> None:
    value = {"content": f"the key is {KNOWN_ESCAPED}, keep it"}
    redacted = redactor().shared_value(value)
    assert KNOWN_ESCAPED not in stored(redacted)
    assert KNOWN_ESCAPED not in redacted["content"]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_values_are_returned_as_they_are(text: str) -> None:
    """The fast path is taken: nothing is copied when nothing can change."""
    value = {"role": "tool", "content": text, "tool_call_id": "call_1", "is_error": False}
    if redactor().may_redact(to_json(value).decode()):
        assert redactor().shared_value(value) == redactor().value(value)
    else:
        assert redactor().shared_value(value) is value


def test_a_plain_message_takes_the_fast_path() -> None:
    message = {
        "role": "assistant",
        "content": "I will read the file.",
        "tool_calls": [{"id": "call_1", "name": "Read", "arguments": {"path": "/tmp/x.py"}}],
    }
    assert redactor().shared_value(message) is message


@pytest.mark.parametrize("levels", [DEPTH_LIMIT - 1, DEPTH_LIMIT, DEPTH_LIMIT + 1, 100_000])
def test_deep_values_are_cut_as_the_walk_cuts_them(levels: int) -> None:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value]
    assert stored(redactor().shared_value(value)) == stored(redactor().value(value))


def test_values_json_cannot_encode_take_the_walk() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    for value in (cyclic, {"text": "lone \ud800 surrogate " + KNOWN}):
        shared = redactor().shared_value(value)
        assert repr(shared) == repr(redactor().value(value))


def test_a_long_value_is_walked_and_redacted() -> None:
    value = {"content": "x" * 5000 + " password=hunter2! " + FORMAT_SECRETS[0]}
    assert stored(redactor().shared_value(value)) == stored(redactor().value(value))
    assert "hunter2!" not in stored(redactor().shared_value(value))


def _many_calls(count: int, piece: str, at: int) -> dict[str, Any]:
    """An assistant message with ``count`` tool calls (many short fields, as a parent
    starting hundreds of subagents sends), ``piece`` in the prompt of call ``at``."""
    calls = [
        {
            "id": f"call_{index}",
            "name": "Task",
            "arguments": {
                "description": "bench",
                "subagent_type": "sub",
                "prompt": f"item {index} {piece if index == at else ''}",
            },
        }
        for index in range(count)
    ]
    return {"role": "assistant", "content": "", "tool_calls": calls}


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(piece=st.sampled_from(PIECES), at=st.integers(min_value=0, max_value=299))
def test_a_long_value_of_many_fields_is_scanned_and_stores_what_the_walk_stores(
    piece: str, at: int
) -> None:
    value = _many_calls(300, piece, at)
    expected = stored(redactor().value(value))
    assert len(expected) > 20_000
    assert stored(REMEMBERING.shared_value(value)) == expected
    assert REMEMBERING.json(value) == expected


def test_a_long_clean_value_of_many_fields_is_its_own_json() -> None:
    value = _many_calls(500, "", 0)
    assert redactor().shared_value(value) is value
    assert redactor().json(value) == to_json(value).decode()
