"""Scoring a case once its agent has answered: as a whole, or turn by turn (HoloDeck multi-turn).

HoloDeck scores each turn of a multi-turn case on its own: the turn's metrics (its own
`evaluations`, else the case's, else the suite's) against that turn's answer, `ground_truth`
and `retrieval_context`, and its `expected_tools` against that turn's calls only. A turn passes
when it has no error, its tools matched and every metric passed; the case passes when every
turn passed. The case's score for a metric is the mean of the turns that ran it, and it passes
only if it passed on every one of those turns (HoloDeck's `_finalize_multi_turn_result`).

A case that nothing scored (no metric applied, no tool expected) is reported as not scored,
with that reason, and never as passed. Informational metrics (ADK's efficiency metrics) are
stored with the case but give no verdict: they never pass or fail it, an error of theirs is kept
on their result only, and a case they alone measured is still not scored.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from proctor.metrics import BoundMetric, Metric, MetricContext, score_case
from proctor.metrics.base import retrieval_results
from proctor.metrics.holodeck.expected_tools import check_expected_tools
from proctor.metrics.tools import tools_matched
from proctor.models.case import Case, ExpectedTool, MetricSpec, Turn
from proctor.models.outcome import AgentTurn, CaseOutcome, ScoredMetric
from proctor.user_code import error_message

NOT_SCORED = "not scored: no pass/fail metric applied to this case and it expects no tools"

Binder = Callable[[MetricSpec], BoundMetric]


def rollup_tools_matched(per_turn: list[bool | None]) -> bool | None:
    """None when no turn expected tools, False when any turn's tools did not match."""
    if all(value is None for value in per_turn):
        return None
    return not any(value is False for value in per_turn)


def _rolled_score(records: list[tuple[int, ScoredMetric]], metric: Metric | None) -> float | None:
    """The mean of the turns' scores; an informational metric combines its turns' values its own
    way (ADK's aggregation: `Metric.aggregate`)."""
    if records[0][1].informational and metric is not None:
        return metric.aggregate([m.score for _, m in records])
    scores = [m.score for _, m in records if m.score is not None]
    return statistics.fmean(scores) if scores else None


def rollup_metrics(turns: list[AgentTurn], measures: dict[str, Metric] | None = None) -> list[ScoredMetric]:
    """One result per metric name: the mean score of the turns that ran it, passed only if every
    such turn passed; each turn's score is kept in `details.turns`. `measures` gives the
    informational metrics by result name, whose values are combined by their own `aggregate`."""
    by_name: dict[str, list[tuple[int, ScoredMetric]]] = {}
    for number, turn in enumerate(turns, start=1):
        for metric in turn.metrics:
            by_name.setdefault(metric.metric_name, []).append((number, metric))
    rolled = []
    for name, records in by_name.items():
        first = records[0][1]
        errors = [f"turn {n}: {m.error}" for n, m in records if m.error]
        reasons = [f"turn {n}: {m.reason}" for n, m in records if m.reason]
        rolled.append(
            ScoredMetric(
                metric_name=name,
                score=_rolled_score(records, (measures or {}).get(name)),
                threshold=first.threshold,
                passed=all(m.passed for _, m in records),
                informational=first.informational,
                scale=first.scale,
                error="; ".join(errors) or None,
                retry_count=max(m.retry_count for _, m in records),
                evaluation_time_ms=sum(m.evaluation_time_ms for _, m in records),
                model_used=first.model_used,
                args=first.args,
                metric_version=first.metric_version,
                details={
                    "turns": [
                        {"turn": n, "score": m.score, "passed": m.passed, "error": m.error}
                        for n, m in records
                    ]
                },
                reason="; ".join(reasons) or None,
                judge_calls=sum(m.judge_calls for _, m in records),
                cached_calls=sum(m.cached_calls for _, m in records),
                prompt_tokens=sum(m.prompt_tokens for _, m in records),
                completion_tokens=sum(m.completion_tokens for _, m in records),
            )
        )
    return rolled


def _turn_case(case: Case, turn: Turn) -> Case:
    """The case as one turn's metrics see it: that turn alone, with its own expectations."""
    return case.model_copy(
        update={"turns": [turn], "metrics": turn.metrics or case.metrics, "score_per_turn": False}
    )


def _decides(metrics: list[ScoredMetric]) -> list[ScoredMetric]:
    return [metric for metric in metrics if not metric.informational]


