"""Skills: folders of instructions (a ``SKILL.md`` and any files it refers to) agents can load.

A skill is a folder holding ``SKILL.md``: YAML frontmatter with ``name`` and ``description``,
then the instructions. Discovery looks, highest precedence first, in

1. every project directory from the working directory up to the repository root (nearest
   first), in ``.subagents/skills/`` then ``.claude/skills/``;
2. the same two folders under the home directory (``config.resolve_home()``).

Each immediate subfolder with a ``SKILL.md`` is one skill. Its name is the frontmatter's
``name`` (normalised like agent names), else the folder's name; it can also be asked for by
its folder's name. When two skills share a name the first found wins, even when it is broken,
so that a broken skill is reported instead of silently replaced by another one.

A malformed ``SKILL.md`` never raises: the skill is kept with its ``errors`` (it cannot be
loaded) or ``warnings`` (it loads, but something was ignored), for ``subagents skills list``.
Bounds: at most :data:`MAX_SKILLS` skills are read, each ``SKILL.md`` up to
:data:`MAX_SKILL_FILE_BYTES`; a project's ``SKILL.md`` whose real path leaves the project
(and ``~/.claude``) through a link is refused, so that a cloned repository cannot pull a private
file into a prompt.

An agent's ``skills: [a, b]`` puts those skills, in full, into its system prompt
(:func:`preload_prompt`: each cut at :data:`MAX_PRELOAD_CHARS`, all together at
:data:`MAX_PRELOAD_TOTAL_CHARS`, with a note); the ``Skill`` tool
(:mod:`subagents.tools.builtin.skill`) loads others on demand, except those whose file says
``disable-model-invocation: true``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from subagents._read_capped import FileTooLargeError, NotARegularFileError, read_capped
from subagents.config import project_directories, resolve_home
from subagents.definitions.frontmatter import read_frontmatter, split_frontmatter
from subagents.definitions.validate import NAME_PATTERN, normalise_name

if TYPE_CHECKING:
    from subagents.definitions.model import AgentDefinition
    from subagents.inventory import AgentRecord

__all__ = [
    "MAX_PRELOAD_CHARS",
    "MAX_PRELOAD_TOTAL_CHARS",
    "MAX_SKILLS",
    "MAX_SKILL_FILE_BYTES",
    "SKILL_FILE_NAME",
    "SKILL_FOLDER_NAMES",
    "Skill",
    "SkillCatalog",
    "SkillFolder",
    "SkillScope",
    "add_skill_warnings",
    "discover_skills",
    "offer_skill_tool",
    "preload_prompt",
    "read_skill",
    "skill_files",
    "skill_folders",
    "skill_text",
    "skill_warnings",
    "skills_prompt",
]

SkillScope = Literal["project", "user"]

SKILL_FILE_NAME = "SKILL.md"
# Inside one directory, earlier folders win a same-name clash (as for agent folders).
SKILL_FOLDER_NAMES: tuple[str, ...] = (".subagents/skills", ".claude/skills")
MAX_SKILL_FILE_BYTES = 256 * 1024
"""A ``SKILL.md`` larger than this is reported, not read."""
MAX_SKILLS = 200
"""Skills read at most (nearest first); the rest are reported as left out, never read."""
MAX_PRELOAD_CHARS = 40_000
"""Characters of one skill's instructions put into a prompt; the rest is cut, with a note."""
MAX_PRELOAD_TOTAL_CHARS = 120_000
"""Characters of all the skills one agent preloads; the skills beyond are named, not loaded."""
_MIN_PRELOAD_CHARS = 2_000  # less room than this left: a skill is named instead of cut short
# Claude Code keys this library reads but does not act on, and what happens instead.
_NO_EFFECT_KEYS: dict[str, str] = {
    "allowed-tools": "an agent using the skill keeps exactly its own tools",
    "model": "the skill runs on the model of the agent that loads it",
    "context": "the skill is loaded into the agent that asks for it, never forked",
    "agent": "the skill is loaded into the agent that asks for it, never forked",
    "hooks": "hooks are set in config.toml or in an agent's file",
}
_MAX_LISTED_FOLDERS = 100  # of a skill's folder tree, when its files are listed
_MAX_NAME_CHARS = 64
_MAX_DESCRIPTION_CHARS = 1024


@dataclass(frozen=True, slots=True)
class SkillFolder:
    """A folder discovery looks in for skill folders (whether or not it exists).

    ``roots``: where its skill files may lead through links (none: anywhere). A project's
    skills may only be made of that project's files and ``~/.claude``'s, so that a cloned
    repository cannot link a private file into an agent's prompt.
    """

    path: Path
    scope: SkillScope
    roots: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True)
