"""ModelChooser: the one place the model an agent runs on is decided.

The main agent, a subagent a Task call starts, a workflow's agent node and a session rebuilt
from the store each get their model here, from the same inputs: models handed in ready-made
(``Runtime(model=, models=, agent_models=)``), the agent file's ``model`` or own server
(``llm_config.endpoint``), the Task call's ``model``, config's aliases, providers and
``default_model``. A model is built once per resolved string and closed with the runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from subagents.errors import ModelConfigurationError, SubagentsError, ToolError
from subagents.models.base import Model, ModelSettings, close_model
from subagents.models.choice import ModelChoice, is_known_model
from subagents.models.endpoint import uses_endpoint

if TYPE_CHECKING:
    from subagents.config import Config
    from subagents.definitions.model import AgentDefinition
    from subagents.runtime.session import Session

__all__ = ["ModelChooser"]


class ModelChooser:
    """The models of one runtime (see the module docstring).

    ``config`` is read when a model is first chosen (a runtime loads its config lazily);
    ``definition_named`` finds an agent's current definition, for a stored session.
    """

    def __init__(
        self,
        *,
        config: Callable[[], Config],
        definition_named: Callable[[str], AgentDefinition | None],
        main: Model | str | None = None,
        models: Mapping[str, Model] | None = None,
        agent_models: Mapping[str, Model] | None = None,
    ) -> None:
        self._config = config
        self._definition_named = definition_named
        self._main = main
        self._models: dict[str, Model] = dict(models or {})
        self._built: list[str] = []  # the ones made here, and so closed here
        self._pinned: dict[str, Model] = dict(agent_models or {})

    @property
    def main_given(self) -> Model | str | None:
        """The run's model as ``Runtime(model=)`` gave it."""
        return self._main

    @property
    def main_name(self) -> str | None:
        """The run's model as a task keeps it, for a resume in another process (``None``:
        every agent runs on a model of its own)."""
        main = self._main
        if main is None or isinstance(main, str):
            return main
        return main.name

    def pinned(self, agent_name: str) -> Model | None:
        """The model handed in for ``agent_name`` (``agent_models``), which always wins."""
        return self._pinned.get(agent_name)

    def for_spec(self, spec: str, *, agent_name: str | None = None) -> tuple[Model, str]:
        """The model for ``spec`` (alias or provider:model) and the resolved string."""
        from subagents.models.resolve import build_model, resolve_model_string

        if agent_name is not None and agent_name in self._pinned:
            model = self._pinned[agent_name]
            return model, model.name
        config = self._config()
        resolved = resolve_model_string(spec, config.models)
        cached = self._models.get(resolved)
        if cached is not None:
            return cached, resolved
        model = build_model(resolved, aliases=config.models, providers=config.providers)
        self._models[resolved] = model
        self._built.append(resolved)
        return model, resolved

    def choice(
        self, definition: AgentDefinition, override: str | None = None
    ) -> ModelChoice | None:
        """What a subagent running ``definition`` runs on (``override``: the Task call's
        ``model``), the decision ``agents list`` shows too; ``None`` when a model is pinned for
        the agent in Python (``agent_models``), which wins."""
        if definition.name in self._pinned:
            return None
        choice = self._config().model_choice(override or definition.model)
        if choice.wanted is not None and choice.wanted in self._models:  # handed in ready-made
            return ModelChoice(choice.requested, choice.wanted, long_context=choice.long_context)
        return choice

    def endpoint(self, definition: AgentDefinition) -> tuple[Model, str]:
        """The model of an agent that names its own server (``llm_config.endpoint``)."""
        from subagents.models.endpoint import build_endpoint_model, endpoint_model_key

        key = endpoint_model_key(definition)
        model = self._models.get(key)
        if model is None:
            model = self._models[key] = build_endpoint_model(definition)
            self._built.append(key)
        return model, model.name

    def main(self, definition: AgentDefinition | None) -> Model:
        """The main agent's model: the run's, else pinned for its agent, its own server, the
        model its file names, else ``default_model``."""
        main = self._main
        if isinstance(main, str):
            return self.for_spec(main)[0]
        if main is not None:
            return main
        if definition is not None:
            if definition.name in self._pinned:
                return self._pinned[definition.name]
            if definition.endpoint is not None and definition.model not in (None, "inherit"):
                return self.endpoint(definition)[0]
            declared = definition.model
            # a model no form explains is only a warning on the file: the default runs instead
            if (
                declared
                and declared != "inherit"
                and is_known_model(declared, self._config().models)
            ):
                return self.for_spec(declared)[0]
        default = self._config().subagents.default_model
        if default:
            return self.for_spec(default)[0]
        raise ModelConfigurationError(
            "No model is configured for the main agent.",
            hint="pass --model PROVIDER:MODEL (e.g. openai:gpt-4o-mini or ollama:llama3.2), "
            "or set `default_model` under [subagents] in .subagents/config.toml",
        )

    def for_child(
        self, parent: Session, definition: AgentDefinition, override: str | None
    ) -> tuple[Model, str, ModelChoice | None]:
        """A subagent's model, its name, and the choice when it falls back to the parent's;
        a model that cannot be had is a ToolError for the Task call."""
        try:
            if not override and uses_endpoint(definition):
                return (*self.endpoint(definition), None)  # the agent names its own server
            choice = self.choice(definition, override)
            if choice is not None and choice.error is not None:
                raise ModelConfigurationError(choice.error, hint=choice.hint)
            if choice is None or choice.model is None:  # pinned, or the parent's model
                model = self._pinned.get(definition.name, parent.model)
                return model, model.name, choice if choice and choice.fallback is not None else None
            return (*self.for_spec(choice.model, agent_name=definition.name), None)
        except SubagentsError as error:
            raise ToolError(f"cannot start '{definition.name}': {error}") from None

    def for_node(self, definition: AgentDefinition | None) -> Model:
        """The model of a workflow's agent node: pinned, its own server, or the model its file
        names when this machine can run it; else the run's (``--model``, ``default_model``)."""
        if definition is None:
            return self.main(None)
        if definition.name in self._pinned:
            return self._pinned[definition.name]
        if uses_endpoint(definition):
            return self.endpoint(definition)[0]
        choice = self.choice(definition)
        if choice is not None and choice.model is not None and choice.error is None:
            return self.for_spec(choice.model, agent_name=definition.name)[0]
        return self.main(None)

    def stored(self, name: str, agent_name: str, parent: Session | None) -> Model:
        """The model ``name`` a stored session of ``agent_name`` ran on: the same object as
        before when this runtime has it (pinned, the main model, the parent's, built)."""
        if agent_name in self._pinned:
            return self._pinned[agent_name]
        main = self._main
        if parent is None and not isinstance(main, str | None) and main.name == name:
            return main
        if parent is not None and parent.model.name == name:
            return parent.model
        if name in self._models:
            return self._models[name]
        definition = self._definition_named(agent_name)
        if definition is not None and definition.endpoint is not None:
            model, resolved = self.endpoint(definition)
            if resolved == name:
                return model
        return self.for_spec(name)[0]

    @staticmethod
    def settings(definition: AgentDefinition | None) -> ModelSettings:
        """What an agent file sets of each request (temperature, effort)."""
        if definition is None:
            return ModelSettings()
        return ModelSettings(temperature=definition.temperature, effort=definition.effort)

    async def aclose(self) -> None:
        """Close the provider connections of the models built here."""
        while self._built:
            await close_model(self._models.pop(self._built.pop()))
