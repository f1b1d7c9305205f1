"""`subagents agents ...`: list, show, validate, schema and create agent definitions.

Only typer is imported at module level; the inventory, Rich and JSON come in inside each
command so that ``subagents --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from subagents._preview import shorten
from subagents.cli import plain
from subagents.cli.common import make_console, user_errors
from subagents.tools.specs import delegation_limit

if TYPE_CHECKING:
    from subagents.cli.servers import ModelServer
    from subagents.config import Config
    from subagents.definitions.model import AgentDefinition
    from subagents.inventory import AgentRecord, Inventory

__all__ = ["agents_app"]

_SHOWN_MODEL_CHARS = 60  # of a model value as an agent file wrote it

agents_app = typer.Typer(
    help="Find, inspect and validate agent definitions.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,  # plain help keeps `--help` fast (see cli/app.py)
)

CwdOption = Annotated[
    Path | None,
    typer.Option(
        "--cwd",
        help="Project directory to work from (default: the current directory).",
        exists=True,
        file_okay=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
AgentsOption = Annotated[
    str | None,
    typer.Option(
        "--agents",
        help="Extra agents as JSON, as in Claude Code: "
        '\'{"name": {"description": "...", "prompt": "..."}}\' (highest precedence).',
    ),
]

EXIT_INVALID = 1


def _discover(cwd: Path | None, agents_json: str | None = None) -> Inventory:
    from subagents.inventory import Inventory, explicit_agents_from_json

    explicit = explicit_agents_from_json(agents_json) if agents_json else []
    return Inventory.discover(cwd, explicit=explicit)


def _mcp_tools(definition: AgentDefinition, cwd: Path | None) -> list[str]:
    """The MCP tools ``definition`` gets at run time, as far as the configuration says
    without starting a server: each pattern of its ``tools`` (or, inheriting every tool,
    each configured server), with a note when its server is not configured or disabled."""
    from subagents.errors import ConfigError
    from subagents.mcp.config import load_mcp_servers
    from subagents.mcp.toolset import sanitise_name

    try:
        config = load_mcp_servers(cwd)
    except ConfigError as error:
        return [f"(the MCP configuration cannot be read: {error.message})"]
    servers = {sanitise_name(name): server for name, server in config.servers.items()}
    inline = {sanitise_name(name) for name in definition.mcp_server_configs}
    if definition.tools is None:
        patterns = [f"mcp__{name}" for name in sorted({*servers, *inline})]
    else:
        patterns = [entry for entry in definition.tools if entry.startswith("mcp__")]
    shown = []
    for pattern in patterns:
        server = pattern.removeprefix("mcp__").split("__")[0]
        whole = pattern.rstrip("*").rstrip("_") == f"mcp__{server}"
        what = f"every tool of server {server!r}" if whole else ""
        if server not in servers and server not in inline:
            what = f"server {server!r} is not configured"
        elif server in servers and not servers[server].enabled:
            what = f"server {server!r} is disabled"
        shown.append(f"{pattern} ({what})" if what else pattern)
    return shown


def _display_path(path: Path | str | None, base: Path) -> str:
    if path is None:
        return ""
    candidate = Path(path)
    if not candidate.is_absolute():
        return str(candidate)
    try:
        return str(candidate.relative_to(base))
    except ValueError:
        return str(candidate)


def _base(cwd: Path | None) -> Path:
    return (cwd if cwd is not None else Path.cwd()).resolve()


def _source(definition: AgentDefinition, base: Path) -> str:
    if definition.scope == "builtin":
        return "<builtin>"
    return _display_path(definition.source_path, base) or definition.location


def _tools_summary(record: AgentRecord) -> str:
    if record.definition.tools is None:
        return f"all ({len(record.effective_tools)})"
    return ", ".join(record.effective_tools) or "(none)"


def _model_summary(record: AgentRecord) -> str:
    """The list's model column: the model a delegation runs on, and why when it inherits."""
    choice = record.model_choice
    if choice is not None and choice.error is not None:
        return f"{record.effective_model} (cannot start here)"
    if choice is None or choice.fallback is None:
        return record.effective_model or "-"
    return f"{shorten(choice.requested or '', _SHOWN_MODEL_CHARS)} → inherit: {choice.fallback}"


