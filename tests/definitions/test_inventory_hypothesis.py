"""Hypothesis: whatever is in an agent file, discovery never raises, and a bad file ends up
``invalid`` with a reason."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from subagents.inventory import Inventory

FOLDERS = [".claude/agents", ".subagents/agents", ".codex/agents", ".gemini/agents"]


def discover_one(folder: str, file_name: str, content: bytes) -> tuple[Inventory, Path]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = root / "repo"
        (repo / ".git").mkdir(parents=True)
        (root / "home").mkdir()
        path = repo / folder / file_name
        path.parent.mkdir(parents=True)
        path.write_bytes(content)
        inventory = Inventory.discover(repo, home=root / "home", include_builtin=False)
    return inventory, path


def assert_reported(inventory: Inventory, path: Path) -> None:
    from_file = [d for d in inventory.definitions if d.source_path == path]
    assert len(from_file) == 1
    definition = from_file[0]
    assert definition.status in ("active", "invalid")
    if definition.status == "invalid":
        assert definition.validation_errors
        assert all(reason.strip() for reason in definition.validation_errors)
        assert any(e.kind == "invalid" and e.path == path for e in inventory.discovery_events)
    else:
        assert definition.description.strip() and definition.system_prompt.strip()
    record = inventory.records[definition.name]
    assert record.definition == definition


@settings(max_examples=60, deadline=None)
@given(
    content=st.binary(max_size=400),
    folder=st.sampled_from(FOLDERS),
    suffix=st.sampled_from([".md", ".toml", ".json", ".markdown"]),
)
def test_arbitrary_bytes_never_raise(content: bytes, folder: str, suffix: str) -> None:
    inventory, path = discover_one(folder, f"agent{suffix}", content)
    assert_reported(inventory, path)


@settings(max_examples=60, deadline=None)
@given(
    content=st.binary(max_size=300),
)
def test_arbitrary_bytes_after_frontmatter_marker(content: bytes) -> None:
    inventory, path = discover_one(".claude/agents", "x.md", b"---\n" + content)
    assert_reported(inventory, path)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=20),
)
_yaml_values = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=10), children, max_size=4),
    ),
    max_leaves=12,
)
_keys = st.one_of(
    st.sampled_from(
        [
            "name",
            "description",
            "tools",
            "disallowedTools",
            "model",
            "maxTurns",
            "permissionMode",
            "mcpServers",
            "color",
            "background",
            "temperature",
        ]
    ),
    st.text(max_size=10),
)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(
    frontmatter=st.one_of(st.dictionaries(_keys, _yaml_values, max_size=8), _yaml_values),
    body=st.text(max_size=80),
)
def test_arbitrary_yaml_frontmatter_never_raises(frontmatter: Any, body: str) -> None:
    dumped = yaml.safe_dump(frontmatter, allow_unicode=True)
    text = f"---\n{dumped}---\n{body}"
    inventory, path = discover_one(
        ".claude/agents", "yaml.md", text.encode("utf-8", "surrogatepass")
    )
    assert_reported(inventory, path)


@settings(max_examples=60, deadline=None)
@given(frontmatter=st.text(max_size=200), body=st.text(max_size=50))
def test_arbitrary_text_frontmatter_never_raises(frontmatter: str, body: str) -> None:
    text = f"---\n{frontmatter}\n---\n{body}"
    inventory, path = discover_one(
        ".claude/agents", "text.md", text.encode("utf-8", "surrogatepass")
    )
    assert_reported(inventory, path)
