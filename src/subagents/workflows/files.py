"""Workflow files: where they are, reading one, and writing one back.

A workflow lives in ``.subagents/workflows/NAME.yaml`` (or ``.yml``, ``.json``), in the user's
home (see :func:`subagents.config.resolve_home`) and in every project directory from the
repository root down to the working directory, as agent folders do (see
:mod:`subagents.inventory`). Its name is the file's stem; a nearer directory overrides a
farther one, and the project overrides the user. Two files of one name in one folder
(``review.yaml`` and ``review.json``) are a conflict: ``.yaml`` wins over ``.yml`` over
``.json``, and the loser is reported.

Loading is bounded (:data:`MAX_WORKFLOW_FILE_BYTES`, the safe YAML loader's limits on aliases
and depth) and reports every problem it can with its location: ``line 3`` for a syntax error,
``nodes.fix.type`` for a value the model refuses, then (unless ``check=False``) every problem
:func:`~subagents.workflows.validate.validate_workflow` finds in the graph. A ``name`` inside
the file that differs from the file's stem is kept (the file says what it is called) with a
warning, because ``subagents workflow show`` finds the file by its stem.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from subagents._preview import preview
from subagents.config import project_directories, resolve_home
from subagents.errors import WorkflowError, WorkflowValidationError
from subagents.workflows.conditions import route_key
from subagents.workflows.graph import Workflow
from subagents.workflows.validate import WorkflowProblem, problem_errors, validate_workflow

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "MAX_WORKFLOW_FILE_BYTES",
    "WORKFLOW_FOLDER",
    "WORKFLOW_SUFFIXES",
    "WorkflowFile",
    "WorkflowScope",
    "discover_workflows",
    "dump_workflow",
    "find_workflow",
    "load_workflow_file",
    "workflow_folders",
]

WORKFLOW_FOLDER = Path(".subagents") / "workflows"
WORKFLOW_SUFFIXES = (".yaml", ".yml", ".json")
"""In the order that decides a clash inside one folder."""
MAX_WORKFLOW_FILE_BYTES = 1_000_000
"""A workflow file beyond this is refused (real ones are a few kilobytes)."""

WorkflowScope = Literal["user", "project"]

_HINT = "put it in .subagents/workflows/NAME.yaml; 'subagents workflow list' shows them"
_NODE_TYPES = ("agent", "tool", "condition", "human", "join")
_UNION_MEMBERS = {"str", "list[str]", "dict[str,str]", "callable"}
_EMPTY_TOP = ("description", "patterns", "checkpoints")  # left out of a saved file when empty


@dataclass(frozen=True, slots=True)
class WorkflowFile:
    """The file used for one workflow name, and the lower ones it overrides (highest first).

    ``conflicts`` are other files of the same name in the same folder, which lose to ``path``.
    """

    name: str
    path: Path
    scope: WorkflowScope
    overrides: tuple[Path, ...] = ()
    conflicts: tuple[Path, ...] = ()


# -- discovery ---------------------------------------------------------------------------------


def _scoped_folders(cwd: Path | None, home: Path | None) -> list[tuple[Path, WorkflowScope]]:
    home_dir = resolve_home(home)
    folders: list[tuple[Path, WorkflowScope]] = [(home_dir / WORKFLOW_FOLDER, "user")]
    for directory in reversed(project_directories(cwd, home=home_dir)):
        folders.append((directory / WORKFLOW_FOLDER, "project"))
    return folders


def workflow_folders(cwd: Path | None = None, *, home: Path | None = None) -> list[Path]:
    """Every folder workflows are looked for in (existing or not), lowest precedence first."""
    return [folder for folder, _ in _scoped_folders(cwd, home)]


def _scan(folder: Path) -> dict[str, list[Path]]:
    """Workflow files of one folder by name, the winner of a same-name clash first."""
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return {}
    found: dict[str, list[Path]] = {}
    for path in entries:
        if path.name.startswith(".") or path.suffix not in WORKFLOW_SUFFIXES:
            continue
        if path.is_dir():
            continue
        found.setdefault(path.stem, []).append(path)
    for paths in found.values():
        paths.sort(key=lambda p: WORKFLOW_SUFFIXES.index(p.suffix))
    return found


def discover_workflows(
    cwd: Path | None = None, *, home: Path | None = None
) -> dict[str, WorkflowFile]:
    """Every workflow name this project sees, sorted, with the file used for it.

    Files are not read: a broken file is found here and reported when loaded.
    """
    chosen: dict[str, WorkflowFile] = {}
    for folder, scope in _scoped_folders(cwd, home):
        for name, paths in _scan(folder).items():
            lower = chosen.get(name)
            overrides: tuple[Path, ...] = ()
            if lower is not None:
                overrides = (lower.path, *lower.overrides)
            chosen[name] = WorkflowFile(name, paths[0], scope, overrides, tuple(paths[1:]))
    return dict(sorted(chosen.items()))


def find_workflow(name_or_path: str, cwd: Path | None = None, home: Path | None = None) -> Path:
    """The file ``name_or_path`` means: an existing file, else a discovered workflow's file.

    A relative path is taken from ``cwd``. Raises WorkflowError naming the workflows there are.
    """
    candidate = Path(name_or_path).expanduser()
    if not candidate.is_absolute() and cwd is not None:
        candidate = cwd / candidate
    if candidate.is_file():
        return candidate
    found = discover_workflows(cwd, home=home)
    if name_or_path in found:
        return found[name_or_path].path
    if "/" in name_or_path or Path(name_or_path).suffix in WORKFLOW_SUFFIXES:
        raise WorkflowError(
            f"{name_or_path}: no such workflow file.",
            hint=f"check the path, or name a workflow; {_HINT}",
        )
    names = sorted(found)
    closest = difflib.get_close_matches(name_or_path, names, n=3)
    suggestion = f" Did you mean {', '.join(repr(n) for n in closest)}?" if closest else ""
    available = ", ".join(names) if names else "none found"
    raise WorkflowError(
        f"no workflow called {name_or_path!r} (available: {available}).{suggestion}",
        hint=_HINT.replace("NAME", name_or_path if _plain_name(name_or_path) else "NAME"),
    )


def _plain_name(name: str) -> bool:
    return bool(name) and all(c.isalnum() or c in "-_" for c in name)


# -- loading -----------------------------------------------------------------------------------


def load_workflow_file(
    path: Path,
    *,
    check: bool = True,
    warnings: list[WorkflowProblem] | None = None,
) -> Workflow:
    """The workflow in ``path``, or WorkflowValidationError listing every problem found.

    WorkflowError when the file cannot be read at all (missing, too large, not a file). With
    ``check`` the graph is validated too (shape, expressions, flow; agents and tools are for
    the caller, who knows which exist). Warnings go to ``warnings`` when a list is given.
    """
    path = Path(path)
    source = str(path)
    text = _read_text(path)
    data = _parse(text, path)
    problems: list[WorkflowProblem] = []
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {_type_name(data)}"
        raise WorkflowValidationError(
            path.stem,
            [
                (
                    "file",
                    f"the file is {kind}; it must be a mapping of workflow fields "
                    "(name, nodes, edges, entry_point)",
                )
            ],
            source=source,
        )
    data = _normalised(data, path.stem, problems)
    name = str(data.get("name") or path.stem)
    try:
        workflow = Workflow.model_validate(data)
    except Exception as error:
        raise WorkflowValidationError(
            name, _pydantic_problems(error, data), source=source
        ) from None
    if check:
        problems.extend(validate_workflow(workflow, agents=None, tools=None))
        errors = problem_errors(problems)
        if errors:
            raise WorkflowValidationError(workflow.name, errors, source=source)
    if warnings is not None:
        warnings.extend(p for p in problems if p.severity == "warning")
    return workflow


def _read_text(path: Path) -> str:
    from subagents._read_capped import FileTooLargeError, NotARegularFileError, read_capped

    try:
        raw = read_capped(path, MAX_WORKFLOW_FILE_BYTES)
    except FileNotFoundError:
        raise WorkflowError(f"{path}: no such workflow file.", hint=_HINT) from None
    except FileTooLargeError as error:
        raise WorkflowError(
            f"{path} is too large for a workflow file ({error}).",
            hint="workflow files are a few kilobytes: check that this is the right file",
        ) from None
    except NotARegularFileError:
        raise WorkflowError(f"{path} is not a file.", hint="name a .yaml or .json file") from None
    except OSError as error:
        raise WorkflowError(
            f"cannot read {path}: {error.strerror or error}.",
            hint="check the file's permissions",
        ) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise WorkflowValidationError(
            path.stem,
            [("file", f"not UTF-8 text (byte {error.start}): save the file as UTF-8")],
            source=str(path),
        ) from None


def _parse(text: str, path: Path) -> Any:
    """The file's value; YAML for ``.yaml``/``.yml`` (and anything else), JSON for ``.json``."""
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise WorkflowValidationError(
                path.stem,
                [(f"line {error.lineno}", f"not valid JSON: {error.msg} (column {error.colno})")],
                source=str(path),
            ) from None
        except RecursionError:
            raise WorkflowValidationError(
                path.stem, [("file", "nested too deeply to read: flatten it")], source=str(path)
            ) from None
    import yaml

    from subagents._yaml import load_yaml, yaml_problem

    try:
        return load_yaml(text, what="the workflow file")
    except yaml.YAMLError as error:
        line, problem = yaml_problem(error)
        location = "file" if line is None else f"line {line}"
        raise WorkflowValidationError(
            path.stem, [(location, f"not valid YAML: {problem}")], source=str(path)
        ) from None