def _model_line(record: AgentRecord) -> str:
    declared = record.definition.model or "(not set)"
    choice = record.model_choice
    if choice is None:
        return f"{declared} → {record.effective_model or 'inherit'}"
    return f"{declared} → {choice.describe()}"


def _fallback_json(record: AgentRecord) -> dict[str, Any] | None:
    choice = record.model_choice
    if choice is None or (choice.fallback is None and choice.error is None):
        return None
    return {
        "requested": choice.requested,
        "wanted": choice.wanted,
        "runs_on": "inherit" if choice.fallback is not None else None,  # None: refused
        "reason": choice.fallback or choice.error,
        "hint": choice.hint,
    }


def _model_notes(records: list[AgentRecord]) -> list[str]:
    """One note per distinct model that cannot run here as declared, with what to do."""
    notes: dict[str, list[str]] = {}
    for record in records:
        choice = record.model_choice
        if record.status != "active" or choice is None:
            continue
        if choice.fallback is not None or choice.error is not None:
            requested = shorten(choice.requested or "", _SHOWN_MODEL_CHARS)
            notes.setdefault(f"{requested} → {choice.describe()}", []).append(record.name)
    return [
        f"{note} ({', '.join(names[:5])}"
        + (f" and {len(names) - 5} more)" if len(names) > 5 else ")")
        for note, names in notes.items()
    ]


def _overrides_summary(record: AgentRecord) -> str:
    scopes: list[str] = []
    for lower in record.overrides:
        if lower.scope not in scopes:
            scopes.append(lower.scope)
    return ", ".join(scopes)


def _subagent_types(d: AgentDefinition) -> list[str]:
    """The agents its ``Agent(...)`` entries let it start (empty: no such limit)."""
    types = delegation_limit(d.tools)
    return types if types is not None else []


def _record_json(record: AgentRecord, base: Path) -> dict[str, Any]:
    d = record.definition
    return {
        "name": record.name,
        "declared_name": d.declared_name,
        "description": d.description,
        "scope": record.scope,
        "status": record.status,
        "detail": record.detail,
        "source": _source(d, base),
        "dialect": d.dialect,
        "model": d.model,
        "effective_model": record.effective_model,
        "model_fallback": _fallback_json(record),
        "tools": d.tools,
        "disallowed_tools": d.disallowed_tools,
        "effective_tools": record.effective_tools,
        "subagent_types": delegation_limit(d.tools),
        "unavailable_tools": d.unavailable_tools,
        "max_turns": d.max_turns,
        "max_budget_tokens": d.max_budget_tokens,
        "max_budget_usd": d.max_budget_usd,
        "output_schema": d.output_schema,
        "max_duration_seconds": d.max_duration_seconds,
        "permission_mode": d.permission_mode,
        "mcp_servers": d.mcp_servers,
        "color": d.color,
        "background": d.background,
        "temperature": d.temperature,
        "skills": d.skills,
        "memory": d.memory,
        "memory_folder": _memory_folder(d, base),
        "isolation": d.isolation,
        "effort": d.effort,
        "hooks": d.hooks,
        "initial_prompt": d.initial_prompt,
        "omit_claude_md": d.omit_claude_md,
        "endpoint": d.endpoint,
        "api_key_env": d.api_key_env,
        "extra": d.extra,
        "validation_errors": d.validation_errors,
        "warnings": d.warnings,
        "overrides": [
            {
                "scope": lower.scope,
                "source": _display_path(lower.source_path, base) or lower.location,
            }
            for lower in record.overrides
        ],
    }


def _memory_folder(d: AgentDefinition, base: Path) -> str | None:
    """Where the agent's memory folder is (it is made when the agent first runs)."""
    if d.memory is None:
        return None
    from subagents.runtime.memory import memory_folder

    return str(memory_folder(d.name, d.memory, workspace=base))


def _print_json(data: object) -> None:
    import json

    typer.echo(json.dumps(data, indent=2, default=str))


