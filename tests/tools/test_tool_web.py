"""WebFetch and WebSearch against real HTTP servers on 127.0.0.1 (tests/fakes/http_server.py).

The tests allow 127.0.0.1 in ``[web] allow_private_addresses`` (as a person would for a local
server); everything else that is not public stays refused.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakes.http_server import FakeHTTPServer, PlannedReply
from subagents.config import load_config
from subagents.errors import ConfigError
from subagents.messages import ToolCall, ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.pause import HumanDecision
from subagents.runtime.runtime import Runtime
from subagents.secrets import known_credentials, tool_environment
from subagents.store.sqlite import SQLiteStore, open_store
from subagents.testing import FunctionModel, ScriptedModel, text_response, tool_call_response
from subagents.tools.base import ToolContext, ToolRegistry
from subagents.tools.builtin import builtin_tools
from subagents.tools.builtin.webfetch import webfetch_tool
from subagents.tools.builtin.websearch import websearch_tool
from subagents.tools.execution import ToolOutcome, execute_tool_call
from subagents.tools.permissions import ApprovalDecision, ApprovalRequest, PermissionPolicy
from subagents.tools.web.addresses import AddressPolicy, BlockedAddressError
from subagents.tools.web.domains import DomainFilterError, normalise_domain
from subagents.tools.web.fetch import FetchError, check_url, same_site
from subagents.tools.web.search import SearchError, parse_answer
from subagents.tools.web.settings import WebSettings

LOCAL = WebSettings(allow_private_addresses=["127.0.0.1"])
KEY = "brv-test-key-0123456789abcdef"


async def call(
    tool_name: str, settings: WebSettings, tmp_path: Path, **arguments: Any
) -> ToolOutcome:
    tool = webfetch_tool(settings) if tool_name == "WebFetch" else websearch_tool(settings)
    registry = ToolRegistry([tool])
    ctx = ToolContext(workspace=tmp_path)
    return await execute_tool_call(ToolCall("call-1", tool_name, arguments), registry, ctx)


async def fetch(
    settings: WebSettings, tmp_path: Path, url: str, prompt: str = "what is it?"
) -> ToolOutcome:
    return await call("WebFetch", settings, tmp_path, url=url, prompt=prompt)


def html(body: str) -> PlannedReply:
    page = (
        f"<html><head><title>T</title><script>alert('x')</script></head><body>{body}</body></html>"
    )
    return PlannedReply(raw_body=page.encode(), content_type="text/html; charset=utf-8")


def redirect(location: str, status: int = 302) -> PlannedReply:
    return PlannedReply(status=status, headers={"Location": location}, raw_body=b"")


# -- WebFetch: pages --------------------------------------------------------------------------


async def test_html_page_becomes_markdown_with_the_prompt_above(tmp_path: Path) -> None:
    with FakeHTTPServer() as server:
        server.plan(
            html(
                "<h1>Install</h1><p>Run <code>pip install x</code>, "
                "see <a href='/docs'>docs</a>.</p>"
            )
        )
        outcome = await fetch(LOCAL, tmp_path, server.url + "/guide", "how do I install it?")
    text = outcome.message.content
    assert outcome.status == "ok"
    assert "# Install" in text and "`pip install x`" in text
    assert f"[docs]({server.url}/docs)" in text  # relative links made absolute
    assert "alert(" not in text  # scripts are not reading matter
    assert "\nTitle: T\n" in text
    assert text.index("The user asked: how do I install it?") < text.index("# Install")
    assert "not instructions" in text
    (request,) = server.requests
    assert request.method == "GET" and request.path == "/guide"


async def test_other_text_is_returned_as_it_is(tmp_path: Path) -> None:
    document = {"name": "x", "versions": [1, 2]}
    with FakeHTTPServer() as server:
        server.plan(PlannedReply(json_body=document))
        server.plan(PlannedReply(raw_body=b"# Title\n\n*kept as is*", content_type="text/markdown"))
        as_json = await fetch(LOCAL, tmp_path, server.url + "/api")
        as_markdown = await fetch(LOCAL, tmp_path, server.url + "/readme.md")
    assert json.dumps(document) in as_json.message.content
    assert "(application/json)" in as_json.message.content
    assert "# Title\n\n*kept as is*" in as_markdown.message.content


async def test_charset_from_the_header_is_honoured(tmp_path: Path) -> None:
    with FakeHTTPServer() as server:
        server.plan(
            PlannedReply(
                raw_body="café".encode("latin-1"), content_type="text/plain; charset=iso-8859-1"
            )
        )
        outcome = await fetch(LOCAL, tmp_path, server.url + "/latin")
    assert "café" in outcome.message.content


async def test_binary_content_is_refused(tmp_path: Path) -> None:
    with FakeHTTPServer() as server:
        server.plan(
            PlannedReply(raw_body=b"\x89PNG\r\n\x1a\n" + bytes(100), content_type="image/png")
        )
        server.plan(PlannedReply(raw_body=b"\x00\x01\x02binary", content_type=""))
        server.plan(PlannedReply(raw_body=b"\x00\x01\x02", content_type="application/octet-stream"))
        server.plan(
            PlannedReply(raw_body=b"# Read me\n\ntext", content_type="application/octet-stream")
        )
        typed = await fetch(LOCAL, tmp_path, server.url + "/logo.png")
        sniffed = await fetch(LOCAL, tmp_path, server.url + "/blob")
        octets = await fetch(LOCAL, tmp_path, server.url + "/blob.bin")
        readme = await fetch(LOCAL, tmp_path, server.url + "/README.md")
    assert (
        typed.status == "error"
        and "image/png, which WebFetch does not read" in typed.message.content
    )
    assert sniffed.status == "error" and "binary content" in sniffed.message.content
    assert octets.status == "error" and "Content-Type application/octet-stream" in (
        octets.message.content
    )
    assert readme.status == "ok" and "# Read me\n\ntext" in readme.message.content


async def test_http_error_status_is_a_tool_error_with_the_start_of_the_answer(
    tmp_path: Path,
) -> None:
    with FakeHTTPServer() as server:
        server.plan(
            PlannedReply(status=404, raw_body=b"no such page here", content_type="text/plain")
        )
        outcome = await fetch(LOCAL, tmp_path, server.url + "/missing")
    assert outcome.status == "error"
    assert "answered 404 Not Found" in outcome.message.content
    assert "no such page here" in outcome.message.content


# -- WebFetch: redirects ----------------------------------------------------------------------


async def test_a_redirect_chain_on_the_same_site_is_followed(tmp_path: Path) -> None:
    with FakeHTTPServer() as server:
        server.plan(redirect("/step2", 301))
        server.plan(redirect(server.url + "/step3", 308))
        server.plan(html("<p>arrived</p>"))
        outcome = await fetch(LOCAL, tmp_path, server.url + "/step1")
    assert outcome.status == "ok"
    assert [r.path for r in server.requests] == ["/step1", "/step2", "/step3"]
    assert f"URL: {server.url}/step3" in outcome.message.content
    assert f"Redirected from: {server.url}/step1" in outcome.message.content
    assert "arrived" in outcome.message.content


async def test_more_than_five_redirects_are_refused(tmp_path: Path) -> None:
    with FakeHTTPServer() as server:
        for hop in range(7):
            server.plan(redirect(f"/hop{hop + 1}"))
        outcome = await fetch(LOCAL, tmp_path, server.url + "/hop0")
        asked = len(server.requests)
    assert outcome.status == "error"
    assert "redirected more than 5 times" in outcome.message.content
    assert asked == 6  # the first request and five redirects, no more


async def test_a_redirect_to_a_private_address_is_refused(tmp_path: Path) -> None:
    with FakeHTTPServer() as server:
        server.plan(redirect("http://169.254.169.254/latest/meta-data/"))
        server.plan(redirect("http://10.1.2.3/admin"))
        metadata = await fetch(LOCAL, tmp_path, server.url + "/innocent")
        private = await fetch(LOCAL, tmp_path, server.url + "/innocent")
    assert metadata.status == "error"
    assert "169.254.169.254 is a link-local address" in metadata.message.content
    assert "allow_private_addresses" in metadata.message.content
    assert (
        private.status == "error"
        and "10.1.2.3 is a private network address" in private.message.content
    )


async def test_a_redirect_to_loopback_on_another_port_is_refused_unless_allowed(
    tmp_path: Path,
) -> None:
    with FakeHTTPServer() as server:
        server.plan(redirect("http://127.0.0.2:9/"))
        outcome = await fetch(LOCAL, tmp_path, server.url + "/x")
    assert (
        outcome.status == "error" and "127.0.0.2 is a loopback address" in outcome.message.content
    )


async def test_a_redirect_to_another_public_site_is_reported_not_followed(tmp_path: Path) -> None:
    with FakeHTTPServer() as server:
        server.plan(redirect("https://93.184.215.14/moved"))
        outcome = await fetch(LOCAL, tmp_path, server.url + "/old")
        asked = len(server.requests)
    assert outcome.status == "ok" and asked == 1
    assert (
        "redirected (302) to another host: https://93.184.215.14/moved" in outcome.message.content
    )
    assert "call WebFetch again with that URL" in outcome.message.content


# -- WebFetch: addresses ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "why"),
    [
        ("127.0.0.1", "127.0.0.1 is a loopback address"),
        ("localhost", "localhost (127.0.0.1) is a loopback address"),
        ("[::ffff:127.0.0.1]", "is a loopback address"),
        ("2130706433", "2130706433 (127.0.0.1) is a loopback address"),
        ("0x7f.1", "0x7f.1 (127.0.0.1) is a loopback address"),
        ("0", "0 (0.0.0.0) is an unspecified address"),
        ("[::]", ":: is an unspecified address"),
    ],
)
async def test_loopback_is_refused_by_default_and_nothing_is_sent(
    tmp_path: Path, host: str, why: str
) -> None:
    with FakeHTTPServer() as server:
        port = urlsplit(server.url).port
        outcome = await fetch(WebSettings(), tmp_path, f"http://{host}:{port}/")
        assert server.requests == []
    assert outcome.status == "error"
    assert why in outcome.message.content
    assert "[web] allow_private_addresses" in outcome.message.content


async def test_allowing_a_host_name_or_a_network_lets_it_through(tmp_path: Path) -> None:
    with FakeHTTPServer() as server:
        port = urlsplit(server.url).port
        server.plan(html("<p>by network</p>"))
        server.plan(html("<p>by name</p>"))
        by_network = await fetch(
            WebSettings(allow_private_addresses=["127.0.0.0/8"]), tmp_path, server.url
        )
        by_name = await fetch(
            WebSettings(allow_private_addresses=["LocalHost"]),
            tmp_path,
            f"http://localhost:{port}/",
        )
    assert by_network.status == "ok" and "by network" in by_network.message.content
    assert by_name.status == "ok" and "by name" in by_name.message.content
    policy = AddressPolicy.from_entries(["intranet.example"])
    assert policy.check("intranet.example", [ipaddress.ip_address("10.0.0.7")])
    with pytest.raises(BlockedAddressError, match="private network address"):
        policy.check("other.example", [ipaddress.ip_address("10.0.0.7")])


@pytest.mark.parametrize(
    "address",
    [
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "::1",
        "fe80::1",
        "fd00::5",
        "::ffff:192.168.0.1",
        "2002:c0a8:0101::1",
    ],
)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert AddressPolicy().refusal(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    assert AddressPolicy().refusal(ipaddress.ip_address(address)) is None


def test_one_private_address_among_public_ones_refuses_the_host() -> None:
    addresses = [ipaddress.ip_address("93.184.215.14"), ipaddress.ip_address("127.0.0.1")]
    with pytest.raises(
        BlockedAddressError, match=r"rebind\.example \(127\.0\.0\.1\) is a loopback"
    ):
        AddressPolicy().check("rebind.example", addresses)


# -- WebFetch: limits -------------------------------------------------------------------------


async def test_a_body_over_the_byte_cap_is_cut_and_the_result_says_so(tmp_path: Path) -> None:
    settings = WebSettings(allow_private_addresses=["127.0.0.1"], max_bytes=1024)
    with FakeHTTPServer() as server:
        server.plan(PlannedReply(raw_body=b"a" * 1024 + b"b" * 4000, content_type="text/plain"))
        outcome = await fetch(settings, tmp_path, server.url + "/big")
    text = outcome.message.content
    assert outcome.status == "ok"
    assert "a" * 1024 in text and "b" not in text.split("a" * 1024, 1)[1].split("[")[0]
    assert "larger than 1024 bytes; only its first 1024 bytes were downloaded" in text
    assert "[web] max_bytes" in text


async def test_a_result_over_the_character_cap_is_cut_and_the_result_says_so(
    tmp_path: Path,
) -> None:
    settings = WebSettings(allow_private_addresses=["127.0.0.1"], max_chars=1000)
    with FakeHTTPServer() as server:
        server.plan(
            PlannedReply(
                raw_body=("x" * 999 + "YZ" + "w" * 1999).encode(), content_type="text/plain"
            )
        )
        outcome = await fetch(settings, tmp_path, server.url + "/long")
    text = outcome.message.content
    assert "x" * 999 + "Y" in text and "YZ" not in text
    assert "showing the first 1000 of 3000 characters" in text


@pytest.mark.slow
async def test_a_server_that_never_answers_times_out(tmp_path: Path) -> None:
    settings = WebSettings(allow_private_addresses=["127.0.0.1"], timeout=0.5)
    with FakeHTTPServer() as server:
        server.hang()
        outcome = await fetch(settings, tmp_path, server.url + "/slow")
    assert outcome.status == "error"
    assert "took longer than 0.5 s" in outcome.message.content
    assert "[web] timeout" in outcome.message.content


async def test_a_dead_server_is_a_tool_error(tmp_path: Path) -> None:
    with FakeHTTPServer() as server:
        url = server.url
    outcome = await fetch(LOCAL, tmp_path, url + "/gone")
    assert outcome.status == "error" and "could not connect" in outcome.message.content


# -- WebFetch: what a model may send ----------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("", "The url is empty"),
        ("not a url", "not an absolute URL"),
        ("example.com/page", "e.g. https://example.com/page"),
        ("ftp://example.com/file", "uses ftp:"),
        ("file:///etc/passwd", "uses file:"),
        ("http://user:secret@example.com/", "does not send credentials"),
        ("https://" + "a" * 2100 + ".com", "at most 2000"),
        ("http://[::1", "not a valid URL"),
    ],
)
async def test_bad_urls_from_a_model_are_tool_errors(tmp_path: Path, url: str, said: str) -> None:
    outcome = await fetch(LOCAL, tmp_path, url)
    assert outcome.status == "error"
    assert said in outcome.message.content


async def test_missing_arguments_are_tool_errors(tmp_path: Path) -> None:
    outcome = await call("WebFetch", LOCAL, tmp_path, url="https://example.com/")
    assert outcome.status == "error" and "prompt" in outcome.message.content


_URL_PIECE = st.text(alphabet=st.sampled_from(list("aZ09.-_:@[]%/?#~ \\\tü")), max_size=20)
_URL_LIKE = st.builds(
    "{}{}{}{}".format,
    st.sampled_from(["http://", "https://", "ftp://", "HTTP://", "//", "", "http:", "file:///"]),
    _URL_PIECE,
    st.sampled_from(["", ":80", ":0", ":99999", ":x", "@evil"]),
    _URL_PIECE,
)


@given(st.text(max_size=300) | _URL_LIKE)
def test_check_url_accepts_only_http_urls_with_a_host(text: str) -> None:
    try:
        url = check_url(text)
    except FetchError as error:
        assert str(error)
        return
    assert url.scheme in ("http", "https") and url.host and not url.userinfo


@given(st.text(max_size=100))
def test_domain_filters_are_bare_domains_or_refused(text: str) -> None:
    try:
        domain = normalise_domain(text)
    except DomainFilterError as error:
        assert "is not a domain" in str(error)
        return
    assert domain == domain.lower() and "/" not in domain and " " not in domain


# -- WebSearch --------------------------------------------------------------------------------


def brave(server: FakeHTTPServer, **extra: Any) -> WebSettings:
    return WebSettings(
        search_backend="brave", search_url=server.url + "/res/v1/web/search", **extra
    )


def brave_answer(*results: tuple[str, str, str]) -> PlannedReply:
    return PlannedReply(
        json_body={
            "type": "search",
            "query": {"original": "q"},
            "web": {
                "type": "search",
                "results": [{"title": t, "url": u, "description": d} for t, u, d in results],
            },
        }
    )


async def test_search_against_a_brave_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", KEY)
    with FakeHTTPServer() as server:
        server.plan(
            brave_answer(
                (
                    "asyncio &mdash; docs",
                    "https://docs.python.org/3/library/asyncio.html",
                    "The <strong>asyncio</strong> module",
                ),
                ("Tutorial", "https://realpython.com/async-io-python/", "A walkthrough"),
            )
        )
        outcome = await call(
            "WebSearch", brave(server, max_results=5), tmp_path, query="python asyncio"
        )
    (request,) = server.requests
    assert request.method == "GET" and request.path.startswith("/res/v1/web/search?")
    assert parse_qs(urlsplit(request.path).query) == {"q": ["python asyncio"], "count": ["5"]}
    assert request.headers["x-subscription-token"] == KEY
    text = outcome.message.content
    assert outcome.status == "ok"
    assert 'Web search results for "python asyncio" (Brave Search, 2 results)' in text
    assert (
        "1. asyncio — docs\n   https://docs.python.org/3/library/asyncio.html\n"
        "   The asyncio module" in text
    )
    assert "2. Tutorial" in text
    assert KEY not in text


async def test_search_domain_filters_go_to_brave_and_are_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", KEY)
    with FakeHTTPServer() as server:
        server.plan(
            brave_answer(
                ("A", "https://docs.python.org/3/a", ""),
                ("B", "https://www.python.org/b", ""),
                ("C", "https://spam.example/c", ""),
                ("D", "https://wiki.python.org/d", ""),
            )
        )
        outcome = await call(
            "WebSearch",
            brave(server),
            tmp_path,
            query="asyncio",
            allowed_domains=["python.org", "https://docs.python.org/3/"],
            blocked_domains=["wiki.python.org"],
        )
    (request,) = server.requests
    sent = parse_qs(urlsplit(request.path).query)["q"][0]
    assert sent == "asyncio (site:python.org OR site:docs.python.org) -site:wiki.python.org"
    text = outcome.message.content
    assert "https://docs.python.org/3/a" in text and "https://www.python.org/b" in text
    assert "spam.example" not in text and "wiki.python.org/d" not in text
    assert (
        "[2 results from domains outside allowed_domains or inside blocked_domains left out.]"
        in text
    )


async def test_search_with_a_bad_domain_filter_is_a_tool_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", KEY)
    with FakeHTTPServer() as server:
        outcome = await call(
            "WebSearch", brave(server), tmp_path, query="x y", blocked_domains=["not a domain"]
        )
        assert server.requests == []
    assert (
        outcome.status == "error"
        and "blocked_domains: 'not a domain' is not a domain" in outcome.message.content
    )


async def test_search_without_the_key_says_which_variable_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    with FakeHTTPServer() as server:
        outcome = await call("WebSearch", brave(server), tmp_path, query="anything")
        assert server.requests == []
    assert outcome.status == "error"
    assert "environment variable BRAVE_API_KEY, which is not set" in outcome.message.content
    assert "search_api_key_env" in outcome.message.content


@pytest.mark.parametrize(
    ("status", "said"),
    [
        (401, "the API key in BRAVE_API_KEY is wrong"),
        (429, "rate-limiting"),
        (503, "answered HTTP 503"),
    ],
)
async def test_search_http_errors_are_tool_errors_without_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int, said: str
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", KEY)
    with FakeHTTPServer() as server:
        server.plan(
            PlannedReply(status=status, json_body={"error": {"detail": f"bad token {KEY}"}})
        )
        outcome = await call("WebSearch", brave(server), tmp_path, query="anything")
    assert outcome.status == "error" and said in outcome.message.content
    assert KEY not in outcome.message.content


async def test_search_answer_that_is_not_json_is_a_tool_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", KEY)
    with FakeHTTPServer() as server:
        server.plan(PlannedReply(raw_body=b"<html>proxy login</html>", content_type="text/html"))
        outcome = await call("WebSearch", brave(server), tmp_path, query="anything")
    assert (
        outcome.status == "error"
        and "not JSON; is [web] search_url right?" in outcome.message.content
    )


async def test_search_not_configured_says_how_to_configure_it(tmp_path: Path) -> None:
    outcome = await call("WebSearch", WebSettings(), tmp_path, query="anything")
    text = outcome.message.content
    assert outcome.status == "error"
    assert "WebSearch is not configured here" in text
    assert (
        'search_backend = "brave"' in text
        and "BRAVE_API_KEY" in text
        and ".subagents/config.toml" in text
    )


async def test_search_against_a_tavily_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-" + "k" * 20)
    with FakeHTTPServer() as server:
        settings = WebSettings(search_backend="tavily", search_url=server.url + "/search")
        server.plan(
            PlannedReply(
                json_body={
                    "results": [{"title": "T", "url": "https://a.example/x", "content": "snippet"}]
                }
            )
        )
        outcome = await call(
            "WebSearch", settings, tmp_path, query="q1", allowed_domains=["a.example"]
        )
    (request,) = server.requests
    assert request.method == "POST" and request.path == "/search"
    assert request.json() == {"query": "q1", "max_results": 10, "include_domains": ["a.example"]}
    assert request.headers["authorization"] == "Bearer tvly-" + "k" * 20
    assert "1. T\n   https://a.example/x\n   snippet" in outcome.message.content


async def test_search_against_a_searxng_server_needs_no_key(tmp_path: Path) -> None:
    with FakeHTTPServer() as server:
        server.plan(
            PlannedReply(
                json_body={"results": [{"title": "S", "url": "https://s.example/", "content": "c"}]}
            )
        )
        settings = WebSettings(search_backend="searxng", search_url=server.url + "/search")
        outcome = await call("WebSearch", settings, tmp_path, query="q2")
    (request,) = server.requests
    assert parse_qs(urlsplit(request.path).query) == {"q": ["q2"], "format": ["json"]}
    assert "authorization" not in request.headers
    assert outcome.status == "ok" and "https://s.example/" in outcome.message.content


async def test_a_too_short_query_is_a_tool_error(tmp_path: Path) -> None:
    outcome = await call("WebSearch", WebSettings(), tmp_path, query="x")
    assert outcome.status == "error" and "query" in outcome.message.content


# -- config and secrets -----------------------------------------------------------------------


def write_config(root: Path, text: str) -> Path:
    (root / ".git").mkdir(exist_ok=True)
    path = root / ".subagents" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_web_table_is_read(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        '[web]\nallow_private_addresses = ["127.0.0.1", "10.0.0.0/8", "Intranet.Example."]\n'
        "timeout = 12\nmax_bytes = 2048\n"
        'search_backend = "brave"\nsearch_api_key_env = "MY_BRAVE"\n',
    )
    web = load_config(tmp_path).web
    assert web.allow_private_addresses == ["127.0.0.1", "10.0.0.0/8", "intranet.example"]
    assert web.timeout == 12 and web.max_bytes == 2048
    assert web.search_key_variable() == "MY_BRAVE"
    assert web.search_endpoint() == "https://api.search.brave.com/res/v1/web/search"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "[web]\nallow_private = []\n",
            "config.toml:2: unknown key 'web.allow_private' "
            "(did you mean 'web.allow_private_addresses'?)",
        ),
        (
            '[web]\nallow_private_addresses = ["not a host!"]\n',
            "'not a host!' is neither a host name",
        ),
        ('[web]\nsearch_backend = "google"\n', "config.toml:2: key 'web.search_backend'"),
        ('[web]\nsearch_backend = "searxng"\n', "needs search_url"),
        ('[web]\nsearch_api_key_env = "sk-abc def"\n', "name the variable that holds the key"),
        ("[web]\ntimeout = 0\n", "config.toml:2: key 'web.timeout'"),
        ('[web]\nproxy = "socks://x"\n', "is not an http:// or https:// URL"),
    ],
)
def test_bad_web_settings_name_the_key(tmp_path: Path, text: str, said: str) -> None:
    write_config(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path)
    assert said in str(raised.value)


def test_the_search_key_is_a_secret_kept_from_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(
        tmp_path, '[web]\nsearch_backend = "brave"\nsearch_api_key_env = "SEARCH_TOKEN_VAR"\n'
    )
    config = load_config(tmp_path)
    environ = {"SEARCH_TOKEN_VAR": "plainvalue12345", "PATH": "/usr/bin"}
    assert "plainvalue12345" in known_credentials(config, environ=environ)
    assert "SEARCH_TOKEN_VAR" not in tool_environment(config, environ)
    assert tool_environment(config, environ)["PATH"] == "/usr/bin"


def test_both_tools_are_built_in_with_the_configured_settings(tmp_path: Path) -> None:
    tools = {tool.name: tool for tool in builtin_tools(LOCAL)}
    assert {"WebFetch", "WebSearch"} <= set(tools)
    assert tools["WebFetch"].read_only and tools["WebFetch"].requires_approval
    assert tools["WebSearch"].read_only and not tools["WebSearch"].requires_approval


# -- permissions ------------------------------------------------------------------------------


async def test_webfetch_asks_in_every_mode_but_bypass_and_websearch_never_asks(
    tmp_path: Path,
) -> None:
    tools = {tool.name: tool for tool in builtin_tools(LOCAL)}
    ctx = ToolContext(workspace=tmp_path)
    fetch_call = ToolCall("c1", "WebFetch", {"url": "https://example.com/", "prompt": "x"})
    search_call = ToolCall("c2", "WebSearch", {"query": "x y"})
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request.tool_name)
        return ApprovalDecision(approved=True)

    for mode in ("plan", "default", "acceptEdits"):
        headless = PermissionPolicy(mode)
        refused = await headless.check(tools["WebFetch"], fetch_call, ctx)
        assert not refused.approved and "needs approval" in (refused.reason or "")
        assert (await headless.check(tools["WebSearch"], search_call, ctx)).approved
        attended = PermissionPolicy(mode, approver=approver)
        assert (await attended.check(tools["WebFetch"], fetch_call, ctx)).approved
    assert asked == ["WebFetch", "WebFetch", "WebFetch"]
    bypass = PermissionPolicy("bypassPermissions")
    assert (await bypass.check(tools["WebFetch"], fetch_call, ctx)).approved
    plan = PermissionPolicy("plan")
    write_call = ToolCall("c3", "Write", {"file_path": "a", "content": "b"})
    assert not (await plan.check(tools["Write"], write_call, ctx)).approved  # still read-only


# -- end to end -------------------------------------------------------------------------------

RESEARCHER = """\
---
name: researcher
description: Researches a question on the web and reports with sources.
tools: Read, WebSearch, WebFetch
---
You research questions on the web.
"""


async def test_a_research_agent_searches_and_fetches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", KEY)
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "researcher.md").write_text(RESEARCHER)
    with FakeHTTPServer() as search, FakeHTTPServer() as site:
        page_url = site.url + "/release-notes"
        write_config(
            tmp_path,
            '[web]\nallow_private_addresses = ["127.0.0.1"]\nsearch_backend = "brave"\n'
            f'search_url = "{search.url}/res/v1/web/search"\n',
        )
        search.plan(brave_answer(("Release notes", page_url, "What changed in 2.0")))
        site.plan(html("<h2>2.0</h2><ul><li>Faster startup</li></ul>"))
        child = ScriptedModel(
            [
                tool_call_response("WebSearch", {"query": "example 2.0 release notes"}),
                tool_call_response("WebFetch", {"url": page_url, "prompt": "what changed?"}),
                "2.0 brings a faster startup (source: " + page_url + ")",
            ]
        )
        main = ScriptedModel(
            [
                tool_call_response(
                    "Task",
                    {
                        "description": "research",
                        "prompt": "What changed in 2.0?",
                        "subagent_type": "researcher",
                    },
                ),
                "done",
            ]
        )
        asked: list[str] = []

        async def approver(request: ApprovalRequest) -> ApprovalDecision:
            asked.append(f"{request.agent_type}:{request.tool_name}")
            return ApprovalDecision(approved=True)

        runtime = Runtime(
            cwd=tmp_path, model=main, agent_models={"researcher": child}, approver=approver
        )
        result = await runtime.run("Find out what changed in 2.0")
    assert result.output == "done"
    offered = sorted(spec.name for spec in child.requests[0].tools)
    assert offered == ["Read", "WebFetch", "WebSearch"]
    search_result, page_result = [
        m for m in child.requests[-1].messages if isinstance(m, ToolResultMessage)
    ]
    assert (
        not search_result.is_error and f"1. Release notes\n   {page_url}" in search_result.content
    )
    assert not page_result.is_error and "## 2.0" in page_result.content
    assert "- Faster startup" in page_result.content
    assert asked == ["researcher:WebFetch"]  # WebSearch does not ask; WebFetch does
    (returned,) = [m for m in main.requests[-1].messages if isinstance(m, ToolResultMessage)]
    assert returned.content.startswith("2.0 brings a faster startup")
    assert search.requests[0].headers["x-subscription-token"] == KEY


def test_agents_show_lists_the_web_tools_as_effective(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from subagents.cli.agents import agents_app

    (tmp_path / ".git").mkdir()
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "researcher.md").write_text(RESEARCHER)
    shown = CliRunner().invoke(agents_app, ["show", "researcher", "--cwd", str(tmp_path), "--json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.output)
    assert data["effective_tools"] == ["Read", "WebFetch", "WebSearch"]
    assert data["unavailable_tools"] == []
    assert not any("WebFetch" in w or "WebSearch" in w for w in data["warnings"])
    assert data["notes"] == [
        "WebSearch has no search backend here: its calls will fail until a person sets "
        '[web] search_backend (e.g. "brave", with the key in BRAVE_API_KEY) in '
        ".subagents/config.toml"
    ]


def test_agents_show_says_when_the_search_key_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from subagents.cli.agents import agents_app

    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    write_config(tmp_path, '[web]\nsearch_backend = "brave"\n')
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "researcher.md").write_text(RESEARCHER)
    arguments = ["show", "researcher", "--cwd", str(tmp_path)]
    missing = CliRunner().invoke(agents_app, arguments)
    assert missing.exit_code == 0, missing.output
    assert "notes" in missing.output and "BRAVE_API_KEY is not set" in missing.output
    monkeypatch.setenv("BRAVE_API_KEY", KEY)
    ready = CliRunner().invoke(agents_app, [*arguments, "--json"])
    assert json.loads(ready.output)["notes"] == []


async def test_a_durable_run_pauses_before_webfetch_and_fetches_once_approved(
    tmp_path: Path,
) -> None:
    with FakeHTTPServer() as site:
        url = site.url + "/status"
        write_config(tmp_path, '[web]\nallow_private_addresses = ["127.0.0.1"]\n')
        site.plan(PlannedReply(raw_body=b"all systems go", content_type="text/plain"))

        def turn(request: ModelRequest) -> ModelResponse:
            results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
            if not results:
                return tool_call_response("WebFetch", {"url": url, "prompt": "status?"})
            return text_response("saw: " + results[-1].content)

        def runtime(store: SQLiteStore) -> Runtime:
            return Runtime(cwd=tmp_path, model=FunctionModel(turn), store=store, headless="pause")

        store_path = tmp_path / "state.db"
        with open_store(store_path) as store:
            paused = await runtime(store).run("check the status page")
        assert paused.status == "awaiting_human" and paused.question is not None
        assert paused.question.tool_name == "WebFetch" and site.requests == []
        with open_store(store_path) as store:
            done = await runtime(store).resume(paused.task_id or "", HumanDecision("approve"))
        assert done.status == "completed", done.error
        assert "all systems go" in done.output
        assert [r.path for r in site.requests] == ["/status"]


def test_only_redirects_on_the_same_host_are_followed() -> None:
    import httpx2

    def same(a: str, b: str) -> bool:
        return same_site(httpx2.URL(a), httpx2.URL(b))

    assert same("https://Example.com/a", "http://example.com:8080/b")
    assert not same("https://example.com/", "https://www.example.com/")
    assert not same("https://docs.example.com/", "https://example.com/")


async def test_a_page_nested_too_deeply_for_markdown_comes_back_as_text(tmp_path: Path) -> None:
    with FakeHTTPServer() as server:
        server.plan(html("<p>top</p>" + "<div>" * 3000 + "deep <b>inside</b>" + "</div>" * 3000))
        outcome = await fetch(LOCAL, tmp_path, server.url + "/deep")
    text = outcome.message.content
    assert outcome.status == "ok"
    assert "nests its HTML too deeply" in text
    assert "top" in text and "deep" in text and "inside" in text


async def test_search_against_a_dead_server_is_a_tool_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", KEY)
    with FakeHTTPServer() as server:
        settings = brave(server)
    outcome = await call("WebSearch", settings, tmp_path, query="anything")
    assert outcome.status == "error"
    assert (
        f"Could not reach Brave Search at {server.url}/res/v1/web/search" in outcome.message.content
    )


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_RESULT = st.fixed_dictionaries(
    {},
    optional={
        "title": _JSON | st.text(max_size=40),
        "url": _JSON | st.sampled_from(["https://a.example/", "http://b.example/x", "ftp://c/"]),
        "description": _JSON | st.text(max_size=40),
        "content": _JSON | st.text(max_size=40),
    },
)


@pytest.mark.slow
@given(
    st.sampled_from(["brave", "tavily", "searxng"]),
    _JSON
    | st.builds(lambda r: {"web": {"results": r}}, st.lists(_RESULT | _JSON, max_size=5))
    | st.builds(lambda r: {"results": r}, st.lists(_RESULT | _JSON, max_size=5)),
)
def test_any_json_answer_parses_to_results_or_a_search_error(backend: str, answer: Any) -> None:
    try:
        results = parse_answer(backend, json.dumps(answer).encode(), "X")  # type: ignore[arg-type]
    except SearchError as error:
        assert "X" in str(error)
        return
    for result in results:
        assert result.url.startswith(("http://", "https://")) and result.title


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello over IPv6"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent."""


