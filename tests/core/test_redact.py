"""The redactor on its own: one example per format, ordinary text and code left alone, nested
values of any depth, dict keys, streamed text, and properties over random text."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from secret_samples import (
    AWS_KEY_ID,
    EXAMPLES,
    FORMAT_SECRETS,
    GITHUB_CLASSIC,
    JWT,
    OPENAI_KEY,
    ORDINARY,
    PEM_BLOCK,
    PEM_BODY,
)
from subagents.redaction import (
    DEPTH_LIMIT,
    KEYED_FORMATS,
    REDACTED,
    TOKEN_FORMATS,
    TRUNCATED,
    Redactor,
    looks_like_secret_name,
    secret_env_values,
)


def redactor() -> Redactor:
    return Redactor(include_environment=False)


def test_every_format_has_an_example() -> None:
    names = [f.name for f in TOKEN_FORMATS] + [f.name for f in KEYED_FORMATS]
    assert len(names) == len(set(names))
    assert set(EXAMPLES) == set(names)


@pytest.mark.parametrize(
    ("name", "text", "secret", "expected"),
    [(name, *example) for name, examples in EXAMPLES.items() for example in examples],
)
def test_each_format_is_redacted(name: str, text: str, secret: str, expected: str) -> None:
    assert secret in text
    redacted = redactor().text(text)
    assert secret not in redacted, name
    assert redacted == expected


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_and_code_are_left_alone(text: str) -> None:
    assert redactor().text(text) == text


def test_known_credentials_are_redacted_wherever_they_appear() -> None:
    secret = "Zq9-plain-looking-credential"
    redacted = Redactor([secret], include_environment=False).text(f"x{secret}y {secret}")
    assert redacted == f"x{REDACTED}y {REDACTED}"


def test_short_known_values_are_not_secrets() -> None:
    assert Redactor(["1", "true", "short"], include_environment=False).text("1 true short") == (
        "1 true short"
    )


def test_environment_secrets_are_included(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_LLM_CRED", "cred-value-0001")
    monkeypatch.setenv("SERVICE_PASSWORD", "pw-value-0002")
    monkeypatch.setenv("HOME_PAGE", "not-a-secret-0003")
    assert "cred-value-0001" in secret_env_values()
    text = Redactor().text("cred-value-0001 pw-value-0002 not-a-secret-0003")
    assert text == f"{REDACTED} {REDACTED} not-a-secret-0003"


def test_the_process_environment_is_read_again_whenever_it_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its secrets are kept between runs, and must follow every change: a variable added,
    changed, removed, or put back as it was."""
    monkeypatch.delenv("LATE_API_TOKEN", raising=False)
    before = secret_env_values()
    assert all("late-token" not in value for value in before)
    monkeypatch.setenv("LATE_API_TOKEN", "late-token-0001")
    assert "late-token-0001" in secret_env_values()
    assert "late-token-0001" in secret_env_values(os.environ)  # the same, passed in
    os.environ["LATE_API_TOKEN"] = "late-token-0002"
    now = secret_env_values()
    assert "late-token-0002" in now and "late-token-0001" not in now
    now.append("mine")  # the caller's own list: what is kept does not change
    assert "mine" not in secret_env_values()
    monkeypatch.delenv("LATE_API_TOKEN")
    assert secret_env_values() == before
    monkeypatch.setenv("LATE_API_TOKEN", "late-token-0002")
    assert Redactor().text("late-token-0002") == REDACTED


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("GITHUB_TOKEN", True),
        ("DB_PASSWORD", True),
        ("DBPASSWORD", True),
        ("apiKey", True),
        ("X-Api-Key", True),
        ("Authorization", True),
        ("MY_LLM_CRED", True),
        ("client_secret", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("PATH", False),
        ("HOME", False),
        ("SSH_AUTH_SOCK", False),
        ("TOKENIZERS_PARALLELISM", False),
        ("KEYBOARD", False),
        ("PWD", False),  # the shell's working directory, not a password
        ("OLDPWD", False),
        ("DB_PWD", True),
        ("", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert looks_like_secret_name(name) is secret


def test_the_working_directory_is_not_redacted_from_paths(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    project = str(tmp_path / "project")
    monkeypatch.setenv("PWD", project)
    monkeypatch.setenv("OLDPWD", project + "-before")
    assert Redactor().text(f"edited {project}/src/app.py") == f"edited {project}/src/app.py"


# -- nested values -----------------------------------------------------------------------------


def nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def depth_of(value: Any) -> int:
    depth = 0
    while isinstance(value, dict | list):
        value = value["k"] if isinstance(value, dict) else value[0]
        depth += 1
    return depth


def test_a_value_nested_100_000_deep_is_cut_with_a_marker() -> None:
    result = Redactor(include_environment=False).value(nested(100_000, GITHUB_CLASSIC))
    assert depth_of(result) == DEPTH_LIMIT
    leaf = result
    for _ in range(DEPTH_LIMIT):
        leaf = leaf["k"] if isinstance(leaf, dict) else leaf[0]
    assert leaf == TRUNCATED
    json.dumps(result)  # the store can write it


def test_a_value_within_the_limit_is_kept_whole() -> None:
    result = Redactor(include_environment=False).value(nested(DEPTH_LIMIT - 1, GITHUB_CLASSIC))
    assert depth_of(result) == DEPTH_LIMIT - 1
    assert "ghp_[REDACTED]" in json.dumps(result)


def test_a_value_that_contains_itself_ends() -> None:
    loop: list[Any] = ["x"]
    loop.append(loop)
    result = Redactor(include_environment=False).value(loop)
    assert TRUNCATED in json.dumps(result)


def test_dict_keys_that_are_secrets_are_redacted_and_kept_apart() -> None:
    value = {
        GITHUB_CLASSIC: 1,
        f"ghp_{'Z' * 36}": 2,
        "plain": {"password=hunter2!": [OPENAI_KEY, ("tuple", AWS_KEY_ID)]},
        "n": 3,
        7: None,
    }
    result = Redactor(include_environment=False).value(value)
    assert result == {
        "ghp_[REDACTED]": 1,
        "ghp_[REDACTED] (2)": 2,
        "plain": {"password=[REDACTED]": ["sk-[REDACTED]", ["tuple", "AKIA[REDACTED]"]]},
        "n": 3,
        7: None,
    }


# -- pathological input ------------------------------------------------------------------------

# Each would take hours with a pattern that backtracks over what it scanned; linear, they pass
# in a moment. Nothing is asserted about time: a regression shows as a hang.
PATHOLOGICAL = [
    "eyJ" * 60_000,
    "token=" * 30_000 + "1",
    "password=" + "1" * 200_000 + "(",
    "-----BEGIN PRIVATE KEY-----" * 5_000,
    "://a:" * 40_000,
    "ghp_" * 50_000,
    "A" + "KIA" * 60_000,
    '"token": "' * 20_000,
    "x" * 100_000 + "=" + "y" * 100_000,
]


@pytest.mark.parametrize("text", PATHOLOGICAL, ids=lambda text: repr(text[:12]))
def test_pathological_text_is_redacted_in_linear_time(text: str) -> None:
    assert isinstance(redactor().text(text), str)


# -- properties ----------------------------------------------------------------------------------

SECRETS = [secret for examples in EXAMPLES.values() for _, secret, _ in examples]
KNOWN = "kn0wn-Credential-value-42"
SEPARATORS = st.sampled_from([" ", "\n", "\t", ", ", "; ", "(", ")", '"', "'", " = ", ": "])


@settings(max_examples=300, deadline=None)
@given(
    before=st.text(max_size=80),
    after=st.text(max_size=80),
    secret=st.sampled_from(FORMAT_SECRETS),
    left=SEPARATORS,
    right=SEPARATORS,
)
def test_a_secret_inserted_anywhere_in_any_text_does_not_survive(
    before: str, after: str, secret: str, left: str, right: str
) -> None:
    text = before + left + secret + right + after
    assert secret not in Redactor([KNOWN], include_environment=False).text(text)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200), position=st.integers(min_value=0, max_value=200))
def test_a_known_credential_inserted_at_any_position_does_not_survive(
    text: str, position: int
) -> None:
    at = min(position, len(text))
    redacted = Redactor([KNOWN], include_environment=False).text(text[:at] + KNOWN + text[at:])
    assert KNOWN not in redacted


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300))
def test_any_text_redacts_without_error_and_twice_is_once(text: str) -> None:
    once = redactor().text(text)
    assert redactor().text(once) == once


