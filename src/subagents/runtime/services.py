"""Services: what building and running sessions needs of a runtime, and nothing more.

:class:`~subagents.runtime.assembly.SessionBuilder`, :class:`~subagents.runtime.run.Run`,
:class:`~subagents.runtime.delegation.Delegation` and the workflow runner are written against
this protocol, not against :class:`~subagents.runtime.runtime.Runtime` (which provides it):
they see the models, tools, permissions, hooks, events and store of the runtime, never the
facade that starts, resumes and continues runs. Nothing below the facade imports it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from subagents.config import Config
    from subagents.definitions.model import AgentDefinition
    from subagents.inventory import Inventory
    from subagents.redaction import Redactor
    from subagents.runtime.budget import Limits
    from subagents.runtime.events import EventBus
    from subagents.runtime.hooks import Hooks
    from subagents.runtime.instructions import ProjectInstructions
    from subagents.runtime.models import ModelChooser
    from subagents.runtime.permissions import RunPermissions
    from subagents.runtime.task_tools import TaskToolDescriptions
    from subagents.runtime.toolbox import Toolbox
    from subagents.store.base import Store, TaskOwner

__all__ = ["Services"]


class Services(Protocol):
    """The runtime's parts a session is built from (see the module docstring)."""

    workspace: Path
    model_chooser: ModelChooser
    toolbox: Toolbox
    permissions: RunPermissions
    hooks: Hooks
    events: EventBus
    stream: bool
    store: Store | None
    owner: TaskOwner
    """What this process claims its tasks as."""
    handing_over: bool
    """A cancelled run stops as a crash does, for another process to continue (a worker that
    shuts down)."""
    task_descriptions: TaskToolDescriptions
    budget_limits: Limits
    """The budget of the runs started or resumed here, each kind when given (see
    :mod:`subagents.runtime.budget`); else the task's own, else ``[budget]``'s."""

    @property
    def config(self) -> Config: ...

    @property
    def inventory(self) -> Inventory: ...

    def session_hooks(self, definition: AgentDefinition | None, *, subagent: bool) -> Hooks:
        """The run's hooks plus those of ``definition``'s own file."""
        ...

    def project_instructions(self, workspace: Path) -> ProjectInstructions:
        """The CLAUDE.md / AGENTS.md files for ``workspace``, read once per run."""
        ...

    def definition_named(self, name: str) -> AgentDefinition | None:
        """The current definition of the agent ``name``, if it has one."""
        ...

    def redactor(self) -> Redactor:
        """A redactor of every credential the runtime knows."""
        ...
