"""Per-provider settings, as read from ``[providers.NAME]`` in config.toml."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr

__all__ = ["ProviderSettings"]


class ProviderSettings(BaseModel):
    """How to reach one provider.

    The API key is looked up, in order, from ``api_key`` (discouraged: it sits in a file), the
    environment variable named by ``api_key_env``, then the provider's usual variable
    (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``).
    """

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None
    api_key: SecretStr | None = None
    api_key_env: str | None = None
    timeout_seconds: float = Field(default=600.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=20)