@agents_app.command("list")
def list_agents(
    cwd: CwdOption = None, as_json: JsonOption = False, agents: AgentsOption = None
) -> None:
    """List the agents found for this project, with scope, model, tools and status."""
    with user_errors():
        inventory = _discover(cwd, agents)
    base = _base(cwd)
    records = list(inventory.records.values())
    if as_json:
        _print_json(
            {
                "agents": [_record_json(record, base) for record in records],
                "conflicts": [
                    {
                        "name": conflict.name,
                        "scope": conflict.scope,
                        "winner": _display_path(conflict.winner.source_path, base),
                        "losers": [_display_path(d.source_path, base) for d in conflict.losers],
                    }
                    for conflict in inventory.conflicts
                ],
                "events": [
                    {
                        "kind": event.kind,
                        "name": event.name,
                        "path": _display_path(event.path, base) or None,
                        "scope": event.scope,
                        "detail": event.detail,
                    }
                    for event in inventory.discovery_events
                ],
                "config_sources": [str(path) for path in inventory.config.sources],
            }
        )
        return

    colour = plain.use_colour()
    typer.echo("\n".join(_list_lines(inventory, records, base, colour)), color=colour)


_STATUS_COLOURS = {"active": "green", "invalid": "red", "disabled": "yellow"}
_LIST_COLUMNS = (
    plain.Column("Name", flexible=False),
    plain.Column("Scope", flexible=False),
    plain.Column("Model"),
    plain.Column("Tools"),
    plain.Column("Status", flexible=False, colours=_STATUS_COLOURS),
    plain.Column("Overrides", optional=True),
    plain.Column("Source", keep="end"),
)


def _list_lines(
    inventory: Inventory, records: list[AgentRecord], base: Path, colour: bool
) -> list[str]:
    """`agents list` as plain text: a table, one line per agent, then the notes."""
    width = plain.output_width()
    rows = [
        (
            record.name,
            record.scope,
            _model_summary(record),
            _tools_summary(record),
            record.status,
            _overrides_summary(record),
            _source(record.definition, base),
        )
        for record in records
    ]
    lines = [f"Agents: {len(inventory.active())} active of {len(records)}"]
    lines.extend(plain.table_lines(_LIST_COLUMNS, rows, width, colour=colour))
    notes = [("model", "yellow", note) for note in _model_notes(records)]
    for conflict in inventory.conflicts:
        losers = ", ".join(_display_path(d.source_path, base) for d in conflict.losers)
        notes.append(
            (
                "conflict",
                "yellow",
                f"{conflict.name!r} ({conflict.scope}) defined more than once; using "
                f"{_display_path(conflict.winner.source_path, base)}, ignoring {losers}",
            )
        )
    notes.extend(
        ("invalid", "red", f"{r.name}: {r.detail} (run 'subagents agents validate' for details)")
        for r in records
        if r.status == "invalid"
    )
    for label, style, text in notes:
        lines.extend(_labelled(label, style, text, width, colour))
    return lines


def _labelled(label: str, style: str, text: str, width: int, colour: bool) -> list[str]:
    """``label: text`` wrapped to ``width``, the label in ``style``."""
    lines = plain.wrap(f"{label}: {text}", width)
    lines[0] = plain.paint(label, style, colour) + lines[0][len(label) :]
    return lines


