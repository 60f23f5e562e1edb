"""Google ADK's `per_turn_user_simulator_quality_v1`, as google-adk 2.13.0 scores it
(google/adk/evaluation/simulation/per_turn_user_simulator_quality_v1.py and
per_turn_user_simulator_quality_prompts.py): did the simulated user of a `conversation_scenario`
case follow its scenario?

* The first user message must be the scenario's `starting_prompt` (compared stripped, no judge).
* Every later user message is judged, by ADK's prompt, against the conversation plan, the
  conversation before it ("user: ..." / "model: ..." lines) and the stop signal (and, when the
  scenario has a `user_persona`, the persona's behaviours): valid or invalid by majority of
  `num_samples` (a tie is invalid; no readable reply leaves the turn unscored).
* Then the judge is asked whether the stop signal itself would have been the right next
  message after the whole conversation; if not, the last turn counts as failed.
* The score is the share of turns that passed, over all turns (an unscored turn counts as not
  passed, as in ADK).

Ported from those files; Copyright 2026 Google LLC, Apache License 2.0
(http://www.apache.org/licenses/LICENSE-2.0). ADK's prompt templates are rendered as ADK renders
them (a sandboxed Jinja environment of default settings, with its `render_string_filter`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, ClassVar

from jinja2 import pass_context
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedEnvironment
from pydantic import BaseModel, Field

from proctor.judges import Usage
from proctor.judges.judge import templates
from proctor.metrics.adk.judged import AdkJudgeOptions
from proctor.metrics.base import MetricContext, Score
from proctor.metrics.judged import judged_score
from proctor.models.case import Case
from proctor.models.outcome import AgentTurn

STOP_SIGNAL = "</finished>"
"""ADK's default stop signal (`LlmBackedUserSimulatorCriterion.stop_signal`)."""

_IS_VALID = re.compile(r'"is_valid":\s*\[*[\n\s]*"*([^"\]]*)"*[\n\s]*\]*\s*[,\n\}]')
_INVALID = ("invalid", "almost", "false", "partially_valid", "partially valid", "partially")
_VALID = ("valid", "true")


def parse_is_valid(reply: str) -> float | None:
    """ADK's `_parse_llm_response`: the `"is_valid"` field's label; 1.0 valid or true, 0.0
    invalid, almost, false or partially (valid), None when missing or anything else."""
    found = _IS_VALID.search(reply)
    if found is None:
        return None
    label = found.group(1).strip("}").replace(",", "").strip().lower()
    return 0.0 if label in _INVALID else 1.0 if label in _VALID else None


class UserBehavior(BaseModel):
    """ADK's `UserBehavior` (`simulation/user_simulator_personas.py`)."""

    name: str
    description: str
    behavior_instructions: list[str]
    violation_rubrics: list[str]

    def get_behavior_instructions_str(self) -> str:
        return "\n".join(f"  * {instruction}" for instruction in self.behavior_instructions)

    def get_violation_rubrics_str(self) -> str:
        return "\n".join(f"  * {violation}" for violation in self.violation_rubrics)


class UserPersona(BaseModel):
    """ADK's `UserPersona`: a description and the behaviours the judge checks."""

    id: str
    description: str
    behaviors: list[UserBehavior] = Field(default_factory=list)


def user_persona(value: Any) -> UserPersona | None:
    """A scenario's `user_persona`: written out in the file, or the id of one of google-adk's
    prebuilt personas (read from google-adk itself, which must then be installed)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            from google.adk.evaluation.simulation.pre_built_personas import get_default_persona_registry
        except ImportError:
            raise ValueError(
                f"user_persona {value!r} names one of google-adk's prebuilt personas: install the adk "
                "extra (pip install -e '.[adk]') or write the persona out (id, description, behaviors)"
            ) from None
        return UserPersona.model_validate(get_default_persona_registry().get_persona(value).model_dump())
    return UserPersona.model_validate(value)


@lru_cache(maxsize=1)
def adk_environment() -> SandboxedEnvironment:
    """The environment ADK renders its simulator prompts in (`get_per_turn_user_simulator_quality_prompt`,
    `get_llm_backed_user_simulator_prompt`): sandboxed, default settings, `render_string_filter`."""
    environment = SandboxedEnvironment()

    @pass_context
    def render_string_filter(context: Context, template_string: str) -> str:
        if not template_string:
            return ""
        return environment.from_string(template_string).render(context.get_all())

    environment.filters["render_string_filter"] = render_string_filter
    return environment


def adk_prompt(
    plan: str, history: str, user_response: str, stop_signal: str, persona: UserPersona | None
) -> str:
    """ADK's prompt for one generated user message, from ADK's template files."""
    name = "adk_per_turn_user_simulator_quality_v1" + ("_persona" if persona else "") + ".j2"
    source = templates().loader.get_source(templates(), name)[0]
    variables: dict[str, Any] = {
        "conversation_plan": plan,
        "conversation_history": history,
        "generated_user_response": user_response,
        "stop_signal": stop_signal,
    }
    if persona is not None:
        variables["persona"] = persona
    return adk_environment().from_string(source).render(variables)


def conversation_history(turns: Sequence[AgentTurn]) -> str:
    """ADK's `_format_conversation_history`: "user: ..." and "model: ..." blocks."""
    lines = []
    for turn in turns:
        lines.append(f"user: {turn.input}")
        if turn.response:
            lines.append(f"model: {turn.response}")
    return "\n\n".join(lines)


