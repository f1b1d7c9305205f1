"""The options several commands take, defined once: the same flag means the same thing,
with the same help, in every command that has it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from subagents.tools.permissions import PermissionMode

__all__ = [
    "CwdOption",
    "ExitWhenDoneOption",
    "JsonOption",
    "MaxBudgetTokensOption",
    "MaxBudgetUsdOption",
    "ModelOption",
    "PermissionModeOption",
    "QueueOption",
    "StoreOption",
    "TaskArgument",
    "TrustProjectMcpOption",
    "WaitOption",
    "WorkspaceOption",
    "YesOption",
    "permission_mode_named",
]

CwdOption = Annotated[
    Path | None,
    typer.Option(
        "--cwd",
        help="Project directory to work from (default: the current directory).",
        exists=True,
        file_okay=False,
    ),
]
# the two commands that run agents: `run` and `chat`
ModelOption = Annotated[
    str | None,
    typer.Option("--model", "-m", help="Model as PROVIDER:MODEL or an alias (sonnet, haiku)."),
]
WorkspaceOption = Annotated[
    Path | None,
    typer.Option(
        "--cwd", help="Workspace directory (default: current).", exists=True, file_okay=False
    ),
]
StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="The store: a file, or a URL (sqlite:///ABSOLUTE/PATH). Default: "
        ".subagents/state.db of the project, else under SUBAGENTS_HOME or ~.",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
TaskArgument = Annotated[
    str, typer.Argument(help="Task id, or a unique prefix of it (4 characters or more).")
]
PermissionModeOption = Annotated[
    str,
    typer.Option(
        "--permission-mode", help="default | acceptEdits | plan | dontAsk | bypassPermissions"
    ),
]
MaxBudgetTokensOption = Annotated[
    int | None,
    typer.Option(
        "--max-budget-tokens",
        min=1,
        help="The input and output tokens the whole run may spend, subagents included; "
        "reaching it pauses the run (exit 4), and a resume with a larger budget goes on "
        "(default: the task's own, else [budget] max_tokens).",
    ),
]
MaxBudgetUsdOption = Annotated[
    float | None,
    typer.Option(
        "--max-budget-usd",
        min=0.000001,
        help="The USD the whole run may spend, subagents included, its calls priced as "
        "'subagents tasks usage' prices them; reaching it pauses the run (exit 4), and a "
        "resume with a larger budget goes on (default: the task's own, else [budget] max_usd).",
    ),
]
TrustProjectMcpOption = Annotated[
    bool,
    typer.Option(
        "--trust-project-mcp",
        help="Start the project's MCP servers without asking (CI; see 'subagents mcp trust').",
    ),
]
YesOption = Annotated[
    bool, typer.Option("--yes", "-y", help="Approve every tool call that would ask (headless).")
]
ExitWhenDoneOption = Annotated[
    bool, typer.Option("--exit-when-done", help="With --ui: close the UI when the run ends.")
]
# with --remote: a run queued for `subagents worker` processes
WaitOption = Annotated[
    bool, typer.Option("--wait", help="With --remote: wait for the run to end, print its answer.")
]
QueueOption = Annotated[str, typer.Option("--queue", help="With --remote: the workers' queue.")]


def permission_mode_named(name: str) -> PermissionMode:
    """The mode ``--permission-mode NAME`` names; a ConfigError naming the modes there are
    for any other."""
    from subagents.errors import ConfigError
    from subagents.tools.permissions import PERMISSION_MODES

    for mode in PERMISSION_MODES:
        if mode == name:
            return mode
    raise ConfigError(
        f"Unknown permission mode {name!r}.", hint="use one of: " + ", ".join(PERMISSION_MODES)
    )
