"""What the models built on an official provider SDK share: one client per model, made on
first use (so that building a model costs no SDK import), closed by :meth:`aclose`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Generic, Protocol, TypeVar

from subagents.models.retry import RetryPolicy, Sleep

__all__ = ["SDKModel"]


class _Closable(Protocol):
    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=_Closable)


class SDKModel(Generic[ClientT]):
    """Base of the SDK-backed models; a subclass says how to make its client."""

    base_url: str | None
    _client_instance: ClientT | None = None

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

    @staticmethod
    def _retry_policy(max_retries: int, sleep: Sleep | None) -> RetryPolicy:
        policy = RetryPolicy(max_retries=max_retries)
        return replace(policy, sleep=sleep) if sleep is not None else policy

    def _client_options(self, api_key: str, timeout_seconds: float) -> dict[str, Any]:
        # max_retries=0: our own retry layer (models/retry.py) is the only one
        return {
            "api_key": api_key,
            "base_url": self.base_url,
            "timeout": timeout_seconds,
            "max_retries": 0,
        }
