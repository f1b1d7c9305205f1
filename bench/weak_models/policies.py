"""Scripted weak models: each policy turns one Chat Completions request into one answer.

Every policy decides from the request alone, as a model would: the messages (its instruction,
its earlier calls, the results and errors it got back, notes appended to them), the tools it
is offered (``tools``, or the tools a ``response_format`` schema allows, or the tools a text-
mode system prompt lists) and the agents the Task tool lists. No policy is told which version
of ``subagents`` it is talking to. Choices that vary (which malformation, which name casing)
come from a generator seeded by the policy, the instruction and the turn, so that a run is
repeatable.

Underneath every policy is the same competent plan. The main agent reads its prompt for the
subagent to use (named, or picked by description) and the place to look, calls ``Task``, and
answers with the word the subagent reports. A subagent greps a folder (or a file, with Grep
only) or reads a file, then reports the word. A policy changes what is sent (:class:`Policy`
subclasses below), the way real 1.5B-8B models served by llama.cpp or Ollama do.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

__all__ = ["POLICIES", "Call", "Policy", "Reply", "Request", "ServerRefusal", "policy_named"]

Wire = Literal["native", "schema", "text"]

_AGENTS_HEADING = "Available agents (subagent_type: what it is for):"
_SECRET = re.compile(r"secret word is:?\s*\**([a-z]{4,})", re.IGNORECASE)
_ERROR = re.compile(r'^\s*error\b|\[[\w-]+ failed\]|status="error"', re.IGNORECASE | re.MULTILINE)
_HARNESS_LINE = re.compile(r"\n\n\(subagents: [^\n]*\)")
_LOOP_NOTE = re.compile(r"do something different|made this exact call", re.IGNORECASE)
_NAMED_AGENT = re.compile(r"\bUse the ([A-Za-z0-9_-]+) subagent")
_DESCRIBED_AGENT = re.compile(r"\bAsk the subagent that (.+?) to find")
_TARGET = re.compile(r"secret word (?:somewhere under|in) (\S+?)[,.]?(?:\s|$)")
_TEXT_TOOL_HEADING = re.compile(r"^## ([A-Za-z][\w-]*)\s*$", re.MULTILINE)
_TAG_NAME = re.compile(r'"name"\s*:\s*"([^"]+)"')


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Reply:
    text: str


Action = Call | Reply


class ServerRefusal(Exception):
    """The server refuses the request (HTTP ``status``), as some local servers do."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(slots=True)
class Request:
    """What the model sees in one request, whatever form the client sent it in."""

    body: dict[str, Any]
    wire: Wire
    offered: list[str]
    instruction: str
    own_calls: list[str] = field(default_factory=list)  # names of its earlier calls
    feedback: list[str] = field(default_factory=list)  # what came back after each answer
    agents: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, body: dict[str, Any]) -> Request:
        messages = body.get("messages") or []
        tools = body.get("tools") or []
        response_format = body.get("response_format") or {}
        system = "\n".join(_text(m) for m in messages if m.get("role") == "system")
        offered: list[str]
        wire: Wire
        if tools:
            wire = "native"
            offered = [tool["function"]["name"] for tool in tools]
        elif response_format.get("type") == "json_schema":
            wire = "schema"
            schema = response_format["json_schema"]["schema"]
            offered = [
                branch["properties"]["tool"]["const"]
                for branch in schema.get("anyOf", [])
                if "tool" in branch.get("properties", {})
            ]
        else:
            wire = "text"
            tools_part = system.split("# Tools", 1)[1] if "# Tools" in system else ""
            offered = _TEXT_TOOL_HEADING.findall(tools_part)
        request = cls(body=body, wire=wire, offered=offered, instruction="")
        seen_user = False
        for message in messages:
            role = message.get("role")
            if role == "assistant":
                request.own_calls += _call_names(message)
                request.feedback.append("")
            elif role in ("user", "tool"):
                if not seen_user and role == "user":
                    seen_user = True
                    request.instruction = _text(message)
                    continue
                if request.feedback:
                    request.feedback[-1] += "\n" + _text(message)
        everything = json.dumps(body, ensure_ascii=False).replace("\\n", "\n")
        if _AGENTS_HEADING in everything:
            listing = everything.split(_AGENTS_HEADING, 1)[1]
            for line in listing.splitlines()[1:]:
                match = re.match(r"- ([a-z0-9][a-z0-9_-]*): (.*)", line.strip())
                if match is None:
                    break
                request.agents[match.group(1)] = match.group(2)
        return request

    @property
    def is_main_agent(self) -> bool:
        """The main agent's prompt asks for a subagent; a subagent's prompt does not (the
        harness's lines after it may quote the user's)."""
        return "subagent" in _HARNESS_LINE.sub("", self.instruction)

    @property
    def latest(self) -> str:
        return self.feedback[-1] if self.feedback else ""

    def seen(self, pattern: re.Pattern[str]) -> bool:
        return any(pattern.search(text) for text in self.feedback)

    def offers(self, name: str) -> bool:
        return name in self.offered

    def rng(self, salt: str) -> random.Random:
        return random.Random(f"{salt}|{self.instruction}|{len(self.feedback)}")


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _call_names(message: dict[str, Any]) -> list[str]:
    calls = message.get("tool_calls") or []
    if calls:
        return [call["function"]["name"] for call in calls]
    text = _text(message)
    try:
        decoded = json.loads(text)
    except ValueError:
        return _TAG_NAME.findall(text)
    if isinstance(decoded, dict) and isinstance(decoded.get("tool"), str):
        return [decoded["tool"]]
    return []


