"""Generators of hostile input for every file and value subagents reads from outside.

Each generator takes a :class:`random.Random` and returns text (or a value), so the same seed
gives the same input: the fuzz runner draws seeds itself, the test suite lets hypothesis draw
them (``st.randoms()``). The shapes come from a small grammar of what parsers trip on: YAML
anchors and aliases (bombs, chains, cycles, merge keys), deep nesting in every syntax, numbers
that are slow or impossible to convert, impossible dates, odd tags, long lines and keys,
control characters and lone surrogates, plus byte-level mutations of real files.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "AGENT_KEYS",
    "agent_file",
    "alias_bomb",
    "config_toml",
    "deep_json_text",
    "deep_value",
    "dumps",
    "json_value",
    "mcp_file",
    "mutate",
    "record_data",
    "tool_arguments_text",
    "yaml_document",
]

AGENT_KEYS = [
    "name", "description", "tools", "disallowedTools", "model", "maxTurns", "max_turns",
    "permissionMode", "mcpServers", "color", "background", "temperature", "skills", "hooks",
    "memory", "effort", "isolation", "initialPrompt", "prompt", "developer_instructions",
]  # fmt: skip
_WORDS = [
    "Read", "Grep", "Bash", "Task", "Agent(explore)", "mcp__x__y", "sonnet", "inherit",
    "openai:gpt-4o", "yes", "no", "on", "null", "~", "true", "-", "?", ":", "#", "*",
]  # fmt: skip
_ODD_TEXT = ["\x00", "\x1b[31m", "\ud800", "\u2028", "\ufeff", "é", "𝔘", "\t", "\r", "\\", '"', "'"]
_SCALARS: list[Callable[[random.Random], str]] = [
    lambda r: r.choice(_WORDS),
    lambda r: str(r.randint(-(2**70), 2**70)),
    lambda r: "1" * r.choice([10, 1_000, 4_400, 5_000]),  # PyYAML: ValueError past 4,300 digits
    lambda r: "1" + ":00" * r.choice([3, 500, 20_000]),  # sexagesimal: quadratic in PyYAML
    lambda r: "0x" + "f" * r.choice([4, 900, 5_000]),
    lambda r: r.choice(["2024-13-45", "2024-02-30", "2024-01-01", "2001-12-14t21:59:43.10-05:00"]),
    lambda r: r.choice([".inf", "-.inf", ".nan", "1e999", "0o17", "0b101", "1_000", "+12"]),
    lambda r: "!!binary " + r.choice(["aGVsbG8=", "not base64!", "===="]),
    lambda r: r.choice(["!!set {a, b}", "!!omap [a: 1]", "!!python/object:os.system x", "!foo x"]),
    lambda r: json.dumps(_text(r, 20)),
    lambda r: "'" + _text(r, 20).replace("'", "''") + "'",
    lambda r: "a: b: c",
    lambda r: "x" * r.choice([1, 100, 70_000]),
]


def _text(rng: random.Random, size: int) -> str:
    pool = string.ascii_letters + string.digits + " :-#,[]{}&*!|>'\"%@`"
    return "".join(
        rng.choice(pool) if rng.random() < 0.9 else rng.choice(_ODD_TEXT)
        for _ in range(rng.randint(0, size))
    )


def yaml_document(rng: random.Random, keys: Sequence[str] = AGENT_KEYS) -> str:
    """A YAML mapping of a few keys, each value drawn from the grammar."""
    lines: list[str] = []
    anchors: list[str] = []
    for _ in range(rng.randint(0, 8)):
        key = rng.choice(keys) if rng.random() < 0.8 else _text(rng, 12) or "k"
        lines.extend(_yaml_entry(rng, key, anchors))
    return "\n".join(lines)


def _yaml_entry(rng: random.Random, key: str, anchors: list[str]) -> list[str]:
    shape = rng.random()
    if shape < 0.35:
        return [f"{key}: {rng.choice(_SCALARS)(rng)}"]
    if shape < 0.5:
        items = [rng.choice(_SCALARS)(rng)[:50] for _ in range(rng.randint(0, 4))]
        return [f"{key}:", *(f"  - {item}" for item in items)]
    if shape < 0.6:
        name = f"a{len(anchors)}"
        anchors.append(name)
        return [f"{key}: &{name} [{', '.join(rng.choice(_WORDS) for _ in range(3))}]"]
    if shape < 0.7 and anchors:
        return [f"{key}: *{rng.choice(anchors)}"]
    if shape < 0.75 and anchors:
        return [f"{key}:", f"  <<: *{rng.choice(anchors)}"]
    if shape < 0.8:
        depth = rng.choice([5, 99, 100, 101, 3_000])
        return [f"{key}: " + "[" * depth + "]" * depth]
    if shape < 0.85:
        depth = rng.choice([5, 150, 1_000])
        return [f"{key}:", "  " + "- " * depth + "x"]
    if shape < 0.9:
        return [f"{key}: &self [1, *self]"]
    if shape < 0.95:
        return [f"{key}: |", *(f"  {_text(rng, 40)}" for _ in range(rng.randint(1, 3)))]
    return [f"{key}: {{{_text(rng, 30)}}}"]


def alias_bomb(rng: random.Random) -> str:
    """Levels of aliases, each referring to the previous level several times."""
    width, levels = rng.randint(2, 12), rng.randint(3, 30)
    style = rng.random()
    lines = ["b0: &b0 [" + ", ".join(['"lol"'] * width) + "]"]
    for level in range(1, levels + 1):
        refs = [f"*b{level - 1}"] * width
        if style < 0.5:
            lines.append(f"b{level}: &b{level} [" + ", ".join(refs) + "]")
        else:
            pairs = ", ".join(f"k{i}: {ref}" for i, ref in enumerate(refs))
            lines.append(f"b{level}: &b{level} {{{pairs}}}")
    lines.append(f"{rng.choice(AGENT_KEYS)}: *b{levels}")
    return "\n".join(lines)


def json_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 4 or roll < 0.45:
        return rng.choice([
            None, True, False, 0, -1, 2**64, 10**5000 if rng.random() < 0.05 else 1.5,
            float("inf"), _text(rng, 30), "", "x" * 10_000, rng.choice(_WORDS),
        ])  # fmt: skip
    if roll < 0.7:
        return [json_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {_text(rng, 8): json_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def deep_value(rng: random.Random) -> Any:
    """A nested list or object as deep as JSON's own reader allows (built without recursion)."""
    value: Any = rng.choice([1, "x", {}, []])
    for _ in range(rng.choice([50, 65, 300, 800])):
        value = [value] if rng.random() < 0.5 else {"k": value}
    return value


