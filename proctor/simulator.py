"""A simulated user: an LLM that talks to the agent toward stated goals.

Driven by agentflow's `EvalConfig.user_simulator_config` (goals, max_invocations, model,
instructions) or an ADK `conversation_scenario` (starting prompt and conversation plan).
After each agent reply the simulator says which goals are achieved, whether to stop, and
writes the next user message; the run records the goals achieved.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field

from proctor.judges import Judge, Usage


class SimulationPlan(BaseModel):
    """What the simulated user wants; built from either source format."""

    goals: list[str] = Field(default_factory=list)
    max_invocations: int = Field(default=5, ge=1, le=50)
    model: str = "gpt-4o-mini"
    instructions: str = ""
    starting_prompt: str | None = None

    @classmethod
    def for_case(cls, metadata: dict[str, Any]) -> SimulationPlan | None:
        if metadata.get("user_simulator"):
            return cls.model_validate(metadata["user_simulator"])
        scenario = metadata.get("conversation_scenario")
        if scenario:
            plan = scenario.get("conversation_plan") or scenario.get("conversationPlan") or ""
            return cls(
                goals=[plan] if plan else [],
                starting_prompt=scenario.get("starting_prompt") or scenario.get("startingPrompt"),
                instructions=plan,
                max_invocations=int(scenario.get("max_turns") or scenario.get("max_invocations") or 5),
            )
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
