"""Configuration: ``config.toml`` for the user, then for the project, merged key by key.

Where files are looked for
--------------------------
*Home.* ``home`` (a parameter of :func:`load_config`), else the ``SUBAGENTS_HOME`` environment
variable, else :meth:`pathlib.Path.home`. It is the directory standing in for ``~``: the user
config is ``<home>/.subagents/config.toml`` and the user agent folders are
``<home>/.subagents/agents``, ``<home>/.claude/agents`` and so on. Pointing ``SUBAGENTS_HOME``
at an empty directory therefore gives a clean user scope, which is what tests do.

*Project.* Starting at ``cwd`` and walking up, the project directories are every directory up
to and including the repository root (the first directory holding ``.git``). Without a
repository the walk goes up to the filesystem root. The home directory itself is never a
project directory (its folders are the user scope), and the walk stops below it. The project
config is the nearest ``.subagents/config.toml`` among those directories. ``project_root`` is
the repository root; without a repository, the directory holding that config; else ``None``.

Precedence: project values override user values key by key (``[providers.openai] base_url``
in the project leaves the user's ``[providers.openai] api_key_env`` in place).

Format::

    [subagents]
    enabled = true
    default_model = "sonnet"
    discovery = "auto"          # or "manual": only the agents named in `agents`
    agents = []
    disabled = []
    max_depth = 3
    max_concurrent = 20
    max_turns = 50
    interrupted_tool_calls = "ask"   # after a crash: "ask" a person, "rerun", or "fail"
    max_repeated_failures = 3   # the same tool call failing the same way this often stops
                                # the session (resumable); 0 never stops (notes only)
    model_fallback = "inherit"  # a subagent whose model has no API key here runs on its
                                # parent's model; "error" refuses to start it instead
    stall_seconds = 600         # a background subagent with no step for this long is
                                # reported, and stopped after as long again; 0: never

    [models]                    # alias -> "provider:model" (overrides the built-in tiers)
    sonnet = "openai:gpt-4o"

    [providers.openai]
    base_url = "http://localhost:8000/v1"
    tool_calls = "native"       # "schema" for a server without tool calls that enforces
                                # JSON schemas (see `subagents models check`)
    tool_descriptions = "full"  # or "compact": short tool descriptions, required parameters
                                # only, for small models (see subagents.runtime.tool_menu)

    [[hooks.PreToolUse]]        # shell commands; the payload arrives as JSON on stdin
    matcher = "Bash"            # a tool name, "Edit|Write", a regular expression, or "*"
    command = "./scripts/check-command.sh"

    [permissions]
    allow_protected = [".claude/agents/**"]  # protected paths agents may write like any file

    [sandbox]                   # Bash in bubblewrap (Linux): writes only in the workspace
    enabled = false
    network = false             # with the sandbox on: may commands use the network?

    [tools]
    pass_env = ["OPENAI_API_KEY"]    # provider keys the Bash tool and shell hooks may see

    [budget]                    # a run's whole tree of agents; reaching it pauses the run
    max_tokens = 200000         # input + output tokens (`run --max-budget-tokens` overrides)
    max_usd = 2.50              # USD, calls priced as `tasks usage` prices them

    [prices."openai:my-local-model"]   # USD per million tokens, for a model the price table
    input_per_mtok = 0.2               # does not know (else its cost is unknown, counted 0)
    output_per_mtok = 0.6

    [web]                       # WebFetch and WebSearch (see subagents.tools.web.settings)
    allow_private_addresses = ["127.0.0.1"]  # hosts / IPs / CIDRs WebFetch may reach
    search_backend = "brave"    # or "tavily", "searxng"; the key is read from BRAVE_API_KEY

    [store]                     # the user's config only (see StoreSettings)
    url = "postgresql://user@db.example.com/subagents"   # or a path, or sqlite:///PATH

The Bash tool, shell hooks and the other commands run for a model get this process's
environment without the providers' API keys (``[providers.NAME] api_key_env``,
``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, and any variable holding one of those keys): a model
that runs ``env`` must not see them. ``[tools] pass_env`` names the ones to hand over anyway.
Other tokens (``GITHUB_TOKEN``, which ``gh`` needs) are passed on; they are still redacted from
everything stored or printed (see :mod:`subagents.secrets`).

Hooks of the user and the project files all run; every other key of the project overrides the
user's. Unknown keys and bad values raise :class:`~subagents.errors.ConfigError` naming the
file, the line and the key.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from subagents._preview import preview
from subagents._read_capped import FileTooLargeError, NotARegularFileError, read_capped
from subagents.errors import ConfigError
from subagents.models.settings import ProviderSettings
from subagents.status import HookEvent
from subagents.tools.web.settings import WebSettings

if TYPE_CHECKING:
    from subagents.models.choice import ModelChoice
    from subagents.models.prices import ModelPrice

__all__ = [
    "CONFIG_DIR_NAME",
    "CONFIG_FILE_NAME",
    "HOME_ENV_VAR",
    "MAX_CONFIG_FILE_BYTES",
    "BudgetSettings",
    "Config",
    "ConfigFile",
    "HookCommand",
    "HookEvent",
    "PermissionsSettings",
    "PriceSettings",
    "SandboxSettings",
    "StoreSettings",
    "SubagentsSettings",
    "ToolsSettings",
    "WebSettings",
    "find_repository_root",
    "load_config",
    "project_config_path",
    "project_directories",
    "project_directory_names",
    "resolve_home",
    "user_config_path",
    "user_store_url",
]

HOME_ENV_VAR = "SUBAGENTS_HOME"
MAX_CONFIG_FILE_BYTES = 1 << 20
"""config.toml files larger than this are refused (they hold settings, not data)."""
CONFIG_DIR_NAME = ".subagents"
CONFIG_FILE_NAME = "config.toml"
_SHOWN_CHARS = 80  # of a value quoted in an error message
_MAX_DESCRIBED = 20  # problems described one by one in a ConfigError


class SubagentsSettings(BaseModel):
    """The ``[subagents]`` table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    default_model: str | None = Field(default=None, min_length=1)
    discovery: Literal["auto", "manual"] = "auto"
    agents: list[str] = Field(default_factory=list)
    disabled: list[str] = Field(default_factory=list)
    max_depth: int = Field(default=3, ge=0, le=100)
    max_concurrent: int = Field(default=20, ge=1, le=10_000)
    max_turns: int = Field(default=50, ge=1, le=100_000)
    # After a crash, a side-effecting tool call that started but never finished: ask a person
    # (the run pauses), run it again, or tell the agent it failed.
    interrupted_tool_calls: Literal["ask", "rerun", "fail"] = "ask"
    # The same tool call (same arguments) failing the same way this many times stops the session
    # with a loop error (the task can be resumed); 0: never stop, only tell the model.
    max_repeated_failures: int = Field(default=3, ge=0, le=1000)
    # A subagent whose model needs a provider without credentials here: run it on its
    # parent's model (and say so), or refuse to start it.
    model_fallback: Literal["inherit", "error"] = "inherit"
    # A background subagent with no step (no model answer, no turn begun) for this long is
    # reported, and after as long again stopped, its parent told why; 0: no watchdog.
    stall_seconds: float = Field(default=600.0, ge=0, le=7 * 24 * 3600)

    @field_validator("max_repeated_failures")
    @classmethod
    def _stop_after_a_warning(cls, limit: int) -> int:
        if limit == 1:
            raise ValueError(
                "1 would stop at the first failure, before the model is told; use 2 or more, "
                "or 0 to never stop"
            )
        return limit


