"""Agent JSON in the shape Python agent frameworks write (``agents/{name}.json``), read as ours.

::

    {
      "name": "researcher",
      "role": "You are a research assistant. You find and summarise papers.",
      "tools": ["Read", "Grep"],
      "max_iterations": 10,
      "llm_config": {
        "model": "llama3.2:3b",
        "temperature": 0.2,
        "endpoint": "http://localhost:11434/v1",
        "api_key_env": "LAB_LLM_KEY"
      }
    }

What each key becomes:

- ``max_iterations`` is ``maxTurns`` (a spelling in :data:`~subagents.definitions.fields.
  FIELD_SPELLINGS`).
- ``llm_config.model`` / ``.temperature`` are ``model`` / ``temperature``;
  ``llm_config.endpoint`` is the base URL of an OpenAI-compatible server the agent's model runs
  on, and ``llm_config.api_key_env`` the environment variable holding that server's key. The
  key is read from the environment when the model is built, never from the file, and never
  stored: a literal ``api_key`` is dropped with a warning. Other ``llm_config`` keys
  (``max_tokens``, ...) are warned about and ignored. With an ``endpoint``, ``model`` is the
  name the server knows the model by (``llama3.2:3b``), sent as written. AutoGen's
  ``llm_config.config_list`` is read too: its first entry (``model``, ``base_url``) fills what
  the keys beside it leave open; further entries are ignored with a warning.
- ``role`` says who the agent is. Frameworks use it as the agent's instructions or as its
  one-line job title, so it fills whichever of the two the file leaves out: without ``prompt``
  it is the system prompt; without ``description`` its first paragraph is the description (what
  the Task tool shows when choosing an agent; cut at :data:`MAX_DERIVED_DESCRIPTION` characters,
  with a warning). A file with both ``prompt`` and ``description``
  gets ``role`` as the first paragraph of its system prompt, so that it is never lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["LLM_CONFIG_FIELDS", "MAX_DERIVED_DESCRIPTION", "from_framework_shape"]

LLM_CONFIG_FIELDS: dict[str, str] = {
    "model": "llm_config.model",
    "temperature": "llm_config.temperature",
    "endpoint": "llm_config.endpoint",
    "base_url": "llm_config.endpoint",
    "api_key_env": "llm_config.api_key_env",
}
"""``llm_config`` key -> the spelling it is read under (see ``FIELD_SPELLINGS``)."""
MAX_DERIVED_DESCRIPTION = 300
"""Characters of ``role`` that may become a description (the Task tool lists them all)."""
_PROMPT_KEYS = ("prompt", "system_prompt", "systemPrompt")
_SECRET_KEYS = ("api_key", "apiKey", "api-key", "key", "token")


def from_framework_shape(data: Mapping[Any, Any]) -> tuple[Mapping[Any, Any], list[str]]:
    """``data`` with ``role`` and ``llm_config`` turned into our keys, and the warnings found.

    Mappings without either key come back as they are.
    """
    if "role" not in data and "llm_config" not in data:
        return data, []
    translated: dict[Any, Any] = {}
    warnings: list[str] = []
    for key, value in data.items():
        if key == "llm_config":
            _hoist_llm_config(value, translated, warnings)
        elif key != "role":
            translated[key] = value
    if "role" in data:
        _apply_role(data["role"], translated, warnings)
    return translated, warnings


def _hoist_llm_config(config: object, into: dict[Any, Any], warnings: list[str]) -> None:
    if not isinstance(config, Mapping):
        warnings.append(
            '\'llm_config\' must be an object such as {"model": "gpt-4o-mini", "endpoint": '
            '"http://localhost:8000/v1"}; it is ignored'
        )
        return
    _hoist_entries(config, "llm_config", into, warnings)
    entries = config.get("config_list")
    if entries is None:
        return
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        warnings.append("'llm_config.config_list' must be a list of objects; it is ignored")
        return
    if len(entries) > 1:
        warnings.append(
            f"only the first of the {len(entries)} entries of 'llm_config.config_list' is used "
            "(no fallback between them here)"
        )
    if entries:
        _hoist_entries(entries[0], "llm_config.config_list[0]", into, warnings)


def _hoist_entries(
    config: Mapping[Any, Any], where: str, into: dict[Any, Any], warnings: list[str]
) -> None:
    for raw_key, value in config.items():
        key = str(raw_key)
        if key == "config_list" and where == "llm_config":
            continue  # read after the keys beside it, which win
        if key in _SECRET_KEYS:
            warnings.append(
                f"'{where}.{key}' is not read: a key does not belong in an agent file. Put it "
                "in an environment variable and name that variable in 'llm_config.api_key_env'"
            )
            continue
        spelling = LLM_CONFIG_FIELDS.get(key)
        if spelling is None:
            warnings.append(
                f"'{where}.{key[:60]}' is not supported here; it is ignored (supported: "
                f"{', '.join(sorted(LLM_CONFIG_FIELDS))})"
            )
            continue
        if spelling in into:
            warnings.append(f"'{where}.{key}' is ignored: it was already given")
            continue
        into[spelling] = value


def _description_from(role: str, warnings: list[str]) -> str:
    """The first paragraph of ``role``, cut at a word when longer than a description should
    be (every agent's description is in the Task tool's listing), saying so."""
    first = " ".join(role.split("\n\n", 1)[0].split())
    if len(first) <= MAX_DERIVED_DESCRIPTION:
        return first
    cut = first[:MAX_DERIVED_DESCRIPTION].rsplit(" ", 1)[0] or first[:MAX_DERIVED_DESCRIPTION]
    warnings.append(
        f"the description is the first {len(cut)} characters of 'role'; add a 'description' "
        "saying in a sentence what the agent does and when to use it"
    )
    return cut + " ..."


def _apply_role(role: object, into: dict[Any, Any], warnings: list[str]) -> None:
    if not isinstance(role, str) or not role.strip():
        warnings.append("'role' must be text saying who the agent is; it is ignored")
        return
    role = role.strip()
    prompt_key = next((key for key in _PROMPT_KEYS if _given(into.get(key))), None)
    has_description = _given(into.get("description"))
    if prompt_key is None:
        for key in _PROMPT_KEYS:  # an empty prompt under another spelling would win over it
            into.pop(key, None)
        into["prompt"] = role
    if not has_description:
        into["description"] = _description_from(role, warnings)
    if prompt_key is not None and has_description:
        prompt = into[prompt_key]
        if isinstance(prompt, str):
            into[prompt_key] = f"{role}\n\n{prompt}"


def _given(value: object) -> bool:
    """Whether a text field really says something (``""`` and ``null`` do not)."""
    return isinstance(value, str) and bool(value.strip())