@agents_app.command("show")
def show_agent(
    name: Annotated[str, typer.Argument(help="Agent name, as listed by 'subagents agents list'.")],
    cwd: CwdOption = None,
    as_json: JsonOption = False,
    agents: AgentsOption = None,
) -> None:
    """Show one agent: settings, effective tools and model, problems, prompt."""
    with user_errors():
        inventory = _discover(cwd, agents)
        record = _find_record(inventory, name)
    base = _base(cwd)
    from subagents.tools.web.notes import web_tool_notes

    notes = web_tool_notes(record.effective_tools, inventory.config.web)
    mcp_tools = _mcp_tools(record.definition, cwd)
    server = _server(record, inventory.config)
    if as_json:
        data = _record_json(record, base)
        data["server"] = server
        data["mcp_tools"] = mcp_tools
        data["notes"] = notes
        data["system_prompt"] = record.definition.system_prompt
        data["project_instructions"] = _instruction_files(record.definition, base)
        _print_json(data)
        return

    from rich.markdown import Markdown
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    from subagents.cli.answer import shown_text

    console = make_console()

    def shown(text: str) -> str:
        """An agent file's text (it may come with the project), as text: never markup, and
        at a terminal its control characters escaped (see :mod:`subagents.cli.answer`)."""
        return shown_text(text, terminal=console.is_terminal)

    d = record.definition
    rows: list[tuple[str, str]] = [
        ("name", record.name + (f" (declared as {d.declared_name!r})" if d.declared_name else "")),
        ("description", d.description),
        ("status", record.status + (f": {record.detail}" if record.detail else "")),
        ("scope", record.scope),
        ("source", _display_path(d.source_path, base) or record.source),
        ("dialect", d.dialect),
        ("model", _model_line(record)),
        *([("server", server["summary"])] if server is not None else []),
        ("tools", "all (inherited)" if d.tools is None else ", ".join(d.tools) or "(none)"),
        ("effective tools", ", ".join([*record.effective_tools, *mcp_tools]) or "(none)"),
    ]
    optional: list[tuple[str, object]] = [
        ("disallowed tools", ", ".join(d.disallowed_tools)),
        ("may start only", ", ".join(_subagent_types(d))),
        ("unavailable tools", ", ".join(d.unavailable_tools)),
        ("max turns", d.max_turns),
        ("token budget", f"{d.max_budget_tokens:,}" if d.max_budget_tokens else None),
        ("USD budget", f"${d.max_budget_usd:,.2f}" if d.max_budget_usd else None),
        ("result", "JSON matching its outputSchema" if d.output_schema else None),
        ("time limit", f"{d.max_duration_seconds} s" if d.max_duration_seconds else None),
        ("permission mode", d.permission_mode),
        ("MCP servers", ", ".join(d.mcp_servers)),
        ("color", d.color),
        ("background", "yes" if d.background else ""),
        ("temperature", d.temperature),
        ("skills", ", ".join(d.skills)),
        ("memory", f"{d.memory}: {_memory_folder(d, base)}" if d.memory else None),
        *_isolation_effort_hooks_rows(d),
        ("endpoint", _endpoint_summary(d)),
        ("project instructions", _instructions_summary(d, base)),
        ("initial prompt", _initial_prompt_summary(d)),
        ("extra keys", ", ".join(sorted(d.extra))),
    ]
    rows.extend((label, str(value)) for label, value in optional if value not in (None, ""))
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for label, value in rows:
        grid.add_row(label, Text(shown(value)))
    console.print(grid)
    for title, items, style in (
        ("errors", d.validation_errors, "red"),
        ("warnings", d.warnings, "yellow"),
        ("notes", notes, "cyan"),
    ):
        if items:
            console.print(f"\n[bold {style}]{title}[/]")
            for item in items:
                console.print(f"  - {shown(item)}", highlight=False, markup=False)
    if record.overrides:
        console.print("\n[bold]overrides[/]")
        for lower in record.overrides:
            where = _source(lower, base)
            console.print(f"  - {lower.scope}: {shown(where)}", highlight=False, markup=False)
    console.print()
    # links shown with their targets, not as terminal hyperlinks that hide them
    prompt = Markdown(shown(d.system_prompt or "(empty)"), hyperlinks=False)
    console.print(Panel(prompt, title="system prompt"))


def _server(record: AgentRecord, config: Config) -> dict[str, Any] | None:
    """Where the agent's own model sends its requests, the modes that follow and why (see
    :mod:`subagents.cli.servers`), redacted; ``None`` when it runs on its parent's model or
    on one no provider here explains."""
    from subagents.cli.servers import endpoint_server, model_server
    from subagents.models.endpoint import uses_endpoint
    from subagents.redaction import Redactor
    from subagents.secrets import known_credentials

    d = record.definition
    found: ModelServer | None
    if uses_endpoint(d):
        found = endpoint_server(d, config.providers)
    else:
        choice = record.model_choice
        model = choice.model if choice is not None else record.effective_model
        if model is None or model == "inherit":
            return None
        found = model_server(model, config.providers)
    if found is None:
        return None
    shown: dict[str, Any] = Redactor(known_credentials(config)).value(found.to_dict())
    return shown


