"""RunContext: everything a session may ask of the run it belongs to.

A session runs its own loop; what it cannot know alone it asks its run through this protocol:
a person's decision about one of its calls, how to treat a side-effecting call a crash left
open, the settings that shape its loop, and the background subagents it started. Sessions are
named by id, so the protocol holds nothing but plain values and could be answered by a run
in another process. A session without a run (``Session(context=None)``, as tests and benches
build them) gets the defaults: no decisions, ask about interrupted calls, no background work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from decimal import Decimal

    from subagents.messages import Usage
    from subagents.runtime.budget import Budget, Limits
    from subagents.runtime.pause import HumanDecision, HumanQuestion, WaitPoint
    from subagents.runtime.tool_call import InterruptedPolicy
    from subagents.runtime.tool_menu import DescriptionProfile

__all__ = ["RunContext"]


class RunContext(Protocol):
    """All a :class:`~subagents.runtime.session.Session` may ask of its run."""

    # -- people ------------------------------------------------------------------------------

    @property
    def pending_decisions(self) -> bool:
        """Whether a person's decisions wait to be handed out (when none do, a session need
        not work out where it waits before each call)."""
        ...

    def take_decision(self, wait_point: WaitPoint) -> HumanDecision | None:
        """The person's decision that resumes ``wait_point``, handed out once (``None``:
        none)."""
        ...

    def must_ask_again(self, tool_call_id: str) -> bool:
        """Whether ``tool_call_id`` was pending when the task was imported, so that a person
        of this runtime must approve it before it runs."""
        ...

    def waits_alone(self, session_id: str) -> bool:
        """Whether the session, when it needs a person, waits alone while the rest of the
        run goes on (an agent in the background of a durable run) instead of pausing the
        run (see :mod:`subagents.runtime.inbox`)."""
        ...

    async def wait_for_person(self, question: HumanQuestion) -> HumanDecision:
        """A person's answer to ``question``; the run pauses (RunPaused is raised) when
        nothing else can go on meanwhile."""
        ...

    # -- the budget ----------------------------------------------------------------------------

    @property
    def budget(self) -> Budget:
        """The run's budget (see :mod:`subagents.runtime.budget`)."""
        ...

    def room(self) -> Limits:
        """What the run's budget has left (``None`` for a kind: no limit of that kind)."""
        ...

    def spend(self, agent: str, model: str, usage: Usage, cost: Decimal | None) -> None:
        """Count a model call of ``model`` by a session of type ``agent`` against the run's
        budget (``cost``: its price in USD, when the call was priced), and in its usage."""
        ...

    def call_cost(self, model: str, usage: Usage) -> Decimal:
        """What one call of ``model`` cost in USD, by the price table and ``[prices]``."""
        ...

    def check_priced(self, model: str) -> None:
        """ConfigError when ``model`` has no price (a USD budget cannot be kept)."""
        ...

    # -- settings the loop reads ---------------------------------------------------------------

    @property
    def interrupted_tool_calls(self) -> InterruptedPolicy:
        """``[subagents] interrupted_tool_calls``."""
        ...

    @property
    def max_repeated_failures(self) -> int:
        """``[subagents] max_repeated_failures`` (0: the loop guard never stops a run)."""
        ...

    def description_profile(self, model_name: str) -> DescriptionProfile:
        """How tools are described to ``model_name`` (``[providers.NAME] tool_descriptions``)."""
        ...

    # -- background subagents -------------------------------------------------------------------

    def keep_watch(self) -> None:
        """A subagent went to the background: the run's watchdog looks for stalls."""
        ...

    def has_background(self, session_id: str) -> bool:
        """Whether the session has a background subagent running or whose result it has not
        seen (only then are TaskOutput and TaskCancel offered)."""
        ...

    async def settle_background(self, session_id: str) -> bool:
        """Wait until one of the session's unseen background subagents finishes: True when one
        did (its notification is queued for the session), False when none is left."""
        ...

    def offers_messages(self, session_id: str) -> bool:
        """Whether the session has someone to message now (only then are SendMessage and
        ListAgents offered)."""
        ...

    def agent_types_for(self, session_id: str) -> list[str]:
        """The agent types the session may start, as it names them in ``subagent_type``."""
        ...
