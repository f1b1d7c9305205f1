"""``@tool``: a :class:`Tool` from a typed Python function."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Sequence
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from subagents.errors import ToolDefinitionError
from subagents.tools.base import Tool, ToolContext, ToolFunction
from subagents.tools.docstrings import parse_docstring
from subagents.tools.schema import input_schema
from subagents.tools.threads import run_in_worker

__all__ = ["CONTEXT_PARAMETER", "tool"]

CONTEXT_PARAMETER = "ctx"

_INPUT_CONFIG = ConfigDict(extra="forbid", populate_by_name=True, arbitrary_types_allowed=True)


@overload
def tool(func: ToolFunction, /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_seconds: float = 300.0,
    fallback_tools: Sequence[str] = (),
    read_only: bool = False,
    idempotent: bool = False,
    needs_approval: bool | None = None,
    run_in_thread: bool = True,
    writes_paths: Sequence[str] = (),
) -> Callable[[ToolFunction], Tool]: ...


def tool(
    func: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_seconds: float = 300.0,
    fallback_tools: Sequence[str] = (),
    read_only: bool = False,
    idempotent: bool = False,
    needs_approval: bool | None = None,
    run_in_thread: bool = True,
    writes_paths: Sequence[str] = (),
) -> Tool | Callable[[ToolFunction], Tool]:
    """Make a :class:`Tool` of a typed function; usable bare (``@tool``) or with options.

    The arguments' JSON Schema comes from the signature (``Annotated[T, Field(...)]`` is
    honoured; parameters with defaults are optional), the description from the docstring's first
    paragraph and each argument's description from its ``Args:`` section. A parameter
    ``ctx: ToolContext`` receives the context and is hidden from the model. Sync functions run in
    a worker thread so they cannot block the event loop; ``run_in_thread=False`` calls them on
    the loop instead, which saves the thread hand-off (tens to hundreds of microseconds) and
    is right only for functions that return in microseconds and never block.

    ``writes_paths`` names the parameters that are paths of files the tool writes, so that
    writes to protected files (``.subagents/``, ``.git/``, ``.mcp.json``, ...) ask a person.
    """

    def build(function: ToolFunction) -> Tool:
        return _build_tool(
            function,
            name=name,
            description=description,
            timeout_seconds=timeout_seconds,
            fallback_tools=tuple(fallback_tools),
            read_only=read_only,
            idempotent=idempotent,
            needs_approval=needs_approval,
            run_in_thread=run_in_thread,
            writes_paths=tuple(writes_paths),
        )

    if func is not None:
        return build(func)
    return build


def _build_tool(
    function: ToolFunction,
    *,
    name: str | None,
    description: str | None,
    timeout_seconds: float,
    fallback_tools: tuple[str, ...],
    read_only: bool,
    idempotent: bool,
    needs_approval: bool | None,
    run_in_thread: bool,
    writes_paths: tuple[str, ...] = (),
) -> Tool:
    if isinstance(function, Tool):
        raise ToolDefinitionError(
            f"{function.name!r} is already a Tool.", hint="apply @tool only once"
        )
    if not callable(function):
        raise ToolDefinitionError(
            f"@tool needs a function, got {type(function).__name__}.",
            hint="decorate a def or async def",
        )
    tool_name = name or str(getattr(function, "__name__", ""))
    if not _is_tool_name(tool_name):
        raise ToolDefinitionError(
            f"{tool_name!r} cannot be a tool name.",
            hint="pass name='...' of 1 to 64 letters, digits, '_' and '-' (what providers accept)",
        )
    if timeout_seconds <= 0:
        raise ToolDefinitionError(
            f"timeout_seconds of tool {tool_name!r} must be positive, got {timeout_seconds}.",
            hint="pass a number of seconds greater than 0",
        )
    docs = parse_docstring(inspect.getdoc(function))
    input_model, parameters, takes_context = _input_model(function, tool_name, docs.params)
    unknown = [name for name in writes_paths if name not in input_model.model_fields]
    if unknown:
        raise ToolDefinitionError(
            f"writes_paths of tool {tool_name!r} names {', '.join(map(repr, unknown))}, which "
            "is not one of its parameters.",
            hint="list the names of the parameters that hold file paths the tool writes",
        )
    return Tool(
        name=tool_name,
        description=description if description is not None else docs.description,
        parameters=parameters,
        function=_in_thread(function) if run_in_thread else function,
        input_model=input_model,
        takes_context=takes_context,
        timeout_seconds=timeout_seconds,
        fallback_tools=fallback_tools,
        read_only=read_only,
        idempotent=idempotent,
        needs_approval=needs_approval,
        writes_paths=writes_paths,
    )


def _is_tool_name(name: str) -> bool:
    allowed = all(char.isascii() and (char.isalnum() or char in "_-") for char in name)
    return 0 < len(name) <= 64 and allowed


def _input_model(
    function: ToolFunction, tool_name: str, param_docs: dict[str, str]
) -> tuple[type[BaseModel], dict[str, Any], bool]:
    """The arguments' model, its JSON Schema (made here, so that a type no schema can show
    fails now, not when a model first sees the tool) and whether the tool takes ``ctx``."""
    signature = inspect.signature(function)
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(
            f"The type annotations of tool {tool_name!r} cannot be resolved: {exc}.",
            hint="define the types used in the signature at module level and import them "
            "outside 'if TYPE_CHECKING'",
        ) from exc
    fields: dict[str, Any] = {}
    takes_context = False
    for parameter in signature.parameters.values():
        _check_parameter_kind(parameter, tool_name)
        if parameter.name not in hints:
            raise ToolDefinitionError(
                f"Parameter {parameter.name!r} of tool {tool_name!r} has no type annotation.",
                hint=f"annotate it, e.g. '{parameter.name}: str'",
            )
        annotation = hints[parameter.name]
        if _is_context(annotation):
            if parameter.name != CONTEXT_PARAMETER:
                raise ToolDefinitionError(
                    f"The ToolContext parameter of tool {tool_name!r} is named {parameter.name!r}.",
                    hint=f"name it {CONTEXT_PARAMETER!r}",
                )
            takes_context = True
            continue
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        doc = param_docs.get(parameter.name)
        if doc and not _has_description(annotation):
            fields[parameter.name] = (annotation, Field(default=default, description=doc))
        else:
            fields[parameter.name] = (annotation, default)
    model_name = "".join(part[:1].upper() + part[1:] for part in tool_name.split("_")) + "Input"
    try:
        model = create_model(model_name.replace("-", "_"), __config__=_INPUT_CONFIG, **fields)
        schema = input_schema(model)
    except Exception as exc:
        raise ToolDefinitionError(
            f"The parameters of tool {tool_name!r} cannot be turned into a JSON Schema: {exc}",
            hint="use JSON-friendly types (str, int, float, bool, list, dict, Literal, "
            "pydantic models) for the parameters",
        ) from exc
    return model, schema, takes_context


def _check_parameter_kind(parameter: inspect.Parameter, tool_name: str) -> None:
    kind = parameter.kind
    if kind is inspect.Parameter.VAR_POSITIONAL or kind is inspect.Parameter.VAR_KEYWORD:
        star = "*" if kind is inspect.Parameter.VAR_POSITIONAL else "**"
        raise ToolDefinitionError(
            f"Tool {tool_name!r} takes {star}{parameter.name}; a tool's arguments must be named.",
            hint="replace it with explicit, typed parameters",
        )
    if kind is inspect.Parameter.POSITIONAL_ONLY:
        raise ToolDefinitionError(
            f"Parameter {parameter.name!r} of tool {tool_name!r} is positional-only; tools are "
            "called with keyword arguments.",
            hint="remove the '/' from the signature",
        )


def _is_context(annotation: Any) -> bool:
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation is ToolContext


def _has_description(annotation: Any) -> bool:
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(isinstance(meta, FieldInfo) and meta.description for meta in annotation.__metadata__)


def _in_thread(function: ToolFunction) -> ToolFunction:
    if inspect.iscoroutinefunction(function):
        return function

    @functools.wraps(function)
    async def run_in_thread(**kwargs: Any) -> Any:
        return await run_in_worker(function, kwargs)

    return run_in_thread