class Skill:
    """One ``SKILL.md`` as read. ``errors`` make it unusable; ``warnings`` are notes."""

    name: str
    description: str
    body: str
    path: Path
    scope: SkillScope
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    roots: tuple[Path, ...] = ()
    """Where its file may lead through links (see :class:`SkillFolder`); read again so."""
    model_invocable: bool = True
    """``False`` when the file says ``disable-model-invocation: true``: agents may preload it
    (``skills:``), but the Skill tool neither lists nor loads it."""

    @property
    def folder(self) -> Path:
        """The skill's folder, where the files its instructions refer to live."""
        return self.path.parent

    @property
    def usable(self) -> bool:
        return not self.errors


@dataclass(frozen=True, slots=True)
class SkillCatalog:
    """Every skill found, highest precedence first, and the one used for each name."""

    found: tuple[Skill, ...] = ()
    left_out: tuple[Path, ...] = ()
    """Skill files beyond :data:`MAX_SKILLS`, not read."""
    _by_name: dict[str, Skill] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, found: Iterable[Skill], left_out: Iterable[Path] = ()) -> SkillCatalog:
        ordered = tuple(found)
        by_name: dict[str, Skill] = {}
        for skill in ordered:
            by_name.setdefault(skill.name, skill)
        for skill in ordered:  # a folder's name finds its skill unless a skill is so named
            by_name.setdefault(skill.folder.name, skill)
        return cls(ordered, tuple(left_out), by_name)

    def get(self, name: str) -> Skill | None:
        """The skill used for ``name`` (usable or not), or ``None`` when there is none."""
        name = name.strip()
        return self._by_name.get(name) or self._by_name.get(normalise_name(name))

    def winners(self) -> list[Skill]:
        """The skill used for each name, in precedence order."""
        return [skill for skill in self.found if self._by_name.get(skill.name) is skill]

    def usable(self) -> list[Skill]:
        """The skills an agent can preload."""
        return [skill for skill in self.winners() if skill.usable]

    def invocable(self) -> list[Skill]:
        """The skills the Skill tool offers: usable, and not kept from the model."""
        return [skill for skill in self.usable() if skill.model_invocable]

    def shadowed_by(self, skill: Skill) -> Skill | None:
        """The skill that hides ``skill`` (same name, higher precedence), if any."""
        winner = self._by_name.get(skill.name)
        return None if winner is None or winner is skill else winner


def skill_folders(cwd: Path | None = None, *, home: Path | None = None) -> list[SkillFolder]:
    """Every folder discovery looks in, highest precedence first."""
    home = resolve_home(home)
    user_claude = Path(os.path.realpath(home / ".claude"))
    folders = [
        SkillFolder(directory / name, "project", (Path(os.path.realpath(directory)), user_claude))
        for directory in project_directories(cwd, home=home)
        for name in SKILL_FOLDER_NAMES
    ]
    folders.extend(SkillFolder(home / name, "user") for name in SKILL_FOLDER_NAMES)
    return folders


def discover_skills(cwd: Path | None = None, *, home: Path | None = None) -> SkillCatalog:
    """Read every skill visible from ``cwd``; never raises."""
    found: list[Skill] = []
    left_out: list[Path] = []
    seen: set[Path] = set()
    for folder in skill_folders(cwd, home=home):
        for skill_file in _skill_files(folder.path):
            real = Path(os.path.realpath(skill_file))
            if real in seen:  # the same folder reached twice (a symlink, home inside project)
                continue
            seen.add(real)
            if len(found) < MAX_SKILLS:
                found.append(read_skill(skill_file, scope=folder.scope, roots=folder.roots))
            else:
                left_out.append(skill_file)
    return SkillCatalog.of(found, left_out)


def _skill_files(folder: Path) -> list[Path]:
    """``SKILL.md`` of each immediate, non-hidden subfolder of ``folder``, by folder name.

    A subfolder whose skill file is spelled otherwise (``skill.md``) is returned too, so that
    reading it reports the spelling; subfolders with no such file are not skills.
    """
    try:
        with os.scandir(folder) as entries:
            names = sorted(entry.name for entry in entries if not entry.name.startswith("."))
    except OSError:
        return []
    files = []
    for name in names:
        subfolder = folder / name
        try:
            with os.scandir(subfolder) as entries:
                spellings = [e.name for e in entries if e.name.lower() == "skill.md"]
        except OSError:
            continue
        if spellings:
            files.append(subfolder / SKILL_FILE_NAME)
    return files