def _normalised(data: dict[Any, Any], stem: str, problems: list[WorkflowProblem]) -> dict[Any, Any]:
    """The file's mapping as the model takes it: a default name, text routing keys.

    YAML reads ``true:``, ``no:`` and ``3:`` as a boolean or a number; as keys of an edge's
    ``to`` mapping they mean the results a condition gives, which are looked up as text.
    """
    data = dict(data)
    declared = data.get("name")
    if declared is None:
        data["name"] = stem
    elif isinstance(declared, str) and declared != stem:
        problems.append(
            WorkflowProblem(
                "name",
                f"the file calls the workflow {declared!r} but is named {stem!r}, the name "
                f"'subagents workflow show' uses: rename the file or the workflow",
                "warning",
            )
        )
    edges = data.get("edges")
    if isinstance(edges, list):
        data["edges"] = [_normalised_edge(edge) for edge in edges]
    return data


def _normalised_edge(edge: Any) -> Any:
    if not isinstance(edge, dict) or not isinstance(edge.get("to"), dict):
        return edge
    to = {}
    for key, value in edge["to"].items():
        text = key if isinstance(key, str) else route_key(key)
        to[text] = value
    return {**edge, "to": to}


def _type_name(value: object) -> str:
    names = {dict: "mapping", list: "list", str: "text", bool: "boolean", type(None): "null"}
    return names.get(type(value), type(value).__name__)


