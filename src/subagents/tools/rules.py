"""Permission rules in Claude Code's syntax: ``Tool`` or ``Tool(specifier)``.

- ``Bash(npm run test:*)``: the command starts with ``npm run test`` (a whole word);
  ``Bash(git push *)``: a glob on the command (``*`` is any text; a single trailing `` *`` may
  also match nothing); ``Bash(make)``: exactly that command. A compound command (``a && b``,
  ``a; b``, ``a | b``, ``$(b)``) is matched part by part: a deny or ask rule matching any part
  matches, an allow rule must match every part (and never covers command substitution).
- ``Read(./.env)``, ``Edit(src/**)``: gitignore-style path patterns. ``./x`` and ``x`` are
  relative to the workspace, ``/x`` to the project root (where ``.claude/`` is), ``~/x`` to
  home and ``//x`` is an absolute path. ``Read`` rules cover Read, Glob, Grep and LS;
  ``Edit`` rules cover Write, Edit, MultiEdit and NotebookEdit.
- ``WebFetch(domain:example.com)``: the host of the call's ``url`` (``*.example.com`` for
  subdomains).
- ``Agent(explore, plan)`` / ``Task(...)``: the ``subagent_type`` of a Task call.
- ``Skill(pdf)`` / ``Skill(team:*)``: the ``skill`` a Skill call loads.
- ``mcp__server`` / ``mcp__server__*``: every tool of that server; ``mcp__server__tool``.

A bare tool name matches every call of that tool. Rules are checked deny, then ask, then
allow: the first match decides, whatever the order they were written in.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from subagents.tools.specs import parse_tool_entry, subagent_types

if TYPE_CHECKING:
    from subagents.tools.base import Tool

__all__ = [
    "RULE_BEHAVIORS",
    "PathContext",
    "PermissionRule",
    "PermissionRules",
    "RuleBehavior",
    "RuleVerdict",
    "ToolLimit",
    "command_matches",
    "denied_by_rules",
    "parse_rule",
    "rules_from_texts",
    "specifier_problem",
    "split_command",
    "unreadable_files",
]

RuleBehavior = Literal["allow", "ask", "deny"]
RULE_BEHAVIORS: tuple[RuleBehavior, ...] = ("deny", "ask", "allow")

# A rule written for one tool covers the tools that do the same kind of thing.
_FAMILIES: dict[str, frozenset[str]] = {
    "Read": frozenset({"Read", "Glob", "Grep", "LS"}),
    "Edit": frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"}),
}
# The argument a specifier is matched against, by tool.
_PATH_ARGUMENTS: dict[str, tuple[str, str | None]] = {
    "Read": ("file_path", None),
    "Write": ("file_path", None),
    "Edit": ("file_path", None),
    "MultiEdit": ("file_path", None),
    "NotebookEdit": ("notebook_path", None),
    "Glob": ("path", "."),
    "Grep": ("path", "."),
    "LS": ("path", "."),
}
_SPECIFIER_KINDS: dict[str, str] = {
    **dict.fromkeys(_PATH_ARGUMENTS, "path"),
    "Bash": "command",
    "WebFetch": "domain",
    "Task": "agent",
    "Skill": "skill",
}
_MCP_RULE = re.compile(r"^mcp__([^_](?:[^_]|_(?!_))*)(?:__(.+))?$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Words that run the rest of the line as a command: ``sudo git push`` is ``git push``.
_TRANSPARENT_WORDS = frozenset({"env", "command", "builtin", "exec", "nohup", "time", "sudo"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash"})
_MAX_COMMAND_DEPTH = 4
_MAX_WORDS = 256  # of one simple command tried as the start of a denied command


@dataclass(frozen=True, slots=True)
class PermissionRule:
    """One rule: what it does, the tool and specifier it matches, and where it was written."""

    behavior: RuleBehavior
    tool: str
    specifier: str | None
    text: str
    source: str
    project_root: Path | None = None
    """What ``/path`` specifiers are relative to (the folder holding ``.claude/``)."""

    def describe(self) -> str:
        return f"{self.behavior} rule {self.text!r} from {self.source}"


@dataclass(frozen=True, slots=True)
class ToolLimit:
    """An agent's ``tools`` naming a tool only with specifiers: it may use that tool only for
    calls one of them matches (``tools: Bash(git *)`` -> Bash for git commands only)."""

    tool: str
    rules: tuple[PermissionRule, ...]
    source: str

    def describe(self) -> str:
        allowed = ", ".join(rule.text for rule in self.rules)
        return f"limit in {self.source} ({self.tool} only as {allowed})"


@dataclass(frozen=True, slots=True)
class RuleVerdict:
    behavior: RuleBehavior
    reason: str
    """Which rule (or limit) decided, and where it comes from, for the refusal or question."""


@dataclass(frozen=True, slots=True)
class PathContext:
    """Where relative paths of a call and of rules start."""

    workspace: Path
    home: Path


def parse_rule(
    text: str, behavior: RuleBehavior, source: str, *, project_root: Path | None = None
) -> tuple[PermissionRule | None, str | None]:
    """The rule ``text`` says, or ``None`` and why it cannot be used (for a warning)."""
    entry = parse_tool_entry(text)
    if entry is None:
        return None, (
            f"{behavior} rule {text!r} ({source}) is not of the form Tool or Tool(specifier); "
            "it is ignored"
        )
    problem = specifier_problem(entry.tool, entry.specifier)
    if problem is not None:
        return None, f"{behavior} rule {text!r} ({source}): {problem}; it is ignored"
    specifier = entry.specifier or None  # "Bash()" is "Bash"
    return PermissionRule(behavior, entry.tool, specifier, text, source, project_root), None


def specifier_problem(tool: str, specifier: str | None) -> str | None:
    """Why ``specifier`` cannot be used with ``tool`` (``None``: it can)."""
    if not specifier:
        return None
    kind = _SPECIFIER_KINDS.get(tool)
    if kind is None:
        return (
            f"{tool} takes no specifier here (specifiers work with Bash, Read, Edit, Write, "
            "WebFetch, Agent and Skill)"
        )
    if kind == "domain" and not specifier.startswith("domain:"):
        return "a WebFetch specifier must be domain:HOST (e.g. domain:example.com)"
    if kind == "domain" and not specifier.removeprefix("domain:").strip():
        return "domain: needs a host (e.g. domain:example.com)"
    return None


class PermissionRules:
    """Rules and limits from every source, checked deny, limits, ask, allow.

    Immutable: :meth:`merged` returns a new set, which is how a subagent gets its parent's
    rules plus its own.
    """

    __slots__ = ("_by_tool", "_cache", "limits", "rules")

    def __init__(
        self, rules: Iterable[PermissionRule] = (), limits: Iterable[ToolLimit] = ()
    ) -> None:
        self.rules: tuple[PermissionRule, ...] = tuple(rules)
        self.limits: tuple[ToolLimit, ...] = tuple(limits)
        self._cache: dict[tuple[str, str | None], bool] = {}

    def __bool__(self) -> bool:
        return bool(self.rules or self.limits)

    def __repr__(self) -> str:
        return f"PermissionRules({len(self.rules)} rules, {len(self.limits)} limits)"

    def merged(
        self, rules: Iterable[PermissionRule] = (), limits: Iterable[ToolLimit] = ()
    ) -> PermissionRules:
        return PermissionRules([*self.rules, *rules], [*self.limits, *limits])

    def moved(self, old: Path, new: Path) -> PermissionRules:
        """The rules of a session that moved from workspace ``old`` to ``new`` (a git worktree
        of the same project): each ``/path`` rule and limit also holds for the same path under
        ``new``, so ``isolation: worktree`` neither escapes a deny rule nor loses an allow."""

        def with_copies(rules: Iterable[PermissionRule]) -> list[PermissionRule]:
            rules = list(rules)
            return rules + [moved for rule in rules if (moved := _moved(rule, old, new))]

        limits = [
            dataclasses.replace(limit, rules=tuple(with_copies(limit.rules)))
            for limit in self.limits
        ]
        return PermissionRules(with_copies(self.rules), limits)

    def covers(self, tool: Tool) -> bool:
        """Whether any rule or limit is about ``tool`` (cached per tool name and server)."""
        key = (tool.name, tool.mcp_server)
        known = self._cache.get(key)
        if known is None:
            known = self._cache[key] = any(
                _tool_matches(rule.tool, tool) for rule in self.rules
            ) or any(limit.tool == tool.name for limit in self.limits)
        return known

    def decide(
        self, tool: Tool, arguments: Mapping[str, Any], paths: PathContext
    ) -> RuleVerdict | None:
        """The verdict of the first matching rule (deny, then limits, ask, allow), if any."""
        for rule in self._rules_of("deny", tool):
            if _call_matches(rule, tool, arguments, paths, strict=False):
                return RuleVerdict("deny", rule.describe())
        for limit in self.limits:
            if limit.tool != tool.name:
                continue
            if not any(_call_matches(r, tool, arguments, paths, strict=True) for r in limit.rules):
                return RuleVerdict("deny", limit.describe())
        for rule in self._rules_of("ask", tool):
            if _call_matches(rule, tool, arguments, paths, strict=False):
                return RuleVerdict("ask", rule.describe())
        for rule in self._rules_of("allow", tool):
            if _call_matches(rule, tool, arguments, paths, strict=True):
                return RuleVerdict("allow", rule.describe())
        return None

    def refuses_reading(self, tool: Tool, path: Path, paths: PathContext) -> RuleVerdict | None:
        """The deny or ask rule that keeps ``tool`` (a search such as Grep) from reading the
        file ``path`` it came across; a search cannot ask about each file, so both leave it
        out."""
        arguments = {"path": str(path), "file_path": str(path)}
        for behavior in ("deny", "ask"):
            for rule in self._rules_of(behavior, tool):
                if rule.specifier is not None and _call_matches(
                    rule, tool, arguments, paths, strict=False
                ):
                    return RuleVerdict(behavior, rule.describe())
        return None

    def bare_denied(self, tool_name: str) -> PermissionRule | None:
        """A deny rule that names ``tool_name`` without a specifier (the tool is then removed
        from the agents' tool sets)."""
        for rule in self.rules:
            if rule.behavior == "deny" and rule.specifier is None and rule.tool == tool_name:
                return rule
        return None

    def _rules_of(self, behavior: RuleBehavior, tool: Tool) -> Iterable[PermissionRule]:
        return (r for r in self.rules if r.behavior == behavior and _tool_matches(r.tool, tool))


def _moved(rule: PermissionRule, old: Path, new: Path) -> PermissionRule | None:
    """``rule`` anchored in ``new`` where it was anchored in ``old``; ``None`` when it is not
    anchored at the project root (``/path``)."""
    specifier = rule.specifier or ""
    if rule.project_root is None or not specifier.startswith("/") or specifier.startswith("//"):
        return None
    root = Path(os.path.normpath(new / os.path.relpath(rule.project_root, old)))
    return dataclasses.replace(rule, project_root=root)


# -- which tool ---------------------------------------------------------------------------


def _tool_matches(rule_tool: str, tool: Tool) -> bool:
    if rule_tool == tool.name:
        return True
    family = _FAMILIES.get(rule_tool)
    if family is not None and tool.name in family:
        return True
    match = _MCP_RULE.match(rule_tool)
    if match is None or not tool.name.startswith("mcp__"):
        return False
    server, name = match.group(1), match.group(2)
    if name not in (None, "*"):
        return False  # mcp__server__tool names the tool itself: equality above
    if tool.mcp_server is not None:
        from subagents.mcp.toolset import sanitise_name

        return sanitise_name(tool.mcp_server) == sanitise_name(server)
    return tool.name.startswith(f"mcp__{server}__")


# -- which call ---------------------------------------------------------------------------


def _call_matches(
    rule: PermissionRule,
    tool: Tool,
    arguments: Mapping[str, Any],
    paths: PathContext,
    *,
    strict: bool,
) -> bool:
    """Whether the call matches ``rule``. ``strict`` (allow rules, limits): every part of
    what the call does must match; otherwise (deny, ask) any part is enough."""
    if rule.specifier is None:
        return True
    kind = _SPECIFIER_KINDS.get(rule.tool)
    if kind == "command":
        command = arguments.get("command")
        return isinstance(command, str) and _command_rule_matches(rule.specifier, command, strict)
    if kind == "path":
        return _path_matches(rule, tool, arguments, paths, strict)
    if kind == "domain":
        return _domain_matches(rule.specifier.removeprefix("domain:"), arguments.get("url"))
    if kind == "agent":
        wanted = arguments.get("subagent_type")
        return isinstance(wanted, str) and wanted.strip() in subagent_types(rule.specifier)
    if kind == "skill":
        wanted = arguments.get("skill")
        return isinstance(wanted, str) and _name_matches(rule.specifier, wanted.strip())
    return False


def _name_matches(pattern: str, name: str) -> bool:
    """``Skill(pdf)``: that name; ``Skill(team:*)``: ``team`` and ``team:...``; ``*`` globs."""
    pattern = pattern.strip()
    if pattern.endswith(":*"):
        return name == pattern[:-2] or name.startswith(pattern[:-1])
    return _glob_fullmatch(pattern, name)


def _domain_matches(domain: str, url: object) -> bool:
    if not isinstance(url, str):
        return False
    try:
        host = (urlsplit(url.strip()).hostname or "").rstrip(".").lower()
    except ValueError:
        return False
    domain = domain.strip().rstrip(".").lower()
    if domain.startswith("*."):
        return host.endswith(domain[1:])
    return bool(host) and host == domain


# -- commands -----------------------------------------------------------------------------


def command_matches(pattern: str, command: str) -> bool:
    """Whether one simple ``command`` matches a Bash specifier (see the module docstring)."""
    pattern = " ".join(pattern.split())
    command = " ".join(command.split())
    if pattern.endswith(":*"):
        prefix = pattern[:-2].rstrip()
        return command == prefix or command.startswith(f"{prefix} ")
    if pattern.endswith(" *") and pattern.count("*") == 1:
        prefix = pattern[:-2]
        return command == prefix or command.startswith(f"{prefix} ")
    return _glob_fullmatch(pattern, command)


def _glob_fullmatch(pattern: str, text: str) -> bool:
    """Whether ``text`` matches ``pattern`` whole, ``*`` standing for any text. Each piece
    between stars is found leftmost in turn (which is enough for ``*`` alone), so a long
    command costs linear time, not the backtracking of a regular expression."""
    first, *middle, last = pattern.split("*") if "*" in pattern else (pattern, None)
    if last is None:
        return text == first
    end = len(text) - len(last)
    if end < len(first) or not text.startswith(first) or not text.endswith(last):
        return False
    position = len(first)
    for piece in middle:
        found = text.find(piece, position, end)
        if found < 0:
            return False
        position = found + len(piece)
    return True


def _command_rule_matches(pattern: str, command: str, strict: bool) -> bool:
    parts = split_command(command)
    if strict:
        if parts is None or _has_substitution(command):
            return False
        return bool(parts) and all(
            any(command_matches(pattern, form) for form in _forms(part, strict=True))
            for part in parts
        )
    candidates = [command, *(parts or ()), *_substitutions(command)]
    for depth in range(_MAX_COMMAND_DEPTH):
        if any(command_matches(pattern, form) for part in candidates for form in _forms(part)):
            return True
        nested = [inner for part in candidates for inner in _shell_scripts(part)]
        if not nested or depth == _MAX_COMMAND_DEPTH - 1:
            break
        candidates = [
            piece for script in nested for piece in (script, *(split_command(script) or ()))
        ]
    return False


def split_command(command: str) -> list[str] | None:
    """The simple commands of a shell line, split at ``;``, ``&``, ``|``, newlines and
    parentheses outside quotes (``None`` when a quote is never closed)."""
    parts: list[str] = []
    current: list[str] = []
    quote: str | None = None
    escaped = False
    for char in command:
        if escaped:
            current.append(char)
            escaped = False
            continue
        if char == "\\" and quote != "'":
            current.append(char)
            escaped = True
            continue
        if quote is not None:
            if char == quote:
                quote = None
            current.append(char)
            continue
        if char in "'\"":
            quote = char
            current.append(char)
            continue
        if char in ";&|\n()`":
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    if quote is not None:
        return None
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def _has_substitution(command: str) -> bool:
    return any(marker in command for marker in ("$(", "`", "<(", ">("))


def _substitutions(command: str) -> list[str]:
    """The text of ``$(...)`` and backtick substitutions (for deny and ask rules)."""
    found = re.findall(r"\$\(([^()]*)\)|`([^`]*)`|[<>]\(([^()]*)\)", command)
    texts = [next(group for group in groups if group) for groups in found if any(groups)]
    return [piece for text in texts for piece in (split_command(text) or [text])]


def _forms(part: str, *, strict: bool = False) -> list[str]:
    """The ways to read one simple command against a pattern.

    ``strict`` (allow rules): as written, and with its quoting undone. Otherwise (deny, ask)
    also without what does not change which program runs (``VAR=value``, ``sudo``, ``env``)
    and from every later word on, so that ``xargs -n1 git push`` or ``timeout 5 git push``
    are caught by a rule about ``git push``; a deny rule errs on the side of refusing.
    """
    forms = [part]
    try:
        words = shlex.split(part)
    except ValueError:
        return forms
    if words:
        forms.append(" ".join(words))
    if strict:
        return forms
    start = 0
    while start < len(words) and (
        _ASSIGNMENT.match(words[start]) or words[start] in _TRANSPARENT_WORDS
    ):
        start += 1
    if 0 < start < len(words):
        forms.append(shlex.join(words[start:]))
    forms.extend(" ".join(words[index:]) for index in range(1, min(len(words), _MAX_WORDS)))
    forms.extend(  # /usr/bin/git push is git push
        " ".join([Path(word).name, *words[index + 1 :]])
        for index, word in enumerate(words[:_MAX_WORDS])
        if "/" in word and Path(word).name
    )
    return forms


def _shell_scripts(part: str) -> list[str]:
    """The script of ``bash -c '...'`` and the like, run as a command of its own."""
    try:
        words = shlex.split(part)
    except ValueError:
        return []
    scripts: list[str] = []
    for index, word in enumerate(words[:-1]):
        if Path(word).name in _SHELLS and "-c" in words[index + 1 : index + 3]:
            position = words.index("-c", index + 1)
            if position + 1 < len(words):
                scripts.append(words[position + 1])
    return scripts


# -- paths --------------------------------------------------------------------------------


def _path_matches(
    rule: PermissionRule,
    tool: Tool,
    arguments: Mapping[str, Any],
    paths: PathContext,
    strict: bool,
) -> bool:
    argument = _PATH_ARGUMENTS.get(tool.name)
    if argument is None:
        return False
    name, default = argument
    value = arguments.get(name, default)
    if value is None:
        value = default
    if not isinstance(value, str):
        return False
    candidates = _candidate_paths(value, paths.workspace)
    if not candidates:
        return False
    base, pattern = _anchor(rule.specifier or "", rule.project_root, paths)
    directory = tool.name in ("Glob", "Grep", "LS")
    results = [_pattern_matches(pattern, base, path, directory) for path in candidates]
    return all(results) if strict else any(results)


def _candidate_paths(value: str, workspace: Path) -> list[Path]:
    """The path as written (normalised) and with symlinks resolved: a rule about ``.env`` is
    also about a link to it."""
    if "\0" in value:
        return []
    joined = Path(os.path.normpath(workspace / value))  # as the file tools take it: no ~
    candidates = [joined]
    try:
        resolved = Path(os.path.realpath(joined))
    except (OSError, ValueError):
        return candidates
    if resolved != joined:
        candidates.append(resolved)
    return candidates


def _anchor(specifier: str, project_root: Path | None, paths: PathContext) -> tuple[Path, str]:
    """The folder a path specifier is relative to, and the gitignore pattern within it."""
    if specifier.startswith("//"):
        return Path("/"), "/" + specifier[2:].lstrip("/")
    if specifier.startswith("~/"):
        return paths.home, "/" + specifier[2:]
    if specifier.startswith("/"):
        return project_root or paths.workspace, specifier
    if specifier.startswith("./"):
        return paths.workspace, "/" + specifier[2:]
    return paths.workspace, specifier


def _pattern_matches(pattern: str, base: Path, path: Path, directory: bool) -> bool:
    """Gitignore semantics; a folder searched by Glob/Grep/LS also matches when files in it
    would (``Read(secrets/**)`` covers ``Grep path=secrets``)."""
    spec = _compiled(pattern)
    for root in _equivalent_roots(base):
        try:
            relative = path.relative_to(root).as_posix()
        except ValueError:
            continue
        if relative in ("", "."):
            return directory and spec.match_file("\x00")
        if spec.match_file(relative):
            return True
        if directory and spec.match_file(f"{relative}/\x00"):
            return True
    return False


def _equivalent_roots(base: Path) -> list[Path]:
    roots = [base]
    try:
        resolved = base.resolve()
    except (OSError, RuntimeError):
        return roots
    if resolved != base:
        roots.append(resolved)
    return roots


_SPECS: dict[str, Any] = {}


def _compiled(pattern: str) -> Any:
    spec = _SPECS.get(pattern)
    if spec is None:
        import pathspec

        spec = _SPECS[pattern] = pathspec.GitIgnoreSpec.from_lines([pattern])
    return spec


def unreadable_files(ctx: Any, tool: Tool) -> Callable[[Path], bool] | None:
    """For a tool that reads many files (Grep): a test saying which files the session's rules
    keep it from reading, or ``None`` when no rule is about it."""
    policy = getattr(getattr(ctx, "session", None), "permissions", None)
    rules = getattr(policy, "rules", None)
    if not isinstance(rules, PermissionRules) or not rules.covers(tool):
        return None
    from subagents.config import resolve_home
    from subagents.tools.workspace import workspace_of

    paths = PathContext(workspace=workspace_of(ctx).root, home=resolve_home())
    return lambda path: rules.refuses_reading(tool, path, paths) is not None


def denied_by_rules(ctx: Any, tool: Tool, arguments: Mapping[str, Any]) -> str | None:
    """Why a deny rule of the session refuses ``tool`` with ``arguments`` (``None``: none
    does). For a tool that takes further steps after its call was approved, such as WebFetch
    following a redirect to another host: each step is checked again."""
    policy = getattr(getattr(ctx, "session", None), "permissions", None)
    rules = getattr(policy, "rules", None)
    if not isinstance(rules, PermissionRules) or not rules.covers(tool):
        return None
    from subagents.config import resolve_home
    from subagents.tools.workspace import workspace_of

    paths = PathContext(workspace=workspace_of(ctx).root, home=resolve_home())
    verdict = rules.decide(tool, arguments, paths)
    if verdict is None or verdict.behavior != "deny":
        return None
    return f"refused by the {verdict.reason}"


def rules_from_texts(
    texts: Sequence[str],
    behavior: RuleBehavior,
    source: str,
    *,
    project_root: Path | None = None,
) -> tuple[list[PermissionRule], list[str]]:
    """Parse many rule texts; returns the rules and the problems (for warnings)."""
    rules: list[PermissionRule] = []
    problems: list[str] = []
    for text in texts:
        rule, problem = parse_rule(text, behavior, source, project_root=project_root)
        if rule is not None:
            rules.append(rule)
        if problem is not None:
            problems.append(problem)
    return rules, problems