def _isolation_effort_hooks_rows(d: AgentDefinition) -> list[tuple[str, object]]:
    """What ``isolation``, ``effort`` and ``hooks`` will do when the agent runs."""
    from subagents.definitions.hooks import describe_agent_hooks

    rows: list[tuple[str, object]] = []
    if d.isolation == "worktree":
        rows.append(
            (
                "isolation",
                "worktree: each run in a git worktree of its own, removed if "
                "nothing changed, else kept and named in the result",
            )
        )
    if d.effort is not None:
        from subagents.models.anthropic import THINKING_BUDGETS
        from subagents.models.openai import REASONING_EFFORTS

        rows.append(
            (
                "effort",
                f"{d.effort}: OpenAI reasoning_effort "
                f"{REASONING_EFFORTS[d.effort]}, Claude thinking budget "
                f"{THINKING_BUDGETS[d.effort]:,} tokens",
            )
        )
    if d.hooks:
        rows.append(("hooks", describe_agent_hooks(d.hooks)))
    return rows


def _instruction_files(d: AgentDefinition, base: Path) -> list[dict[str, Any]]:
    """The CLAUDE.md / AGENTS.md / rule files the agent is given in ``base``."""
    from subagents.runtime.instructions import load_project_instructions

    if d.omit_claude_md:
        return []
    loaded = load_project_instructions(base)
    return [{"path": _display_path(f.path, base), "cut": f.cut} for f in loaded.files]


def _instructions_summary(d: AgentDefinition, base: Path) -> str:
    if d.omit_claude_md:
        return "left out (omitClaudeMd)"
    files = _instruction_files(d, base)
    return ", ".join(f["path"] + (" (cut)" if f["cut"] else "") for f in files)


def _initial_prompt_summary(d: AgentDefinition) -> str:
    """The prompt ``run --agent NAME`` starts from when it is given none."""
    if not d.initial_prompt:
        return ""
    return f"{shorten(d.initial_prompt, 120)!r} (for 'subagents run --agent {d.name}' alone)"


def _endpoint_summary(d: AgentDefinition) -> str:
    """Where the agent's own server is, and where its key comes from (never the key)."""
    if d.endpoint is None:
        return ""
    key = f"key from ${d.api_key_env}" if d.api_key_env else "no key sent"
    return f"{d.endpoint} ({key})"


def _find_record(inventory: Inventory, name: str) -> AgentRecord:
    """Any record (active or not) by exact or normalised name; else AgentNotFoundError."""
    import difflib

    from subagents.definitions.validate import normalise_name
    from subagents.errors import AgentNotFoundError

    records = inventory.records
    record = records.get(name) or records.get(normalise_name(name))
    if record is not None:
        return record
    names = sorted(records)
    closest = difflib.get_close_matches(normalise_name(name), names, n=3)
    raise AgentNotFoundError(name, available=names, closest=closest)


@agents_app.command("validate")
def validate_agents(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Agent files or folders to check (default: every agent found)."),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Fail on warnings and conflicts too.")
    ] = False,
    cwd: CwdOption = None,
    agents: AgentsOption = None,
) -> None:
    """Check agent files: one line per problem; exit 1 if any is invalid.

    Usable in CI. Without PATHS every agent found for the project is checked, including the
    ones that are overridden or lose a conflict.
    """
    base = _base(cwd)
    with user_errors():
        if paths:
            from subagents.config import load_config

            definitions = _validate_paths(paths, load_config(cwd), cwd)
            conflicts: list[str] = []
        else:
            inventory = _discover(cwd, agents)
            definitions = [d for d in inventory.definitions if d.scope != "builtin"]
            conflicts = [
                f"{_display_path(loser.source_path, base)}: {conflict.name}: conflict: also "
                f"defined at {_display_path(conflict.winner.source_path, base)}, which wins"
                for conflict in inventory.conflicts
                for loser in conflict.losers
            ]
    invalid = 0
    warned = 0
    for definition in definitions:
        where = _display_path(definition.source_path, base) or definition.location
        for reason in definition.validation_errors:
            typer.echo(f"{where}: {definition.name}: {reason}")
        for reason in definition.warnings:
            typer.echo(f"{where}: {definition.name}: warning: {reason}")
        invalid += bool(definition.validation_errors)
        warned += bool(definition.warnings)
    for line in conflicts:
        typer.echo(line)
    failed = invalid > 0 or (strict and (warned > 0 or bool(conflicts)))
    summary = (
        f"{len(definitions)} agent file(s) checked: {invalid} invalid, {warned} with warnings"
        + (f", {len(conflicts)} conflict(s)" if conflicts else "")
    )
    typer.echo(summary, err=True)
    if failed:
        raise typer.Exit(EXIT_INVALID)


