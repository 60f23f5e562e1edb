"""The simulated user of an ADK `conversation_scenario` case, as google-adk 2.13.0's
`LlmBackedUserSimulator` plays it (evaluation/simulation/llm_backed_user_simulator.py and
llm_backed_user_simulator_prompts.py; templates adk_user_simulator*.j2 are ADK's, verbatim).

* The first user message is the scenario's `starting_prompt`, sent as it is (no model call).
* Every later one is the model's reply to ADK's prompt, sent as ADK sends it (one user message,
  no system prompt, plain text): the default instructions, or the persona's (description and
  behaviours) when the scenario has a `user_persona`, or the config's `custom_instructions`;
  filled with the conversation plan, the stop signal and the conversation so far, written as
  ADK writes it ("author: text" per text part, thoughts left out, tool calls and results only
  with `include_function_calls`).
* A reply containing the stop signal `</finished>` (any case) ends the conversation, unsent; so
  does reaching `max_allowed_invocations` (the starting prompt counts; -1 is no limit). An empty
  reply is the case's error, as ADK raises.

The conversation so far is the turns' events as `proctor.metrics.adk.invocation` gives them: an
`adk:` agent's own events (author, text, calls, results, the final answer in its place); for any
other agent the intermediate text, then each call and result, then the answer, author "agent".
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from proctor.judges import Judge, Usage
from proctor.judges.genai_config import call_options
from proctor.judges.judge import templates
from proctor.metrics.adk.invocation import AGENT, turn_events
from proctor.metrics.adk.simulator_quality import UserPersona, adk_environment, user_persona
from proctor.models.adk_config import AdkUserSimulatorConfig, is_valid_user_simulator_template, set_fields
from proctor.models.outcome import AgentTurn
from proctor.user_code import error_message

STOP_SIGNAL = "</finished>"
"""ADK's simulator always uses this one (its criterion's `stop_signal` is for the judge only)."""
DEFAULT_MODEL = "gpt-4o-mini"
"""Proctor's default simulator model, for ADK's gemini-2.5-flash."""


def instructions_template(custom: str | None, persona: UserPersona | None) -> str:
    """ADK's `_get_user_simulator_instructions_template`: the template's source."""
    if custom is None:
        name = "adk_user_simulator_persona.j2" if persona else "adk_user_simulator.j2"
        return templates().loader.get_source(templates(), name)[0]
    required = ["stop_signal", "conversation_plan", "conversation_history", "persona"]
    if persona is not None and not is_valid_user_simulator_template(custom, required):
        raise ValueError(  # where ADK raises, when the prompt is first built
            "custom_instructions used with a user_persona must contain each of the Jinja placeholders "
            "{{ stop_signal }}, {{ conversation_plan }}, {{ conversation_history }} and {{ persona }}"
        )
    return custom


def simulator_prompt(plan: str, history: str, custom: str | None, persona: UserPersona | None) -> str:
    """ADK's `get_llm_backed_user_simulator_prompt`, rendered as ADK renders it."""
    variables: dict[str, Any] = {
        "stop_signal": STOP_SIGNAL,
        "conversation_plan": plan,
        "conversation_history": history,
    }
    if persona is not None:
        variables["persona"] = persona
    return adk_environment().from_string(instructions_template(custom, persona)).render(variables)


def dialogue(turns: list[AgentTurn], include_function_calls: bool) -> str:
    """ADK's `_summarize_conversation` of the events so far: the user's message, then each
    event's parts (text, or with `include_function_calls` calls and results)."""
    lines = []
    for turn in turns:
        lines.append(f"user: {turn.input}")
        answered = False
        for event in turn_events(turn):
            if event.parts is None:  # the final answer's event, recorded without its content
                if turn.response:
                    lines.append(f"{event.author}: {turn.response}")
                answered = True
                continue
            for part in event.parts:
                call, result = part.get("function_call"), part.get("function_response")
                if part.get("text") and not part.get("thought"):
                    lines.append(f"{event.author}: {part['text']}")
                elif include_function_calls and call:
                    lines.append(
                        f"{event.author} called tool '{call.get('name')}' with args: {call.get('args')}"
                    )
                elif include_function_calls and result:
                    lines.append(f"Tool '{result.get('name')}' returned: {result.get('response')}")
        if turn.response and not answered:
            lines.append(f"{AGENT}: {turn.response}")
    return "\n\n".join(lines)


@dataclass(frozen=True)
class AdkSimulation:
    """One scenario and the simulator config it is played with."""

    starting_prompt: str
    conversation_plan: str
    persona: UserPersona | None
    config: AdkUserSimulatorConfig

    @classmethod
    def for_case(cls, metadata: dict[str, Any]) -> AdkSimulation | None:
        scenario = metadata.get("conversation_scenario")
        if not scenario:
            return None
        return cls(
            starting_prompt=scenario["starting_prompt"],
            conversation_plan=scenario["conversation_plan"],
            persona=user_persona(scenario.get("user_persona")),
            config=AdkUserSimulatorConfig.model_validate(metadata.get("adk_user_simulator") or {}),
        )

    async def next_message(self, judge: Judge, turns: list[AgentTurn], usage: Usage) -> str:
        """The simulated user's next message, as the model wrote it."""
        history = dialogue(turns, self.config.include_function_calls)
        prompt = simulator_prompt(
            self.conversation_plan, history, self.config.custom_instructions, self.persona
        )
        temperature, options = call_options(set_fields(self.config.model_configuration))
        text, _ = await judge.ask_text(
            "adk_prompt.j2",
            usage,
            lambda reply: reply or None,
            temperature=temperature,
            options=options,
            prompt=prompt,
        )
        if not text:
            raise RuntimeError("Failed to generate a user message: LLM returned empty response")
        return text


async def simulate_adk_user(
    work: Any, runtime: Any, simulation: AdkSimulation, agent_turn: Callable[..., Awaitable[Any]]
) -> None:
    """The conversation ADK's `EvaluationGenerator` holds with its user simulator; `work`,
    `runtime` and `agent_turn` are the pipeline's. The simulator's own time is not the agent's."""
    judge = runtime.simulator(simulation.config.model or DEFAULT_MODEL)
    history: list[dict[str, str]] = []
    state = dict(work.case.session.initial_state)
    limit, usage, count = simulation.config.max_allowed_invocations, Usage(), 0
    while True:
        if 0 <= limit <= count:
            status = "turn_limit_reached"
            break
        if count == 0:
            message = simulation.starting_prompt
        else:
            started = time.perf_counter()
            try:
                message = await simulation.next_message(judge, work.outcome.turns, usage)
            except Exception as error:  # the simulator failing is the case's error, recorded
                work.outcome.errors.append(f"user simulator failed: {error_message(error)}")
                status = "simulator_failed"
                break
            finally:
                work.not_agent_ms += (time.perf_counter() - started) * 1000
        count += 1
        if STOP_SIGNAL.lower() in message.lower():
            status = "stop_signal_detected"
            break
        turn = await agent_turn(work, runtime, f"sim_{count}", message, history, state)
        if turn.error:
            status = "agent_failed"
            break
    if work.outcome.turns:
        work.outcome.turns[-1].metadata.update(
            simulation_status=status,
            simulator_calls=usage.calls,
            simulator_tokens=usage.prompt_tokens + usage.completion_tokens,
        )