def majority_sample(samples: list[float | None]) -> float | None:
    """ADK's `_aggregate_samples`: valid only by strict majority; no readable sample, None."""
    valid, invalid = samples.count(1.0), samples.count(0.0)
    if not valid and not invalid:
        return None
    return 1.0 if valid > invalid else 0.0


class PerTurnUserSimulatorQualityV1(AdkJudgeOptions):
    """ADK's `per_turn_user_simulator_quality_v1` (see the module's docstring); scores only
    cases with a `conversation_scenario`, as ADK does."""

    name = "per_turn_user_simulator_quality_v1"
    template = "adk_prompt.j2"
    default_threshold = 0.8
    summary = (
        "ADK: an LLM checks each simulated user message against the scenario; the share valid is the score."
    )
    how_it_scores = (
        "same as ADK, on `conversation_scenario` cases only (others are named in a warning; ADK "
        "reports them not evaluated): the first user message must be the scenario's "
        "`starting_prompt`; every later one is judged by ADK 2.13.0's prompt against the "
        "`conversation_plan`, the conversation so far and `stop_signal` (`</finished>` by default; "
        "`stopSignal`), with the persona's behaviours when the scenario has a `user_persona` (written"
        " out, or a prebuilt persona's id, read from google-adk: needs the `adk` extra); valid by "
        "strict majority of `num_samples` (5), no readable reply leaves the turn unscored; then the "
        "judge is asked whether ending the conversation there was right, and if not the last turn "
        "fails; score = turns passed over all turns. The simulated user it judges is ADK's (see "
        "[Simulated users](../agents.md#simulated-users)), persona included"
    )
    unused_judge_options: ClassVar[frozenset[str]] = frozenset({"parallelism_limit"})  # ADK: one at a time

    num_samples: int = Field(default=5, ge=1, le=10)
    stop_signal: str = STOP_SIGNAL

    def applies_to_case(self, case: Case) -> bool:
        return bool(case.metadata.get("conversation_scenario"))

    async def _judged(self, ctx: MetricContext, prompt: str, usage: Usage, raws: list[str]) -> dict[str, Any]:
        judge = self._judge(ctx)
        votes = []
        for sample in range(self.num_samples):
            vote, raw = await self.ask_adk(
                judge, self.template, usage, parse_is_valid, sample=sample, prompt=prompt
            )
            votes.append(vote)
            if vote is None:
                raws.append(raw)
        return {"score": majority_sample(votes), "votes": votes}

    async def aevaluate(self, ctx: MetricContext) -> Score:
        scenario = ctx.case.metadata.get("conversation_scenario") or {}
        if not ctx.turns:
            raise RuntimeError("the simulated user sent no message: there is nothing to judge")
        plan, persona = scenario.get("conversation_plan", ""), user_persona(scenario.get("user_persona"))
        usage, raws = Usage(), []
        first = ctx.turns[0]
        results = [
            {
                "turn_id": first.turn_id,
                "score": float(first.input.strip() == scenario["starting_prompt"].strip()),
            }
        ]
        for index in range(1, len(ctx.turns)):
            turn = ctx.turns[index]
            prompt = adk_prompt(
                plan, conversation_history(ctx.turns[:index]), turn.input, self.stop_signal, persona
            )
            results.append({"turn_id": turn.turn_id, **await self._judged(ctx, prompt, usage, raws)})
        prompt = adk_prompt(
            plan, conversation_history(ctx.turns), self.stop_signal, self.stop_signal, persona
        )
        stop = await self._judged(ctx, prompt, usage, raws)
        return self._aggregate(ctx, results, stop, usage, raws)

    def _aggregate(
        self,
        ctx: MetricContext,
        results: list[dict[str, Any]],
        stop: dict[str, Any],
        usage: Usage,
        raws: list[str],
    ) -> Score:
        """ADK's `_aggregate_conversation_results`: turns that passed the threshold, over all turns;
        a stop-signal verdict that fails the threshold replaces the last turn's."""
        threshold = self.default_threshold if ctx.threshold is None else ctx.threshold

        def passed(score: float | None) -> bool:
            return score is not None and score >= threshold

        if stop["score"] is not None and not passed(stop["score"]):
            results[-1] = {**results[-1], "score": stop["score"], "replaced_by_stop_signal_check": True}
        value = sum(result["score"] for result in results if passed(result["score"])) / len(results)
        score = judged_score(value, value, 1, f"{value:.0%} of simulated user turns valid", usage, [])
        score.details = {"per_turn": results, "stop_signal_check": stop, "unreadable_replies": raws}
        return score
