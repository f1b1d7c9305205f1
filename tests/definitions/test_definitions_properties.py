"""Property tests: no input makes the parsers raise, and every result is explained."""

from __future__ import annotations

import re
import string
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subagents.definitions import (
    NAME_PATTERN,
    AgentDefinition,
    frontmatter,
    parse_agent_file,
    parse_agent_mapping,
    parse_agent_text,
    render_markdown,
)
from subagents.definitions.fields import FIELD_SPELLINGS
from subagents.definitions.frontmatter import _fast_read

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`

FILE_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def check(d: AgentDefinition) -> None:
    """What every parse result must satisfy."""
    assert d.status in ("active", "invalid")
    if d.status == "invalid":
        assert d.validation_errors
        assert all(isinstance(e, str) and e.strip() for e in d.validation_errors)
    else:
        assert NAME_PATTERN.match(d.name)
        assert d.description.strip() and d.system_prompt.strip()
    d.model_dump_json()  # whatever was read can be reported as JSON


scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=True)
    | st.text(max_size=30)
)
yaml_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
known_keys = st.sampled_from(sorted(FIELD_SPELLINGS))
frontmatter_dicts = st.dictionaries(known_keys | st.text(max_size=12), yaml_values, max_size=8)


@given(data=st.binary(max_size=600))
@FILE_SETTINGS
def test_arbitrary_bytes_as_a_file(tmp_path: Path, data: bytes) -> None:
    for suffix in (".md", ".toml", ".json"):
        path = tmp_path / f"agent{suffix}"
        path.write_bytes(data)
        check(parse_agent_file(path, scope="project"))


@given(data=st.binary(max_size=300))
@FILE_SETTINGS
def test_arbitrary_bytes_after_a_good_frontmatter(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "agent.md"
    path.write_bytes(b"---\nname: a\ndescription: d\n---\n" + data)
    check(parse_agent_file(path))


@given(text=st.text(max_size=400), dialect=st.sampled_from(["markdown", "codex-toml", "json"]))
@settings(max_examples=300, deadline=None)
def test_arbitrary_text(text: str, dialect: Any) -> None:
    check(parse_agent_text(text, dialect=dialect))
    check(parse_agent_text("---\n" + text, dialect=dialect))


frontmatter_alphabet = st.sampled_from([*string.printable, "é", "—", "🦊", "\u2028", "\x85"])


@given(text=st.text(frontmatter_alphabet, max_size=300))
@settings(max_examples=300, deadline=None)
def test_arbitrary_frontmatter_text(text: str) -> None:
    check(parse_agent_text(f"---\n{text}\n---\nYou help.\n", dialect="markdown"))


@given(data=frontmatter_dicts, body=st.text(max_size=80))
@settings(max_examples=300, deadline=None)
def test_arbitrary_yaml_frontmatter(data: dict[str, Any], body: str) -> None:
    frontmatter = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    d = parse_agent_text(f"---\n{frontmatter}---\n{body}", dialect="markdown")
    check(d)


@given(data=frontmatter_dicts | yaml_values)
@settings(max_examples=200, deadline=None)
def test_arbitrary_mappings(data: Any) -> None:
    check(parse_agent_mapping(data, name="from-cli"))


# --- the fast frontmatter reader agrees with YAML ----------------------------------------------

simple_keys = st.sampled_from(["name", "description", "tools", "model", "x_y", "on", "Yes", "_k"])
tricky_text = st.text(
    st.sampled_from([*" abcXYZ019,.:#'\"\\-*&!|>%@`[]{}~", "é", "🦊", "\t", "\x85"]),
    max_size=12,
)
# Mostly values the fast reader should take, so that the comparison is exercised often.
plain_text = st.from_regex(r"[A-Za-z][A-Za-z0-9 ,./()*&!|>%@`é🦊-]{0,15}", fullmatch=True)
simple_values = st.one_of(
    plain_text,
    plain_text,
    plain_text.map(lambda v: f'"{v}"'),
    plain_text.map(lambda v: f"'{v}'"),
    tricky_text,
    tricky_text.map(lambda v: f'"{v}"'),
    tricky_text.map(lambda v: f"'{v}'"),
    st.sampled_from(["true", "No", "null", "OFF", "NULL", "yes please", "a: b", "a:b", "a #b"]),
)
simple_lines = st.lists(
    st.tuples(
        simple_keys,
        st.sampled_from([": ", ": ", ": ", ":  ", ":"]),
        simple_values,
        st.sampled_from(["", "", " ", "\t"]),
    ),
    max_size=6,
)


