"""Models' HTTP clients: over HTTPS with the TLS settings the process was given.

Every model's SDK client shares one TLS context a process (``shared_tls_context``): loading
the certificate store per client cost 16-40 ms, paid again by each model a run or a worker
used. These tests hold the sharing to what users rely on: a real TLS server on 127.0.0.1 whose
certificate only a private CA vouches for (as behind a company proxy), reached by two models of
each SDK in a fresh interpreter, with and without ``SSL_CERT_FILE`` naming that CA. And the
HTTP client made for a model still closes itself when the model is dropped unclosed.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from fakes.anthropic_server import FakeAnthropicServer, text_block
from fakes.openai_server import FakeOpenAIServer

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`

# Two models of the SDK against the server, one request each; prints their answers (or the
# error) and how many certificate stores the process loaded.
_SCRIPT = """
import asyncio, json, ssl, sys

loads = 0
create = ssl.create_default_context

def counted(*args, **kwargs):
    global loads
    loads += 1
    return create(*args, **kwargs)

ssl.create_default_context = counted

from subagents.errors import SubagentsError
from subagents.messages import UserMessage
from subagents.models.base import ModelRequest

provider, base_url = sys.argv[1], sys.argv[2]
if provider == "openai":
    from subagents.models.openai import OpenAIChatModel as Model
else:
    from subagents.models.anthropic import AnthropicModel as Model


async def main():
    answers = []
    for name in ("first-model", "second-model"):
        model = Model(name, base_url=base_url, api_key="test-key")
        try:
            response = await model.request(ModelRequest("s", [UserMessage("hi")]))
            answers.append(response.text)
        except SubagentsError as error:
            answers.append(f"error: {error.message} - {error.hint}")
        finally:
            await model.aclose()
    print(json.dumps({"answers": answers, "loads": loads}))


asyncio.run(main())
"""


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def tls(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    return context


@pytest.fixture
def ca_file(ca: trustme.CA, tmp_path: Path) -> Path:
    path = tmp_path / "company-ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


@pytest.fixture
def openai_server(tls: ssl.SSLContext) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(tls=tls) as server:
        yield server


@pytest.fixture
def anthropic_server(tls: ssl.SSLContext) -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(tls=tls) as server:
        yield server


def _run(provider: str, base_url: str, ca_file: Path | None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SSL_CERT_", "OPENAI_"))}
    env = {k: v for k, v in env.items() if not k.startswith("ANTHROPIC_")}
    if ca_file is not None:
        env["SSL_CERT_FILE"] = str(ca_file)
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, provider, base_url],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_two_openai_models_trust_the_ca_ssl_cert_file_names_loading_it_once(
    openai_server: FakeOpenAIServer, ca_file: Path
) -> None:
    openai_server.reply_text("one")
    openai_server.reply_text("two")
    result = _run("openai", openai_server.base_url, ca_file)
    assert result == {"answers": ["one", "two"], "loads": 1}
    assert [request.json()["model"] for request in openai_server.requests] == [
        "first-model",
        "second-model",
    ]


def test_two_anthropic_models_trust_the_ca_ssl_cert_file_names_loading_it_once(
    anthropic_server: FakeAnthropicServer, ca_file: Path
) -> None:
    anthropic_server.reply_message([text_block("one")])
    anthropic_server.reply_message([text_block("two")])
    result = _run("anthropic", anthropic_server.url, ca_file)
    assert result == {"answers": ["one", "two"], "loads": 1}
    assert len(anthropic_server.requests) == 2


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_certificate_no_trusted_ca_vouches_for_is_refused_by_every_model(
    provider: str, openai_server: FakeOpenAIServer, anthropic_server: FakeAnthropicServer
) -> None:
    server = openai_server if provider == "openai" else anthropic_server
    result = _run(provider, server.base_url, None)
    answers = result["answers"]
    assert isinstance(answers, list) and len(answers) == 2
    for name, answer in zip(("first-model", "second-model"), answers, strict=True):
        # not retried (it will not pass by itself), and said with what to do about it
        assert answer.startswith(
            f"error: {provider}:{name} request failed: the TLS certificate of "
            f"{server.base_url} is not trusted"
        ), answer
        assert "set SSL_CERT_FILE to that authority's certificate" in answer
    assert server.requests == []  # no request got through the handshake


_DROPPED = """
import asyncio, gc, sys

from subagents.messages import UserMessage
from subagents.models.base import ModelRequest
from subagents.models.openai import OpenAIChatModel


async def main():
    model = OpenAIChatModel("m", base_url=sys.argv[1], api_key="test-key")
    print((await model.request(ModelRequest("s", [UserMessage("hi")]))).text)
    del model  # never closed
    gc.collect()
    closing = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    assert closing, "dropping the model scheduled no close"
    await asyncio.gather(*closing)


asyncio.run(main())
"""


def test_a_model_dropped_unclosed_leaves_no_connection_open() -> None:
    """The HTTP client made for a model closes itself when it is dropped, as the one the SDK
    would make does: no ``ResourceWarning: unclosed transport`` at exit."""
    with FakeOpenAIServer() as server:
        server.reply_text("hello")
        done = subprocess.run(
            [sys.executable, "-W", "always::ResourceWarning", "-c", _DROPPED, server.base_url],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hello"
    assert "ResourceWarning" not in done.stderr, done.stderr


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_an_https_url_to_a_plain_http_server_is_said_so_and_not_retried(
    provider: str,
) -> None:
    """Ollama, vLLM and llama.cpp serve plain HTTP; an ``https://`` base URL to one is a
    setting to change, not a network hiccup to retry: one connection, and the hint names
    http://."""
    from subagents.errors import ModelError, ModelRetriesExhaustedError
    from subagents.messages import UserMessage
    from subagents.models.anthropic import AnthropicModel
    from subagents.models.base import ModelRequest
    from subagents.models.openai import OpenAIChatModel

    connections = 0

    async def plain_http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await reader.read(1024)  # the TLS ClientHello, which a plain server cannot read
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(plain_http, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    base_url = f"https://127.0.0.1:{port}"
    model_class = OpenAIChatModel if provider == "openai" else AnthropicModel
    model = model_class("m", base_url=base_url, api_key="test-key", max_retries=3)
    try:
        with pytest.raises(ModelError) as raised:
            await model.request(ModelRequest("s", [UserMessage("hi")]))
    finally:
        await model.aclose()
        server.close()
        await server.wait_closed()
    assert not isinstance(raised.value, ModelRetriesExhaustedError)
    assert "does not speak TLS" in raised.value.message
    assert raised.value.hint is not None and "start with http://" in raised.value.hint
    assert f"[providers.{provider}] base_url" in raised.value.hint
    assert connections == 1