class ToolsSettings(BaseModel):
    """The ``[tools]`` table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Variables the scrubbed tool environment keeps although they hold a provider's key.
    pass_env: list[str] = Field(default_factory=list)

    @field_validator("pass_env")
    @classmethod
    def _variable_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name or "=" in name or "\0" in name:
                raise ValueError(f"{name!r} is not an environment variable name")
        return names


class HookCommand(BaseModel):
    """A shell command run at a hook event (``[[hooks.PreToolUse]]`` tables).

    ``matcher`` selects tool names (tool events) or agent types (subagent events) as Claude
    Code's matchers do: a name, a regular expression such as ``Edit|Write``, or ``*`` (or
    nothing) for all.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str = Field(min_length=1)
    matcher: str | None = None
    timeout: float = Field(default=60.0, gt=0)

    @field_validator("matcher")
    @classmethod
    def _valid_matcher(cls, matcher: str | None) -> str | None:
        from subagents.matchers import compile_matcher

        compile_matcher(matcher)  # raises ValueError with the reason, reported with the line
        return matcher


class PermissionsSettings(BaseModel):
    """The ``[permissions]`` table.

    ``allow_protected``: glob patterns, relative to the project, of protected paths (see
    :mod:`subagents.tools.protected`) that agents may write like any other file.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow_protected: list[str] = Field(default_factory=list)

    @field_validator("allow_protected")
    @classmethod
    def _relative_patterns(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            if not pattern.strip():
                raise ValueError("an empty pattern allows nothing; remove it")
            if pattern.startswith(("/", "~")) or ".." in pattern.split("/"):
                raise ValueError(
                    f"{pattern!r} is not relative to the project (write e.g. '.claude/agents/**')"
                )
        return patterns


class SandboxSettings(BaseModel):
    """The ``[sandbox]`` table: run Bash commands in bubblewrap (see
    :mod:`subagents.tools.sandbox`); ``network`` lets sandboxed commands use the network."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = False
    network: bool = False