def _validate_paths(paths: list[Path], config: Config, cwd: Path | None) -> list[AgentDefinition]:
    from subagents.definitions.parse import parse_agent_file
    from subagents.definitions.validate import validate_definition
    from subagents.errors import SubagentsError
    from subagents.inventory import scan_agent_folder

    definitions: list[AgentDefinition] = []
    for given in paths:
        path = given if given.is_absolute() or cwd is None else cwd / given
        if path.is_dir():
            files, _ = scan_agent_folder(path)
        elif path.exists() or path.is_symlink():
            files = [path]
        else:
            raise SubagentsError(
                f"{given}: no such file or directory.",
                hint="pass agent files or folders that exist, or no path to check every agent",
            )
        for file in files:
            parsed = parse_agent_file(file, scope="project")
            definitions.append(validate_definition(parsed, known_model_aliases=list(config.models)))
    return definitions


@agents_app.command("schema")
def schema() -> None:
    """Print the JSON Schema of agent-file frontmatter."""
    from subagents.definitions.render import frontmatter_json_schema

    _print_json(frontmatter_json_schema())


@agents_app.command("new")
def new_agent(
    name: Annotated[str, typer.Argument(help="Name of the new agent, e.g. code-reviewer.")],
    directory: Annotated[
        Path | None,
        typer.Option("--dir", help="Folder to write into (default: the scope's .claude/agents)."),
    ] = None,
    scope: Annotated[
        str,
        typer.Option("--scope", help="project (the repository's .claude/agents) or user (~)."),
    ] = "project",
    cwd: CwdOption = None,
) -> None:
    """Write a commented template for a new agent (never overwrites)."""
    from subagents.errors import SubagentsError

    with user_errors():
        if scope not in ("project", "user"):
            raise SubagentsError(
                f"unknown scope {scope!r}.", hint="use --scope project or --scope user"
            )
        target = _new_agent_path(name, directory, "user" if scope == "user" else "project", cwd)
    typer.echo(f"wrote {target}")
    typer.echo(f"edit it, then check it with: subagents agents validate {target}")


def _new_agent_path(
    raw_name: str, directory: Path | None, scope: Literal["project", "user"], cwd: Path | None
) -> Path:
    from subagents.config import load_config, resolve_home
    from subagents.definitions.render import new_agent_template
    from subagents.definitions.validate import NAME_PATTERN, normalise_name
    from subagents.errors import SubagentsError

    name = normalise_name(raw_name)
    if not NAME_PATTERN.match(name):
        raise SubagentsError(
            f"{raw_name!r} is not a valid agent name.",
            hint="use lowercase letters, digits and '-', starting with a letter (code-reviewer)",
        )
    if directory is None:
        if scope == "user":
            root = resolve_home()
        else:
            base = _base(cwd)
            root = load_config(base).project_root or base
        directory = root / ".claude" / "agents"
    elif not directory.is_absolute() and cwd is not None:
        directory = cwd / directory
    target = directory / f"{name}.md"
    if target.exists() or target.is_symlink():
        raise SubagentsError(
            f"{target} already exists; not overwriting it.",
            hint="choose another name, or edit that file",
        )
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with open(target, "x", encoding="utf-8") as handle:
            handle.write(new_agent_template(name))
    except FileExistsError as error:
        raise SubagentsError(
            f"{target} already exists; not overwriting it.",
            hint="choose another name, or edit that file",
        ) from error
    except OSError as error:
        raise SubagentsError(
            f"cannot write {target}: {error.strerror or error}.",
            hint="pick a writable folder with --dir",
        ) from error
    return target