@contextmanager
def ipv6_server() -> Iterator[str]:
    server = _IPv6Server(("::1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02})
    thread.start()
    try:
        yield f"http://[::1]:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


async def test_ipv6_loopback_is_refused_unless_allowed(tmp_path: Path) -> None:
    with ipv6_server() as url:
        refused = await fetch(WebSettings(), tmp_path, url)
        allowed = await fetch(WebSettings(allow_private_addresses=["::1/128"]), tmp_path, url)
    assert refused.status == "error" and "::1 is a loopback address" in refused.message.content
    assert allowed.status == "ok" and "hello over IPv6" in allowed.message.content


async def test_a_searxng_without_its_json_format_says_how_to_turn_it_on(tmp_path: Path) -> None:
    with FakeHTTPServer() as server:
        server.plan(PlannedReply(status=403, raw_body=b"Forbidden", content_type="text/plain"))
        settings = WebSettings(search_backend="searxng", search_url=server.url + "/search")
        outcome = await call("WebSearch", settings, tmp_path, query="q2")
    assert outcome.status == "error"
    assert "add json to search.formats in the server's settings.yml" in outcome.message.content


async def test_compressed_pages_are_decoded_and_broken_compression_is_a_tool_error(
    tmp_path: Path,
) -> None:
    import gzip

    packed = gzip.compress(b"<p>squeezed " + b"z" * 5000 + b"</p>")
    settings = WebSettings(allow_private_addresses=["127.0.0.1"], max_bytes=2048)
    with FakeHTTPServer() as server:
        server.plan(
            PlannedReply(
                raw_body=packed, content_type="text/html", headers={"Content-Encoding": "gzip"}
            )
        )
        server.plan(
            PlannedReply(
                raw_body=b"not gzip at all",
                content_type="text/html",
                headers={"Content-Encoding": "gzip"},
            )
        )
        good = await fetch(settings, tmp_path, server.url + "/packed")
        broken = await fetch(settings, tmp_path, server.url + "/broken")
    assert good.status == "ok" and "squeezed" in good.message.content
    assert "only its first 2048 bytes were downloaded" in good.message.content  # cap after decoding
    assert broken.status == "error" and "could not be decoded" in broken.message.content


@pytest.mark.slow
def test_the_cli_runs_a_search_and_a_fetch_and_keeps_the_search_key_out_of_everything(
    tmp_path: Path, isolated_home: Path
) -> None:
    from cli_project import Project, ScriptedServer

    key = "brv-" + "9" * 12 + "secretkey"
    with ScriptedServer() as model, FakeHTTPServer() as search, FakeHTTPServer() as site:
        project = Project(tmp_path / "project", model, isolated_home)
        config = project.root / ".subagents" / "config.toml"
        config.write_text(
            config.read_text()
            + '\n[web]\nallow_private_addresses = ["127.0.0.1"]\nsearch_backend = "brave"\n'
            f'search_url = "{search.url}/res/v1/web/search"\n'
        )
        page = site.url + "/notes"
        # a search API that echoes the key back: it must still not be stored or printed
        search.plan(brave_answer(("Notes", page, f"token {key} echoed")))
        site.plan(html("<h1>Notes</h1><p>Version 3 is out.</p>"))
        model.call("WebSearch", {"query": "version notes"}, call_id="call_search")
        model.call("WebFetch", {"url": page, "prompt": "which version?"}, call_id="call_fetch")
        model.say("Version 3 is out.")
        done = project.run("Which version is out?", "--yes", env={"BRAVE_API_KEY": key})
        bodies = model.bodies()
    assert done.code == 0, done.err
    assert "Version 3 is out." in done.out
    searched, fetched = (
        [m for m in body["messages"] if m["role"] == "tool"][-1]["content"] for body in bodies[1:]
    )
    assert "1. Notes" in searched and page in searched
    assert "# Notes" in fetched and "Version 3 is out." in fetched
    assert search.requests[0].headers["x-subscription-token"] == key
    assert key not in done.out + done.err
    store_bytes = b"".join(p.read_bytes() for p in project.store_file.parent.glob("state.db*"))
    assert store_bytes and key.encode() not in store_bytes


async def test_through_a_configured_proxy_hosts_are_still_checked_first(tmp_path: Path) -> None:
    with FakeHTTPServer() as proxy:
        settings = WebSettings(proxy=proxy.url)
        proxy.plan(PlannedReply(raw_body=b"via the proxy", content_type="text/plain"))
        public = await fetch(settings, tmp_path, "http://93.184.215.14/page")
        private = await fetch(settings, tmp_path, "http://10.0.0.8/admin")
        metadata = await fetch(settings, tmp_path, "http://169.254.169.254/latest/")
        (request,) = proxy.requests  # only the public page went to the proxy
    assert public.status == "ok" and "via the proxy" in public.message.content
    assert request.path == "http://93.184.215.14/page"  # an absolute URL: a proxy request
    assert (
        private.status == "error"
        and "10.0.0.8 is a private network address" in private.message.content
    )
    assert metadata.status == "error" and "link-local" in metadata.message.content


async def test_search_goes_through_the_configured_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", KEY)
    with FakeHTTPServer() as proxy:
        proxy.plan(brave_answer(("P", "https://p.example/", "")))
        settings = WebSettings(
            search_backend="brave",
            search_url="http://search.invalid/res/v1/web/search",
            proxy=proxy.url,
        )
        outcome = await call("WebSearch", settings, tmp_path, query="through proxy")
    (request,) = proxy.requests
    assert request.path.startswith("http://search.invalid/res/v1/web/search?q=through+proxy")
    assert outcome.status == "ok" and "https://p.example/" in outcome.message.content


async def test_results_beyond_max_results_are_counted_not_silently_dropped(tmp_path: Path) -> None:
    answer = {"results": [{"title": f"R{i}", "url": f"https://r{i}.example/"} for i in range(7)]}
    with FakeHTTPServer() as server:
        server.plan(PlannedReply(json_body=answer))
        settings = WebSettings(
            search_backend="searxng", search_url=server.url + "/search", max_results=3
        )
        outcome = await call("WebSearch", settings, tmp_path, query="many")
    text = outcome.message.content
    assert "3. R2" in text and "R3" not in text
    assert "[4 more results not shown: at most 3 are listed ([web] max_results)." in text


async def test_a_key_echoed_across_the_excerpt_cut_is_not_half_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", KEY)
    with FakeHTTPServer() as server:
        body = ("x" * 180 + KEY + "y" * 300).encode()  # the key straddles 200 characters
        server.plan(PlannedReply(status=500, raw_body=body, content_type="text/plain"))
        outcome = await call("WebSearch", brave(server), tmp_path, query="anything")
    assert outcome.status == "error"
    assert KEY[:8] not in outcome.message.content and "[redacted]" in outcome.message.content
    assert "…" in outcome.message.content


async def test_an_html_page_without_a_header_charset_is_read_with_its_meta_charset(
    tmp_path: Path,
) -> None:
    page = '<html><head><meta charset="iso-8859-1"></head><body><p>crème brûlée</p></body></html>'
    with FakeHTTPServer() as server:
        server.plan(PlannedReply(raw_body=page.encode("latin-1"), content_type="text/html"))
        outcome = await fetch(LOCAL, tmp_path, server.url + "/menu")
    assert outcome.status == "ok" and "crème brûlée" in outcome.message.content


async def test_an_empty_single_page_app_says_why_it_has_no_text(tmp_path: Path) -> None:
    with FakeHTTPServer() as server:
        server.plan(html('<div id="root"></div><script src="/app.js"></script>'))
        outcome = await fetch(LOCAL, tmp_path, server.url + "/app")
    assert outcome.status == "ok"
    assert "it may build its content with JavaScript" in outcome.message.content