def read_skill(path: Path, *, scope: SkillScope = "project", roots: tuple[Path, ...] = ()) -> Skill:
    """Read one ``SKILL.md``; problems are recorded on the skill, never raised.

    With ``roots``, a file whose real path lies outside all of them is refused, not read.
    """
    fallback = normalise_name(path.parent.name)
    real = Path(os.path.realpath(path))
    if roots and not any(real.is_relative_to(root) for root in roots):
        shown = " or ".join(str(root) for root in roots)
        return _broken(
            path,
            scope,
            fallback,
            f"{SKILL_FILE_NAME} leads to {real}, outside {shown}: a project's skill may only be "
            "made of the project's files; copy the skill into the project",
            roots,
        )
    try:
        raw = read_capped(path, MAX_SKILL_FILE_BYTES)
    except FileNotFoundError:
        return _broken(
            path,
            scope,
            fallback,
            f"the skill file must be named {SKILL_FILE_NAME}: rename it",
            roots,
        )
    except FileTooLargeError as error:
        return _broken(
            path,
            scope,
            fallback,
            f"{SKILL_FILE_NAME} is too large ({error}): move details into other files of the "
            "skill's folder and refer to them",
            roots,
        )
    except NotARegularFileError:
        return _broken(path, scope, fallback, f"{SKILL_FILE_NAME} is not a regular file", roots)
    except OSError as error:
        problem = f"cannot be read ({error.strerror or error})"
        return _broken(path, scope, fallback, problem, roots)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        problem = f"is not UTF-8 text ({error.reason}): save it so"
        return _broken(path, scope, fallback, problem, roots)
    return dataclasses.replace(_from_text(text, path, scope, fallback), roots=roots)


def _broken(
    path: Path, scope: SkillScope, name: str, problem: str, roots: tuple[Path, ...]
) -> Skill:
    return Skill(name, "", "", path, scope, errors=(problem,), roots=roots)


def _from_text(text: str, path: Path, scope: SkillScope, fallback: str) -> Skill:
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    frontmatter, body, first_line, warnings = split_frontmatter(text)
    errors: list[str] = []
    data: dict[object, object] = {}
    if frontmatter is None:
        warnings.append(
            "has no frontmatter: start it with '---', 'name: ...', 'description: ...', '---'"
        )
    else:
        read = read_frontmatter(frontmatter, first_line)
        errors.extend(read.errors)
        warnings.extend(read.warnings)
        data = dict(read.data or {})
    name = _name(data.get("name"), fallback, errors, warnings)
    description = _description(data.get("description"), warnings)
    if not errors and not body.strip():
        errors.append("has no instructions: write them below the frontmatter")
    for key, why in _NO_EFFECT_KEYS.items():
        if key in data:
            warnings.append(f"{key!r} has no effect here: {why}")
    invocable = data.get("disable-model-invocation") is not True
    return Skill(
        name,
        description,
        body,
        path,
        scope,
        tuple(errors),
        tuple(warnings),
        model_invocable=invocable,
    )


def _name(value: object, fallback: str, errors: list[str], warnings: list[str]) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        name, written = fallback, None
    elif isinstance(value, str):
        name, written = normalise_name(value), value.strip()
    else:
        warnings.append(f"name must be text; the folder's name {fallback!r} is used")
        name, written = fallback, None
    if written is not None and written != name:
        warnings.append(f"name {written[:_MAX_NAME_CHARS]!r} was normalised to {name!r}")
    if not NAME_PATTERN.match(name) or len(name) > _MAX_NAME_CHARS:
        errors.append(
            f"name {name[:_MAX_NAME_CHARS]!r} is not valid: use at most {_MAX_NAME_CHARS} "
            "lowercase letters, digits and '-', starting with a letter"
        )
        return fallback  # known by its folder in listings and messages
    return name


def _description(value: object, warnings: list[str]) -> str:
    if value is None:
        warnings.append("description is missing: say what the skill does and when to use it")
        return ""
    if not isinstance(value, str):
        warnings.append("description must be text; it is ignored")
        return ""
    text = " ".join(value.split())
    if len(text) > _MAX_DESCRIPTION_CHARS:
        warnings.append(
            f"description has {len(text):,} characters; only the first "
            f"{_MAX_DESCRIPTION_CHARS:,} are shown to agents"
        )
        text = text[:_MAX_DESCRIPTION_CHARS] + "..."
    return text


def skill_files(folder: Path, *, limit: int = 40) -> tuple[list[str], bool]:
    """The other files of a skill's folder (relative, sorted, hidden ones skipped), at most
    ``limit``, and whether there are more; a few levels deep, never raises."""
    files: list[str] = []
    pending = [(folder, 0)]
    scanned = 0
    while pending:
        directory, depth = pending.pop(0)
        scanned += 1
        if scanned > _MAX_LISTED_FOLDERS:
            return files, True
        try:
            with os.scandir(directory) as entries:
                listing = sorted(
                    (entry for entry in entries if not entry.name.startswith(".")),
                    key=lambda entry: entry.name,
                )
        except OSError:
            continue
        for entry in listing:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if depth < 3:
                    pending.append((Path(entry.path), depth + 1))
                continue
            relative = Path(entry.path).relative_to(folder).as_posix()
            if relative == SKILL_FILE_NAME:
                continue
            if len(files) == limit:
                return files, True
            files.append(relative)
    return files, False


