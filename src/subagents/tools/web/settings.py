"""The ``[web]`` table of config.toml: what WebFetch may reach and how WebSearch searches.

::

    [web]
    allow_private_addresses = ["127.0.0.1", "10.0.0.0/8", "intranet.example"]
    timeout = 30            # seconds for one fetch or search, redirects included
    max_bytes = 5242880     # of a page's body; the rest is not downloaded
    max_chars = 40000       # of the text handed to the model
    # proxy = "http://proxy.internal:3128"  # WebFetch and WebSearch through this HTTP proxy

    search_backend = "brave"              # or "tavily", "searxng"
    search_api_key_env = "BRAVE_API_KEY"  # the variable holding the key (the default shown)
    # search_url = "https://api.search.brave.com/res/v1/web/search"   # the default per backend

Proxies from the environment (``HTTPS_PROXY``...) are not used: a proxy connects on our behalf,
so WebFetch checks each host's addresses itself before asking the proxy, and only a proxy a
person named in ``proxy`` is trusted with that.

The key itself is never written in config.toml: it is read from the variable at each search,
kept out of the environment of Bash and hooks, and redacted from traces and output (see
:mod:`subagents.secrets`).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "DEFAULT_SEARCH_KEY_ENV",
    "DEFAULT_SEARCH_URL",
    "SEARCH_BACKENDS",
    "SearchBackendName",
    "WebSettings",
]

SearchBackendName = Literal["brave", "tavily", "searxng"]
SEARCH_BACKENDS: tuple[SearchBackendName, ...] = ("brave", "tavily", "searxng")

DEFAULT_SEARCH_URL: dict[SearchBackendName, str] = {
    "brave": "https://api.search.brave.com/res/v1/web/search",
    "tavily": "https://api.tavily.com/search",
}
"""SearXNG has no public default: it is a server you run, so ``search_url`` names it."""

DEFAULT_SEARCH_KEY_ENV: dict[SearchBackendName, str] = {
    "brave": "BRAVE_API_KEY",
    "tavily": "TAVILY_API_KEY",
}
"""SearXNG needs no key unless ``search_api_key_env`` names one (sent as a bearer token)."""

_LABEL = r"[a-z0-9_][a-z0-9_-]{0,62}"
_HOST_NAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*$")
_VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class WebSettings(BaseModel):
    """The ``[web]`` table (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow_private_addresses: list[str] = Field(default_factory=list)
    """Hosts, addresses and networks (CIDR) WebFetch may reach although they are not public."""
    timeout: float = Field(default=30.0, gt=0, le=600)
    max_bytes: int = Field(default=5 * 1024 * 1024, ge=1024, le=100 * 1024 * 1024)
    max_chars: int = Field(default=40_000, ge=1_000, le=1_000_000)
    search_backend: SearchBackendName | None = None
    search_url: str | None = None
    search_api_key_env: str | None = None
    max_results: int = Field(default=10, ge=1, le=20)
    proxy: str | None = None

    @field_validator("allow_private_addresses")
    @classmethod
    def _hosts_or_networks(cls, entries: list[str]) -> list[str]:
        cleaned: list[str] = []
        for entry in entries:
            value = entry.strip().lower().rstrip(".")
            if value.startswith("[") and value.endswith("]"):
                value = value[1:-1]
            try:
                ipaddress.ip_network(value, strict=False)
            except ValueError:
                if not _HOST_NAME.match(value):
                    raise ValueError(
                        f"{entry!r} is neither a host name, an IP address nor a network "
                        "(write e.g. '127.0.0.1', '10.0.0.0/8', '::1' or 'intranet.example')"
                    ) from None
            cleaned.append(value)
        return cleaned

    @field_validator("search_url", "proxy")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        if not re.match(r"^https?://[^\s/?#]+", url):
            raise ValueError(f"{url!r} is not an http:// or https:// URL")
        return url

    @field_validator("search_api_key_env")
    @classmethod
    def _variable_name(cls, name: str | None) -> str | None:
        if name is not None and not _VARIABLE_NAME.match(name):
            raise ValueError(
                f"{name!r} is not an environment variable name; name the variable that holds "
                "the key (e.g. 'BRAVE_API_KEY'), not the key itself"
            )
        return name

    @model_validator(mode="after")
    def _searxng_needs_its_url(self) -> WebSettings:
        if self.search_backend == "searxng" and self.search_url is None:
            raise ValueError(
                "search_backend = 'searxng' needs search_url, the address of your SearXNG "
                "server's search endpoint (e.g. 'http://127.0.0.1:8888/search')"
            )
        return self

    def search_key_variable(self) -> str | None:
        """The variable the search backend's key is read from (``None``: no key is used)."""
        if self.search_api_key_env is not None:
            return self.search_api_key_env
        if self.search_backend is None:
            return None
        return DEFAULT_SEARCH_KEY_ENV.get(self.search_backend)

    def search_endpoint(self) -> str | None:
        """The URL searches go to (``None``: the backend has no default and none is set)."""
        if self.search_url is not None:
            return self.search_url
        if self.search_backend is None:
            return None
        return DEFAULT_SEARCH_URL.get(self.search_backend)
