"""One-line factories for cases, turns and metric contexts, so tests state only what matters."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session

from proctor.metrics.base import MetricContext
from proctor.models.agentflow import ToolCall
from proctor.models.case import Case, MetricSpec, Turn
from proctor.models.outcome import AgentTurn
from proctor.models.tables import CaseResultRow, EvalRun, MetricResultRow, RunStatus
from proctor.storage import get_engine


def call(name: str, **args: Any) -> ToolCall:
    return ToolCall(name=name, args=args)


def make_case(
    *turns: Turn,
    input: str = "What's the weather in Tokyo?",
    expected_tools: list[ToolCall] | None = None,
    expected_response: str | None = None,
    metrics: list[MetricSpec] | None = None,
    case_id: str = "case_1",
    **fields: Any,
) -> Case:
    """A case with the given turns, or one turn built from input/expectations."""
    if not turns:
        turns = (
            Turn(
                turn_id="turn_1",
                input=input,
                expected_tool_calls=expected_tools,
                expected_response=expected_response,
            ),
        )
    return Case(case_id=case_id, turns=list(turns), metrics=metrics or [], **fields)


def agent_turn(response: str | None = "", *calls: ToolCall, turn_id: str = "turn_1") -> AgentTurn:
    return AgentTurn(turn_id=turn_id, input="x", response=response, tool_calls=list(calls))


def make_ctx(case: Case, *turns: AgentTurn, agent_ms: float = 10.0) -> MetricContext:
    """The context a metric sees: the case and what the agent did in each turn."""
    return MetricContext(case=case, turns=list(turns), agent_ms=agent_ms)


def stored_run(database_url: str, *, suite_id: str = "suite", agent: str = "agent.py:agent") -> uuid.UUID:
    """A run row to hang case results on, committed to the given database."""
    run = EvalRun(
        suite_id=suite_id,
        suite_name=suite_id,
        suite_path=f"{suite_id}.json",
        source_format="native",
        agent=agent,
        proctor_version="test",
    )
    with Session(get_engine(database_url)) as session:
        session.add(run)
        session.commit()
        return run.id


def echo_suite(folder: Path, *, name: str, cases: int, agent: str, fails: Callable[[int], bool]) -> Path:
    """An agentflow suite of `cases` one-turn cases, `question i` expecting `answer question i`
    (or, for the cases `fails` picks, an answer the agent never gives), scored by
    response_match, with `agent` written beside it as agent.py (the suite's own agent)."""
    eval_cases = [
        {
            "eval_id": f"c{i:02d}",
            "conversation": [
                {
                    "invocation_id": "t1",
                    "user_content": {"role": "user", "content": f"question {i}"},
                    "expected_final_response": {
                        "role": "assistant",
                        "content": "something else entirely" if fails(i) else f"answer question {i}",
                    },
                }
            ],
        }
        for i in range(cases)
    ]
    suite = {
        "eval_set_id": name,
        "metadata": {
            "agent": "agent.py:agent",
            "eval_config": {"criteria": {"response_match": {"threshold": 0.9}}},
        },
        "eval_cases": eval_cases,
    }
    (folder / "agent.py").write_text(agent)
    path = folder / f"{name}.evalset.json"
    path.write_text(json.dumps(suite))
    return path


def seed_run(
    session: Session,
    *,
    outcomes: dict[str, list[bool]],
    scores: dict[str, float | dict[str, float]] | None = None,
    informational: dict[str, float] | None = None,
    started: datetime,
    status: RunStatus = RunStatus.COMPLETED,
    agent: str = "agent.py:agent",
    variant: str | None = None,
    config: dict | None = None,
) -> EvalRun:
    """A run whose cases passed or failed as given, one bool per repeat (a suite of its own
    per session, so tests sharing the PostgreSQL database never see each other's runs)."""
    run = EvalRun(
        suite_id=session.info["suite_id"],
        suite_name="weather",
        suite_path="weather.json",
        source_format="native",
        agent=agent,
        variant=variant,
        proctor_version="test",
        status=status,
        started_at=started,
        config=config or {},
        pass_rate=100.0 * sum(map(sum, outcomes.values())) / max(1, sum(map(len, outcomes.values()))),
    )
    session.add(run)
    session.flush()
    for case_id, repeats in outcomes.items():
        for attempt, passed in enumerate(repeats):
            row = CaseResultRow(
                run_id=run.id,
                case_id=case_id,
                attempt=attempt,
                state="passed" if passed else "failed",
                passed=passed,
                input="x",
            )
            session.add(row)
            session.flush()
            for name, score in (scores or {}).items():
                session.add(
                    MetricResultRow(
                        run_id=run.id,
                        case_result_id=row.id,
                        case_id=case_id,
                        metric_name=name,
                        score=score[case_id]
                        if isinstance(score, dict)
                        else score,  # per case, or one for all
                        passed=passed,
                    )
                )
            for name, value in (informational or {}).items():  # values without a verdict
                session.add(
                    MetricResultRow(
                        run_id=run.id,
                        case_result_id=row.id,
                        case_id=case_id,
                        metric_name=name,
                        score=value,
                        passed=True,
                        informational=True,
                    )
                )
    session.commit()
    return run
