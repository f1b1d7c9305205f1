"""What the models built on an official provider SDK share: one client per model, made on
first use (so that building a model costs no SDK import), closed by :meth:`aclose`; the
timeouts it is built with; and the failures that look the same in every SDK (timeouts, lost
connections, malformed answers), described with the endpoint the client really uses.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Generic, Protocol, TypeVar
from urllib.parse import urlsplit, urlunsplit

from subagents.models.retry import (
    Failure,
    RetryPolicy,
    Sleep,
    connect_timeout_types,
    malformed_failure,
    network_error_types,
    timeout_types,
)

__all__ = ["SDKModel", "display_url"]


class _Closable(Protocol):
    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=_Closable)


def display_url(url: str) -> str:
    """``url`` fit for an error message: no user, password, query or fragment (they may hold a
    key), no trailing slash."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:  # an IPv6 address
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "(an unreadable URL)"
    return urlunsplit((parts.scheme, host + port, parts.path, "", "")).rstrip("/")


class SDKModel(Generic[ClientT]):
    """Base of the SDK-backed models; a subclass says how to make its client and sets the
    attributes below in its ``__init__``."""

    base_url: str | None
    """As configured; None lets the SDK choose (its default, or ``*_BASE_URL``)."""
    provider: str
    """The ``[providers.NAME]`` table that configures this model."""
    timeout_seconds: float
    connect_timeout_seconds: float
    _api_key: str
    _client_instance: ClientT | None = None
    _sdk_module: ClassVar[str]
    """The SDK's package (``openai``, ``anthropic``)."""

    @property
    def name(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, base_url={self.base_url!r})"

    def _new_client(self) -> ClientT:
        raise NotImplementedError

    def _client(self) -> ClientT:
        if self._client_instance is None:
            self._client_instance = self._new_client()
        return self._client_instance

    async def aclose(self) -> None:
        """Close the HTTP connections (a new client is made if the model is used again)."""
        if self._client_instance is not None:
            client, self._client_instance = self._client_instance, None
            await client.close()

    @property
    def endpoint(self) -> str:
        """Where requests really go: the client's ``base_url``, which honours the SDK's
        ``*_BASE_URL`` variable when none is configured (shown without credentials)."""
        return self._redact(display_url(str(getattr(self._client(), "base_url", ""))))

    def _retry_policy(self, max_retries: int, sleep: Sleep | None) -> RetryPolicy:
        policy = RetryPolicy(max_retries=max_retries, settings=f"[providers.{self.provider}]")
        return replace(policy, sleep=sleep) if sleep is not None else policy

    def _timeout(self, read_seconds: float | None = None) -> Any:
        """The SDK's timeout object: ``read_seconds`` (default ``timeout_seconds``) for every
        wait on the provider, ``connect_timeout_seconds`` for opening a connection."""
        import importlib

        return importlib.import_module(self._sdk_module).Timeout(
            read_seconds or self.timeout_seconds, connect=self.connect_timeout_seconds
        )

    def _client_options(self) -> dict[str, Any]:
        # max_retries=0: our own retry layer (models/retry.py) is the only one
        return {
            "api_key": self._api_key,
            "base_url": self.base_url,
            "timeout": self._timeout(),
            "max_retries": 0,
        }

    def _redact(self, text: str) -> str:
        key = getattr(self, "_api_key", "")
        return text.replace(key, "***") if len(key) >= 8 else text

    def _transport_failure(
        self,
        exc: BaseException,
        *,
        timeout_error: type[BaseException],
        connection_error: type[BaseException],
    ) -> Failure | None:
        """Timeouts, lost connections and malformed answers, as both SDKs report them
        (``timeout_error`` and ``connection_error`` are the SDK's own classes)."""
        where = self.endpoint
        malformed = malformed_failure(exc, where)
        if malformed is not None:  # its message quotes the server, which may echo the key
            return replace(malformed, message=self._redact(malformed.message))
        wrapped = isinstance(exc, (timeout_error, connection_error))
        cause = exc.__cause__ if wrapped else exc
        if isinstance(cause, connect_timeout_types()):
            return Failure(
                f"could not connect to {where} within {self.connect_timeout_seconds:g} s",
                retryable=True,
                hint=f"check that the server at {where} is running and reachable, or raise "
                f"[providers.{self.provider}] connect_timeout_seconds in config.toml",
            )
        if isinstance(exc, timeout_error) or isinstance(cause, timeout_types()):
            waited = _read_timeout(exc) or self.timeout_seconds
            return Failure(
                f"no answer from {where} within {waited:g} s",
                retryable=False,
                hint="the provider took the request but stayed silent; if it is slow rather "
                "than stuck (a local model writing a long answer), raise "
                f"[providers.{self.provider}] timeout_seconds in config.toml",
            )
        if isinstance(exc, (connection_error, *network_error_types())):
            detail = self._redact(str(cause or exc)) or type(cause or exc).__name__
            return Failure(
                f"connection to {where} failed ({detail})",
                retryable=True,
                hint=f"check that the server at {where} is running and reachable, or raise "
                f"[providers.{self.provider}] max_retries in config.toml",
            )
        return None


def _read_timeout(exc: BaseException) -> float | None:
    """The read timeout the request really had (a request may set its own), when the
    exception still knows its request."""
    try:
        timeouts = exc.request.extensions["timeout"]  # type: ignore[attr-defined]
        value = timeouts["read"]
    except (AttributeError, KeyError, RuntimeError, TypeError):
        return None
    return float(value) if isinstance(value, int | float) else None
