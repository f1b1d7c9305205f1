"""An OpenAI-compatible endpoint on 127.0.0.1: a scripted weak model, or a relay to a real one.

``POST .../chat/completions`` is answered by a :class:`~weak_models.policies.Policy` (a
:class:`~weak_models.policies.ServerRefusal` becomes an HTTP error with an OpenAI error body),
or, with ``upstream``, passed on to a real server and its answer passed back unchanged. Either
way every request is counted and one line per answer is kept (what the model did), so a run
against a real endpoint reports the same turns and transcript as a scripted one.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from weak_models.policies import Policy, ServerRefusal

__all__ = ["WeakModelServer", "sse"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        status, payload, content_type = self.server.owner.handle(self.path, raw, self.headers)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        payload = json.dumps({"object": "list", "data": [{"id": "weak", "object": "model"}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload.encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: WeakModelServer


class WeakModelServer:
    """Start with ``with``; ``base_url`` is what ``[providers.NAME] base_url`` gets."""

    def __init__(self, policy: Policy | None = None, *, upstream: str | None = None) -> None:
        if (policy is None) == (upstream is None):
            raise ValueError("give a policy or an upstream base URL, not both")
        self.policy = policy
        self.upstream = upstream.rstrip("/") if upstream else None
        self.requests = 0
        self.transcript: list[str] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def mark(self) -> tuple[int, int]:
        """Where the counters stand (to take one task's share afterwards)."""
        with self._lock:
            return self.requests, len(self.transcript)

    def handle(self, path: str, raw: bytes, headers: Any) -> tuple[int, bytes, str]:
        with self._lock:
            self.requests += 1
        if self.upstream is not None:
            return self._relay(path, raw, headers)
        assert self.policy is not None
        try:
            body = json.loads(raw)
            response, line = self.policy.answer(body)
        except ServerRefusal as refusal:
            self._note(f"server: HTTP {refusal.status} {refusal.message}")
            error = {"error": {"message": refusal.message, "type": "invalid_request_error"}}
            return refusal.status, json.dumps(error).encode(), "application/json"
        self._note(line)
        if body.get("stream"):
            return 200, sse(response, usage="stream_options" in body), "text/event-stream"
        return 200, json.dumps(response).encode(), "application/json"

    def _note(self, line: str) -> None:
        with self._lock:
            self.transcript.append(line)

    def _relay(self, path: str, raw: bytes, headers: Any) -> tuple[int, bytes, str]:
        assert self.upstream is not None
        suffix = path.split("/v1", 1)[-1] if "/v1" in path else path
        forwarded = {
            key: value
            for key, value in headers.items()
            if key.lower() in ("authorization", "content-type", "accept", "api-key")
        }
        request = urllib.request.Request(
            self.upstream + suffix, data=raw, headers=forwarded, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=3600) as response:
                status, payload = response.status, response.read()
                content_type = response.headers.get("Content-Type", "application/json")
        except urllib.error.HTTPError as error:
            status, payload = error.code, error.read()
            content_type = error.headers.get("Content-Type", "application/json")
        self._note(_summary(status, payload))
        return status, payload, content_type


def sse(response: dict[str, Any], *, usage: bool, piece: int = 24) -> bytes:
    """``response`` (a chat.completion) as the stream of chunks a server sends, the text and
    each call's arguments cut into ``piece``-character deltas."""
    choice = response["choices"][0]
    message = choice["message"]
    base = {key: response[key] for key in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        body = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(body)}\n\n"

    frames = [chunk({"role": "assistant", "content": ""})]
    content = message.get("content") or ""
    frames += [chunk({"content": content[i : i + piece]}) for i in range(0, len(content), piece)]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        head = {"index": index, "id": call["id"], "type": "function"}
        frames.append(chunk({"tool_calls": [{**head, "function": {"name": function["name"]}}]}))
        arguments = function["arguments"]
        for i in range(0, len(arguments), piece):
            part = {"index": index, "function": {"arguments": arguments[i : i + piece]}}
            frames.append(chunk({"tool_calls": [part]}))
    frames.append(chunk({}, choice["finish_reason"]))
    if usage:
        totals = {**base, "choices": [], "usage": response["usage"]}
        frames.append(f"data: {json.dumps(totals)}\n\n")
    frames.append("data: [DONE]\n\n")
    return "".join(frames).encode()


def _summary(status: int, payload: bytes) -> str:
    """One line on what a real model answered."""
    if status != 200:
        return f"server: HTTP {status} {payload[:120]!r}"
    try:
        message = json.loads(payload)["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return f"answer: {payload[:120]!r}"
    calls = message.get("tool_calls") or []
    if calls:
        return "calls: " + "; ".join(
            f"{c['function']['name']} {c['function']['arguments'][:80]}" for c in calls
        )
    return f"text: {(message.get('content') or '')[:120]!r}"
