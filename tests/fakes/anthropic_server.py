"""A fake Anthropic Messages server (``POST /v1/messages``).

Plan replies with :meth:`FakeAnthropicServer.reply_message`, ``reply_stream``, ``reply_error``
(or any :class:`PlannedReply`); the SDK's ``base_url`` is ``server.url``.
"""

from __future__ import annotations

from typing import Any

from fakes.http_server import FakeHTTPServer, PlannedReply, sse_frame

__all__ = [
    "CACHED",
    "FakeAnthropicServer",
    "cached",
    "message",
    "stream_events",
    "text_block",
    "tool_use_block",
]

CACHED = {"type": "ephemeral"}
"""The ``cache_control`` of a prompt-cache breakpoint."""


def cached(block: dict[str, Any]) -> dict[str, Any]:
    """``block`` as a request carries it where a cache breakpoint ends the prefix."""
    return {**block, "cache_control": CACHED}


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_use_block(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def message(
    blocks: list[dict[str, Any]],
    *,
    stop_reason: str = "end_turn",
    input_tokens: int = 20,
    output_tokens: int = 5,
    cache_read: int = 0,
    cache_write: int = 0,
) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write,
        },
    }


def stream_events(
    blocks: list[dict[str, Any]],
    *,
    stop_reason: str = "end_turn",
    input_tokens: int = 20,
    output_tokens: int = 5,
    cache_read: int = 0,
) -> list[tuple[str, dict[str, Any]]]:
    """The event sequence of a streamed message.

    Blocks are ``{"type": "text", "pieces": [...]}`` or
    ``{"type": "tool_use", "id", "name", "json_pieces": [...]}``.
    """
    start = message([], input_tokens=input_tokens, output_tokens=1, cache_read=cache_read)
    start["stop_reason"] = None
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            opening: dict[str, Any] = text_block("")
            deltas = [{"type": "text_delta", "text": piece} for piece in block["pieces"]]
        else:
            opening = tool_use_block(block["id"], block["name"], {})
            deltas = [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in block["json_pieces"]
            ]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


class FakeAnthropicServer(FakeHTTPServer):
    @property
    def base_url(self) -> str:
        return self.url

    def reply_message(self, blocks: list[dict[str, Any]], **kwargs: Any) -> None:
        self.plan(PlannedReply(json_body=message(blocks, **kwargs)))

    def reply_stream(
        self, events: list[tuple[str, dict[str, Any]]], *, drop_after: int | None = None
    ) -> None:
        frames = [sse_frame(data, event=name) for name, data in events]
        self.plan(PlannedReply(sse_frames=frames, drop_after=drop_after))

    def reply_error(
        self,
        status: int,
        message_text: str,
        *,
        error_type: str = "api_error",
        headers: dict[str, str] | None = None,
    ) -> None:
        body = {"type": "error", "error": {"type": error_type, "message": message_text}}
        self.plan(PlannedReply(status=status, json_body=body, headers=headers or {}))

    def reply_slowly(self, seconds: float) -> None:
        """Answer nothing for ``seconds`` (the client should time out first)."""
        body = message([text_block("too late")])
        self.plan(PlannedReply(json_body=body, delay_seconds=seconds))
