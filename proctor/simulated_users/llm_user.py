"""A simulated user: an LLM that talks to the agent toward stated goals.

Driven by agentflow's `EvalConfig.user_simulator_config` (goals, max_invocations, model,
instructions); an ADK `conversation_scenario` is played as ADK plays it, by
`proctor.simulated_users.adk_user`. After each agent reply the simulator says which goals are achieved,
whether to stop, and writes the next user message; the run records the goals achieved.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from proctor.judges import Judge, Usage
from proctor.user_code import error_message


class SimulationPlan(BaseModel):
    """What the simulated user wants; built from either source format."""

    goals: list[str] = Field(default_factory=list)
    max_invocations: int = Field(default=5, ge=1, le=50)
    model: str = "gpt-4o-mini"
    instructions: str = ""

    @classmethod
    def for_case(cls, metadata: dict[str, Any]) -> SimulationPlan | None:
        """agentflow's simulated user; an ADK `conversation_scenario` is played by
        `proctor.simulated_users.adk_user` instead."""
        if metadata.get("user_simulator"):
            return cls.model_validate(metadata["user_simulator"])
        return None


class SimulatorTurn(BaseModel):
    goals_achieved: list[str] = Field(default_factory=list)
    done: bool = False
    next_message: str = ""

    example: ClassVar[dict[str, Any]] = {
        "goals_achieved": ["<goal, copied exactly>"],
        "done": "true | false",
        "next_message": "<what the user says next, empty if done>",
    }


async def next_user_turn(
    judge: Judge, plan: SimulationPlan, history: list[dict[str, str]], usage: Usage
) -> SimulatorTurn:
    """The simulator's verdict on the conversation so far, and the user's next message."""
    verdict = await judge.ask(
        "user_simulator.j2",
        SimulatorTurn,
        usage,
        goals=plan.goals,
        instructions=plan.instructions,
        history=history,
        temperature=judge.temperature,
    )
    known = set(plan.goals)
    verdict.goals_achieved = [goal for goal in verdict.goals_achieved if goal in known]
    return verdict


async def simulate_user(
    work: Any, runtime: Any, plan: SimulationPlan, agent_turn: Callable[..., Awaitable[Any]]
) -> None:
    """The simulated user talks until its goals are met, it gives up, or max_invocations.

    `work` and `runtime` are the pipeline's `CaseWork` and `Runtime`; `agent_turn` is its
    one exchange with the agent. The simulator's own time is not the agent's: it is added to
    `work.not_agent_ms`."""
    judge = runtime.simulator(plan.model)
    history: list[dict[str, str]] = []
    state = dict(work.case.session.initial_state)
    message = work.case.first_input
    achieved: list[str] = []
    usage = Usage()
    for number in range(plan.max_invocations):
        turn = await agent_turn(work, runtime, f"sim_{number + 1}", message, history, state)
        if turn.error:
            break
        started = time.perf_counter()
        try:
            verdict = await next_user_turn(judge, plan, history, usage)
        except Exception as error:  # the simulator failing is the case's error, recorded
            work.outcome.errors.append(f"user simulator failed: {error_message(error)}")
            break
        finally:
            work.not_agent_ms += (time.perf_counter() - started) * 1000
        achieved = verdict.goals_achieved
        turn.metadata["goals_achieved"] = achieved
        if verdict.done or set(achieved) >= set(plan.goals) or not verdict.next_message:
            break
        message = verdict.next_message
    if work.outcome.turns:
        work.outcome.turns[-1].metadata.update(
            goals=plan.goals,
            goals_achieved=achieved,
            simulator_calls=usage.calls,
            simulator_tokens=usage.prompt_tokens + usage.completion_tokens,
        )
