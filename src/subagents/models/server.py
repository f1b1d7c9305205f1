"""Where a provider's requests go, and what kind of server that is: the one decision behind a
provider's key rule, its default ``tool_calls`` mode, the token-limit parameter an
OpenAI-compatible request carries, and the default tool description profile.

The base URL is, in order: ``[providers.NAME] base_url``; the variable the provider's SDK
reads when it is given none (``OPENAI_BASE_URL`` for ``openai``, ``ANTHROPIC_BASE_URL`` for
``anthropic``), so that a local server set up as its guide says is taken for what it is;
then the provider's default (Ollama's local URL, the SDK's own API). Config wins over the
variable, as an explicit argument wins over it in the SDKs.

Its kind follows from the URL's host:

- ``hosted``: the provider's own API (no base URL, or a host that is the provider's API host
  or under it: ``api.openai.com``, ``api.anthropic.com``). A key is needed; models call tools
  natively; tool descriptions are full.
- ``local``: this machine or a private network (``localhost``, a loopback, private (RFC 1918,
  IPv6 ULA) or link-local address, the unspecified address, a name under ``.local``,
  ``.localhost`` or ``.internal`` such as ``host.docker.internal``). No key is needed (the
  usual one is sent if set); calls written as text are read too (``auto``); small models
  read compact tool descriptions better.
- ``remote``: any other server (OpenRouter, a vLLM on a public host, Azure, an unreadable
  URL): no key needed, ``auto``, full descriptions.
- ``in-process``: a GGUF file run by llama.cpp in this process (``llamacpp:`` without a
  ``base_url``): no server at all.

Nothing here imports an SDK, and classifying never raises, whatever the URL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from subagents.models.settings import ProviderSettings, ToolCallMode

__all__ = [
    "BASE_URL_VARIABLES",
    "LOCAL_MAX_OUTPUT_TOKENS",
    "OLLAMA_DEFAULT_BASE_URL",
    "DescriptionProfile",
    "EndpointKind",
    "Server",
    "default_description_profile",
    "display_url",
    "endpoint_kind",
    "find_server",
    "is_local_host",
    "with_base_url",
]

EndpointKind = Literal["hosted", "local", "remote", "in-process"]
DescriptionProfile = Literal["full", "compact"]

BASE_URL_VARIABLES: dict[str, str] = {
    "openai": "OPENAI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
}
"""The variable each provider's SDK takes its base URL from when it is given none."""

OLLAMA_DEFAULT_BASE_URL = "http://localhost:11434/v1"
LOCAL_MAX_OUTPUT_TOKENS = 4096
"""``max_tokens`` of a request to a local server that sets none (see
:attr:`Server.default_max_tokens`)."""

LOCAL_TEMPERATURE = 0.2
"""``temperature`` of a request to a local server that sets none (see
:attr:`Server.default_temperature`)."""

_DEFAULT_BASE_URLS: dict[str, str] = {"ollama": OLLAMA_DEFAULT_BASE_URL}
"""Providers whose default server is not their own hosted API."""
_OWN_API_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
"""Where the SDK sends requests when it has no base URL (shown, never passed)."""
_OWN_API_HOSTS: dict[str, str] = {"openai": "api.openai.com", "anthropic": "api.anthropic.com"}
_IN_PROCESS = frozenset({"llamacpp"})
_LOCAL_SUFFIXES = (".local", ".localhost", ".internal")
_PRIVATE_NETWORKS = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")


