"""Google ADK's `rubric_based_multi_turn_trajectory_quality_v1`, as google-adk 2.13.0 scores it
(google/adk/evaluation/rubric_based_multi_turn_trajectory_evaluator.py): one judgement of the
whole conversation, made on the last invocation. ADK's prompt (template
adk_rubric_based_multi_turn_trajectory_quality_v1.j2) is filled with the dialogue ADK assembles
(every user turn, every event's text, tool call and tool output, every final answer), the
agents' instructions and tool names, and the rubrics as JSON; the reply is read by ADK's
ID / Property / Rationale / Verdict parser, each rubric by majority of `num_samples`, and the
score is the mean of the rubric verdicts. Ported from that file; Copyright 2026 Google LLC,
Apache License 2.0 (http://www.apache.org/licenses/LICENSE-2.0).

The events and app details are the turn's as `adk_invocation` lays them out: an `adk:` agent's
are ADK's; an `openai:` agent's instructions and tools are its app details; any other agent has
none (ADK's prompt then shows those sections empty, as for an invocation without app details);
for both, the tool calls come after the intermediate text of their turn.
"""

from __future__ import annotations

import json
import statistics
from typing import ClassVar

from proctor.judges import Usage
from proctor.metrics.adk.invocation import AGENT, app_details, turn_events
from proctor.metrics.adk.judged import unscored
from proctor.metrics.adk.rubric import (
    AdkRubric,
    AdkRubricMetric,
    effective_rubrics,
    majority_per_rubric,
)
from proctor.metrics.base import MetricContext, Score
from proctor.metrics.judged import judged_score
from proctor.models.outcome import AgentTurn


def dialogue(turns: list[AgentTurn]) -> str:
    """ADK's `_assemble_dialogue_history`: numbered USER / AGENT (author) lines."""
    lines = []
    for number, turn in enumerate(turns, start=1):
        if turn.input:
            lines.append(f"USER TURN {number}: {turn.input}")
        events = turn_events(turn)
        for event in events:
            role = "USER" if event.author.lower() == "user" else f"AGENT ({event.author})"
            if event.texts():
                lines.append(f"{role} TURN {number}: {' '.join(event.texts())}")
            for part in event.parts or []:
                call, response = part.get("function_call"), part.get("function_response")
                if call:
                    args = json.dumps(dict(call["args"])) if call.get("args") else "{}"
                    lines.append(f"{role} TURN {number} (tool call): {call.get('name')}({args})")
                if response:
                    result = json.dumps(dict(response["response"])) if response.get("response") else "{}"
                    lines.append(f"{role} TURN {number} (tool output): {response.get('name')} -> {result}")
        if turn.response:
            lines.append(f"AGENT ({events[0].author if events else AGENT}) TURN {number}: {turn.response}")
    return "\n".join(lines)


def instructions_and_tools(turns: list[AgentTurn]) -> tuple[str, str]:
    """ADK's instructions and tool list: every agent of every invocation, each once."""
    instructions, tools = [], []
    for turn in turns:
        for name, agent in (app_details(turn) or {}).items():
            instructions.append(f"Agent {name} Instructions:\n{agent.instructions}")
            tools.append(f"Agent: {name}")
            for tool in agent.tool_declarations:
                for function in tool.get("function_declarations") or []:
                    tools.append(f"- {function.get('name')}: {function.get('description')}")
    return "\n\n".join(dict.fromkeys(instructions)), "\n".join(dict.fromkeys(tools))


def properties(rubrics: list[AdkRubric]) -> str:
    """The rubrics as ADK lists them: a JSON array of {id, property, type (when set)}."""
    listed = []
    for rubric in rubrics:
        entry = {"id": rubric.rubric_id, "property": rubric.text}
        if rubric.type:
            entry["type"] = rubric.type
        listed.append(entry)
    return json.dumps(listed, indent=2)


class RubricBasedMultiTurnTrajectoryQualityV1(AdkRubricMetric):
    """ADK's `rubric_based_multi_turn_trajectory_quality_v1`: rubrics of type
    TRAJECTORY_QUALITY (from the criterion, the case and the last invocation) checked once on
    the whole conversation."""

    name = "rubric_based_multi_turn_trajectory_quality_v1"
    template = "adk_rubric_based_multi_turn_trajectory_quality_v1.j2"
    summary = "ADK: an LLM checks each rubric yes/no on the whole conversation; the share met is the score."
    how_it_scores = (
        "same as ADK: ADK 2.13.0's prompt, asked once about the whole conversation (ADK's numbered "
        "USER / AGENT lines with every tool call and tool output, the agents' instructions and tool "
        "names, the rubrics as JSON); rubrics of `type` `TRAJECTORY_QUALITY` from the criterion, the "
        "case and the last invocation (only the last needs them); the same parser and majority of "
        "`num_samples` (5) per rubric; score = mean of the rubric verdicts. Instructions, tool names "
        "and the order of text and tool calls within a turn are ADK's with `--agent adk:`; with other"
        " agents as for `hallucinations_v1`"
    )
    rubric_type: ClassVar[str] = "TRAJECTORY_QUALITY"
    whole_conversation: ClassVar[bool] = True

    async def aevaluate(self, ctx: MetricContext) -> Score:
        if not ctx.turns:
            raise RuntimeError("the agent took no turn: there is no conversation to judge")
        judge = self._judge(ctx)
        last = len(ctx.turns) - 1
        expected = ctx.case.turns[last] if last < len(ctx.case.turns) else None
        rubrics = effective_rubrics(self.rubrics, ctx.case, expected, self.rubric_type)
        if not rubrics:
            raise ValueError("Rubrics are required (none in the criterion, the case or the last invocation)")
        instructions, tools = instructions_and_tools(ctx.turns)
        variables = {
            "agent_instructions": instructions,
            "agent_tool_definitions": tools,
            "user_agent_dialogue": dialogue(ctx.turns),
            "properties": properties(rubrics),
        }
        usage = Usage()
        [(samples, raws)] = await self.sample_rubrics(judge, usage, [(rubrics, variables)])
        met = majority_per_rubric(samples)
        scored = [value for value in met.values() if value is not None]
        if not scored:
            raise unscored(self.name, raws)
        value = statistics.mean(scored)
        score = judged_score(value, value, 1, f"{value:.0%} of rubric checks met", usage, [])
        score.details = {"turn_id": ctx.turns[last].turn_id, "met": met, "unreadable_replies": raws}
        return score
