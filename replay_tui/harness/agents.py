"""Agent entry points and how the harness drives them.

Two styles, both named by a ``"module:attr"`` entry point (recorded in run.started):

* a function ``agent(h: Harness, user_input) -> output`` (sync or ``async def``),
  called once per input after its ``input.received`` event; it may carry a reducer
  via ``@agent_reducer(reduce, reducer_version, initial_state)``;
* a ``StepAgent`` (class or instance): all its memory lives in the reducer state,
  the harness writes every input first, then calls ``step(h, state)`` in a loop
  (one ``step-NN`` per call) until it returns ``Done``. Snapshots are taken only
  between steps, so a run can resume from any ``state.snapshot``.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping, Sequence

from ..journal import Event
from .config import resolve_attr
from .harness import CURRENT_HARNESS, Harness, HarnessError
from .seam import StopRun
from .state import Reducer


@dataclass(frozen=True)
class Done:
    """What ``StepAgent.step`` returns to end the run."""

    output: Any = None
    status: str = "ok"
    error: Any = None


@dataclass(frozen=True)
class RunOutcome:
    status: str
    output: Any
    error: BaseException | None
    last_seq: int


class StepAgent(ABC):
    """A step-loop agent. Override ``reduce`` and ``step``; keep no memory on ``self``."""

    reducer_version: str = "1"
    max_steps: int = 10_000

    def initial_state(self) -> Any:
        return {}

    @abstractmethod
    def reduce(self, state: Any, event: Event) -> Any:
        """Return a new state for ``event``, or ``state`` itself when nothing changes."""

    @abstractmethod
    def step(self, h: Harness, state: Any) -> Done | None:
        """Do one step through ``h``; return ``Done`` when the run is over."""


def agent_reducer(
    reduce: Reducer, reducer_version: str, initial_state: Any = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Attach a reducer to a function agent."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        function.reduce = reduce  # type: ignore[attr-defined]
        function.reducer_version = reducer_version  # type: ignore[attr-defined]
        function.initial_state = initial_state  # type: ignore[attr-defined]
        return function

    return decorate


def load_agent(entry_point: str) -> StepAgent | Callable[..., Any]:
    """Resolve ``"module:attr"`` to a StepAgent instance or an agent function."""
    target = resolve_attr(entry_point, what="agent entry point")
    if isinstance(target, type) and issubclass(target, StepAgent):
        return target()
    if isinstance(target, StepAgent):
        return target
    if callable(target):
        function: Callable[..., Any] = target
        return function
    raise ValueError(f"agent entry point {entry_point!r} is neither a function nor a StepAgent")


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    """A coroutine for ``asyncio.run`` over what an async agent function returned."""
    return await awaitable


def _input_parts(item: Any) -> tuple[Any, str, Any]:
    if isinstance(item, Mapping) and "content" in item:
        return item["content"], str(item.get("role", "user")), item.get("context")
    return item, "user", None


def run_agent(
    entry_point: str, harness: Harness, inputs: Sequence[Any], *, resume_from: Event | None = None
) -> RunOutcome:
    """Run one agent on a harness, from run.started to run.ended.

    ``inputs`` are strings or ``{role, content, context}`` objects; each is written as
    ``input.received`` and the agent gets the content as recorded. An agent error ends
    the run with status ``error`` (it is in the outcome, not raised); a ``StopRun``
    from the sink or a source (a replay divergence) is re-raised with no run.ended.
    ``resume_from`` (a ``state.snapshot`` event, StepAgent only) continues that run.
    """
    agent = load_agent(entry_point)
    if isinstance(agent, StepAgent):
        harness.use_reducer(agent.reduce, agent.reducer_version, agent.initial_state())
        harness.snapshot_at_step_boundaries = True
    else:
        reduce = getattr(agent, "reduce", None)
        if reduce is not None:
            harness.use_reducer(reduce, agent.reducer_version, agent.initial_state)  # type: ignore[attr-defined]
        if resume_from is not None:
            raise HarnessError("only a StepAgent can resume from a snapshot")
    status, output, error = "ok", None, None
    if resume_from is not None:
        harness.resume(resume_from)
    else:
        harness.start_run(agent=entry_point)
    current = CURRENT_HARNESS.set(harness)  # current_harness() in the agent's code, its tasks and threads
    try:
        if isinstance(agent, StepAgent):
            if resume_from is None:
                for item in inputs:
                    content, role, context = _input_parts(item)
                    harness.receive_input(content, role=role, context=context)
            done = _drive_steps(agent, harness)
            status, output, error = done.status, done.output, done.error
        else:
            for item in inputs:
                content, role, context = _input_parts(item)
                event = harness.receive_input(content, role=role, context=context)
                result = agent(harness, event.payload["content"])
                if inspect.isawaitable(result):  # asyncio only for an async agent: a sync one's replay starts faster
                    import asyncio

                    output = asyncio.run(_awaited(result))
                else:
                    output = result
    except StopRun:
        raise
    except BaseExceptionGroup as group:  # a task group's: a replay's stop inside it is still the stop
        stop = _stop_in(group)
        if stop is not None:
            raise stop from None
        if not isinstance(group, Exception):
            raise
        status, output, error = "error", None, group
    except KeyboardInterrupt as interrupt:
        harness.end_run("cancelled", None, interrupt)
        raise
    except Exception as failure:
        status, output, error = "error", None, failure
    finally:
        CURRENT_HARNESS.reset(current)
    harness.end_run(status, output, error)
    return RunOutcome(status, output, error if isinstance(error, BaseException) else None, harness.last_seq)


def _stop_in(group: BaseExceptionGroup[BaseException]) -> StopRun | None:
    """The first ``StopRun`` among the exceptions of a group (nested groups included), if any."""
    for inner in group.exceptions:
        if isinstance(inner, StopRun):
            return inner
        if isinstance(inner, BaseExceptionGroup) and (found := _stop_in(inner)) is not None:
            return found
    return None


def _drive_steps(agent: StepAgent, harness: Harness) -> Done:
    while harness.steps_done < agent.max_steps:
        with harness.step():
            result = agent.step(harness, harness.state)
        if isinstance(result, Done):
            return result
    raise HarnessError(f"agent did not finish within max_steps={agent.max_steps}")
