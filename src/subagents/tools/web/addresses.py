"""Which network addresses WebFetch may connect to.

A model choosing URLs must not reach what only this machine can: its loopback services, the
private network it sits in, the cloud's metadata service (169.254.169.254). So every address a
host name resolves to is checked, at the moment of connecting, for every request including each
redirect hop, and the connection goes to the address that was checked (a DNS answer that
changes between check and connect cannot slip another one in). Only globally routable unicast
addresses pass, unless ``[web] allow_private_addresses`` names the host, the address or a
network holding it. IPv4 addresses inside IPv6 ones (``::ffff:127.0.0.1``, 6to4, Teredo) are
checked as the IPv4 address they carry.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["AddressPolicy", "BlockedAddressError", "IPAddress"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class BlockedAddressError(Exception):
    """A host resolved to an address WebFetch may not reach; the message says which and why."""


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    """The public internet, plus the hosts and networks named in ``allowed``."""

    allowed_hosts: frozenset[str] = frozenset()
    allowed_networks: tuple[_Network, ...] = ()

    @classmethod
    def from_entries(cls, entries: Iterable[str]) -> AddressPolicy:
        """From ``[web] allow_private_addresses`` (already validated: hosts, IPs, CIDRs)."""
        hosts: set[str] = set()
        networks: list[_Network] = []
        for entry in entries:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                hosts.add(normalise_host(entry))
        return cls(frozenset(hosts), tuple(networks))

    def check(self, host: str, addresses: Iterable[IPAddress]) -> list[IPAddress]:
        """``addresses`` (what ``host`` resolved to), or BlockedAddressError if any is refused.

        One refused address refuses the host: connecting to "the public one" of a name that also
        points inside would let whoever controls its DNS choose.
        """
        checked = list(addresses)
        if normalise_host(host) in self.allowed_hosts:
            return checked
        for address in checked:
            why = self.refusal(address)
            if why is not None:
                shown = host if _same_address(host, address) else f"{host} ({address})"
                raise BlockedAddressError(
                    f"{shown} is {why}, and WebFetch only reaches public addresses. A person "
                    "can allow it in [web] allow_private_addresses of .subagents/config.toml."
                )
        return checked

    def refusal(self, address: IPAddress) -> str | None:
        """Why ``address`` may not be reached (``None``: it may)."""
        mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
        if self._allows(address) or (mapped is not None and self._allows(mapped)):
            return None
        for candidate in reversed(_with_embedded(address)):  # the IPv4 meaning first
            kind = _non_public_kind(candidate)
            if kind is not None:
                return kind
        return None

    def _allows(self, address: IPAddress) -> bool:
        return any(
            address.version == network.version and address in network
            for network in self.allowed_networks
        )


def _same_address(host: str, address: IPAddress) -> bool:
    try:
        return ipaddress.ip_address(normalise_host(host)) == address
    except ValueError:
        return False


def normalise_host(host: str) -> str:
    """Lower case, no trailing dot, no brackets around an IPv6 address."""
    value = host.strip().lower().rstrip(".")
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    return value


def _with_embedded(address: IPAddress) -> list[IPAddress]:
    """``address`` and any IPv4 address it carries."""
    found: list[IPAddress] = [address]
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            found.append(address.ipv4_mapped)
        if address.sixtofour is not None:
            found.append(address.sixtofour)
        if address.teredo is not None:
            found.extend(address.teredo)
        if address in _NAT64:
            found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _non_public_kind(address: IPAddress) -> str | None:
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address (cloud metadata services live there)"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private:
        return "a private network address"
    if address.is_reserved:
        return "a reserved address"
    if not address.is_global:
        return "not a public address"
    return None
