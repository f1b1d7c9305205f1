"""Domain filters (WebSearch's ``allowed_domains`` / ``blocked_domains``): a domain covers
itself and its subdomains, and a leading ``www.`` is ignored on both sides."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["DomainFilterError", "host_of", "normalise_domain", "within"]

_DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,62})\.)*[a-z0-9_]([a-z0-9_-]{0,62})$")


class DomainFilterError(ValueError):
    """A value that is not a domain; the message says which."""


def normalise_domain(value: str) -> str:
    """``value`` as a bare lower-case domain; a URL is reduced to its host
    (``https://docs.python.org/3/`` -> ``docs.python.org``), ``*.`` and ``www.`` are dropped."""
    text = value.strip().lower()
    if "://" in text:
        text = urlsplit(text).hostname or ""
    text = text.split("/", 1)[0].rstrip(".")
    for prefix in ("*.", "www."):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    if not _DOMAIN.match(text):
        raise DomainFilterError(f"{value!r} is not a domain (write e.g. 'docs.python.org')")
    return text


def host_of(url: str) -> str | None:
    """The host of ``url`` in the form :func:`within` compares (``None``: no host)."""
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return None
    if not host:
        return None
    host = host.rstrip(".")
    return host[4:] if host.startswith("www.") else host


def within(host: str, domain: str) -> bool:
    """Whether ``host`` (from :func:`host_of`) is ``domain`` or one of its subdomains."""
    return host == domain or host.endswith("." + domain)
