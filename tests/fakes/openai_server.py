"""A fake OpenAI Chat Completions server (``POST /v1/chat/completions``).

Plan replies with :meth:`FakeOpenAIServer.reply_text`, ``reply_tool_calls``, ``reply_stream``,
``reply_error`` (or any :class:`PlannedReply`); the SDK's ``base_url`` is ``server.base_url``.
"""

from __future__ import annotations

from typing import Any

from fakes.http_server import FakeHTTPServer, PlannedReply, RecordedRequest, sse_frame

__all__ = ["FakeOpenAIServer", "chunk", "completion", "streamed", "usage"]


def usage(prompt: int = 11, completion_tokens: int = 7, cached: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def completion(
    content: str | None = None,
    *,
    tool_calls: list[tuple[str, str, str]] | None = None,
    finish_reason: str = "stop",
    usage_body: dict[str, Any] | None = None,
    model: str = "gpt-test",
) -> dict[str, Any]:
    """A chat.completion body; ``tool_calls`` are (id, name, raw arguments JSON text)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            for call_id, name, args in tool_calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage_body if usage_body is not None else usage(),
    }


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    usage_body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One chat.completion.chunk; a chunk with only ``usage_body`` has no choices."""
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-test",
        "choices": [],
    }
    if delta is not None or finish_reason is not None:
        body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}]
    if usage_body is not None:
        body["usage"] = usage_body
    return body


def streamed(body: dict[str, Any], *, with_usage: bool) -> list[dict[str, Any]]:
    """The chunks a server streams for the chat.completion ``body``."""
    (choice,) = body["choices"]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant"}
    if message.get("content"):
        delta["content"] = message["content"]
    if message.get("tool_calls"):
        delta["tool_calls"] = [
            {"index": index, **call} for index, call in enumerate(message["tool_calls"])
        ]
    chunks = [chunk(delta), chunk(finish_reason=choice["finish_reason"])]
    if with_usage:
        chunks.append(chunk(usage_body=body["usage"]))
    return chunks


class FakeOpenAIServer(FakeHTTPServer):
    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def shaped(self, request: RecordedRequest, reply: PlannedReply) -> PlannedReply:
        body = reply.json_body
        if reply.status != 200 or not isinstance(body, dict):
            return reply
        if body.get("object") != "chat.completion" or not request.json().get("stream"):
            return reply
        with_usage = bool((request.json().get("stream_options") or {}).get("include_usage"))
        frames = [sse_frame(item) for item in streamed(body, with_usage=with_usage)]
        frames.append(sse_frame("[DONE]"))
        return PlannedReply(
            sse_frames=frames, headers=reply.headers, delay_seconds=reply.delay_seconds
        )

    def reply_text(self, text: str, **kwargs: Any) -> None:
        self.plan(PlannedReply(json_body=completion(text, **kwargs)))

    def reply_tool_calls(self, calls: list[tuple[str, str, str]], text: str | None = None) -> None:
        body = completion(text, tool_calls=calls, finish_reason="tool_calls")
        self.plan(PlannedReply(json_body=body))

    def reply_stream(self, chunks: list[dict[str, Any]], *, drop_after: int | None = None) -> None:
        frames = [sse_frame(item) for item in chunks]
        if drop_after is None:
            frames.append(sse_frame("[DONE]"))
        self.plan(PlannedReply(sse_frames=frames, drop_after=drop_after))

    def reply_error(
        self, status: int, message: str, *, headers: dict[str, str] | None = None
    ) -> None:
        body = {"error": {"message": message, "type": "test_error", "code": None}}
        self.plan(PlannedReply(status=status, json_body=body, headers=headers or {}))

    def reply_slowly(self, seconds: float) -> None:
        """Answer nothing for ``seconds`` (the client should time out first)."""
        self.plan(PlannedReply(json_body=completion("too late"), delay_seconds=seconds))
