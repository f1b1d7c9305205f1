"""The HTTP client WebFetch uses: httpx2 whose every connection passes the address policy.

The check sits in the network backend, where host names become sockets: each new connection
(the first request, each redirect hop, a reconnect) resolves the host, checks every address
(:class:`~subagents.tools.web.addresses.AddressPolicy`) and connects to a checked address. TLS
still verifies the certificate against the host name. Proxies from the environment are not
used: a proxy would connect for us, past the check. With ``[web] proxy`` set, the client goes
through that proxy and the caller checks each host before each request
(:func:`check_host`); the proxy resolves the name again, which a person accepted by naming
it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from subagents.tools.web.addresses import AddressPolicy, BlockedAddressError, IPAddress

if TYPE_CHECKING:
    import httpcore2
    import httpx2

__all__ = ["check_host", "guarded_client", "resolve_host"]

USER_AGENT = "subagents-webfetch/1"


async def resolve_host(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to (an IP literal: itself); OSError when none."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return [ipaddress.ip_address(bare)]
    except ValueError:
        pass
    infos = await asyncio.get_running_loop().getaddrinfo(
        bare, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    found: list[IPAddress] = []
    for _, _, _, _, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    if not found:
        raise OSError(f"{bare} has no IPv4 or IPv6 address")
    return found


def _guarded_backend(policy: AddressPolicy) -> httpcore2.AsyncNetworkBackend:
    import httpcore2

    class GuardedBackend(httpcore2.AsyncNetworkBackend):
        def __init__(self) -> None:
            self._inner = httpcore2.AnyIOBackend()

        async def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,  # noqa: ASYNC109 - httpcore's signature
            local_address: str | None = None,
            socket_options: Iterable[Any] | None = None,
        ) -> httpcore2.AsyncNetworkStream:
            try:
                addresses = await resolve_host(host, port)
            except OSError as exc:
                raise httpcore2.ConnectError(
                    f"cannot resolve {host}: {exc.strerror or exc}"
                ) from exc
            error: Exception | None = None
            for address in policy.check(host, addresses):
                try:
                    return await self._inner.connect_tcp(
                        str(address),
                        port,
                        timeout=timeout,
                        local_address=local_address,
                        socket_options=socket_options,
                    )
                except httpcore2.ConnectError as exc:
                    error = exc
            assert error is not None
            raise error

        async def connect_unix_socket(
            self,
            path: str,
            timeout: float | None = None,  # noqa: ASYNC109 - httpcore's signature
            socket_options: Iterable[Any] | None = None,
        ) -> httpcore2.AsyncNetworkStream:
            raise BlockedAddressError("WebFetch does not connect to Unix sockets.")

        async def sleep(self, seconds: float) -> None:
            await self._inner.sleep(seconds)

    return GuardedBackend()


async def check_host(host: str, port: int, policy: AddressPolicy) -> None:
    """Resolve ``host`` and check its addresses (BlockedAddressError); OSError when it does
    not resolve."""
    policy.check(host, await resolve_host(host, port))


def guarded_client(
    policy: AddressPolicy,
    timeout: float,
    proxy: str | None = None,
) -> httpx2.AsyncClient:
    """An AsyncClient that reaches only what ``policy`` allows (through ``proxy``: only when
    the caller uses :func:`check_host` first), follows no redirect by itself (the caller checks
    each hop) and ignores proxy settings of the environment."""
    import httpcore2
    import httpx2

    if proxy is not None:
        return httpx2.AsyncClient(
            proxy=proxy,
            timeout=httpx2.Timeout(timeout),
            follow_redirects=False,
            trust_env=False,
            headers={"User-Agent": USER_AGENT, "Accept": _ACCEPT},
        )
    transport = httpx2.AsyncHTTPTransport(trust_env=False)
    # httpx2 builds its connection pool without a way to pass a network backend: replace it
    # with one that has ours, keeping the transport's TLS context.
    pool = transport._pool
    transport._pool = httpcore2.AsyncConnectionPool(
        ssl_context=pool._ssl_context,
        network_backend=_guarded_backend(policy),
        max_connections=10,
    )
    return httpx2.AsyncClient(
        transport=transport,
        timeout=httpx2.Timeout(timeout),
        follow_redirects=False,
        trust_env=False,
        headers={"User-Agent": USER_AGENT, "Accept": _ACCEPT},
    )


_ACCEPT = "text/html, text/markdown, text/plain;q=0.9, application/xhtml+xml, */*;q=0.5"