async def _score_turns(case: Case, outcome: CaseOutcome, bind: Binder) -> None:
    measures: dict[str, Metric] = {}
    for number, (expected, actual) in enumerate(zip(case.turns, outcome.turns, strict=False)):
        if actual.error is not None:  # the agent failed on this turn: nothing to score, not passed
            actual.expected_response, actual.passed = expected.expected_response, False
            continue
        one = _turn_case(case, expected)
        context = MetricContext(
            case=one,
            turns=[actual],
            processed_files=case.turn_files(expected.turn_id, outcome.processed_files),
            agent_ms=actual.latency_ms,
            turn_offset=number,
            earlier_retrieval=tuple(retrieval_results(outcome.turns[:number])),
        )
        actual.expected_response = expected.expected_response
        actual.tools_matched, actual.tool_problems = check_expected_tools(
            expected.expected_tools, actual.tool_calls
        )
        actual.expected_tools = _dumped(expected.expected_tools)
        bound = [bind(spec) for spec in one.metrics]
        measures |= {b.spec.label or b.spec.name: b.metric for b in bound if b.metric.informational}
        actual.metrics = await score_case(bound, context)
        actual.passed = (
            actual.error is None
            and actual.tools_matched is not False
            and all(metric.passed for metric in _decides(actual.metrics))
        )  # HoloDeck's rule; a case that no turn scored at all is caught as not scored
    outcome.tools_matched = rollup_tools_matched([turn.tools_matched for turn in outcome.turns])
    outcome.metrics = rollup_metrics(outcome.turns, measures)


async def score_turns_before_failure(case: Case, outcome: CaseOutcome, bind: Binder) -> None:
    """HoloDeck scores the turns a conversation completed before its agent failed; so does
    Proctor, keeping them with the failed case (which fails all the same)."""
    if not case.score_per_turn or not outcome.turns:
        return
    try:
        await _score_turns(case, outcome, bind)
    except Exception as error:  # scoring trouble never hides the agent's failure
        outcome.errors.append(f"evaluation failed: {error_message(error)}")


def _dumped(tools: list[ExpectedTool] | None) -> list[dict[str, Any]] | None:
    return None if tools is None else [tool.model_dump(exclude_none=True) for tool in tools]


def _case_tools_matched(case: Case, context: MetricContext, outcome: CaseOutcome) -> bool | None:
    """HoloDeck's expected tools with `count` and `args` when the case states them per turn,
    else every expected name called."""
    if any(turn.expected_tools is not None for turn in case.turns):
        expected = [tool for turn in case.turns for tool in turn.expected_tools or []]
        matched, problems = check_expected_tools(expected, context.tool_calls)
        if outcome.turns:
            outcome.turns[-1].tool_problems = problems
            outcome.turns[-1].expected_tools = _dumped(expected)
        return matched
    return tools_matched(case.expected_tools, context.tool_names)


async def score_outcome(case: Case, outcome: CaseOutcome, context: MetricContext, bind: Binder) -> None:
    """Scores, tool check and errors of a case whose agent completed; nothing raised."""
    try:
        if case.score_per_turn:
            await _score_turns(case, outcome, bind)
        else:
            outcome.tools_matched = _case_tools_matched(case, context, outcome)
            outcome.metrics = await score_case([bind(spec) for spec in case.metrics], context)
    except Exception as error:  # a metric that cannot even be built fails its case only
        outcome.errors.append(f"evaluation failed: {error_message(error)}")
    outcome.errors += [f"metric {m.metric_name}: {m.error}" for m in outcome.verdict_metrics if m.error]
    if not outcome.errors and not outcome.verdict_metrics and outcome.tools_matched is None:
        outcome.errors.append(NOT_SCORED)


def agent_error_of(outcome: CaseOutcome) -> str:
    """Why the agent failed, as Vanna's `AgentResult.error` holds it: the failed turn's error,
    else the case's first error (a conversation that ran out of time)."""
    failed = next((turn.error for turn in outcome.turns if turn.error), None)
    return failed or (outcome.errors[0] if outcome.errors else "the agent failed")


async def score_vanna_failure(case: Case, outcome: CaseOutcome, bind: Binder) -> None:
    """Vanna scores a case whose agent failed: its evaluators record 0.0 with "Agent execution
    failed: ..." (the efficiency evaluator, as Vanna's, ignores the error). So does Proctor, so the
    stored scores are Vanna's; the case fails all the same, with the agent's error."""
    if case.source_format != "vanna" or case.score_per_turn:
        return
    context = MetricContext(
        case=case,
        turns=outcome.turns,
        processed_files=outcome.processed_files,
        agent_ms=outcome.agent_ms,
        agent_error=agent_error_of(outcome),
    )
    try:
        outcome.metrics = await score_case([bind(spec) for spec in case.metrics], context)
    except Exception as error:  # scoring trouble never hides the agent's failure
        outcome.errors.append(f"evaluation failed: {error}")
