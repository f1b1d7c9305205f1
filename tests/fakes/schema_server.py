"""OpenAI-compatible fakes for servers without native tool calls.

:class:`SchemaEnforcingServer` behaves like llama.cpp's server with a grammar: it refuses
requests that carry ``tools`` or tool messages (a chat template without tool support), insists on
a ``json_schema`` ``response_format``, and answers each turn with the scripted JSON only if that
JSON matches the schema the request sent (a scripted answer the schema forbids fails the test:
a constrained server could never produce it).

:class:`CapabilityServer` answers from what it is able to do rather than from a script, as
``subagents models check`` finds servers: native tool calls (one or two per answer), JSON-schema
answers (a minimal instance of the schema sent, as a grammar-constrained model would write),
or plain text whatever was asked.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from jsonschema import Draft202012Validator

from fakes.http_server import PlannedReply, RecordedRequest
from fakes.openai_server import FakeOpenAIServer, completion

__all__ = ["CapabilityServer", "SchemaEnforcingServer", "minimal_instance"]


def _refusal(status: int, message: str) -> PlannedReply:
    return PlannedReply(status=status, json_body={"error": {"message": message, "code": status}})


class SchemaEnforcingServer(FakeOpenAIServer):
    def __init__(self) -> None:
        super().__init__()
        self._answers: deque[Any] = deque()
        self.refused: list[str] = []

    def answer(self, value: Any) -> None:
        """Script the JSON the model writes on its next turn."""
        self._answers.append(value)

    @property
    def unused_answers(self) -> int:
        return len(self._answers)

    def record(self, request: RecordedRequest) -> PlannedReply:
        with self._lock:
            self.requests.append(request)
            body = request.json()
            problem = _unsupported(body)
            if problem is not None:
                self.refused.append(problem)
                return _refusal(400, problem)
            schema = body["response_format"]["json_schema"]["schema"]
            if not self._answers:
                return _refusal(418, "fake server: no answer scripted for this request")
            answer = self._answers.popleft()
        errors = sorted(Draft202012Validator(schema).iter_errors(answer), key=str)
        if errors:
            # 418 is retried by nobody: the test fails at once, naming the broken answer
            return _refusal(418, f"scripted answer breaks the schema: {errors[0].message}")
        return PlannedReply(json_body=completion(json.dumps(answer)))


def _unsupported(body: dict[str, Any]) -> str | None:
    if "tools" in body or "tool_choice" in body:
        return "this server does not support tools"
    for message in body.get("messages", []):
        if message.get("role") == "tool" or message.get("tool_calls"):
            return "the chat template has no tool messages"
    response_format = body.get("response_format") or {}
    if response_format.get("type") != "json_schema":
        return "this fake only answers requests with a json_schema response_format"
    Draft202012Validator.check_schema(response_format["json_schema"]["schema"])
    return None


class CapabilityServer(FakeOpenAIServer):
    """A server whose answers follow from its abilities; ``requests`` records what was asked."""

    def __init__(
        self, *, native_tools: bool, parallel: bool = False, json_schema: bool = False
    ) -> None:
        super().__init__()
        self.native_tools = native_tools
        self.parallel = parallel
        self.json_schema = json_schema

    def record(self, request: RecordedRequest) -> PlannedReply:
        with self._lock:
            self.requests.append(request)
        body = request.json()
        if "tools" in body:
            if not self.native_tools:
                return _refusal(400, "tools are not supported by this server")
            tool = body["tools"][0]["function"]
            arguments = json.dumps(minimal_instance(tool["parameters"]))
            count = 2 if self.parallel else 1
            calls = [(f"call_{n}", tool["name"], arguments) for n in range(count)]
            return PlannedReply(
                json_body=completion(None, tool_calls=calls, finish_reason="tool_calls")
            )
        response_format = body.get("response_format")
        if self.json_schema and response_format is not None:
            schema = response_format["json_schema"]["schema"]
            return PlannedReply(json_body=completion(json.dumps(minimal_instance(schema, schema))))
        return PlannedReply(json_body=completion("Hello! How can I help you today?"))


def minimal_instance(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """The smallest value ``schema`` accepts (first branch of a choice, required properties
    only), as a grammar-constrained model that stops as soon as it may would write."""
    root = schema if root is None else root
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        return minimal_instance(root["$defs"][name], root)
    for choice in ("anyOf", "oneOf"):
        if choice in schema:
            return minimal_instance(schema[choice][0], root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if kind == "object":
        properties = schema.get("properties", {})
        return {
            name: minimal_instance(properties[name], root) for name in schema.get("required", [])
        }
    if kind == "array":
        item = schema.get("items", {})
        return [minimal_instance(item, root) for _ in range(schema.get("minItems", 0))]
    if kind in ("integer", "number"):
        return max(1, schema.get("minimum", 1))
    return {"string": "Paris", "boolean": True}.get(kind)