# -- streams -------------------------------------------------------------------------------------

STREAMED = (
    f'Here: {GITHUB_CLASSIC} and postgres://u:pw@h/db, and password = "correct horse".\n'
    f"{PEM_BLOCK}\nAuthorization: Bearer {JWT} {KNOWN} and the rest of a long line "
    + "of plain words " * 40
    + f"then {AWS_KEY_ID}.\nDone."
)


def stream_in_pieces(text: str, cuts: list[int]) -> list[str]:
    stream = Redactor([KNOWN], include_environment=False).stream()
    shown, start = [], 0
    for cut in sorted({min(cut, len(text)) for cut in cuts}):
        shown.append(stream.feed(text[start:cut]))
        start = cut
    shown.append(stream.feed(text[start:]))
    shown.append(stream.close())
    return shown


@settings(max_examples=300, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(STREAMED)), max_size=60))
def test_a_stream_cut_anywhere_shows_what_the_whole_text_redacts_to(cuts: list[int]) -> None:
    shown = "".join(stream_in_pieces(STREAMED, cuts))
    assert shown == Redactor([KNOWN], include_environment=False).text(STREAMED)
    for secret in (GITHUB_CLASSIC, "pw@", "correct horse", PEM_BODY.splitlines()[0], JWT, KNOWN):
        assert secret not in shown


@settings(max_examples=200, deadline=None)
@given(
    before=st.text(max_size=60),
    after=st.text(max_size=60),
    secret=st.sampled_from([*FORMAT_SECRETS, KNOWN]),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=20),
)
def test_a_secret_split_across_pieces_never_shows(
    before: str, after: str, secret: str, cuts: list[int]
) -> None:
    shown = "".join(stream_in_pieces(f"{before} {secret} {after}", cuts))
    assert secret not in shown


def test_a_stream_shows_text_before_it_ends() -> None:
    stream = Redactor(include_environment=False).stream()
    first = stream.feed("A first line without secrets.\nAnd the start of ")
    assert first == "A first line without secrets.\n"
    long = "word " * 200
    assert stream.feed(long)  # a long line is shown before its end, all but a tail
    assert stream.close().endswith("word ")


def test_a_token_split_in_two_pieces_is_held_until_it_is_whole() -> None:
    stream = Redactor(include_environment=False).stream()
    shown = stream.feed("token: ghp_A1b2C3d4E5f6G7h8")
    shown += stream.feed("I9j0K1l2M3n4O5p6Q7r8\nnext")
    shown += stream.close()
    assert shown == "token: [REDACTED]\nnext"