@given(lines=simple_lines, blank=st.sampled_from(["", "\n\n", "\n  \n", "\n\t\n", "\n\x0c\n"]))
@settings(max_examples=400, deadline=None)
def test_fast_reader_agrees_with_yaml(lines: list[tuple[str, str, str, str]], blank: str) -> None:
    text = "\n".join(f"{k}{sep}{v}{trail}" for k, sep, v, trail in lines) + blank
    fast = _fast_read(text)
    if fast is None:
        return
    loaded = yaml.safe_load(text)
    assert fast == (loaded or {})


def test_fast_reader_reads_yaml_booleans_and_null_as_yaml_does() -> None:
    text = "a: true\nb: Off\nc: NULL\nd: yes\ne: 'true'\nf: truly"
    assert _fast_read(text) == yaml.safe_load(text)
    assert _fast_read(text) == {
        "a": True,
        "b": False,
        "c": None,
        "d": True,
        "e": "true",
        "f": "truly",
    }
    assert _fast_read("yes: a") is None  # a key YAML reads as a boolean is left to YAML


# The fast reader's character classes as first written: YAML's printable characters on one line,
# spelled as the ranges they cover. The reader writes each as the few characters it leaves out
# (much cheaper to compile); both must accept exactly the same characters.
_HIGH = r"\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff"
SPELLED_CLASSES = {
    "_NOT_IN_DOUBLE": r"\x20\x21\x23-\x5b\x5d-\x7e" + _HIGH,  # no '"' nor backslash
    "_NOT_IN_SINGLE": r"\x20-\x26\x28-\x7e" + _HIGH,  # no "'"
    "_NOT_IN_PLAIN": r"\x20-\x22\x24-\x39\x3b-\x7e" + _HIGH,  # no '#' nor ':'
    "_NOT_VISIBLE": r"\x21-\x7e" + _HIGH,
}


def test_the_fast_readers_classes_accept_the_characters_spelled_out() -> None:
    every_character = "".join(map(chr, range(sys.maxunicode + 1)))
    for name, spelled in SPELLED_CLASSES.items():
        expected = re.findall(f"[{spelled}]", every_character)
        actual = re.findall(f"[^{getattr(frontmatter, name)}]", every_character)
        assert actual == expected, name


# --- render then parse gives the definition back -----------------------------------------------

names = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)
prose = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufeff") | st.just("\n"),
    min_size=1,
    max_size=60,
).filter(lambda s: s.strip() != "")
tool_names = st.lists(
    st.sampled_from(["Read", "Write", "Edit", "Glob", "Grep", "LS", "Bash", "Task", "mcp__x__*"]),
    unique=True,
    max_size=5,
)


@st.composite
def definitions(draw: st.DrawFn) -> AgentDefinition:
    prompt = draw(prose).strip()
    return AgentDefinition(
        name=draw(names),
        description=draw(prose),
        system_prompt=prompt,
        tools=draw(st.none() | tool_names.filter(bool)),
        disallowed_tools=draw(tool_names),
        model=draw(st.none() | st.sampled_from(["inherit", "haiku", "openai:gpt-4o", "gpt-4o"])),
        max_turns=draw(st.none() | st.integers(1, 500)),
        permission_mode=draw(st.none() | st.sampled_from(["default", "plan", "acceptEdits"])),
        mcp_servers=draw(st.lists(names, unique=True, max_size=3)),
        color=draw(st.none() | names),
        background=draw(st.booleans()),
        temperature=draw(st.none() | st.floats(0, 2)),
        extra=draw(st.dictionaries(names.map(lambda n: f"x-{n}"), scalars, max_size=3)),
    )


@given(d=definitions())
@settings(max_examples=300, deadline=None)
def test_render_then_parse_round_trips(d: AgentDefinition) -> None:
    back = parse_agent_text(render_markdown(d), dialect="markdown")
    fields = (
        "name",
        "description",
        "system_prompt",
        "tools",
        "disallowed_tools",
        "model",
        "max_turns",
        "permission_mode",
        "mcp_servers",
        "color",
        "background",
        "temperature",
    )
    assert {f: getattr(back, f) for f in fields} == {f: getattr(d, f) for f in fields}
    assert back.extra.keys() == d.extra.keys()
    assert back.status == "active", back.validation_errors
