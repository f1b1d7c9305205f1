"""Our one retry layer for provider calls (the SDKs are built with ``max_retries=0``).

Exponential backoff with full jitter on rate limits, server errors, connection failures and
malformed answers (a body that is not JSON, a stream cut short); a server's ``Retry-After`` /
``retry-after-ms`` wins over the computed backoff. Errors retrying cannot fix raise
:class:`~subagents.errors.ModelError` at once, with the provider's own message and status code.
A provider that took the connection but gave no answer within its timeout is one of them: it
already had the whole ``timeout_seconds``, and another attempt would double the wait (see
:mod:`subagents.models.settings` for the timeouts).

The provider modules translate their SDK's exceptions into a :class:`Failure` with a
``classify`` function; this module knows nothing about any SDK.

Whoever wants to see the retries (a progress line: "retrying in 2.0 s (HTTP 429)") listens
with :func:`listening_to_retries` around its model call: each retry is reported as a
:class:`RetryNotice` before its wait. The listener lives in a context variable, so neither the
models nor their settings carry it, and a call made elsewhere (another session's, in its own
task) is not reported to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import importlib
import json
import math
import random
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import aclosing, contextmanager
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import TypeVar

from subagents.errors import ModelError, ModelRetriesExhaustedError

__all__ = [
    "RETRYABLE_STATUS_CODES",
    "Failure",
    "MalformedResponseError",
    "RetryListener",
    "RetryNotice",
    "RetryPolicy",
    "call_with_retries",
    "connect_timeout_types",
    "error_message_from_body",
    "listening_to_retries",
    "malformed_failure",
    "network_error_types",
    "parse_retry_after",
    "retry_reason",
    "status_failure",
    "stream_with_retries",
    "timeout_types",
]

T = TypeVar("T")
E = TypeVar("E")

RETRYABLE_STATUS_CODES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})

Sleep = Callable[[float], Awaitable[None]]


@dataclass(slots=True, frozen=True)
class Failure:
    """What a provider exception means for the retry loop."""

    message: str
    retryable: bool
    status_code: int | None = None
    retry_after: float | None = None
    hint: str | None = None


Classifier = Callable[[BaseException], Failure | None]
"""Turns an exception into a :class:`Failure`; ``None`` means "not a provider error"."""

_MALFORMED_HINT = (
    "the server (or a proxy in front of it) did not answer in the provider's protocol; if this "
    "persists, check that base_url points at the provider's API"
)


class MalformedResponseError(Exception):
    """A provider answered, but not in its protocol: a body of the wrong shape, a stream that
    ended before the answer did. Raised by the provider modules; retried like a dropped
    connection, since such answers usually come from a server or proxy in trouble."""


@dataclass(slots=True, frozen=True)
class RetryPolicy:
    """How often and how long to retry.

    ``max_retries`` counts retries after the first attempt. The computed backoff before retry
    ``n`` (0-based) is uniform in ``[0, min(max_delay, initial_delay * 2**n)]``; a server's
    ``Retry-After`` is used instead, capped at ``max_retry_after``. ``sleep`` and ``jitter``
    (a uniform [0, 1) source) are injectable so tests can observe waits without waiting.
    ``settings`` names the config table a person would change (in error hints).
    """

    max_retries: int = 4
    initial_delay: float = 0.5
    max_delay: float = 20.0
    max_retry_after: float = 60.0
    sleep: Sleep = field(default=asyncio.sleep)
    jitter: Callable[[], float] = field(default=random.random)
    settings: str = "[providers.NAME]"

    def delay(self, retry_index: int, failure: Failure) -> float:
        if failure.retry_after is not None:
            return min(max(failure.retry_after, 0.0), self.max_retry_after)
        ceiling = min(self.max_delay, self.initial_delay * (2.0 ** min(retry_index, 30)))
        return self.jitter() * ceiling


@dataclass(slots=True, frozen=True)
class RetryNotice:
    """A failed attempt is about to be retried after ``delay_s`` seconds.

    ``attempt`` is the number of the coming attempt (2 for the first retry) out of
    ``max_attempts``; ``reason`` is short (``"HTTP 429"``, ``"timeout"``, ``"connection
    reset"``); ``what`` names the call (``"openai:gpt-4o stream"``).
    """

    attempt: int
    max_attempts: int
    delay_s: float
    reason: str
    what: str


RetryListener = Callable[[RetryNotice], None]

_listener: contextvars.ContextVar[RetryListener | None] = contextvars.ContextVar(
    "subagents_retry_listener", default=None
)


@contextmanager
def listening_to_retries(listener: RetryListener) -> Iterator[None]:
    """Report to ``listener`` every retry of the provider calls made inside the block (in this
    task, and in tasks it starts there). A listener that raises does not stop the retry."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def retry_reason(failure: Failure, cause: BaseException) -> str:
    """A few words on why a call is retried: ``HTTP 429``, ``timeout``, ``connection reset``,
    ``malformed answer``, or the start of the failure's message."""
    if failure.status_code is not None:
        return f"HTTP {failure.status_code}"
    chain: list[BaseException] = [cause]
    if cause.__cause__ is not None:
        chain.append(cause.__cause__)
    if any(isinstance(exc, (MalformedResponseError, json.JSONDecodeError)) for exc in chain):
        return "malformed answer"
    if any(isinstance(exc, connect_timeout_types()) for exc in chain):
        return "connect timeout"
    if any(isinstance(exc, timeout_types()) for exc in chain):
        return "timeout"
    for exc in chain:
        name = type(exc).__name__
        if name == "ConnectError":
            return "connection refused" if "refused" in str(exc).lower() else "cannot connect"
        if name in ("ReadError", "WriteError", "RemoteProtocolError", "CloseError"):
            return "connection reset"
    if any(isinstance(exc, network_error_types()) for exc in chain):
        return "connection error"
    if any(isinstance(exc, TimeoutError) for exc in chain):
        return "timeout"
    if any(isinstance(exc, ConnectionRefusedError) for exc in chain):
        return "connection refused"
    if any(isinstance(exc, ConnectionError) for exc in chain):
        return "connection reset"
    head = failure.message.split(":", 1)[0].strip()
    return head[:60] or type(cause).__name__


def _report_retry(
    failure: Failure,
    retry_index: int,
    policy: RetryPolicy,
    what: str,
    cause: BaseException,
    delay: float,
) -> None:
    listener = _listener.get()
    if listener is None:
        return
    notice = RetryNotice(
        attempt=retry_index + 2,
        max_attempts=policy.max_retries + 1,
        delay_s=delay,
        reason=retry_reason(failure, cause),
        what=what,
    )
    with contextlib.suppress(Exception):  # a broken listener must not change the call
        listener(notice)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait as asked by ``retry-after-ms`` or ``Retry-After`` (seconds or a date)."""
    milliseconds = _header(headers, "retry-after-ms")
    if milliseconds is not None:
        try:
            value = float(milliseconds) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(value, 0.0)
    raw = _header(headers, "retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        return _seconds_until(raw)
    return max(seconds, 0.0) if math.isfinite(seconds) else None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value.strip() if value is not None else None


def _seconds_until(http_date: str) -> float | None:
    try:
        when = parsedate_to_datetime(http_date)
    except (TypeError, ValueError, IndexError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


@functools.cache
def _http_library_types(*names: str) -> tuple[type[BaseException], ...]:
    """The exception classes ``names`` of the HTTP library under the SDKs (``httpx2``, or
    ``httpx`` for older SDKs), imported on first use only."""
    found: list[type[BaseException]] = []
    for module_name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        found.extend(getattr(module, name) for name in names)
    return tuple(found)


def network_error_types() -> tuple[type[BaseException], ...]:
    """Transport-level exceptions of the HTTP library under the SDKs (timeouts, resets).

    Some SDKs re-raise these unwrapped when a stream breaks.
    """
    return _http_library_types("TransportError")


def timeout_types() -> tuple[type[BaseException], ...]:
    """Every timeout of the HTTP library (a stream's read timeout escapes unwrapped)."""
    return _http_library_types("TimeoutException")


def connect_timeout_types() -> tuple[type[BaseException], ...]:
    """The timeouts that happen before a request reaches the provider (opening a connection,
    waiting for a free one): retried, unlike a provider that never answers."""
    return _http_library_types("ConnectTimeout", "PoolTimeout")


def malformed_failure(exc: BaseException, where: str) -> Failure | None:
    """A retryable Failure for an answer that breaks the protocol: our own
    :class:`MalformedResponseError`, or a body or Server-Sent Event that is not JSON (the SDKs
    let ``json.JSONDecodeError`` out unwrapped); ``None`` for anything else."""
    if isinstance(exc, MalformedResponseError):
        detail = str(exc)
    elif isinstance(exc, json.JSONDecodeError):
        detail = f"a body or event that is not JSON: {exc.msg} at position {exc.pos}"
    else:
        return None
    return Failure(f"{where} sent a malformed answer ({detail})", True, hint=_MALFORMED_HINT)


def error_message_from_body(body: object, fallback: str) -> str:
    """The provider's human message from an error body (``{"error": {"message": ...}}``)."""
    inner: object = body
    if isinstance(body, Mapping):
        inner = body.get("error", body)
    if isinstance(inner, Mapping):
        message = inner.get("message")
        if isinstance(message, str) and message.strip():
            return message.strip()
    if isinstance(inner, str) and inner.strip():
        return inner.strip()[:500]
    return fallback


_REQUEST_INVALID = re.compile(r"\b\d+ validation errors?\b")


def status_failure(
    status_code: int,
    message: str,
    headers: Mapping[str, str],
    *,
    auth_hint: str,
    model_hint: str,
) -> Failure:
    """Classify an HTTP error status, honouring ``x-should-retry`` when the server sends it."""
    should_retry = (_header(headers, "x-should-retry") or "").lower()
    if should_retry in ("true", "false"):
        retryable = should_retry == "true"
    elif _REQUEST_INVALID.search(message):
        # the request itself was refused, whatever the status says (llama-cpp-python's
        # server answers a body that fails its validation with HTTP 500)
        retryable = False
    else:
        retryable = status_code in RETRYABLE_STATUS_CODES or (
            status_code >= 500 and status_code != 501
        )
    hint: str | None = None
    if not retryable:
        hint = _status_hint(status_code, auth_hint=auth_hint, model_hint=model_hint)
    return Failure(
        message=f"HTTP {status_code}: {message}",
        retryable=retryable,
        status_code=status_code,
        retry_after=parse_retry_after(headers) if retryable else None,
        hint=hint,
    )


def _status_hint(status_code: int, *, auth_hint: str, model_hint: str) -> str:
    if status_code == 401:
        return auth_hint
    if status_code == 403:
        return "the key is valid but not allowed to use this model; check the account's access"
    if status_code == 404:
        return model_hint
    if status_code in (400, 413, 422):
        return "the provider rejected the request; check the model's settings and the prompt"
    return "check the provider's status and the request; retrying will not help"


async def _wait_or_give_up(
    failure: Failure, retry_index: int, policy: RetryPolicy, what: str, cause: BaseException
) -> None:
    if not failure.retryable:
        raise ModelError(
            f"{what} failed: {failure.message}",
            hint=failure.hint,
            status_code=failure.status_code,
        ) from cause
    if retry_index >= policy.max_retries:
        attempts = retry_index + 1
        raise ModelRetriesExhaustedError(
            f"{what} kept failing: {failure.message} "
            f"(gave up after {attempts} attempt{'s' if attempts != 1 else ''})",
            hint=failure.hint
            or f"try again later, or raise {policy.settings} max_retries in config.toml",
            status_code=failure.status_code,
        ) from cause
    delay = policy.delay(retry_index, failure)
    _report_retry(failure, retry_index, policy, what, cause, delay)
    await policy.sleep(delay)


async def call_with_retries(
    operation: Callable[[], Awaitable[T]],
    *,
    classify: Classifier,
    policy: RetryPolicy,
    what: str,
) -> T:
    """Run ``operation`` until it succeeds, retrying failures ``classify`` marks retryable.

    ``what`` names the call in error messages (e.g. ``"openai:gpt-4o request"``).
    """
    retry_index = 0
    while True:
        try:
            return await operation()
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            await _wait_or_give_up(failure, retry_index, policy, what, exc)
            retry_index += 1


async def stream_with_retries(
    open_stream: Callable[[], AsyncGenerator[E, None]],
    *,
    classify: Classifier,
    policy: RetryPolicy,
    what: str,
) -> AsyncIterator[E]:
    """Yield the events of ``open_stream()``, starting over on a retryable failure.

    A stream is only restarted while nothing has been yielded: once a caller has seen part of
    an answer, replaying it would duplicate output, so a failure then raises ModelError.
    """
    retry_index = 0
    while True:
        yielded = 0
        try:
            async with aclosing(open_stream()) as stream:
                async for event in stream:
                    yielded += 1
                    yield event
            return
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            if yielded:
                raise ModelError(
                    f"{what} was interrupted after {yielded} streamed events: {failure.message}",
                    hint="the partial answer was discarded; run the prompt again",
                    status_code=failure.status_code,
                ) from exc
            await _wait_or_give_up(failure, retry_index, policy, what, exc)
            retry_index += 1