def deep_json_text(rng: random.Random) -> str:
    depth = rng.choice([50, 64, 65, 800, 5_000, 100_000])
    opening, closing = rng.choice([("[", "]"), ('{"k":', "}")])
    inner = opening * depth + rng.choice(["1", "{}", "[]"]) + closing * depth
    return inner if rng.random() < 0.5 else '{"file_path": "a", "x": ' + inner + "}"


def dumps(value: Any) -> str:
    """JSON text of ``value`` (``{}`` when it holds an integer too long to print)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except ValueError:  # an integer of more than 4,300 digits
        return "{}"


def agent_file(rng: random.Random, seeds: Sequence[bytes] = ()) -> tuple[str, bytes]:
    """``(suffix, content)`` of an agent file in one of the dialects."""
    roll = rng.random()
    if seeds and roll < 0.35:
        return ".md", mutate(rng, rng.choice(seeds))
    if roll < 0.75:
        front = alias_bomb(rng) if rng.random() < 0.2 else yaml_document(rng)
        body = _text(rng, 60) if rng.random() < 0.8 else ""
        return ".md", f"---\n{front}\n---\n{body}\n".encode("utf-8", "surrogatepass")
    if roll < 0.88:
        return ".toml", _toml_text(rng, AGENT_KEYS).encode("utf-8", "surrogatepass")
    value: Any = {key: json_value(rng, 1) for key in rng.sample(AGENT_KEYS, rng.randint(0, 6))}
    text = deep_json_text(rng) if rng.random() < 0.2 else dumps(value)
    return ".json", text.encode("utf-8", "surrogatepass")


def _toml_value(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.2:
        return str(rng.randint(-(2**70), 2**70))
    if roll < 0.35:
        return json.dumps(_text(rng, 30))
    if roll < 0.45:
        return rng.choice(["true", "false", "inf", "nan", "1979-05-27T07:32:00Z", "1e400"])
    if roll < 0.55:
        depth = rng.choice([3, 100, 400, 5_000])
        return "[" * depth + "]" * depth
    if roll < 0.65:
        return "[" + ", ".join(["1"] * rng.choice([3, 10_000])) + "]"
    if roll < 0.75:
        return '"""\n[' + " " * rng.choice([10, 5_000]) + 'a\n"""'
    if roll < 0.85:
        return (
            "{" + ", ".join(f"k{i} = {rng.randint(0, 9)}" for i in range(rng.randint(0, 3))) + "}"
        )
    return json.dumps(rng.choice(_WORDS))


def _toml_text(rng: random.Random, keys: Sequence[str]) -> str:
    lines = [f"{rng.choice(keys)} = {_toml_value(rng)}" for _ in range(rng.randint(0, 6))]
    return "\n".join(lines)


_CONFIG_TABLES: dict[str, list[str]] = {
    "subagents": ["enabled", "default_model", "discovery", "agents", "disabled", "max_depth",
                  "max_concurrent", "max_turns", "interrupted_tool_calls", "unknown_key"],
    "models": ["sonnet", "fast", "x" * 300],
    "providers.openai": ["base_url", "api_key_env", "api_key", "timeout", "bogus"],
    "retention": ["default_days", "by_task", "by_status"],
    "[hooks.PreToolUse]": ["matcher", "command", "timeout"],
}  # fmt: skip


def config_toml(rng: random.Random) -> str:
    """A ``config.toml``: known tables and keys with hostile values, or stray ones."""
    parts: list[str] = []
    for _ in range(rng.randint(0, 4)):
        table = rng.choice([*_CONFIG_TABLES, _text(rng, 10) or "t"])
        keys = _CONFIG_TABLES.get(table, ["k"])
        parts.append(f"[{table}]")  # "[hooks.PreToolUse]" becomes an array of tables
        parts.append(_toml_text(rng, keys))
    text = "\n".join(parts)
    return (
        mutate(rng, text.encode("utf-8", "surrogatepass")).decode("utf-8", "replace")
        if (rng.random() < 0.2)
        else text
    )


_SERVER_KEYS = ["command", "args", "env", "cwd", "url", "type", "headers", "timeout_seconds",
                "startup_timeout_seconds", "enabled", "bogus"]  # fmt: skip


def mcp_file(rng: random.Random) -> tuple[str, str]:
    """``(suffix, text)`` of a ``.mcp.json`` or an ``mcp_servers.yaml``."""
    if rng.random() < 0.5:
        servers: Any = {
            _text(rng, 10) or "s": {
                key: json_value(rng, 2) if rng.random() < 0.5 else "${" + _text(rng, 6) + "}"
                for key in rng.sample(_SERVER_KEYS, rng.randint(0, 5))
            }
            for _ in range(rng.randint(0, 3))
        }
        raw: Any = {"mcpServers": servers} if rng.random() < 0.9 else json_value(rng)
        text = deep_json_text(rng) if rng.random() < 0.15 else dumps(raw)
        return ".json", text
    body = alias_bomb(rng) if rng.random() < 0.25 else yaml_document(rng, _SERVER_KEYS)
    indented = "\n".join("    " + line for line in body.splitlines())
    return ".yaml", f"mcpServers:\n  {_text(rng, 8) or 's'}:\n{indented}\n"


def tool_arguments_text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.3:
        return deep_json_text(rng)
    if roll < 0.6:
        return dumps({_text(rng, 10): json_value(rng, 1) for _ in range(rng.randint(0, 4))})
    if roll < 0.8:
        return mutate(rng, b'{"file_path": "a.txt", "content": "x"}').decode("utf-8", "replace")
    return _text(rng, 200)


def record_data(rng: random.Random, fields: Sequence[str]) -> Any:
    """A decoded JSON object shaped like a record: its own field names, hostile values."""
    if rng.random() < 0.1:
        return json_value(rng)
    data = {name: json_value(rng, 2) for name in fields if rng.random() < 0.7}
    if rng.random() < 0.3:
        data["schema_version"] = rng.choice([0, 1, 2, 10**100, "1", None])
    if rng.random() < 0.3:
        data["id"] = rng.choice(["../../x", "..", "", "a/b", "ok-id", "x" * 500])
    return data


_INTERESTING = [
    b"&a ", b"*a", b"[", b"]", b"{", b"}", b": ", b"\n- ", b"---\n", b"\x00", b"\xff",
    b"\xed\xa0\x80", b"!!binary ", b"<<: ", b'"', b"'", b"\t", b"\r\n", b"#",
]  # fmt: skip


def mutate(rng: random.Random, data: bytes) -> bytes:
    """A few random edits of ``data``: flips, insertions, deletions, duplications."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        where = rng.randint(0, len(out))
        roll = rng.random()
        if roll < 0.3:
            out[where:where] = rng.choice(_INTERESTING)
        elif roll < 0.5 and out:
            del out[where : where + rng.randint(1, 40)]
        elif roll < 0.65 and out:
            index = min(where, len(out) - 1)
            out[index] = rng.randrange(256)
        elif roll < 0.8 and out:
            chunk = out[where : where + rng.randint(1, 200)]
            out[where:where] = chunk * rng.randint(1, 50)
        else:
            out[where:where] = _text(rng, 30).encode("utf-8", "surrogatepass")
    return bytes(out)


_RULES = [
    "Bash", "Bash(git push *)", "Bash(npm run test:*)", "Bash(", "Bash()", "Read(./.env)",
    "Edit(src/**)", "Edit(//etc/**)", "Edit(~/x)", "WebFetch(domain:example.com)",
    "WebFetch(domain:)", "Agent(explore, plan)", "mcp__s__t", "mcp__", "Skill(x:*)", "(", ")",
    "Bash(" + "(" * 200 + ")", "Read(" + "*" * 300 + ")", "Bash(" + "a && " * 200 + "b)",
]  # fmt: skip


def settings_json(rng: random.Random) -> str:
    """A ``.claude/settings.json``: mostly Claude Code's shape, sometimes not."""
    if rng.random() < 0.2:
        return deep_json_text(rng) if rng.random() < 0.5 else _text(rng, 80)
    rules = {
        behavior: [rng.choice(_RULES) if rng.random() < 0.8 else json_value(rng, 2)
                   for _ in range(rng.randint(0, 6))]
        for behavior in rng.sample(["allow", "ask", "deny", "defaultMode", "x"], rng.randint(0, 4))
    }  # fmt: skip
    value: Any = {"permissions": rules} if rng.random() < 0.9 else json_value(rng)
    return dumps(value)


def skill_file(rng: random.Random, seeds: Sequence[bytes] = ()) -> bytes:
    """A ``SKILL.md``: frontmatter with a skill's keys (or an agent's), then instructions."""
    if seeds and rng.random() < 0.2:
        return mutate(rng, rng.choice(seeds))
    keys = ["name", "description", "allowed-tools", "disable-model-invocation", "model", "x"]
    front = alias_bomb(rng) if rng.random() < 0.1 else yaml_document(rng, keys)
    return f"---\n{front}\n---\n{_text(rng, 80)} $ARGUMENTS\n".encode("utf-8", "surrogatepass")


def instructions_file(rng: random.Random) -> str:
    """A ``CLAUDE.md`` with ``@imports`` (of itself, of parents, of absent or far files)."""
    imports = ["@CLAUDE.md", "@./AGENTS.md", "@../x.md", "@~/.ssh/id_rsa", "@/etc/passwd",
               "@" + "a/" * 300, "@", "`@CLAUDE.md`", "```\n@AGENTS.md\n```", "@@x"]  # fmt: skip
    lines = [rng.choice(imports) if rng.random() < 0.4 else _text(rng, 60) for _ in range(20)]
    return "\n".join(lines)
