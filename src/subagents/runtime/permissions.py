"""RunPermissions: what the runs of one runtime may do without asking, and who is asked.

The mode (``default``, ``acceptEdits``, ...), the person or program that approves, what a run
with nobody to ask does (``headless``: deny, allow, or pause for a person), the protected paths
and the permission rules: ``allowed_tools`` / ``disallowed_tools`` as a run is given them, with
the ``permissions`` of Claude Code's settings files. A session's policy is its parent's (the
run's for the main session and a workflow's tool node), narrowed by its agent file, never
widened.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from subagents.config import Config
    from subagents.definitions.model import AgentDefinition
    from subagents.store.records import TaskRecord
    from subagents.tools.permissions import Approver, PermissionMode, PermissionPolicy
    from subagents.tools.rules import PermissionRules

__all__ = ["Headless", "RuleArguments", "RunPermissions"]

Headless = Literal["allow", "deny", "pause"]
"""What a call that needs approval does when nobody approves: allowed, denied, or the run
pauses for a person (it needs a store)."""

RuleArguments = tuple[tuple[str, ...], tuple[str, ...]]
"""allowed_tools and disallowed_tools, as a run is given them."""


class RunPermissions:
    """The permissions of a runtime's runs (see the module docstring). ``mode``,
    ``approver`` and ``headless`` may be changed between runs (a terminal UI sets the
    approver while it is on screen)."""

    def __init__(
        self,
        *,
        workspace: Path,
        config: Callable[[], Config],
        store_files: Callable[[], list[Path]],
        mode: PermissionMode,
        approver: Approver | None,
        headless: Headless,
        allowed_tools: tuple[str, ...] = (),
        disallowed_tools: tuple[str, ...] = (),
    ) -> None:
        self.workspace = workspace
        self._config = config
        self._store_files = store_files
        self.mode: PermissionMode = mode
        self.approver = approver
        self.headless: Headless = headless
        self.arguments: RuleArguments = (allowed_tools, disallowed_tools)
        # by rule arguments: a resumed task brings its own (see restored_arguments)
        self._rules: dict[RuleArguments, PermissionRules] = {}
        self.warnings: list[str] = []
        """What cannot be used of this runtime's own rules, once they are read."""

    def rules(self, arguments: RuleArguments | None = None) -> PermissionRules:
        """A run's permission rules: ``allowed_tools`` / ``disallowed_tools`` (``arguments``,
        for a resumed task: with those it kept) and the ``permissions`` of Claude Code's
        settings files, read once. What cannot be used of this runtime's own is in
        :attr:`warnings`."""
        own = arguments is None or arguments == self.arguments
        key = self.arguments if arguments is None else arguments
        rules = self._rules.get(key)
        if rules is None:
            from subagents.tools.rule_sources import run_permission_rules

            rules, warnings = run_permission_rules(self.workspace, *key)
            self._rules[key] = rules
            if own:
                self.warnings = warnings
        return rules

    def rule_settings(self, arguments: RuleArguments | None = None) -> dict[str, list[str]]:
        """A run's own rules (allowed_tools / disallowed_tools), kept with its task so that
        a resume is never more permissive than the run was."""
        from subagents.tools.rule_sources import rule_settings

        return rule_settings(*(self.arguments if arguments is None else arguments))

    def task_settings(self, arguments: RuleArguments | None = None) -> dict[str, object]:
        """What a task keeps of the permissions it runs with: mode, headless and its own
        rules, so that a resume elsewhere is never more permissive than the run was."""
        return {
            "permission_mode": self.mode,
            "headless": self.headless,
            **self.rule_settings(arguments),
        }

    def restored_arguments(self, task: TaskRecord) -> RuleArguments:
        """This runtime's rules plus the stored rules of ``task``, for its resumed run only;
        an imported task not resumed here yet keeps only its deny rules: an archive grants
        nothing."""
        from subagents.runtime.resumption import not_adopted
        from subagents.tools.rule_sources import restored_rule_arguments

        trusted = not not_adopted(task)
        return restored_rule_arguments(task.settings, *self.arguments, trusted=trusted)

    def for_run(
        self, pause: Approver | None, rules: PermissionRules | None = None
    ) -> PermissionPolicy:
        """The policy of a run itself: its mode, who approves, the protected paths and the
        rules. ``pause`` asks for a decision by pausing the run when ``headless`` is
        ``pause`` and nobody approves here (``None``: the run cannot pause, and denies)."""
        from subagents.tools.permissions import PermissionPolicy
        from subagents.tools.protected import ProtectedPaths

        approver, headless = self.approver, self.headless
        if headless == "pause":  # a person who is there is asked; otherwise the run pauses
            approver, headless = approver or pause, "deny"
        protected = ProtectedPaths.for_workspace(
            self.workspace,
            allowed=self._config().permissions.allow_protected,
            extra=self._store_files(),
        )
        return PermissionPolicy(
            self.mode,
            approver=approver,
            headless=headless,
            protected=protected,
            rules=rules if rules is not None else self.rules(),
        )

    @staticmethod
    def for_session(
        definition: AgentDefinition | None, parent: PermissionPolicy, *, main: bool
    ) -> PermissionPolicy:
        """The policy of a session running ``definition``: ``parent``'s (the run's for the
        main session), narrowed to the definition's ``permissionMode``, never widened."""
        if definition is None:
            return parent.narrowed(None)
        from subagents.tools.rule_sources import agent_permission_rules

        rules = agent_permission_rules(definition, main=main)
        return parent.narrowed(definition.permission_mode, rules=rules)
