"""WebSearch's backends: one request to a search API, its answer as a list of results.

- ``brave``: the Brave Search API (``GET .../res/v1/web/search?q=...&count=N``, key in the
  ``X-Subscription-Token`` header, results in ``web.results[]`` as ``title``, ``url``,
  ``description``). Domain filters go into the query as ``site:`` / ``-site:`` operators.
- ``tavily``: the Tavily API (``POST .../search`` with JSON ``query``, ``max_results``,
  ``include_domains``, ``exclude_domains``; key as a bearer token; results in ``results[]``
  as ``title``, ``url``, ``content``).
- ``searxng``: a SearXNG server of your own (``GET {search_url}?q=...&format=json``, its JSON
  format enabled; results in ``results[]`` as ``title``, ``url``, ``content``); a key is sent
  as a bearer token only if ``search_api_key_env`` names one.

Whatever the API did with the filters, the results are filtered again here. The URL comes from
config, so it is not subject to WebFetch's address policy (a SearXNG on localhost is fine).
Requests go through ``[web] proxy`` when it is set, else through the environment's proxy
settings, as any HTTP client's would.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from subagents.tools.web.domains import host_of, within

if TYPE_CHECKING:
    import httpx2

    from subagents.tools.web.settings import SearchBackendName, WebSettings

__all__ = [
    "BACKEND_TITLES",
    "MAX_QUERY_CHARS",
    "SearchError",
    "SearchResult",
    "SearchResults",
    "not_configured_message",
    "parse_answer",
    "run_search",
]

MAX_QUERY_CHARS = 400
MAX_ANSWER_BYTES = 2 * 1024 * 1024
_TITLE_CHARS = 300
_SNIPPET_CHARS = 600
_ERROR_EXCERPT_CHARS = 200
_TAGS = re.compile(r"<[^>]{0,200}>")

BACKEND_TITLES: dict[str, str] = {"brave": "Brave Search", "tavily": "Tavily", "searxng": "SearXNG"}


class SearchError(Exception):
    """Why a search failed, worded for the model (it becomes the tool error)."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    title: str
    url: str
    snippet: str


@dataclass(frozen=True, slots=True)
class SearchResults:
    results: list[SearchResult]
    filtered_out: int
    """Results the API returned from domains the filters exclude (left out here)."""
    not_shown: int = 0
    """Results beyond ``[web] max_results`` (the API returned more than asked for)."""


def not_configured_message() -> str:
    return (
        "WebSearch is not configured here, so no search was made. A person can enable it in "
        ".subagents/config.toml (or ~/.subagents/config.toml):\n"
        "[web]\n"
        'search_backend = "brave"   # Brave Search API; or "tavily", or "searxng" with '
        "search_url = your server\n"
        "and put the API key in the environment variable BRAVE_API_KEY (TAVILY_API_KEY for "
        "tavily; [web] search_api_key_env names another). Until then, work without searching: "
        "use what you know, or WebFetch on URLs you know."
    )


async def run_search(
    settings: WebSettings,
    query: str,
    allowed: Sequence[str],
    blocked: Sequence[str],
    environ: Mapping[str, str] | None = None,
) -> SearchResults:
    """Search with the configured backend; SearchError for every failure (not configured, no
    key, the API down or refusing)."""
    import httpx2

    backend = settings.search_backend
    endpoint = settings.search_endpoint()
    if backend is None or endpoint is None:
        raise SearchError(not_configured_message())
    key = _api_key(settings, backend, os.environ if environ is None else environ)
    request = _build_request(backend, endpoint, key, query, allowed, blocked, settings)
    title = BACKEND_TITLES[backend]
    try:
        timeout = httpx2.Timeout(settings.timeout)
        async with httpx2.AsyncClient(timeout=timeout, proxy=settings.proxy) as client:
            response = await client.send(request, stream=True)
            try:
                body = await _read_capped(response)
            finally:
                await response.aclose()
    except httpx2.TimeoutException:
        raise SearchError(
            f"{title} did not answer within {settings.timeout:g} s. Try again later, or do "
            "without searching."
        ) from None
    except httpx2.HTTPError as exc:
        raise SearchError(
            f"Could not reach {title} at {_shown_endpoint(endpoint)} ({type(exc).__name__}). "
            "Try again later, or do without searching."
        ) from None
    if response.status_code != 200:
        raise SearchError(_status_message(title, response.status_code, body, key, settings))
    results = parse_answer(backend, body, title)
    return _filtered(results, allowed, blocked, settings.max_results)


def _api_key(settings: WebSettings, backend: SearchBackendName, env: Mapping[str, str]) -> str:
    variable = settings.search_key_variable()
    if variable is None:
        return ""
    key = env.get(variable, "").strip()
    if not key:
        raise SearchError(
            f"WebSearch uses {BACKEND_TITLES[backend]} ([web] search_backend = {backend!r}), "
            f"whose API key is read from the environment variable {variable}, which is not set "
            f"here. A person must set {variable} (or name another variable in [web] "
            "search_api_key_env of .subagents/config.toml). Until then, work without searching."
        )
    return key


