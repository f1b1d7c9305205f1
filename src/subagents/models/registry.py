"""Providers by name: the built-in ones, those registered in Python, and those other packages
install under the entry-point group ``subagents.providers``.

A :class:`Provider` says how to build its models and what its key rules are
(:mod:`subagents.models.keys` applies them). Looking a name up tries, in order: the built-in
providers, :func:`register_provider`, the installed entry points (read only for a name that is
none of the above, so importing subagents never scans the installed packages), and finally
any ``[providers.NAME]`` with a ``base_url``, which is an OpenAI-compatible server.

An outside package declares its provider in its ``pyproject.toml``::

    [project.entry-points."subagents.providers"]
    mistral = "subagents_mistral:provider"

The object named is a :class:`Provider` (or a class whose instances are one). A package that
fails to import, or names something else, is reported as a ModelConfigurationError that names
the package; so is an exception the provider raises that is not one of ours.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from subagents.errors import ModelConfigurationError, SubagentsError
from subagents.models.keys import ApiKey
from subagents.models.server import with_base_url

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from subagents.models.base import Model
    from subagents.models.settings import ProviderSettings, ToolCallMode

__all__ = [
    "ENTRY_POINT_GROUP",
    "KNOWN_PROVIDERS",
    "ApiKey",
    "Provider",
    "find_provider",
    "missing_key_variable",
    "provider_names",
    "register_provider",
    "unknown_provider_error",
]

ENTRY_POINT_GROUP = "subagents.providers"
KNOWN_PROVIDERS = ("openai", "anthropic", "ollama", "llamacpp")
"""The built-in providers; any ``[providers.NAME]`` with a ``base_url`` works too."""


@runtime_checkable
class Provider(Protocol):
    """How to make the models of one provider (the client, the key rules); the model classes
    speak its wire format.

    ``settings`` is the provider's ``[providers.NAME]`` table (defaults when there is none),
    its ``base_url`` taken from the SDK's variable when the table leaves it unset (``openai``:
    ``OPENAI_BASE_URL``, ``anthropic``: ``ANTHROPIC_BASE_URL``; see
    :mod:`subagents.models.server`, whose server kinds the built-in providers' key and
    ``tool_calls`` rules follow); ``key_variable`` the environment variable the key is read
    from when neither ``api_key`` nor ``api_key_env`` is set (``None``: there is none).
    """

    @property
    def key_variable(self) -> str | None: ...

    def needs_key(self, settings: ProviderSettings) -> bool:
        """Whether a model cannot be built without a key (a hosted API, not a local server)."""
        ...

    def default_tool_calls(self, settings: ProviderSettings) -> ToolCallMode:
        """The ``tool_calls`` mode when ``[providers.NAME] tool_calls`` is unset."""
        ...

    def build(
        self, provider: str, model_name: str, settings: ProviderSettings, key: ApiKey
    ) -> Model:
        """The model ``provider:model_name``; ``key.value`` is set when :meth:`needs_key`."""
        ...


_registered: dict[str, Provider] = {}
_entry_points: dict[tuple[str, ...], dict[str, EntryPoint]] = {}
_loaded: dict[tuple[str, str], Provider] = {}  # (provider name, entry point value)


def register_provider(name: str, provider: Provider) -> None:
    """Make ``provider`` the one for ``name`` in this process (a built-in name included)."""
    _registered[name.lower()] = provider


def _builtin(name: str, settings: ProviderSettings) -> Provider | None:
    from subagents.models import providers

    if name == "llamacpp" and settings.base_url is not None:
        return providers.COMPATIBLE  # a llama.cpp server, not a file run in-process
    return providers.BUILTIN.get(name)


def _installed() -> dict[str, EntryPoint]:
    """The entry points of ``subagents.providers`` by lower-cased name, read once per
    ``sys.path``."""
    key = tuple(sys.path)
    found = _entry_points.get(key)
    if found is None:
        from importlib.metadata import entry_points

        found = {ep.name.lower(): ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
        _entry_points.clear()
        _entry_points[key] = found
    return found


def find_provider(name: str, settings: ProviderSettings | None) -> Provider | None:
    """The provider for ``name`` configured by ``settings``, or ``None`` when no provider has
    that name and no ``base_url`` is set. Raises ModelConfigurationError for an entry point
    that cannot be loaded."""
    from subagents.models import providers
    from subagents.models.settings import ProviderSettings

    settings = settings or ProviderSettings()
    name = name.lower()
    found = _registered.get(name) or _builtin(name, settings)
    if found is not None:
        return found
    entry_point = _installed().get(name)
    if entry_point is not None:
        return _load(name, entry_point)
    return providers.COMPATIBLE if settings.base_url is not None else None


def provider_names() -> tuple[str, ...]:
    """Every provider name known here: the built-in ones, then registered and installed ones."""
    others = sorted({*_registered, *_installed()} - set(KNOWN_PROVIDERS))
    return (*KNOWN_PROVIDERS, *others)


def unknown_provider_error(name: str, spec: str) -> ModelConfigurationError:
    return ModelConfigurationError(
        f"Unknown provider {name!r} in the model {spec!r}.",
        hint=f"use one of {', '.join(provider_names())}, or add [providers.{name}] with "
        'base_url = "http://HOST:PORT/v1" to config.toml for another OpenAI-compatible server',
    )


def _package(entry_point: EntryPoint) -> str:
    dist = getattr(entry_point, "dist", None)
    return dist.name if dist is not None else entry_point.value.partition(":")[0]


def _load(name: str, entry_point: EntryPoint) -> Provider:
    cached = _loaded.get((name, entry_point.value))
    if cached is not None:
        return cached
    package = _package(entry_point)
    try:
        loaded = entry_point.load()
        provider = loaded() if isinstance(loaded, type) else loaded
    except Exception as error:
        raise _broken(name, package, entry_point, f"{type(error).__name__}: {error}") from error
    if not isinstance(provider, Provider):
        raise _broken(
            name,
            package,
            entry_point,
            f"{entry_point.value} is not a provider (it needs key_variable, needs_key, "
            "default_tool_calls and build)",
        )
    guarded = _Guarded(provider, name, package)
    _loaded[(name, entry_point.value)] = guarded
    return guarded


def _broken(
    name: str, package: str, entry_point: EntryPoint, reason: str
) -> ModelConfigurationError:
    return ModelConfigurationError(
        f"The provider {name!r} of the package {package!r} (entry point {entry_point.value} "
        f"in {ENTRY_POINT_GROUP}) is broken: {reason}",
        hint=f"upgrade or reinstall {package}, or uninstall it (pip uninstall {package})",
    )


@dataclass(frozen=True, slots=True)
class _Guarded:
    """An outside provider whose failures are reported as configuration errors that name its
    package (ours pass through: they already say what to do)."""

    inner: Provider
    name: str
    package: str

    def _failed(self, what: str, error: Exception) -> ModelConfigurationError:
        return ModelConfigurationError(
            f"The provider {self.name!r} of the package {self.package!r} failed in {what}: "
            f"{type(error).__name__}: {error}",
            hint=f"report it to the maintainers of {self.package}, or upgrade it",
        )

    def _call(self, what: str, function: Any, *args: Any) -> Any:
        try:
            return function(*args)
        except SubagentsError:
            raise
        except Exception as error:
            raise self._failed(what, error) from error

    @property
    def key_variable(self) -> str | None:
        value = self._call("key_variable", lambda: self.inner.key_variable)
        return value if isinstance(value, str) and value else None

    def needs_key(self, settings: ProviderSettings) -> bool:
        return bool(self._call("needs_key", self.inner.needs_key, settings))

    def default_tool_calls(self, settings: ProviderSettings) -> ToolCallMode:
        mode = self._call("default_tool_calls", self.inner.default_tool_calls, settings)
        if mode not in ("native", "text", "schema", "auto"):
            raise self._failed("default_tool_calls", ValueError(f"not a tool_calls mode: {mode!r}"))
        return mode  # type: ignore[no-any-return]

    def build(
        self, provider: str, model_name: str, settings: ProviderSettings, key: ApiKey
    ) -> Model:
        model: Model = self._call("build", self.inner.build, provider, model_name, settings, key)
        return model


def missing_key_variable(
    name: str, settings: ProviderSettings | None, env: Mapping[str, str]
) -> str | None:
    """The environment variable a model of provider ``name`` needs and lacks here, else
    ``None`` (``agents list`` and the fallback to the parent's model use it).

    The rules of :func:`api_key`: a key in config or in the configured variable counts; an
    unset ``api_key_env`` is missing for every provider; otherwise the provider says whether
    it needs a key (``openai`` with a ``base_url`` or ``OPENAI_BASE_URL`` naming another
    server, ``ollama`` and other servers do not). A provider that is not known here, or
    cannot be loaded, is not judged.
    """
    if settings is not None and settings.api_key_env and settings.api_key is None:
        return None if env.get(settings.api_key_env) else settings.api_key_env
    from subagents.models.settings import ProviderSettings

    settings = with_base_url(name, settings or ProviderSettings(), env)
    try:
        provider = find_provider(name, settings)
        if provider is None or not provider.needs_key(settings):
            return None
        variable = provider.key_variable
    except ModelConfigurationError:
        return None
    if settings.api_key is not None:
        return None if settings.api_key.get_secret_value() else f"[providers.{name}] api_key"
    if variable is None:
        return f"[providers.{name}] api_key_env"
    return None if env.get(variable) else variable