# -- pydantic errors to located problems -------------------------------------------------------


def _pydantic_problems(error: Exception, data: Mapping[Any, Any]) -> list[tuple[str, str]]:
    from pydantic import ValidationError

    if not isinstance(error, ValidationError):
        return [("file", f"cannot be read as a workflow ({type(error).__name__}: {error})")]
    problems: list[tuple[str, str]] = []
    for location, message in _located(error, data):
        if (location, message) not in problems:
            problems.append((location, message))
    return problems


def _located(error: ValidationError, data: Mapping[Any, Any]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    unions: set[str] = set()
    for detail in error.errors():
        loc = list(detail["loc"])
        kind = str(detail["type"])
        model, loc = _strip_node_tag(loc)
        union_at = next((i for i, part in enumerate(loc) if part in _UNION_MEMBERS), None)
        if union_at is not None:
            where = _location(loc[:union_at])
            if where not in unions:
                unions.add(where)
                found.append((where, _union_message(loc[:union_at], data)))
            continue
        if kind in ("union_tag_invalid", "union_tag_not_found"):
            found.append((_location([*loc, "type"]), _tag_message(detail)))
        elif kind == "extra_forbidden":
            found.append((_location(loc), _extra_message(loc, model)))
        elif loc and loc[-1] == "[key]":
            key = loc[-2] if len(loc) > 1 else "?"
            found.append((_location(loc[:-1]), f"the name {key!r} must be text: put it in quotes"))
        elif kind == "missing":
            found.append((_location(loc), _missing_message(loc, model)))
        else:
            message = str(detail["msg"])
            got = preview(detail.get("input"), 40)
            found.append((_location(loc), f"{message[:1].lower()}{message[1:]} (got {got})"))
    return found


def _strip_node_tag(loc: list[Any]) -> tuple[str, list[Any]]:
    """The model a location is in (``workflow``, ``edge``, a node type) and the location
    without the discriminator tag pydantic puts after a node's name."""
    if len(loc) >= 3 and loc[0] == "nodes" and loc[2] in _NODE_TYPES:
        return str(loc[2]), [*loc[:2], *loc[3:]]
    if len(loc) >= 2 and loc[0] == "edges" and isinstance(loc[1], int):
        return "edge", loc
    if len(loc) >= 2 and loc[0] == "nodes":
        return "node", loc
    return "workflow", loc


def _location(loc: list[Any]) -> str:
    text = ""
    for position, part in enumerate(loc):
        if isinstance(part, int) and not (position == 1 and loc[0] == "nodes"):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "file"


def _union_message(loc: list[Any], data: Mapping[Any, Any]) -> str:
    value: Any = data
    for part in loc:
        try:
            value = value[part]
        except (KeyError, IndexError, TypeError):
            value = None
            break
    got = _type_name(value)
    if loc and loc[-1] == "to":
        if isinstance(value, list):
            return "a fan-out lists node names, which must be text: put them in quotes"
        if isinstance(value, dict):
            return "a mapping maps results to node names, which must be text"
        return (
            "must be a node name, a list of node names (a fan-out) or a mapping of results "
            f"to node names, not {got}"
        )
    return f"must be an expression (text), not {got}"


def _tag_message(detail: Any) -> str:
    types = ", ".join(_NODE_TYPES)
    if detail["type"] == "union_tag_not_found":
        value = detail.get("input")
        if not isinstance(value, dict):
            return f"a node must be a mapping with a 'type' ({types}), not {_type_name(value)}"
        return f"the node has no 'type': give one of {types}"
    tag = (detail.get("ctx") or {}).get("tag", "?")
    closest = difflib.get_close_matches(str(tag), _NODE_TYPES, n=1)
    suggestion = f" (did you mean {closest[0]!r}?)" if closest else ""
    return f"unknown node type {tag!r}{suggestion}: use one of {types}"


def _fields_of(model: str) -> list[str]:
    from subagents.workflows import graph

    classes: dict[str, Any] = {
        "workflow": graph.Workflow,
        "edge": graph.Edge,
        "agent": graph.AgentNode,
        "tool": graph.ToolNode,
        "condition": graph.ConditionNode,
        "human": graph.HumanNode,
        "join": graph.JoinNode,
    }
    cls = classes.get(model)
    if cls is None:
        return []
    return [field.alias or name for name, field in cls.model_fields.items()]


def _what(model: str) -> str:
    return {"workflow": "a workflow", "edge": "an edge", "agent": "an agent node"}.get(
        model, f"a {model} node"
    )


def _extra_message(loc: list[Any], model: str) -> str:
    field = str(loc[-1]) if loc else "?"
    fields = _fields_of(model)
    what = _what(model)
    closest = difflib.get_close_matches(field, fields, n=1)
    suggestion = f"; did you mean {closest[0]!r}?" if closest else ""
    return f"{field!r} is not a field of {what}{suggestion} (fields: {', '.join(fields)})"


def _missing_message(loc: list[Any], model: str) -> str:
    field = str(loc[-1]) if loc else "?"
    what = _what(model)
    meaning = {
        "name": "what it is called",
        "nodes": "its nodes by name",
        "entry_point": "the node it starts at",
        "agent": "the agent to run",
        "tool": "the tool to call",
        "expression": "the expression to route on",
        "from": "the node it leaves",
        "to": "where it goes",
    }.get(field)
    return f"{what} needs {field!r}" + (f" ({meaning})" if meaning else "")


# -- writing -----------------------------------------------------------------------------------


def dump_workflow(workflow: Workflow) -> str:
    """The workflow as YAML that :func:`load_workflow_file` reads back to an equal workflow.

    Raises WorkflowError for a workflow with a Python callable as condition (built in code),
    which a file cannot hold.
    """
    import yaml

    for name, node in workflow.nodes.items():
        if callable(getattr(node, "expression", None)):
            raise _callable_error(workflow, f"nodes.{name}.expression")
    for index, edge in enumerate(workflow.edges):
        if callable(edge.condition):
            raise _callable_error(workflow, f"edges[{index}].condition")
    data = _pruned(workflow.to_file_dict())
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    # PyYAML writes some characters (U+0085, U+2028...) as is and then reads them as line
    # breaks; escaping everything beyond ASCII always reads back the same.
    if yaml.safe_load(text) != data:
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=False, width=100)
    return text


def _callable_error(workflow: Workflow, location: str) -> WorkflowError:
    return WorkflowError(
        f"workflow {workflow.name!r} has a Python function at {location}, which a file cannot "
        "hold.",
        hint="write the condition as an expression (see subagents.workflows.conditions)",
    )


def _pruned(data: dict[str, Any]) -> dict[str, Any]:
    """The file dict without values that only repeat a default, so a saved file stays short."""
    top = {k: v for k, v in data.items() if not (k in _EMPTY_TOP and not v)}
    top["nodes"] = {
        name: {k: v for k, v in node.items() if not _is_node_default(k, v)}
        for name, node in data["nodes"].items()
    }
    top["edges"] = [
        {k: v for k, v in edge.items() if (k, v) not in (("condition", None), ("loop", False))}
        for edge in data["edges"]
    ]
    if not top["edges"]:
        del top["edges"]
    return top


def _is_node_default(key: str, value: Any) -> bool:
    return value is None or (key, value) in (("description", ""), ("arguments", {}))
