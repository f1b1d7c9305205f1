"""Per-provider settings, as read from ``[providers.NAME]`` in config.toml.

Timeouts, and why these defaults. A provider that takes the connection and then never answers
must not hold a run for long: with the defaults it ends in a ``ModelError`` naming
``[providers.NAME] timeout_seconds`` after about two minutes (one attempt of
:data:`DEFAULT_TIMEOUT_SECONDS`; a timed-out answer is not retried, since the provider already
had the whole timeout and a retry would double the wait). A slow but working model keeps
working:

- streamed answers reset the timeout with every chunk, so only a silence of
  ``timeout_seconds`` ends them, however long the whole answer takes;
- a non-streamed answer (what a session asks for unless it streams to a live display) arrives
  in one piece, so ``timeout_seconds`` bounds the whole generation. 120 s covers a long answer
  from the hosted providers and remote servers. A model on this machine or a private network
  (a local server, :mod:`subagents.models.server`, or one run in this process) gets
  :data:`LOCAL_TIMEOUT_SECONDS` instead: on a CPU, a small model reads a prompt of a few
  thousand tokens for over two minutes before it writes its first token.

Opening a connection has its own short timeout (:data:`DEFAULT_CONNECT_TIMEOUT_SECONDS`), and
failing to connect is retried like any dropped connection: a server that is down is reported in
seconds, not minutes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_SECONDS",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT_SECONDS",
    "LOCAL_TIMEOUT_SECONDS",
    "ProviderSettings",
    "ToolCallMode",
]

DEFAULT_TIMEOUT_SECONDS = 120.0
"""The longest a provider may stay silent in one attempt: until a non-streamed answer is
whole, until a stream's first chunk, and between two chunks."""
LOCAL_TIMEOUT_SECONDS = 600.0
"""The same for a model on this machine or a private network (a local server, or one run in
this process): a small model on a CPU reads a long prompt for minutes before it writes."""
DEFAULT_CONNECT_TIMEOUT_SECONDS = 10.0
"""The longest to wait for a connection to open (retried on failure)."""
DEFAULT_MAX_RETRIES = 4
"""Retries after the first attempt, for rate limits, server errors, dropped connections and
malformed answers."""

ToolCallMode = Literal["native", "text", "schema", "auto"]
"""How a provider's models call tools (``[providers.NAME] tool_calls``): ``native`` (the API's
own tool calls only), ``text`` (no tools sent; they are described in the system prompt and
calls are read from the answer's text), ``schema`` (answers constrained by ``response_format``
to a call or a reply), ``auto`` (native, and calls written as text are read when an answer has
no native one). Unset: ``native`` for the Anthropic and OpenAI APIs, ``auto`` for other
servers, ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` ones included (see
:func:`subagents.models.resolve.tool_call_mode` and :mod:`subagents.models.server`)."""


class ProviderSettings(BaseModel):
    """How to reach one provider.

    ``base_url`` unset: ``openai`` and ``anthropic`` take ``OPENAI_BASE_URL`` /
    ``ANTHROPIC_BASE_URL`` when set, as their SDKs do (:mod:`subagents.models.server`).
    The API key is looked up, in order, from ``api_key`` (discouraged: it sits in a file), the
    environment variable named by ``api_key_env``, then the provider's usual variable
    (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``). The timeouts are explained in the module
    docstring.
    """

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None
    api_key: SecretStr | None = None
    api_key_env: str | None = None
    # unset: DEFAULT_TIMEOUT_SECONDS, or LOCAL_TIMEOUT_SECONDS for a local server's models
    timeout_seconds: float | None = Field(default=None, gt=0)
    connect_timeout_seconds: float = Field(default=DEFAULT_CONNECT_TIMEOUT_SECONDS, gt=0)
    max_retries: int = Field(default=DEFAULT_MAX_RETRIES, ge=0, le=20)
    tool_calls: ToolCallMode | None = None
    # "compact": short tool descriptions and only required parameters, for small models;
    # unset: "compact" for local servers and in-process models, else "full" (see
    # subagents.models.server.default_description_profile and subagents.runtime.tool_menu)
    tool_descriptions: Literal["full", "compact"] | None = None
    # llamacpp: the context window to allocate, in tokens (subagents.models.llamacpp)
    context_tokens: int | None = Field(default=None, gt=0, le=1_048_576)