@dataclass(frozen=True, slots=True)
class Server:
    """Where the models of ``provider`` send their requests.

    ``url`` is the base URL (``None``: the SDK's default, the provider's own API, or no
    server for ``in-process``); ``source`` where it was set (``[providers.NAME] base_url``,
    ``OPENAI_BASE_URL``; ``None``: the provider's default).
    """

    provider: str
    url: str | None
    source: str | None
    kind: EndpointKind

    @property
    def needs_key(self) -> bool:
        """Only the provider's own API refuses a request without a key."""
        return self.kind == "hosted"

    @property
    def default_tool_calls(self) -> ToolCallMode:
        """The ``tool_calls`` mode when ``[providers.NAME] tool_calls`` is unset: the hosted
        APIs' models always call tools natively (and may quote a call's text form in an
        answer); small models in this process, or on a local Chat Completions server, answer
        in turns constrained to a call or a reply; other servers' models often write calls
        as text.

        A local server's small model, offered its tools through its own chat template
        (Qwen2.5-Coder-1.5B behind llama-cpp-python's server), read a file and then made the
        same call again, whatever the prompt said, until the loop guard stopped it: 0 of 12
        tasks (``make eval``); in constrained turns it answers from what it read."""
        if self.kind == "hosted":
            return "native"
        if self.kind == "in-process" or (self.kind == "local" and self.provider != "anthropic"):
            return "schema"
        return "auto"

    @property
    def default_description_profile(self) -> DescriptionProfile:
        """The tool description profile when ``tool_descriptions`` is unset: compact for the
        small models that local servers and this process run, and for llama.cpp's GGUF
        models wherever their server is."""
        small = self.kind in ("local", "in-process") or self.provider in _IN_PROCESS
        return "compact" if small else "full"

    @property
    def default_timeout_seconds(self) -> float:
        """How long its models may stay silent when ``timeout_seconds`` is unset: longer for
        a model on this machine or a private network, which reads slowly on a CPU."""
        from subagents.models.settings import DEFAULT_TIMEOUT_SECONDS, LOCAL_TIMEOUT_SECONDS

        small = self.kind in ("local", "in-process")
        return LOCAL_TIMEOUT_SECONDS if small else DEFAULT_TIMEOUT_SECONDS

    @property
    def default_max_tokens(self) -> int | None:
        """The answer length a request asks for when it sets none: a local server's default
        is to write until its context is full (minutes on a CPU, for an answer caught in a
        loop); the others' own defaults are kept."""
        return LOCAL_MAX_OUTPUT_TOKENS if self.kind == "local" else None

    @property
    def default_temperature(self) -> float | None:
        """The temperature a request asks for when it sets none: a local server samples at
        its own default, 0.8 for llama-cpp-python's, Ollama's and LM Studio's, at which a
        1.5B model wrote its calls in five formats of its own making (``make eval``); at
        0.2, what llama.cpp in process uses, it kept to the one its template asks for. The
        others' own defaults are kept."""
        return LOCAL_TEMPERATURE if self.kind == "local" else None

    @property
    def shown_url(self) -> str | None:
        """The URL for people: without credentials, query or fragment (see
        :func:`display_url`); the SDK's default when none is set."""
        url = self.url if self.url is not None else _OWN_API_URLS.get(self.provider)
        if url is None:
            return None
        return display_url(url) or "(an empty URL)"


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


def find_server(provider: str, base_url: str | None, env: Mapping[str, str]) -> Server:
    """The server of ``provider`` (a ``[providers.NAME]`` name) whose configured
    ``base_url`` is ``base_url``, in the environment ``env`` (see the module docstring)."""
    name = provider.strip().lower()
    if base_url is not None:
        return Server(name, base_url, f"[providers.{name}] base_url", endpoint_kind(name, base_url))
    variable = BASE_URL_VARIABLES.get(name)
    value = (env.get(variable) or "").strip() if variable is not None else ""
    if value:
        return Server(name, value, variable, endpoint_kind(name, value))
    default = _DEFAULT_BASE_URLS.get(name)
    return Server(name, default, None, endpoint_kind(name, default))


def with_base_url(
    provider: str, settings: ProviderSettings, env: Mapping[str, str]
) -> ProviderSettings:
    """``settings`` as a provider is to see them: ``base_url`` taken from the SDK's variable
    when config leaves it unset (the model is then built with it, so that what it sends and
    where it sends it come from one decision)."""
    if settings.base_url is not None:
        return settings
    server = find_server(provider, None, env)
    if server.source is None:
        return settings
    return settings.model_copy(update={"base_url": server.url})


def default_description_profile(
    provider: str, settings: ProviderSettings | None, env: Mapping[str, str]
) -> DescriptionProfile:
    """How tools are described to the models of ``provider`` when ``[providers.NAME]
    tool_descriptions`` is unset (the setting itself is the caller's to read first)."""
    base_url = settings.base_url if settings is not None else None
    return find_server(provider, base_url, env).default_description_profile


def endpoint_kind(provider: str, url: str | None) -> EndpointKind:
    """The kind of the server of ``provider`` at ``url`` (``None``: the provider's default:
    Ollama's local URL, in-process for ``llamacpp``, else its own API). A URL whose host
    cannot be read is ``remote``."""
    name = provider.strip().lower()
    url = url if url is not None else _DEFAULT_BASE_URLS.get(name)
    if url is None:
        return "in-process" if name in _IN_PROCESS else "hosted"
    host = _host(url)
    if host is None:
        return "remote"
    own = _OWN_API_HOSTS.get(name)
    if own is not None and (host == own or host.endswith(f".{own}")):
        return "hosted"
    return "local" if is_local_host(host) else "remote"


def is_local_host(host: str) -> bool:
    """Whether ``host`` (a name or an IP address, IPv6 with or without brackets) is this
    machine or on a private network."""
    name = host.strip().removeprefix("[").removesuffix("]").rstrip(".").lower()
    if name == "localhost" or name.endswith(_LOCAL_SUFFIXES):
        return True
    import ipaddress

    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback or address.is_link_local or address.is_unspecified:
        return True
    return any(
        address in network
        for network in map(ipaddress.ip_network, _PRIVATE_NETWORKS)
        if network.version == address.version
    )


def _host(url: str) -> str | None:
    """The host of ``url`` lower-cased (``None`` when there is none or it cannot be read); a
    URL written without a scheme (``localhost:8080/v1``) is read as one that has it."""
    text = url.strip()
    if "://" not in text:
        text = f"//{text}"
    try:
        host = urlsplit(text).hostname
    except ValueError:
        return None
    return (host or "").rstrip(".") or None
