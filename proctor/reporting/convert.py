"""Stored results converted out to each seed's result shape.

The database is the source of truth: reports are built from rows, so a report can be
rendered again for any past run, and what a report says is exactly what was stored.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from proctor.models.agentflow import CriterionResult, EvalCaseResult, InformationalResult
from proctor.models.holodeck import FileInput, MetricResult, ProcessedFileInput, TestResult, TurnResult
from proctor.models.outcome import AgentTurn
from proctor.models.tables import CaseResultRow, EvalRun, MetricResultRow
from proctor.models.vanna import (
    AgentResult,
    EvaluationResult,
    ExpectedOutcome,
    TestCase,
    TestCaseResult,
    UiComponent,
    User,
)


def iso(moment: datetime | None) -> str:
    moment = moment or datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


RAG_RESULT_NAMES = frozenset(
    {"faithfulness", "contextual_relevancy", "contextual_precision", "contextual_recall", "answer_relevancy"}
)


def holodeck_kind(metric_name: str, args: dict[str, Any]) -> str:
    """HoloDeck's `kind` of a result from a HoloDeck suite: its metric entry's `type` (a
    grader's, a G-Eval's criteria, a rag metric's name; anything else is standard)."""
    if "grader" in args:
        return "code"
    if "criteria" in args:
        return "geval"
    return "rag" if metric_name in RAG_RESULT_NAMES else "standard"


def as_holodeck(result: MetricResult, args: dict[str, Any], reason: str | None) -> MetricResult:
    """A result as HoloDeck 0.7.1's executor records it (holodeck/models/test_result.py): with
    its `kind`, the scale "0-1" (scores are stored on 0..1), a score of 0.0 where the metric
    errored, the judge's reason as `reasoning`, and no field HoloDeck's model lacks."""
    kind = holodeck_kind(result.metric_name, args)
    return result.model_copy(
        update={
            "kind": kind,
            "scale": "0-1",
            "score": result.score if result.score is not None else 0.0,
            "reasoning": reason if kind in ("geval", "rag") else None,
            "informational": None,
        }
    )


def metric_result(row: MetricResultRow, holodeck: bool = False) -> MetricResult:
    """HoloDeck's `MetricResult`; an informational value (tool calls, tokens, seconds) keeps its
    own unit as its score, with `informational: true` and no threshold. `holodeck`: in the
    shape HoloDeck 0.7.1's own code writes (`as_holodeck`), for a HoloDeck suite's report."""
    result = MetricResult(
        metric_name=row.metric_name,
        score=row.score,
        threshold=row.threshold,
        passed=row.passed,
        scale=row.scale,
        error=row.error,
        retry_count=row.retry_count,
        evaluation_time_ms=row.evaluation_time_ms,
        model_used=row.model_used,
        informational=True if row.informational else None,
    )
    return as_holodeck(result, row.args, row.reason) if holodeck else result


def informational_values(metrics: list[MetricResultRow]) -> list[InformationalResult]:
    """The values reported without a verdict, apart from the scores (agentflow's and Vanna's
    results hold 0..1 scores only)."""
    return [
        InformationalResult(criterion=m.metric_name, value=m.score, details=m.details, error=m.error)
        for m in metrics
        if m.informational
    ]


def _verdicts(metrics: list[MetricResultRow]) -> list[MetricResultRow]:
    return [m for m in metrics if not m.informational]


def _markdown_seen(entry: dict[str, Any]) -> str:
    """The markdown the agent saw, as stored (bounded by PROCTOR_STORED_FILE_CHARS), with a
    marker saying how much was cut; rows stored before the text was kept give only the size."""
    chars = int(entry.get("markdown_chars") or 0)
    text = entry.get("markdown") or ""
    if not text and not entry.get("markdown_truncated"):
        return f"({chars} characters)"
    if entry.get("markdown_truncated"):
        return f"{text}\n\n[… truncated: first {len(text):,} of {chars:,} characters kept]"
    return text


def _markdown_size(entry: dict[str, Any]) -> dict[str, Any]:
    if "markdown" not in entry:
        return {}
    return {
        "markdown_chars": entry.get("markdown_chars", 0),
        "markdown_truncated": bool(entry.get("markdown_truncated")),
    }


def _processed_file(entry: dict[str, Any]) -> ProcessedFileInput:
    original = FileInput.model_validate(
        {k: v for k, v in entry.items() if k in FileInput.model_fields and v is not None}
    )
    return ProcessedFileInput(
        original=original,
        markdown_content="" if entry.get("error") else _markdown_seen(entry),
        metadata={**(entry.get("metadata") or {}), **_markdown_size(entry)},
        processing_time_ms=int(entry.get("processing_time_ms") or 0),
        error=entry.get("error"),
    )


def case_label(row: Any) -> str:
    """A case's display name; a repeat beyond the first carries its number (`--repeat N`)."""
    name = row.case_name or row.case_id
    attempt = getattr(row, "attempt", 0) or 0
    return f"{name} (repeat {attempt + 1})" if attempt else name


def whole_ms(milliseconds: float) -> int:
    """HoloDeck's `execution_time_ms` is whole milliseconds: rounded half up, as SQL's `round`
    rounds the summary's total of them (cut, as `int` cuts, the cases summed to up to 12 % less
    than the total they were reported beside)."""
    return int(max(0.0, milliseconds) + 0.5)


def _turn_results(row: CaseResultRow, holodeck: bool = False) -> list[TurnResult] | None:
    """Each turn's own result, for a case that was scored turn by turn."""
    turns = [AgentTurn.model_validate(turn) for turn in row.turns]
    if not any(turn.passed is not None for turn in turns):
        return None
    return [
        TurnResult(
            turn_index=index,
            input=turn.input,
            response=turn.response,
            ground_truth=turn.expected_response,
            tool_calls=[call.name for call in turn.tool_calls],
            tools_matched=turn.tools_matched,
            metric_results=[
                as_holodeck(metric.to_metric_result(), metric.args, metric.reason)
                if holodeck
                else metric.to_metric_result()
                for metric in turn.metrics
            ],
            passed=bool(turn.passed),
            execution_time_ms=whole_ms(turn.latency_ms),
            errors=[e for e in [turn.error, *turn.tool_problems] if e],
        )
        for index, turn in enumerate(turns)
    ]


def test_result(row: CaseResultRow, metrics: list[MetricResultRow], holodeck: bool = False) -> TestResult:
    """HoloDeck's `TestResult` for one stored case (`holodeck`: its metrics as HoloDeck 0.7.1
    writes them, for a HoloDeck suite, so report.json validates against HoloDeck's own model).

    A case whose agent failed before its tools were checked has expected tools and no verdict
    on them: it did not meet them (HoloDeck requires `tools_matched` with `expected_tools`).
    """
    tools_matched = row.tools_matched
    if tools_matched is None and row.expected_tools is not None:
        tools_matched = False
    turns = _turn_results(row, holodeck)
    return TestResult(
        test_name=case_label(row),
        test_input=row.input,
        processed_files=[_processed_file(entry) for entry in row.files],
        agent_response=row.response,
        tool_calls=[call["name"] for call in row.tool_calls],
        expected_tools=row.expected_tools,
        tools_matched=tools_matched,
        turns=turns,
        metric_results=[metric_result(metric, holodeck) for metric in metrics],
        ground_truth=row.ground_truth if turns is None else None,  # per turn, as HoloDeck has it
        passed=bool(row.passed),
        execution_time_ms=whole_ms(row.execution_ms),
        errors=list(row.errors),
        timestamp=iso(row.finished_at or row.started_at),
    )


def eval_case_result(row: CaseResultRow, metrics: list[MetricResultRow]) -> EvalCaseResult:
    """agentflow's `EvalCaseResult`; a metric that errored has score 0 and its error in details.
    Informational values are listed apart, in `informational` (Proctor's addition)."""
    return EvalCaseResult(
        eval_id=row.case_id,
        name=row.case_name,
        passed=bool(row.passed),
        criterion_results=[
            CriterionResult(
                criterion=metric.metric_name,
                score=metric.score if metric.score is not None else 0.0,
                passed=metric.passed,
                threshold=metric.threshold if metric.threshold is not None else 0.0,
                details={**metric.details, **({"error": metric.error} if metric.error else {})},
            )
            for metric in _verdicts(metrics)
        ],
        informational=informational_values(metrics) or None,
        error="; ".join(row.errors) or None,
        duration_seconds=row.execution_ms / 1000,
    )


def components(turns: list[dict[str, Any]]) -> list[UiComponent]:
    """What the agent showed, turn by turn: the components it reported, else its answer as
    one `rich_text` component (what `EfficiencyEvaluator` counted)."""
    shown: list[UiComponent] = []
    for turn in turns:
        reported = (turn.get("metadata") or {}).get("components")
        if reported:
            shown += [
                UiComponent(type=c["type"], content=c.get("content") or "", metadata=c.get("metadata") or {})
                for c in reported
            ]
        elif turn.get("response"):
            shown.append(UiComponent(type="rich_text", content=turn["response"]))
    return shown


def _in_evaluator_order(metrics: list[MetricResultRow], order: list[str] | None) -> list[MetricResultRow]:
    """The metric rows in the dataset's evaluator order (rows come back from the database in no
    set order); rows stored before the order was kept stay as they are."""
    if not order:
        return metrics
    position = {name: index for index, name in enumerate(order)}
    return sorted(metrics, key=lambda metric: position.get(metric.metric_name, len(order)))


def vanna_result(row: CaseResultRow, metrics: list[MetricResultRow], run: EvalRun) -> TestCaseResult:
    """Vanna's `TestCaseResult`: the agent's result and one `EvaluationResult` per metric, in the
    dataset's evaluator order."""
    agent_error = next((turn.get("error") for turn in row.turns if turn.get("error")), None)
    source = getattr(row, "vanna_case", None) or {}
    metrics = _in_evaluator_order(metrics, source.get("evaluators"))
    expected = source.get("expected_outcome")
    test_case = TestCase(
        id=row.case_id,
        user=User.model_validate(source.get("user") or {}),
        message=row.input,
        conversation_id=source.get("conversation_id"),
        expected_outcome=ExpectedOutcome.model_validate(expected) if expected is not None else None,
        metadata=source.get("metadata") or {},
    )
    return TestCaseResult(
        test_case=test_case,
        agent_result=AgentResult(
            test_case_id=row.case_id,
            components=components(row.turns),
            tool_calls=list(row.tool_calls),
            execution_time_ms=row.agent_ms,
            total_tokens=row.total_tokens,
            error=agent_error,
            metadata={
                "agent": run.agent,
                "state": row.state,
                # values without a verdict: Vanna's evaluations hold 0..1 verdicts only
                **(
                    {"informational": [v.model_dump(exclude_none=True) for v in informational]}
                    if (informational := informational_values(metrics))
                    else {}
                ),
            },
        ),
        evaluations=[
            EvaluationResult(
                test_case_id=row.case_id,
                evaluator_name=metric.metric_name,
                passed=metric.passed,
                score=metric.score if metric.score is not None else 0.0,
                reasoning=metric.error or metric.reason or "",
                metrics={"threshold": metric.threshold, **metric.details},
                timestamp=row.finished_at or row.started_at,
            )
            for metric in _verdicts(metrics)
        ],
        execution_time_ms=row.execution_ms,
    )