def skill_text(skill: Skill, *, limit: int = MAX_PRELOAD_CHARS, arguments: str = "") -> str:
    """A skill's instructions, headed by where it lives, and cut at ``limit`` with a note.

    ``arguments`` (what the Skill tool was given) replace ``$ARGUMENTS`` in the text, as in
    Claude Code, or follow it when it has no such placeholder.
    """
    body = skill.body.strip()
    if arguments:
        if "$ARGUMENTS" in body:
            body = body.replace("$ARGUMENTS", arguments)
        else:
            body += f"\n\nARGUMENTS: {arguments}"
    note = ""
    if len(body) > limit:
        note = (
            f"\n\n[The skill's instructions were cut here: {len(body):,} characters, of which "
            f"the first {limit:,} are shown. The whole text is {skill.path}.]"
        )
        body = body[:limit]
    return f'<skill name="{skill.name}" folder="{skill.folder}">\n{body}{note}\n</skill>'


def preload_prompt(names: Sequence[str], catalog: SkillCatalog) -> str:
    """The system-prompt block holding the skills ``names`` in full ("" when none).

    A skill that is missing or broken is named in the block, so the agent knows it lacks it.
    """
    if not names:
        return ""
    parts: list[str] = []
    missing: list[str] = []
    no_room: list[str] = []
    room = MAX_PRELOAD_TOTAL_CHARS
    for name in dict.fromkeys(names):
        skill = catalog.get(name)
        if skill is None or not skill.usable:
            missing.append(name)
        elif room < _MIN_PRELOAD_CHARS:
            no_room.append(skill.name)
        else:
            parts.append(skill_text(skill, limit=min(MAX_PRELOAD_CHARS, room)))
            room -= len(parts[-1])
    if missing:
        parts.append(f"(Skills listed for you but not available here: {', '.join(missing)}.)")
    if no_room:
        parts.append(
            f"(Skills listed for you but left out for space, {MAX_PRELOAD_TOTAL_CHARS:,} "
            f"characters of skills being loaded already: {', '.join(no_room)}. Load them with "
            "the Skill tool when you need them.)"
        )
    return (
        "\n\n# Skills\nThese skills were loaded for you; follow their instructions when they "
        "apply. Files they mention are in the skill's folder.\n\n" + "\n\n".join(parts)
    )


def skills_prompt(names: Sequence[str], cwd: Path, *, home: Path | None = None) -> str:
    """:func:`preload_prompt` for the skills visible from ``cwd`` (no disk access for none)."""
    return preload_prompt(names, discover_skills(cwd, home=home)) if names else ""


def skill_warnings(names: Sequence[str], catalog: SkillCatalog) -> list[str]:
    """Warnings about the skills an agent lists that it will not get."""
    warnings = []
    for name in dict.fromkeys(names):
        skill = catalog.get(name)
        if skill is None:
            warnings.append(
                f"skill {name!r} is not found (a folder {name}/ with a {SKILL_FILE_NAME} in "
                ".claude/skills/ of the project or of ~); it is not loaded - add it, or remove "
                "it from 'skills' ('subagents skills list' shows the skills found)"
            )
        elif not skill.usable:
            warnings.append(
                f"skill {name!r} ({skill.path}) cannot be loaded: {'; '.join(skill.errors)}; "
                "fix it or remove it from 'skills'"
            )
    return warnings


def add_skill_warnings(definitions: list[AgentDefinition], catalog: SkillCatalog) -> None:
    """Replace each definition of ``definitions`` that lists skills it will not get by a copy
    carrying :func:`skill_warnings` (for ``agents show`` and ``agents validate``)."""
    for index, definition in enumerate(definitions):
        found = skill_warnings(definition.skills, catalog)
        if found:
            warnings = [*definition.warnings, *found]
            definitions[index] = definition.model_copy(update={"warnings": warnings})


def offer_skill_tool(records: Iterable[AgentRecord], catalog: SkillCatalog) -> None:
    """Count the ``Skill`` tool among the effective tools of the agents that may use it, when
    there is a skill it can load (the runtime offers it then)."""
    from subagents.definitions.validate import effective_tool_names
    from subagents.tools.names import SKILL_TOOL_NAME, TASK_TOOL_NAME

    if not catalog.invocable():
        return
    for record in records:
        tools = record.effective_tools
        if effective_tool_names(record.definition, [SKILL_TOOL_NAME]):
            at = tools.index(TASK_TOOL_NAME) if TASK_TOOL_NAME in tools else len(tools)
            tools.insert(at, SKILL_TOOL_NAME)
