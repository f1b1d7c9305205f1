"""One WebFetch download: the URL checked, redirects followed one checked hop at a time, the
body streamed up to a byte cap, all within one deadline.

Redirects are followed while they stay on the same host (any scheme or port), at most
:data:`MAX_REDIRECTS` of them. A redirect to another host, ``www.`` variants included, is not
followed: the model is told where it points and fetches it with a call of its own, so that
permission rules and approvals about domains (``WebFetch(domain:...)``, which name exact hosts)
see every host that is read. A redirect to an address WebFetch may not reach is refused
outright.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from subagents.tools.web.addresses import AddressPolicy, BlockedAddressError, normalise_host
from subagents.tools.web.client import check_host, guarded_client, resolve_host

if TYPE_CHECKING:
    import httpx2

    from subagents.tools.web.settings import WebSettings

__all__ = [
    "MAX_REDIRECTS",
    "MAX_URL_CHARS",
    "UNTYPED",
    "FetchError",
    "OffsiteRedirect",
    "Page",
    "check_url",
    "fetch_page",
    "is_binary_type",
    "same_site",
]

MAX_REDIRECTS = 5
MAX_URL_CHARS = 2_000
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class FetchError(Exception):
    """Why a fetch failed, worded for the model (it becomes the tool error)."""


@dataclass(slots=True)
class Page:
    """A fetched response (any status; the caller decides what a 404 means)."""

    url: str
    """The URL finally read (after same-site redirects)."""
    status: int
    reason: str
    media_type: str
    """The Content-Type without parameters, lower case (``""`` when the server sent none)."""
    charset: str | None
    body: bytes
    cut: bool
    """The body went past ``max_bytes``: ``body`` holds its first ``max_bytes`` bytes."""
    redirects: list[str] = field(default_factory=list)
    """The URLs redirected from, in order."""


@dataclass(slots=True)
class OffsiteRedirect:
    """The last response redirected to another site; nothing was fetched from there."""

    url: str
    status: int
    location: str
    redirects: list[str] = field(default_factory=list)


def check_url(raw: str) -> httpx2.URL:
    """``raw`` as an absolute http(s) URL without credentials, or FetchError saying why not."""
    import httpx2

    text = raw.strip()
    if not text:
        raise FetchError("The url is empty; give a full URL such as https://example.com/page.")
    if len(text) > MAX_URL_CHARS:
        raise FetchError(
            f"The url is {len(text)} characters long; WebFetch takes at most {MAX_URL_CHARS}."
        )
    try:
        url = httpx2.URL(text)
    except (httpx2.InvalidURL, ValueError, TypeError) as exc:
        raise FetchError(f"{text!r} is not a valid URL ({exc}).") from None
    if url.scheme not in ("http", "https"):
        if "://" not in text:
            raise FetchError(
                f"{text!r} is not an absolute URL; give it with its scheme, e.g. https://{text}."
            )
        raise FetchError(
            f"{text!r} uses {url.scheme}:, and WebFetch reads only http:// and https:// URLs."
        )
    if not url.host:
        raise FetchError(f"{text!r} names no host; give a URL such as https://example.com/.")
    if url.userinfo:
        raise FetchError(
            "The url carries a user name or password; WebFetch does not send credentials. "
            "Give the URL without the 'user:password@' part."
        )
    return url


def same_site(a: httpx2.URL, b: httpx2.URL) -> bool:
    """Whether a redirect from ``a`` to ``b`` stays on one host."""
    return normalise_host(a.host) == normalise_host(b.host)


async def fetch_page(raw_url: str, settings: WebSettings) -> Page | OffsiteRedirect:
    """GET ``raw_url`` (see the module docstring); FetchError for every failure."""
    import httpx2

    url = check_url(raw_url)
    policy = AddressPolicy.from_entries(settings.allow_private_addresses)
    try:
        async with asyncio.timeout(settings.timeout):
            async with guarded_client(policy, settings.timeout, settings.proxy) as client:
                return await _follow(client, url, policy, settings)
    except TimeoutError:
        raise FetchError(
            f"Fetching {url} took longer than {settings.timeout:g} s and was stopped. Try "
            "again later or another source ([web] timeout in .subagents/config.toml sets "
            "the limit)."
        ) from None
    except BlockedAddressError as exc:
        raise FetchError(str(exc)) from None
    except httpx2.TooManyRedirects as exc:  # pragma: no cover - we follow redirects ourselves
        raise FetchError(str(exc)) from None
    except httpx2.HTTPError as exc:
        raise FetchError(f"Could not fetch {url}: {_describe(exc)}.") from None


async def _follow(
    client: httpx2.AsyncClient, url: httpx2.URL, policy: AddressPolicy, settings: WebSettings
) -> Page | OffsiteRedirect:
    redirects: list[str] = []
    while True:
        if settings.proxy is not None:
            await _checked_before_the_proxy(url, policy)
        async with client.stream("GET", url) as response:
            location = response.headers.get("location")
            if response.status_code not in _REDIRECT_STATUSES or not location:
                return await _read(response, settings, redirects)
            target = _redirect_target(url, location)
        redirects.append(str(url))
        if not same_site(url, target):
            await _refuse_blocked(target, policy)
            return OffsiteRedirect(str(url), response.status_code, str(target), redirects)
        if len(redirects) > MAX_REDIRECTS:
            raise FetchError(
                f"{redirects[0]} redirected more than {MAX_REDIRECTS} times (the last hop "
                f"pointed to {target}); it is probably a redirect loop. Give up on this URL "
                "or fetch the last one directly."
            )
        url = target


async def _checked_before_the_proxy(url: httpx2.URL, policy: AddressPolicy) -> None:
    """Through a proxy nothing checks where it connects: check the host here first."""
    try:
        await check_host(url.host, url.port or (443 if url.scheme == "https" else 80), policy)
    except OSError as exc:
        raise FetchError(f"Could not fetch {url}: cannot resolve {url.host} ({exc}).") from None


def _redirect_target(url: httpx2.URL, location: str) -> httpx2.URL:
    try:
        target = url.join(location.strip())
    except Exception as exc:  # httpx2 raises several types for a bad Location
        raise FetchError(
            f"{url} redirected to {location[:200]!r}, which is not a valid URL ({exc})."
        ) from None
    if len(str(target)) > MAX_URL_CHARS:
        raise FetchError(f"{url} redirected to a URL longer than {MAX_URL_CHARS} characters.")
    try:
        return check_url(str(target))
    except FetchError as exc:
        raise FetchError(f"{url} redirected to {str(target)[:200]!r}: {exc}") from None


async def _refuse_blocked(target: httpx2.URL, policy: AddressPolicy) -> None:
    """FetchError if an off-site redirect points at an address WebFetch may not reach."""
    try:
        addresses = await resolve_host(target.host, target.port or 443)
    except OSError:
        return  # the model's own call for it will say it does not resolve
    try:
        policy.check(target.host, addresses)
    except BlockedAddressError as exc:
        raise FetchError(f"The page redirected to {target}, which was refused: {exc}") from None


async def _read(response: httpx2.Response, settings: WebSettings, redirects: list[str]) -> Page:
    media_type, charset = _content_type(response.headers.get("content-type", ""))
    body = bytearray()
    cut = False
    if not is_binary_type(media_type):
        async for chunk in response.aiter_bytes():
            room = settings.max_bytes - len(body)
            if len(chunk) > room:
                body += chunk[:room]
                cut = True
                break
            body += chunk
    return Page(
        url=str(response.url),
        status=response.status_code,
        reason=response.reason_phrase,
        media_type=media_type,
        charset=charset,
        body=bytes(body),
        cut=cut,
        redirects=redirects,
    )


def _content_type(header: str) -> tuple[str, str | None]:
    media_type, _, rest = header.partition(";")
    charset: str | None = None
    for parameter in rest.split(";"):
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'")
    return media_type.strip().lower(), charset


_TEXT_APPLICATION_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/xhtml+xml",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "application/graphql",
    }
)


# Types that say nothing about the content: the bytes are looked at, as for no type at all
# (object stores serve Markdown and source files as application/octet-stream).
UNTYPED = frozenset({"", "application/octet-stream", "binary/octet-stream", "application/unknown"})


def is_binary_type(media_type: str) -> bool:
    """Whether a Content-Type says the body is not text (:data:`UNTYPED`: not said)."""
    if media_type in UNTYPED or media_type.startswith("text/"):
        return False
    if media_type in _TEXT_APPLICATION_TYPES:
        return False
    return not media_type.endswith(("+json", "+xml", "+yaml"))


def _describe(exc: httpx2.HTTPError) -> str:
    import httpx2

    if isinstance(exc, httpx2.ConnectError):
        return f"could not connect ({exc or 'connection refused'})"
    if isinstance(exc, httpx2.TimeoutException):
        return "the server did not answer in time"
    if isinstance(exc, httpx2.RemoteProtocolError):
        return f"the server broke the HTTP protocol ({exc})"
    if isinstance(exc, httpx2.DecodingError):
        return f"the body could not be decoded ({exc})"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
