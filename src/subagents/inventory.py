"""The inventory: every agent definition this project can see, resolved by precedence.

Discovery reads, lowest precedence first:

1. **builtin** - the agents shipped with the package (``general-purpose``, ``explore``,
   ``plan``);
2. **user** - the agent folders under the home directory (see :mod:`subagents.config` for what
   "home" means and ``SUBAGENTS_HOME``);
3. **project** - the same folders in every project directory from the repository root down to
   the working directory; a nearer directory overrides a farther one;
4. **explicit** - definitions handed to :meth:`Inventory.discover` (``--agents`` JSON on the
   command line, or built in Python).

The agent folders of one directory, in the order that decides a clash inside it:
``.subagents/agents`` > ``.claude/agents`` > ``.wave/agents`` > ``.codex/agents`` >
``.gemini/agents``. Each folder is scanned recursively (hidden files and directories are
skipped, as are ``README.md`` files); files sort by their path relative to the folder.

Two definitions of one name in *different* layers (builtin, user, a project directory,
explicit) are an override: the higher one wins and its record keeps the lower ones in
``overrides``. Two definitions of one name in the *same* layer are a conflict: the first in the
order above wins and the clash is reported in ``conflicts``. The highest definition wins even
when it is invalid, so that a broken file is reported instead of silently replaced by another
agent of the same name.

Config can disable agents: ``[subagents] disabled = [...]``, ``enabled = false`` (every agent)
and ``discovery = "manual"`` (only the names in ``agents = [...]``). Disabled records stay in
the inventory, with status ``disabled``, so that ``subagents agents list`` can show them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from subagents.config import Config, load_config, project_directories, resolve_home
from subagents.definitions.model import AgentDefinition, AgentStatus, Scope
from subagents.definitions.parse import AGENT_FILE_SUFFIXES, parse_agent_file
from subagents.definitions.validate import (
    effective_tool_names,
    normalise_name,
    validate_definition,
)
from subagents.errors import AgentDefinitionError, AgentNotFoundError, AgentUnavailableError
from subagents.skills import add_skill_warnings, discover_skills, offer_skill_tool
from subagents.tools.names import BUILTIN_TOOL_NAMES, TASK_TOOL_NAME

if TYPE_CHECKING:
    import asyncio

    from subagents.models.choice import ModelChoice

__all__ = [
    "AGENT_FOLDER_NAMES",
    "AgentFolder",
    "AgentRecord",
    "Conflict",
    "DiscoveryEvent",
    "EventKind",
    "Inventory",
    "agent_folders",
    "explicit_agents_from_json",
    "is_readme",
    "scan_agent_folder",
]

# Inside one directory, earlier folders win a same-name clash.
AGENT_FOLDER_NAMES: tuple[str, ...] = (
    ".subagents/agents",
    ".claude/agents",
    ".wave/agents",
    ".codex/agents",
    ".gemini/agents",
)

EventKind = Literal["found", "overridden", "invalid", "skipped", "conflict", "disabled"]


@dataclass(frozen=True, slots=True)
class DiscoveryEvent:
    """One thing discovery noticed, for ``agents list`` and for logs."""

    kind: EventKind
    name: str | None
    path: Path | None
    scope: Scope | None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Conflict:
    """Several definitions of one name in one layer; ``winner`` is the one used."""

    name: str
    scope: Scope
    winner: AgentDefinition
    losers: tuple[AgentDefinition, ...]


@dataclass(frozen=True, slots=True)
class AgentFolder:
    """A folder discovery looks in (whether or not it exists)."""

    path: Path
    scope: Scope
    layer: str


@dataclass(slots=True)
class AgentRecord:
    """The definition used for one name, and what it resolves to here.

    ``effective_model`` is the ``provider:model`` a delegation to it runs on, ``inherit`` (its
    parent's model: declared so, not understood, or no credentials for it here; ``model_choice``
    says which and why), or ``None`` when nothing is set.
    """

    definition: AgentDefinition
    effective_tools: list[str]
    effective_model: str | None
    overrides: list[AgentDefinition] = field(default_factory=list)
    detail: str = ""
    model_choice: ModelChoice | None = None

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def status(self) -> AgentStatus:
        return self.definition.status

    @property
    def scope(self) -> Scope:
        return self.definition.scope

    @property
    def source(self) -> str:
        """A path, or ``<builtin>`` / ``<explicit>``."""
        return self.definition.location


@dataclass(frozen=True, slots=True)
class _Layer:
    scope: Scope
    label: str
    definitions: list[AgentDefinition]


@dataclass(frozen=True, slots=True)
class _Snapshot:
    config: Config
    folders: list[AgentFolder]
    definitions: list[AgentDefinition]
    records: dict[str, AgentRecord]
    conflicts: list[Conflict]
    events: list[DiscoveryEvent]


def is_readme(path: Path) -> bool:
    """``README.md``, ``readme.de.md``: documentation kept beside agents, never an agent.

    ``readme-generator.md`` is an agent, not a README.
    """
    return _is_readme_name(path.name)


def _is_readme_name(file_name: str) -> bool:
    name = file_name.lower()
    for suffix in (".md", ".markdown"):
        if name.endswith(suffix):
            base = name[: -len(suffix)]
            return base == "readme" or base.startswith("readme.")
    return False


def scan_agent_folder(folder: Path) -> tuple[list[Path], list[Path]]:
    """Agent files under ``folder`` and the READMEs skipped, both in path order.

    Path order is a depth-first walk with each directory's entries sorted by name, i.e. the
    order of the paths' components.

    Hidden entries are skipped; symlinked directories are followed once (cycles are cut);
    broken symlinks with an agent suffix are returned so that the parser can report them.
    """
    found: list[Path] = []
    readmes: list[Path] = []
    seen_dirs: set[tuple[int, int]] = set()

    def walk(directory: str) -> None:
        try:
            stat = os.stat(directory)  # noqa: PTH116 - a str path: no Path object per folder
        except OSError:
            return
        key = (stat.st_dev, stat.st_ino)
        if key in seen_dirs:
            return
        seen_dirs.add(key)
        try:
            with os.scandir(directory) as entries:
                # Sorted, so that which path of a doubly-linked folder wins is deterministic.
                listing = sorted(entries, key=lambda entry: entry.name)
        except OSError:
            return
        for entry in listing:
            if entry.name.startswith("."):
                continue
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                walk(entry.path)
                continue
            if not entry.name.endswith(AGENT_FILE_SUFFIXES):
                continue
            if _is_readme_name(entry.name):
                readmes.append(Path(entry.path))
            else:
                found.append(Path(entry.path))

    walk(str(folder))
    return found, readmes


def agent_folders(cwd: Path | None = None, *, home: Path | None = None) -> list[AgentFolder]:
    """Every folder discovery looks in, lowest precedence first."""
    home = resolve_home(home)
    folders = [AgentFolder(home / name, "user", "user") for name in AGENT_FOLDER_NAMES]
    for directory in reversed(project_directories(cwd, home=home)):
        folders.extend(
            AgentFolder(directory / name, "project", f"project {directory}")
            for name in AGENT_FOLDER_NAMES
        )
    return folders


def explicit_agents_from_json(text: str) -> list[AgentDefinition]:
    """Agents given on the command line, as Claude Code's ``--agents`` takes them:
    ``{"name": {"description": ..., "prompt": ..., "tools": [...], "model": ...}, ...}``.

    Each agent may still be invalid (it is reported like a bad file); JSON that is not an
    object of objects raises AgentDefinitionError.
    """
    import json

    from subagents.definitions.parse import parse_agent_mapping

    example = '{"reviewer": {"description": "Reviews code", "prompt": "You review code."}}'
    try:
        data = json.loads(text)
    except ValueError as error:
        raise AgentDefinitionError(
            f"--agents is not valid JSON ({error}).", hint=f"pass an object such as {example}"
        ) from None
    except RecursionError:
        raise AgentDefinitionError(
            "--agents is nested too deeply to read.", hint=f"pass an object such as {example}"
        ) from None
    if not isinstance(data, dict):
        raise AgentDefinitionError(
            f"--agents must be a JSON object of agents, not a {type(data).__name__}.",
            hint=f"pass an object such as {example}",
        )
    return [
        parse_agent_mapping(value, name=str(name), dialect="json", scope="explicit")
        for name, value in data.items()
    ]


class Inventory:
    """Agent records keyed by normalised name, with the events and conflicts of discovery.

    Build one with :meth:`discover`. :meth:`reload` rescans in place; :meth:`watch` keeps it
    current while files change.
    """

    def __init__(
        self,
        *,
        cwd: Path | None,
        home: Path | None,
        config: Config | None,
        explicit: Sequence[AgentDefinition],
        known_mcp_servers: Collection[str] | None,
        tool_names: Sequence[str],
        include_builtin: bool,
    ) -> None:
        self._cwd = Path(cwd) if cwd is not None else None
        self._home = home
        self._fixed_config = config
        self._explicit = tuple(explicit)
        self._known_mcp_servers = known_mcp_servers
        self._extra_tools = frozenset(tool_names)
        self._available_tools = [*BUILTIN_TOOL_NAMES, TASK_TOOL_NAME, *tool_names]
        self._include_builtin = include_builtin
        self._tools_cache: dict[tuple[tuple[str, ...] | None, tuple[str, ...]], list[str]] = {}
        self.generation = 0
        self._snapshot = self._build()

    @classmethod
    def discover(
        cls,
        cwd: Path | None = None,
        *,
        home: Path | None = None,
        config: Config | None = None,
        explicit: Sequence[AgentDefinition] = (),
        known_mcp_servers: Collection[str] | None = None,
        tool_names: Sequence[str] = (),
        include_builtin: bool = True,
    ) -> Inventory:
        """Scan every scope and resolve precedence.

        ``config`` defaults to :func:`~subagents.config.load_config` for ``cwd`` (re-read on
        every reload); ``known_mcp_servers`` are the configured MCP servers (``None``: do not
        check server names); ``tool_names`` are the tools handed out beyond the built-ins (your own
        ``@tool`` functions, MCP tools), which agent files may then name.
        Raises ConfigError for a bad config file; bad agent files never raise.
        """
        return cls(
            cwd=cwd,
            home=home,
            config=config,
            explicit=explicit,
            known_mcp_servers=known_mcp_servers,
            tool_names=tool_names,
            include_builtin=include_builtin,
        )

    # -- reading -------------------------------------------------------------------------------

    @property
    def config(self) -> Config:
        return self._snapshot.config

    @property
    def records(self) -> dict[str, AgentRecord]:
        """Every record (active, invalid and disabled), sorted by name."""
        return self._snapshot.records

    @property
    def definitions(self) -> list[AgentDefinition]:
        """Every definition read, including the overridden and conflicting ones."""
        return self._snapshot.definitions

    @property
    def conflicts(self) -> list[Conflict]:
        return self._snapshot.conflicts

    @property
    def discovery_events(self) -> list[DiscoveryEvent]:
        return self._snapshot.events

    @property
    def folders(self) -> list[AgentFolder]:
        """Every folder searched, lowest precedence first (many may not exist)."""
        return self._snapshot.folders

    @property
    def available_tools(self) -> list[str]:
        return list(self._available_tools)

    def active(self) -> list[AgentRecord]:
        return [record for record in self.records.values() if record.status == "active"]

    def get(self, name: str) -> AgentRecord:
        """The active agent called ``name`` (case and ``_`` do not matter, nothing else).

        A name that is not active triggers one rescan (the file may just have been written);
        then AgentNotFoundError, or AgentUnavailableError for an invalid or disabled agent.
        """
        record = self._lookup(name)
        if record is not None and record.status == "active":
            return record
        self.reload()
        record = self._lookup(name)
        if record is not None and record.status == "active":
            return record
        available = sorted(r.name for r in self.active())
        if record is not None:
            raise AgentUnavailableError(
                record.name,
                status=record.status,
                reasons=_reasons(record),
                location=record.source,
                available=available,
            )
        import difflib  # only for a name that is not found

        closest = difflib.get_close_matches(normalise_name(name), available, n=3, cutoff=0.6)
        raise AgentNotFoundError(name, available=available, closest=closest)

    def _lookup(self, name: str) -> AgentRecord | None:
        records = self.records
        record = records.get(name)
        if record is None:
            record = records.get(normalise_name(name))
        return record

    # -- rescanning ----------------------------------------------------------------------------

    def reload(self) -> Inventory:
        """Rescan everything (config included, unless one was passed in) and swap it in."""
        self._snapshot = self._build()
        self.generation += 1
        return self

    @contextlib.asynccontextmanager
    async def watch(
        self,
        *,
        debounce_ms: int = 300,
        on_reload: Callable[[Inventory], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> AsyncIterator[Inventory]:
        """Reload whenever an agent file or config file changes, while the block runs.

        Watches the agent folders and ``.subagents`` directories that exist when the block
        starts; a folder created later is picked up by the next reload (a lookup miss rescans).
        An error during a reload (a bad config file being edited) keeps the previous state and
        goes to ``on_error``.
        """
        import asyncio  # only watchers pay for it

        paths = self._watch_paths()
        stop = asyncio.Event()
        task: asyncio.Task[None] | None = None
        if paths:
            task = asyncio.create_task(
                self._watch_loop(paths, stop, debounce_ms, on_reload, on_error)
            )
            # Let the task reach its first await: watchfiles registers the watches before it.
            for _ in range(3):
                await asyncio.sleep(0)
        try:
            yield self
        finally:
            stop.set()
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _watch_paths(self) -> list[Path]:
        candidates = [folder.path for folder in self.folders]
        candidates.extend(source.parent for source in self.config.sources)
        unique: list[Path] = []
        for path in candidates:
            if path.is_dir() and path not in unique:
                unique.append(path)
        return unique

    async def _watch_loop(
        self,
        paths: list[Path],
        stop: asyncio.Event,
        debounce_ms: int,
        on_reload: Callable[[Inventory], None] | None,
        on_error: Callable[[Exception], None] | None,
    ) -> None:
        import asyncio

        from watchfiles import awatch

        def relevant(_change: object, path: str) -> bool:
            return path.endswith(AGENT_FILE_SUFFIXES) or path.endswith("config.toml")

        async for _changes in awatch(
            *paths, watch_filter=relevant, debounce=debounce_ms, step=50, stop_event=stop
        ):
            try:
                await asyncio.to_thread(self.reload)
            except Exception as error:  # a half-written config must not kill the watcher
                if on_error is not None:
                    on_error(error)
                continue
            if on_reload is not None:
                on_reload(self)

    # -- building ------------------------------------------------------------------------------

    def _build(self) -> _Snapshot:
        config = self._fixed_config or load_config(self._cwd, home=self._home)
        folders = agent_folders(
            self._cwd, home=self._home if self._home is not None else config.home
        )
        events: list[DiscoveryEvent] = []
        layers = self._read_layers(config, folders, events)
        skills = discover_skills(self._cwd, home=self._home or config.home)
        for layer in layers:
            add_skill_warnings(layer.definitions, skills)
        definitions = [d for layer in layers for d in layer.definitions]
        winners, shadowed, conflicts = _resolve(layers, events)
        records = {
            name: self._record(config, winners[name], shadowed.get(name, []))
            for name in sorted(winners)
        }
        _apply_config_switches(config, records, events)
        offer_skill_tool(records.values(), skills)
        for record in records.values():
            for lower in record.overrides:
                events.append(
                    DiscoveryEvent(
                        "overridden",
                        lower.name,
                        lower.source_path,
                        lower.scope,
                        f"overridden by the {record.scope} definition at {record.source}",
                    )
                )
        return _Snapshot(config, folders, definitions, records, conflicts, events)

    def _read_layers(
        self, config: Config, folders: list[AgentFolder], events: list[DiscoveryEvent]
    ) -> list[_Layer]:
        aliases = list(config.models)
        layers: list[_Layer] = []
        if self._include_builtin:
            from subagents.definitions import builtin_definitions

            builtins = [self._validate(d, aliases) for d in builtin_definitions()]
            events.extend(_found_event(d) for d in builtins)
            layers.append(_Layer("builtin", "builtin", builtins))
        by_layer: dict[str, list[AgentDefinition]] = {}
        scopes: dict[str, Scope] = {}
        for folder in folders:
            files, readmes = scan_agent_folder(folder.path)
            for readme in readmes:
                events.append(
                    DiscoveryEvent(
                        "skipped", None, readme, folder.scope, "README files are not agents"
                    )
                )
            parsed = by_layer.setdefault(folder.layer, [])
            scopes[folder.layer] = folder.scope
            for path in files:
                definition = self._validate(parse_agent_file(path, scope=folder.scope), aliases)
                parsed.append(definition)
                events.append(_found_event(definition))
        layers.extend(_Layer(scopes[label], label, defs) for label, defs in by_layer.items())
        explicit = [
            self._validate(
                d if d.scope == "explicit" else d.model_copy(update={"scope": "explicit"}),
                aliases,
            )
            for d in self._explicit
        ]
        for definition in explicit:
            events.append(_found_event(definition))
        layers.append(_Layer("explicit", "explicit", explicit))
        return layers

    def _validate(self, definition: AgentDefinition, aliases: list[str]) -> AgentDefinition:
        if definition.scope != "explicit" and not self._config_changes_verdict(definition, aliases):
            return definition  # the parser validated it already, with the same outcome
        return validate_definition(
            definition,
            known_mcp_servers=self._known_mcp_servers,
            known_model_aliases=aliases,
            known_tools=self._extra_tools,
        )

    def _config_changes_verdict(self, definition: AgentDefinition, aliases: list[str]) -> bool:
        """Whether config aliases or known MCP servers can change what the parser concluded.

        Aliases only matter for the ``model`` value; known servers only for MCP tool names and
        ``mcp_servers`` (the parser accepts every MCP name).
        """
        if definition.model is not None and aliases:  # any spelling of a config alias
            return True
        if self._extra_tools and not self._extra_tools.isdisjoint(definition.tools or ()):
            return True
        if self._known_mcp_servers is None:
            return False
        if definition.mcp_servers:
            return True
        return any(tool.startswith("mcp__") for tool in definition.tools or ())

    def _effective_tools(self, definition: AgentDefinition) -> list[str]:
        # Many agents share one tool list: compute each distinct one once per inventory.
        key = (
            tuple(definition.tools) if definition.tools is not None else None,
            tuple(definition.disallowed_tools),
        )
        tools = self._tools_cache.get(key)
        if tools is None:
            tools = self._tools_cache[key] = effective_tool_names(definition, self._available_tools)
        return list(tools)

    def _record(
        self, config: Config, definition: AgentDefinition, overrides: list[AgentDefinition]
    ) -> AgentRecord:
        from subagents.models.endpoint import uses_endpoint

        choice: ModelChoice | None = None
        if uses_endpoint(definition):  # its own server: no alias, no fallback
            effective: str | None = f"{definition.model} at {definition.endpoint}"
        else:
            choice = config.model_choice(definition.model)  # the one the run makes, too
            effective = choice.model
            if effective is None and choice.requested is not None:
                effective = "inherit"
        return AgentRecord(
            definition=definition,
            effective_tools=self._effective_tools(definition),
            effective_model=effective,
            overrides=overrides,
            detail="; ".join(definition.validation_errors),
            model_choice=choice,
        )


def _found_event(definition: AgentDefinition) -> DiscoveryEvent:
    if definition.validation_errors:
        return DiscoveryEvent(
            "invalid",
            definition.name,
            definition.source_path,
            definition.scope,
            "; ".join(definition.validation_errors),
        )
    return DiscoveryEvent(
        "found", definition.name, definition.source_path, definition.scope, definition.dialect
    )


def _resolve(
    layers: Iterable[_Layer], events: list[DiscoveryEvent]
) -> tuple[dict[str, AgentDefinition], dict[str, list[AgentDefinition]], list[Conflict]]:
    """Winners by name, what each winner shadows (highest first), and same-layer conflicts."""
    winners: dict[str, AgentDefinition] = {}
    shadowed: dict[str, list[AgentDefinition]] = {}
    conflicts: list[Conflict] = []
    for layer in layers:
        layer_winners: dict[str, AgentDefinition] = {}
        layer_losers: dict[str, list[AgentDefinition]] = {}
        for definition in layer.definitions:
            if definition.name in layer_winners:
                layer_losers.setdefault(definition.name, []).append(definition)
            else:
                layer_winners[definition.name] = definition
        for name, losers in layer_losers.items():
            winner = layer_winners[name]
            conflicts.append(Conflict(name, layer.scope, winner, tuple(losers)))
            for loser in losers:
                events.append(
                    DiscoveryEvent(
                        "conflict",
                        name,
                        loser.source_path,
                        layer.scope,
                        f"{name!r} is also defined at {winner.location}, which wins "
                        "(folder order .subagents > .claude > .wave > .codex > .gemini, "
                        "then path order); rename or remove one of them",
                    )
                )
        for name, definition in layer_winners.items():
            if name in winners:
                shadowed.setdefault(name, []).insert(0, winners[name])
            winners[name] = definition
    return winners, shadowed, conflicts


def _apply_config_switches(
    config: Config, records: dict[str, AgentRecord], events: list[DiscoveryEvent]
) -> None:
    settings = config.subagents
    disabled_names = {normalise_name(n) for n in settings.disabled}
    manual_names = {normalise_name(n) for n in settings.agents}
    for name, record in records.items():
        reason: str | None = None
        if not settings.enabled:
            reason = "disabled by 'enabled = false' in [subagents] of config.toml"
        elif name in disabled_names:
            reason = "disabled by 'disabled' in [subagents] of config.toml"
        elif settings.discovery == "manual" and name not in manual_names:
            reason = "not listed in 'agents' while [subagents] discovery = \"manual\""
        if reason is None:
            continue
        record.definition = record.definition.model_copy(update={"disabled": True})
        record.detail = reason
        events.append(
            DiscoveryEvent("disabled", name, record.definition.source_path, record.scope, reason)
        )
    listed = sorted(disabled_names | (manual_names if settings.discovery == "manual" else set()))
    for name in listed:
        if name not in records:
            events.append(
                DiscoveryEvent(
                    "skipped",
                    name,
                    None,
                    None,
                    f"config.toml names agent {name!r}, which was not found; "
                    "check the spelling in [subagents]",
                )
            )


def _reasons(record: AgentRecord) -> list[str]:
    if record.status == "invalid":
        return list(record.definition.validation_errors)
    return [record.detail] if record.detail else []