class BudgetSettings(BaseModel):
    """The ``[budget]`` table: ``max_tokens`` caps the input and output tokens of a run's
    whole tree of agents, ``max_usd`` what its calls cost (see
    :mod:`subagents.runtime.budget`); none by default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_tokens: int | None = Field(default=None, ge=1)
    max_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)


class PriceSettings(BaseModel):
    """One ``[prices."PROVIDER:MODEL"]`` table: USD per million tokens (see
    :mod:`subagents.models.prices`); the cache prices default to the input price."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_mtok: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    output_per_mtok: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    cache_read_per_mtok: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    cache_write_per_mtok: float | None = Field(default=None, ge=0, allow_inf_nan=False)

    def model_price(self) -> ModelPrice:
        from decimal import Decimal

        from subagents.models.prices import ModelPrice

        def usd(value: float | None) -> Decimal | None:
            return None if value is None else Decimal(str(value))

        return ModelPrice(
            Decimal(str(self.input_per_mtok)),
            Decimal(str(self.output_per_mtok)),
            usd(self.cache_read_per_mtok),
            usd(self.cache_write_per_mtok),
        )


class StoreSettings(BaseModel):
    """The ``[store]`` table: ``url`` names the store every project's runs are recorded in (a
    file path, ``sqlite:///PATH``, or ``postgresql://...``; see :mod:`subagents.store.open`),
    instead of each project's own ``.subagents/state.db``. ``--store`` and ``SUBAGENTS_STORE``
    come first. Read from the user's config only: a project's config (a cloned repository's)
    naming it would choose where your runs' prompts, files and results are sent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = None

    @field_validator("url")
    @classmethod
    def _a_store(cls, url: str | None) -> str | None:
        if url is None:
            return None
        if not url.strip():
            raise ValueError("an empty url names no store; remove the key for each project's own")
        from subagents.errors import StoreError
        from subagents.store.url import is_postgres_url, sqlite_file

        if not is_postgres_url(url):
            try:
                sqlite_file(url)
            except StoreError as error:
                raise ValueError(f"{error.message} ({error.hint})") from None
        return url


class ConfigFile(BaseModel):
    """One ``config.toml`` as written on disk (and the merge of several)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    subagents: SubagentsSettings = Field(default_factory=SubagentsSettings)
    hooks: dict[HookEvent, list[HookCommand]] = Field(default_factory=dict)
    models: dict[str, str] = Field(default_factory=dict)
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    permissions: PermissionsSettings = Field(default_factory=PermissionsSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    # Validated (with file and key in errors) by subagents.store.retention.load_retention_policy.
    retention: dict[str, Any] = Field(default_factory=dict)
    tools: ToolsSettings = Field(default_factory=ToolsSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    prices: dict[str, PriceSettings] = Field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Config:
    """The effective configuration after merging user and project files."""

    subagents: SubagentsSettings = field(default_factory=SubagentsSettings)
    models: dict[str, str] = field(default_factory=dict)
    providers: dict[str, ProviderSettings] = field(default_factory=dict)
    hooks: dict[HookEvent, list[HookCommand]] = field(default_factory=dict)
    permissions: PermissionsSettings = field(default_factory=PermissionsSettings)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    tools: ToolsSettings = field(default_factory=ToolsSettings)
    web: WebSettings = field(default_factory=WebSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    budget: BudgetSettings = field(default_factory=BudgetSettings)
    prices: dict[str, PriceSettings] = field(default_factory=dict)
    sources: list[Path] = field(default_factory=list)
    project_root: Path | None = None
    home: Path | None = None

    def model_prices(self) -> dict[str, ModelPrice]:
        """``[prices]``: USD per million tokens by ``provider:model``."""
        return {name: price.model_price() for name, price in self.prices.items()}

    def resolve_model(self, model: str | None) -> str | None:
        """The ``provider:model`` that ``model`` names (``default_model`` when ``None``), by
        the built-in alias table and ``[models]``, credentials aside.

        ``inherit`` for ``inherit`` and for what no alias or model form explains (such an agent
        runs on its parent's model); ``None`` when nothing is set. :meth:`model_choice` also
        weighs the credentials available here.
        """
        from subagents.models.choice import INHERIT, is_known_model
        from subagents.models.resolve import resolve_model_string

        name = model if model is not None else self.subagents.default_model
        if name is None:
            return None
        if name.strip().lower() == INHERIT or not is_known_model(name, self.models):
            return INHERIT
        return resolve_model_string(name, self.models)

    def model_choice(
        self, model: str | None, *, env: Mapping[str, str] | None = None
    ) -> ModelChoice:
        """The model a subagent declaring ``model`` runs on here: the one decision shared by
        ``agents list/show`` and the run (see :mod:`subagents.models.choice`)."""
        from subagents.models.choice import choose_model

        return choose_model(
            model,
            aliases=self.models,
            providers=self.providers,
            default_model=self.subagents.default_model,
            fallback_mode=self.subagents.model_fallback,
            env=env,
        )


def resolve_home(home: Path | None = None) -> Path:
    """The directory standing in for ``~`` (see the module docstring)."""
    if home is not None:
        return Path(home).expanduser()
    from_env = os.environ.get(HOME_ENV_VAR)
    if from_env:
        return Path(from_env).expanduser()
    return Path.home()


def user_config_path(home: Path | None = None) -> Path:
    return resolve_home(home) / CONFIG_DIR_NAME / CONFIG_FILE_NAME


def find_repository_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding ``.git`` (a directory or a file)."""
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def project_directories(cwd: Path | None = None, *, home: Path | None = None) -> list[Path]:
    """Directories searched for project folders, nearest first (see the module docstring)."""
    return [Path(directory) for directory in project_directory_names(cwd, home=home)]


def project_directory_names(cwd: Path | None = None, *, home: Path | None = None) -> list[str]:
    """:func:`project_directories` as strings. Every run walks them (for its instruction
    files): strings and ``os.path`` cost a third of what ``Path`` objects do."""
    # str paths on purpose (see above): hence the noqa comments
    directory = os.path.realpath(cwd if cwd is not None else os.getcwd())  # noqa: PTH109
    home_dir = os.path.realpath(resolve_home(home))
    directories: list[str] = []
    while directory != home_dir:
        directories.append(directory)
        parent = os.path.dirname(directory)  # noqa: PTH120
        if parent == directory or os.path.exists(os.path.join(directory, ".git")):  # noqa: PTH110, PTH118
            break
        directory = parent
    return directories


def project_config_path(cwd: Path | None = None, *, home: Path | None = None) -> Path | None:
    for directory in project_directories(cwd, home=home):
        candidate = directory / CONFIG_DIR_NAME / CONFIG_FILE_NAME
        if candidate.is_file():
            return candidate
    return None


def load_config(cwd: Path | None = None, *, home: Path | None = None) -> Config:
    """Read the user config then the project config; raise ConfigError on any bad file."""
    home_dir = resolve_home(home)
    paths = [user_config_path(home_dir)]
    project_path = project_config_path(cwd, home=home_dir)
    if project_path is not None:
        paths.append(project_path)

    merged: dict[str, Any] = {}
    hooks: dict[str, list[Any]] = {}
    sources: list[Path] = []
    for path in paths:
        if not path.exists():
            continue
        text = _read_text(path)
        raw = _parse_toml(path, text)
        _validate_file(path, text, raw)
        if path == project_path and "store" in raw:
            _refuse_project_store(path, text, home_dir)
        # hooks add up across files (user hooks still run in a project); the rest overrides
        for event, entries in (raw.pop("hooks", None) or {}).items():
            hooks.setdefault(event, []).extend(entries)
        merged = _merge(merged, raw)
        sources.append(path)
    merged["hooks"] = hooks

    # Each file is valid on its own and no setting depends on another, so the merge is too.
    effective = ConfigFile.model_validate(merged)
    start = _absolute(cwd)
    project_root = find_repository_root(start)
    if project_root is None and project_path is not None:
        project_root = project_path.parent.parent
    return Config(
        subagents=effective.subagents,
        models=dict(effective.models),
        providers=dict(effective.providers),
        hooks=dict(effective.hooks),
        permissions=effective.permissions,
        sandbox=effective.sandbox,
        tools=effective.tools,
        web=effective.web,
        store=effective.store,
        budget=effective.budget,
        prices=dict(effective.prices),
        sources=sources,
        project_root=project_root,
        home=home_dir,
    )


def user_store_url(home: Path | None = None) -> str | None:
    """``[store] url`` of the user's config (None when it sets none); ConfigError when that
    file is bad. Only that file is read: this is asked wherever a store is opened."""
    path = user_config_path(home)
    if not path.is_file():
        return None
    text = _read_text(path)
    raw = _parse_toml(path, text)
    if "store" not in raw:
        return None
    _validate_file(path, text, raw)
    return ConfigFile.model_validate(raw).store.url


def _refuse_project_store(path: Path, text: str, home: Path) -> None:
    line = _find_key_line(text, ("store",))
    raise ConfigError(
        f"{path}{f':{line}' if line else ''}: [store] is read from your own config only: a "
        "project's config cannot choose where your runs are recorded.",
        hint=f"move it to {user_config_path(home)}, set SUBAGENTS_STORE, or pass --store",
    )


def _absolute(path: Path | None) -> Path:
    return Path(path if path is not None else Path.cwd()).resolve()


def _read_text(path: Path) -> str:
    try:
        data = read_capped(path, MAX_CONFIG_FILE_BYTES)
    except FileTooLargeError as error:
        raise ConfigError(
            f"{path}: the config file is too large ({error}).",
            hint="a config.toml holds settings, not data: remove what does not belong there",
        ) from None
    except NotARegularFileError:
        raise ConfigError(
            f"{path}: cannot read the config file (it is not a regular file).",
            hint=f"replace it with a plain file or remove it (set {HOME_ENV_VAR} to use "
            "another home)",
        ) from None
    except OSError as error:
        raise ConfigError(
            f"{path}: cannot read the config file ({error.strerror or error}).",
            hint=f"fix its permissions or remove it (set {HOME_ENV_VAR} to use another home)",
        ) from error
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}:{line}: the config file is not valid UTF-8.",
            hint="save it as UTF-8 text",
        ) from error


_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


def _parse_toml(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        reason = str(error)
        match = _TOML_POSITION.search(reason)
        if match:
            where = f"{path}:{match.group(1)}:{match.group(2)}"
            reason = reason[: match.start()].strip()
        else:
            where = f"{path}:{text.count(chr(10)) + 1}"
            reason = reason.replace("(at end of document)", "").strip() + " at end of file"
        raise ConfigError(
            f"{where}: TOML syntax error: {reason}.",
            hint="fix the syntax at that line (see https://toml.io for the format)",
        ) from error
    except RecursionError:
        raise ConfigError(
            f"{path}: the config file nests arrays or tables too deeply to read.",
            hint="flatten the nested values",
        ) from None


def _validate_file(path: Path, text: str, raw: dict[str, Any]) -> None:
    try:
        ConfigFile.model_validate(raw)
    except ValidationError as error:
        details = error.errors()
        # Each description scans the file for its line: describe a few, count the rest.
        problems = sorted(
            (_describe_problem(path, text, detail) for detail in details[:_MAX_DESCRIBED]),
            key=lambda problem: problem[0] if problem[0] is not None else 0,
        )
        lines = [description for _, description in problems]
        if len(details) > _MAX_DESCRIBED:
            lines.append(f"{path}: ... and {len(details) - _MAX_DESCRIBED} more problems")
        raise ConfigError(
            "\n".join(lines),
            hint=f"correct or remove the key(s) named above in {path}",
        ) from None


def _describe_problem(path: Path, text: str, detail: Mapping[str, Any]) -> tuple[int | None, str]:
    loc = tuple(detail.get("loc", ()))
    key_path = tuple(str(part) for part in loc if not isinstance(part, int))
    dotted = preview(".".join(key_path) or "(top level)", _SHOWN_CHARS)
    line = _find_key_line(text, key_path)
    where = f"{path}:{line}" if line is not None else str(path)
    if detail.get("type") == "extra_forbidden":
        reason = f"unknown key {dotted}"
        suggestion = _closest_key(key_path)
        if suggestion:
            reason += f" (did you mean {suggestion!r}?)"
        return line, f"{where}: {reason}"
    value = detail.get("input")
    shown = preview(value, _SHOWN_CHARS) if not isinstance(value, dict) else "a table"
    reason = detail.get("msg", "invalid value")
    return line, f"{where}: key {dotted}: {reason} (got {shown})"


def _closest_key(key_path: tuple[str, ...]) -> str | None:
    if not key_path:
        return None
    *parents, name = key_path
    allowed: list[str]
    if not parents:
        allowed = list(ConfigFile.model_fields)
    elif parents == ["subagents"]:
        allowed = list(SubagentsSettings.model_fields)
    elif parents == ["permissions"]:
        allowed = list(PermissionsSettings.model_fields)
    elif parents == ["sandbox"]:
        allowed = list(SandboxSettings.model_fields)
    elif parents == ["tools"]:
        allowed = list(ToolsSettings.model_fields)
    elif parents == ["web"]:
        allowed = list(WebSettings.model_fields)
    elif parents == ["budget"]:
        allowed = list(BudgetSettings.model_fields)
    elif len(parents) == 2 and parents[0] == "providers":
        allowed = list(ProviderSettings.model_fields)
    elif len(parents) == 2 and parents[0] == "prices":
        allowed = list(PriceSettings.model_fields)
    else:
        return None
    import difflib  # only for a config with a mistake in it

    matches = difflib.get_close_matches(name, allowed, n=1)
    if not matches:
        return None
    return ".".join([*parents, matches[0]])


_TABLE_HEADER = re.compile(r"^\s*\[\[?([^\]]+)\]\]?\s*(#.*)?$")
_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')"""
_KEY_LINE = re.compile(rf"^\s*({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)\s*=")


def _split_dotted(key: str) -> tuple[str, ...]:
    parts = re.findall(_KEY_PART, key)
    return tuple(part.strip("\"'") for part in parts)


def _find_key_line(text: str, key_path: tuple[str, ...]) -> int | None:
    """The 1-based line where ``key_path`` is set (or its table declared), found by scanning.

    A key set inside an inline table is attributed to the line of the outer key.
    """
    if not key_path:
        return None
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), start=1):
        header = _TABLE_HEADER.match(line)
        if header:
            table = _split_dotted(header.group(1))
            if _is_prefix(key_path, table):
                return number
            continue
        key_match = _KEY_LINE.match(line)
        if key_match:
            full = table + _split_dotted(key_match.group(1))
            if _is_prefix(full, key_path) or _is_prefix(key_path, full):
                return number
    return None


def _is_prefix(prefix: tuple[str, ...], whole: tuple[str, ...]) -> bool:
    return len(prefix) <= len(whole) and whole[: len(prefix)] == prefix


def _merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        current = merged.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            merged[key] = _merge(current, value)
        else:
            merged[key] = value
    return merged
