"""An OpenAI-compatible Chat Completions server whose every answer is computed from the
conversation it is sent (a policy), not planned in order: for runs carried out by other
processes (workers), many at once and in any order.

The policy here drives a two-level delegation: the main agent hands the prompt to the
``middle`` agent (which has Bash too, only so that it may hand Bash on), which hands it to
``leaf``, which runs one side-effecting Bash command (``LEAF_COMMAND``, formatted with the
run's label, the first word of the prompt, and its pause, ``pause=SECONDS`` in the prompt or
0.2); then each answers with what it got. An agent is
told apart by the ``ROLE: <name>`` line its file's body puts in its system prompt; the main
agent has none.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["LEAF_COMMAND", "PolicyServer", "agent_files", "policy_reply"]

LEAF_COMMAND = "sleep {pause}; echo {label} >> effects.log"


def agent_files() -> dict[str, str]:
    """The agent files of the delegation (path under the project -> text)."""
    return {
        ".subagents/agents/middle.md": (
            "---\nname: middle\ndescription: Hands work to the leaf agent.\n"
            "tools: Task, Bash\n---\nROLE: middle\n"
        ),
        ".subagents/agents/leaf.md": (
            "---\nname: leaf\ndescription: Records an effect.\ntools: Bash\n---\nROLE: leaf\n"
        ),
    }


def policy_reply(body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message the policy answers ``body`` (a chat.completions request) with."""
    messages = body.get("messages", [])
    system = " ".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    role = "main"
    for candidate in ("middle", "leaf"):
        if f"ROLE: {candidate}" in system:
            role = candidate
    prompt = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
    results = [str(m.get("content") or "") for m in messages if m.get("role") == "tool"]
    if results:  # the subagent's answer, without the line naming who answered
        answer = re.sub(r'^The [\w-]+ agent \(".*?"\) answered:\n', "", results[-1])
        return {"role": "assistant", "content": f"{role} done: {answer[:200]}"}
    label = prompt.split()[0] if prompt.split() else "run"
    if role == "leaf":
        found = re.search(r"pause=([0-9.]+)", prompt)
        pause = float(found.group(1)) if found else 0.2
        name, arguments = "Bash", {"command": LEAF_COMMAND.format(pause=pause, label=label)}
    else:
        target = "middle" if role == "main" else "leaf"
        name = "Task"
        arguments = {"description": f"to {target}", "prompt": prompt, "subagent_type": target}
    call_id = f"call_{role}_{len(messages)}"
    function = {"name": name, "arguments": json.dumps(arguments)}
    call = {"id": call_id, "type": "function", "function": function}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        message = policy_reply(body)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        payload = {
            "id": "chatcmpl-policy",
            "object": "chat.completion",
            "created": 1700000000,
            "model": body.get("model", "policy"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class PolicyServer:
    """The server on a free port of 127.0.0.1, in a thread, while the ``with`` block runs."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def config_toml(self, *, interrupted: str = "fail") -> str:
        """A project config that makes ``policy:policy`` the default model."""
        return (
            f'[subagents]\ndefault_model = "policy:policy"\n'
            f'interrupted_tool_calls = "{interrupted}"\n\n'
            f'[providers.policy]\nbase_url = "{self.base_url}"\n'
            'tool_calls = "auto"\n'  # it answers with native calls (127.0.0.1: schema else)
        )

    def __enter__(self) -> PolicyServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
