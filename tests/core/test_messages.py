from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from subagents.errors import AgentNotFoundError, SubagentsError
from subagents.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    message_from_dict,
    message_to_dict,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
tool_calls = st.builds(
    ToolCall,
    id=st.text(min_size=1),
    name=st.text(min_size=1),
    arguments=st.dictionaries(st.text(), json_values, max_size=4),
)
messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(SystemMessage, st.text()),
    st.builds(UserMessage, st.text()),
    st.builds(AssistantMessage, st.text(), st.lists(tool_calls, max_size=3).map(tuple)),
    st.builds(ToolResultMessage, st.text(), st.text(), st.text(), st.booleans()),
)


@given(messages)
def test_message_round_trips_through_dict(message: Message) -> None:
    data: dict[str, Any] = message_to_dict(message)
    assert message_from_dict(data) == message


def test_usage_adds_up() -> None:
    total = Usage(input_tokens=3, output_tokens=4, requests=1) + Usage(input_tokens=1, requests=1)
    assert (total.input_tokens, total.output_tokens, total.requests, total.total_tokens) == (
        4,
        4,
        2,
        8,
    )


def test_agent_not_found_message_lists_agents_and_says_what_to_do() -> None:
    error = AgentNotFoundError("reviewr", available=["explore", "reviewer"], closest=["reviewer"])
    assert isinstance(error, SubagentsError)
    text = str(error)
    assert "'reviewr'" in text and "Did you mean 'reviewer'" in text
    assert "subagents agents list" in text


def test_public_api_lists_every_lazy_export() -> None:
    import subagents

    for name in subagents.__all__:
        assert getattr(subagents, name) is not None