def _build_request(
    backend: SearchBackendName,
    endpoint: str,
    key: str,
    query: str,
    allowed: Sequence[str],
    blocked: Sequence[str],
    settings: WebSettings,
) -> httpx2.Request:
    import httpx2

    headers = {"Accept": "application/json"}
    if backend == "brave":
        headers["X-Subscription-Token"] = key
        params: dict[str, str | int] = {
            "q": _with_site_operators(query, allowed, blocked),
            "count": settings.max_results,
        }
        return httpx2.Request("GET", endpoint, params=params, headers=headers)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    if backend == "tavily":
        payload: dict[str, Any] = {"query": query, "max_results": settings.max_results}
        if allowed:
            payload["include_domains"] = list(allowed)
        if blocked:
            payload["exclude_domains"] = list(blocked)
        return httpx2.Request("POST", endpoint, json=payload, headers=headers)
    return httpx2.Request("GET", endpoint, params={"q": query, "format": "json"}, headers=headers)


def _with_site_operators(query: str, allowed: Sequence[str], blocked: Sequence[str]) -> str:
    """Brave's query language: ``site:a OR site:b`` narrows, ``-site:c`` excludes. Left out
    when the query would grow past the API's length limit (the results are filtered anyway)."""
    parts = [query]
    if allowed:
        sites = " OR ".join(f"site:{domain}" for domain in allowed)
        parts.append(f"({sites})" if len(allowed) > 1 else sites)
    parts.extend(f"-site:{domain}" for domain in blocked)
    combined = " ".join(parts)
    return combined if len(combined) <= MAX_QUERY_CHARS else query


async def _read_capped(response: httpx2.Response) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_ANSWER_BYTES:
            raise SearchError(
                f"The search API's answer is larger than {MAX_ANSWER_BYTES} bytes; it was not "
                "read. Try a narrower query."
            )
    return bytes(body)


def _status_message(title: str, status: int, body: bytes, key: str, settings: WebSettings) -> str:
    excerpt = body.decode("utf-8", errors="replace").strip()
    if key:  # before cutting: a cut must not leave the start of the key behind
        excerpt = excerpt.replace(key, "[redacted]")
    if len(excerpt) > _ERROR_EXCERPT_CHARS:
        excerpt = excerpt[: _ERROR_EXCERPT_CHARS - 1] + "…"
    detail = f" ({excerpt})" if excerpt else ""
    if status == 403 and settings.search_backend == "searxng" and not key:
        return (
            f"{title} refused the request with HTTP 403{detail}: its JSON format is probably "
            "off. A person must add json to search.formats in the server's settings.yml; "
            "until then, work without searching."
        )
    if status in (401, 403):
        variable = settings.search_key_variable() or "the key variable"
        return (
            f"{title} refused the request with HTTP {status}{detail}: the API key in {variable} "
            "is wrong or lacks access. A person must fix the key; until then, work without "
            "searching."
        )
    if status == 429:
        return f"{title} is rate-limiting searches (HTTP 429){detail}. Wait, then try again."
    return f"{title} answered HTTP {status}{detail}. Try again later, or do without searching."


def parse_answer(backend: SearchBackendName, body: bytes, title: str) -> list[SearchResult]:
    """The results in an API's answer (any JSON: what is not a result is skipped); SearchError
    naming ``title`` when the answer is not JSON or holds no list of results."""
    try:
        data = json.loads(body)
    except ValueError:
        raise SearchError(
            f"{title} answered with something that is not JSON; is [web] search_url right?"
        ) from None
    if backend == "brave":
        web = data.get("web") if isinstance(data, dict) else None
        items = web.get("results") if isinstance(web, dict) else []
        snippet_key = "description"
    else:
        items = data.get("results") if isinstance(data, dict) else None
        snippet_key = "content"
    if not isinstance(items, list):
        raise SearchError(f"{title}'s answer has no list of results; is [web] search_url right?")
    results: list[SearchResult] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        url = item.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            continue
        results.append(
            SearchResult(
                title=_plain(item.get("title"), _TITLE_CHARS) or url,
                url=url,
                snippet=_plain(item.get(snippet_key), _SNIPPET_CHARS),
            )
        )
    return results


def _plain(value: object, limit: int) -> str:
    if not isinstance(value, str):
        return ""
    text = " ".join(html.unescape(_TAGS.sub("", value)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _filtered(
    results: list[SearchResult], allowed: Sequence[str], blocked: Sequence[str], limit: int
) -> SearchResults:
    kept: list[SearchResult] = []
    dropped = 0
    for result in results:
        host = host_of(result.url)
        if host is None:
            dropped += 1
            continue
        if allowed and not any(within(host, domain) for domain in allowed):
            dropped += 1
            continue
        if any(within(host, domain) for domain in blocked):
            dropped += 1
            continue
        kept.append(result)
    return SearchResults(kept[:limit], dropped, max(0, len(kept) - limit))


def _shown_endpoint(endpoint: str) -> str:
    return endpoint.split("?", 1)[0]
