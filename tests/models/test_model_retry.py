"""The retry layer's pure parts: Retry-After parsing, status classification, backoff."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subagents.models.retry import (
    Failure,
    RetryPolicy,
    error_message_from_body,
    parse_retry_after,
    status_failure,
)


def test_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "12"}) == 12.0
    assert parse_retry_after({"Retry-After": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "300", "retry-after": "9"}) == 0.3
    assert parse_retry_after({"retry-after": "-4"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_retry_after_http_date() -> None:
    later = datetime.now(UTC) + timedelta(seconds=30)
    waited = parse_retry_after({"retry-after": format_datetime(later, usegmt=True)})
    assert waited is not None
    assert 25.0 <= waited <= 30.0
    past = datetime.now(UTC) - timedelta(hours=1)
    assert parse_retry_after({"retry-after": format_datetime(past, usegmt=True)}) == 0.0


@pytest.mark.slow
@settings(max_examples=300)
@given(
    st.dictionaries(
        st.sampled_from(["retry-after", "Retry-After", "retry-after-ms", "x-other"]), st.text()
    )
)
def test_retry_after_never_raises_and_is_never_negative(headers: dict[str, str]) -> None:
    waited = parse_retry_after(headers)
    assert waited is None or (math.isfinite(waited) and waited >= 0.0)


@pytest.mark.parametrize(
    ("status", "retryable"),
    [
        (400, False),
        (401, False),
        (403, False),
        (404, False),
        (422, False),
        (408, True),
        (429, True),
        (500, True),
        (502, True),
        (503, True),
        (504, True),
        (529, True),
        (501, False),
    ],
)
def test_status_classification(status: int, retryable: bool) -> None:
    failure = status_failure(status, "msg", {}, auth_hint="check KEY_VAR", model_hint="model?")
    assert failure.retryable is retryable
    assert failure.status_code == status
    assert (failure.hint is None) is retryable
    if status == 401:
        assert failure.hint == "check KEY_VAR"
    if status == 404:
        assert failure.hint == "model?"


def test_server_may_override_with_x_should_retry() -> None:
    no = status_failure(503, "m", {"x-should-retry": "false"}, auth_hint="", model_hint="")
    yes = status_failure(400, "m", {"x-should-retry": "true"}, auth_hint="", model_hint="")
    assert not no.retryable
    assert yes.retryable


def test_backoff_is_full_jitter_capped_and_retry_after_is_capped() -> None:
    policy = RetryPolicy(initial_delay=0.5, max_delay=4.0, max_retry_after=10.0, jitter=lambda: 1.0)
    plain = Failure("x", retryable=True)
    assert [policy.delay(n, plain) for n in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert policy.delay(0, Failure("x", retryable=True, retry_after=3.0)) == 3.0
    assert policy.delay(0, Failure("x", retryable=True, retry_after=999.0)) == 10.0
    zero = RetryPolicy(jitter=lambda: 0.0)
    assert zero.delay(3, plain) == 0.0


def test_error_message_from_body_shapes() -> None:
    assert error_message_from_body({"error": {"message": " bad key "}}, "fb") == "bad key"
    assert error_message_from_body({"message": "flat"}, "fb") == "flat"
    assert error_message_from_body({"error": "plain text"}, "fb") == "plain text"
    assert error_message_from_body("<html>oops</html>", "fb") == "<html>oops</html>"
    assert error_message_from_body(None, "fallback") == "fallback"
    assert error_message_from_body({"error": {"message": 3}}, "fallback") == "fallback"