# -- the competent plan ------------------------------------------------------------------------


def _same_name(written: str, name: str) -> bool:
    return re.sub(r"[_-]", "", written).lower() == name.lower()


def target_of(instruction: str) -> str | None:
    match = _TARGET.search(instruction)
    return match.group(1) if match else None


def chosen_agent(request: Request) -> str | None:
    named = _NAMED_AGENT.search(request.instruction)
    if named:
        return named.group(1)
    described = _DESCRIBED_AGENT.search(request.instruction)
    if described is None or not request.agents:
        return None
    words = set(re.findall(r"[a-z]+", described.group(1).lower()))

    def overlap(item: tuple[str, str]) -> int:
        name, description = item
        return len(words & set(re.findall(r"[a-z]+", f"{name} {description}".lower())))

    return max(request.agents.items(), key=overlap)[0]


def subtask(request: Request) -> str:
    return f"Find the secret word in {target_of(request.instruction)} and report it."


def delegation_call(request: Request) -> Call:
    return Call(
        "Task",
        {
            "description": "Find the secret word",
            "prompt": subtask(request),
            "subagent_type": chosen_agent(request) or "general-purpose",
        },
    )


def plan(request: Request) -> Action:
    """What a competent model does next."""
    found = next((m for t in request.feedback if (m := _SECRET.search(t))), None)
    if found is not None:
        return Reply(f"The secret word is {found.group(1)}.")
    if request.is_main_agent:
        delegated = request.own_calls and _same_name(request.own_calls[-1], "Task")
        if delegated and not _ERROR.search(request.latest):
            return Reply("The subagent did not report a secret word.")
        return delegation_call(request)
    target = target_of(request.instruction)
    if target is None:
        return Reply("I was not told where to look. What should I search?")
    if request.own_calls and not _ERROR.search(request.latest):
        return Reply(f"There is no secret word in {target}.")
    folder = target.endswith("/") or "." not in target.rsplit("/", 1)[-1]
    if request.offers("Read") and not folder:
        return Call("Read", {"file_path": target})
    if request.offers("Grep"):
        return Call("Grep", {"pattern": "secret word", "path": target, "output_mode": "content"})
    return Reply(f"I have no tool to search {target}.")


# -- how an answer is written ------------------------------------------------------------------


def completion(content: str | None, calls: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": args}}
            for n, (name, args) in enumerate(calls)
        ]
    return {
        "id": "chatcmpl-weak",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "weak",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70},
    }


def tool_call_tag(name: str, arguments: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'


class Policy:
    """A well-behaved model: the control. Subclasses misbehave in one way each."""

    name: ClassVar[str] = "control"
    about: ClassVar[str] = "well-behaved: native calls, valid JSON, right names"
    tool_calls: ClassVar[str | None] = None  # the [providers] tool_calls a user would set

    def answer(self, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The response body, and one line saying what was done (for the transcript)."""
        request = Request.parse(body)
        self.check_server(request)
        action = self.decide(request)
        role = "main" if request.is_main_agent else "sub"
        if isinstance(action, Reply):
            return self.reply(request, action.text), f"{role}: reply {action.text[:60]!r}"
        name = self.name_for(request, action.name)
        arguments = self.arguments_text(request, action)
        return self.call(request, name, arguments), f"{role}: {name} {arguments[:90]}"

    def check_server(self, request: Request) -> None:
        """Raise :class:`ServerRefusal` for a request this server cannot serve."""

    def decide(self, request: Request) -> Action:
        return plan(request)

    def name_for(self, request: Request, name: str) -> str:
        return name

    def arguments_text(self, request: Request, call: Call) -> str:
        return json.dumps(call.arguments)

    def reply(self, request: Request, text: str) -> dict[str, Any]:
        if request.wire == "schema":
            return completion(json.dumps({"reply": text}))
        return completion(text)

    def call(self, request: Request, name: str, arguments: str) -> dict[str, Any]:
        if request.wire == "schema":
            return completion(f'{{"tool": "{name}", "arguments": {arguments}}}')
        if request.wire == "text":
            return completion(tool_call_tag(name, arguments))
        return completion(None, [(name, arguments)])


class MissingSubagentType(Policy):
    name = "missing-type"
    about = "first Task call leaves out subagent_type; adds it once an error asks for it"

    def decide(self, request: Request) -> Action:
        action = plan(request)
        asked = request.seen(re.compile(r"subagent_type", re.IGNORECASE))
        if isinstance(action, Call) and action.name == "Task" and not asked:
            return Call("Task", {k: v for k, v in action.arguments.items() if k != "subagent_type"})
        return action


class EmptyPrompt(Policy):
    name = "empty-prompt"
    about = "first Task call puts the instruction in description and sends prompt ''"

    _ASKED = re.compile(r"\bprompt\b.{0,80}\b(empty|required|missing|blank)", re.IGNORECASE)

    def decide(self, request: Request) -> Action:
        action = plan(request)
        if isinstance(action, Call) and action.name == "Task" and not request.seen(self._ASKED):
            return Call("Task", {**action.arguments, "description": subtask(request), "prompt": ""})
        return action


class Looper(Policy):
    """Repeats one failing call: ``TaskCancel {"agent_id": AGENT}`` when TaskCancel is offered,
    else the agent's name called as if it were a tool."""

    name = "looper-recovers"
    about = (
        "repeats a failing call (TaskCancel on the agent, or the agent called as a tool) "
        "until a corrective note"
    )
    recovers: ClassVar[bool] = True

    def decide(self, request: Request) -> Action:
        action = plan(request)
        if not request.is_main_agent or not isinstance(action, Call):
            return action
        if self.recovers and request.seen(_LOOP_NOTE):
            return action
        agent = chosen_agent(request) or "general-purpose"
        if request.offers("TaskCancel"):
            return Call("TaskCancel", {"agent_id": agent})
        return Call(agent, {"prompt": subtask(request)})


class NeverRecovers(Looper):
    name = "looper-never"
    about = "repeats the same failing call whatever it is told"
    recovers = False


class MalformedArguments(Policy):
    name = "malformed-json"
    about = "argument JSON with single quotes, a trailing comma, no closing brace, Python True"

    def arguments_text(self, request: Request, call: Call) -> str:
        form = request.rng(self.name).choice(("quotes", "comma", "brace", "python"))
        text = json.dumps(call.arguments)
        if form == "python":
            extra = {"Task": ', "run_in_background": False', "Grep": ', "-i": True'}
            if call.name in extra:
                return text[:-1] + extra[call.name] + "}"
            return text[:-1] + ', "offset": None}' if call.name == "Read" else text[:-1] + ",}"
        if form == "quotes":
            return text.replace('"', "'")
        if form == "comma":
            return text[:-1] + ",}"
        return text[:-1]


class NameCasing(Policy):
    name = "name-case"
    about = "tool names in another case or snake_case: task, TASK, read, Grep_"

    def name_for(self, request: Request, name: str) -> str:
        snake = re.sub(r"(?<!^)([A-Z])", r"_\1", name)
        return request.rng(self.name).choice((name.lower(), name.upper(), snake.lower() + "_"))


class TextCalls(Policy):
    """Offered native tools, writes the call into its text instead."""

    name = "text-tag"
    about = "no native calls: <tool_call>{...}</tool_call> in the text"
    form: ClassVar[str] = "tag"

    def call(self, request: Request, name: str, arguments: str) -> dict[str, Any]:
        if self.form == "fenced":
            body = f'{{"name": "{name}", "arguments": {arguments}}}'
            return completion(f"I'll call the {name} tool.\n```json\n{body}\n```")
        if self.form == "mistral":
            return completion(f'[TOOL_CALLS][{{"name": "{name}", "arguments": {arguments}}}]')
        return completion(tool_call_tag(name, arguments))


class FencedCalls(TextCalls):
    name = "text-fenced"
    about = "no native calls: a fenced ```json block"
    form = "fenced"


class MistralCalls(TextCalls):
    name = "text-mistral"
    about = "no native calls: [TOOL_CALLS][{...}]"
    form = "mistral"


class MessyTextCalls(TextCalls):
    name = "text-messy"
    about = "no native calls, and inside the <tool_call>: a lower-case name, broken JSON"

    def name_for(self, request: Request, name: str) -> str:
        return name.lower()

    def arguments_text(self, request: Request, call: Call) -> str:
        return MalformedArguments().arguments_text(request, call)


class TextOnlyServer(Policy):
    name = "no-tools-server"
    about = "server refuses `tools` (HTTP 400); the model writes <tool_call> blocks"
    tool_calls = "text"

    def check_server(self, request: Request) -> None:
        if "tools" in request.body:
            raise ServerRefusal(400, "tools are not supported by this chat template")

    def call(self, request: Request, name: str, arguments: str) -> dict[str, Any]:
        return completion(tool_call_tag(name, arguments))


class MenuDistracted(Policy):
    name = "menu-distracted"
    about = "calls TaskOutput, then TaskCancel, on the agent when they are offered, before Task"

    def decide(self, request: Request) -> Action:
        action = plan(request)
        if not (isinstance(action, Call) and action.name == "Task"):
            return action
        agent = str(action.arguments["subagent_type"])
        for tempting in ("TaskOutput", "TaskCancel"):
            if request.offers(tempting) and tempting not in request.own_calls:
                return Call(tempting, {"agent_id": agent})
        return action


class SchemaOnlyServer(Policy):
    name = "schema-only-server"
    about = "llama.cpp with a grammar: refuses `tools` (400), honours response_format json_schema"
    tool_calls = "schema"

    def check_server(self, request: Request) -> None:
        if "tools" in request.body or "tool_choice" in request.body:
            raise ServerRefusal(400, "tools are not supported by this server")

    def decide(self, request: Request) -> Action:
        action = plan(request)
        if request.wire != "schema" and isinstance(action, Call):
            # no grammar: the model says what it would do, in prose
            return Reply(f"I would use the {action.name} tool to do this.")
        return action


POLICIES: tuple[Policy, ...] = (
    Policy(),
    MissingSubagentType(),
    EmptyPrompt(),
    Looper(),
    NeverRecovers(),
    MalformedArguments(),
    NameCasing(),
    TextCalls(),
    FencedCalls(),
    MistralCalls(),
    MessyTextCalls(),
    TextOnlyServer(),
    MenuDistracted(),
    SchemaOnlyServer(),
)


def policy_named(name: str) -> Policy:
    for policy in POLICIES:
        if policy.name == name:
            return policy
    known = ", ".join(policy.name for policy in POLICIES)
    raise KeyError(f"no policy {name!r}; known: {known}")
