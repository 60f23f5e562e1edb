"""The short forms of a run: a Markdown summary and a case table (Prefect artifacts, CLI)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from proctor.costs import run_totals
from proctor.models.tables import CaseResultRow, EvalRun, MetricResultRow
from proctor.rendering import render
from proctor.reporting.convert import case_label
from proctor.storage.history import no_history_line
from proctor.storage.runs import iter_results, metric_stats, unsteady_cases

MAX_TABLE_ROWS = 500
MAX_FAILURES_LISTED = 50


def _metric_failed(metric: MetricResultRow) -> str:
    """A failed metric in a few words that are true of it: "below threshold" only when its score
    is; a metric with a rule of its own (a judge whose PASSED line said no at 0.9, say) is
    "failed", with the start of its reason."""
    if metric.score is not None and metric.threshold is not None and metric.score < metric.threshold:
        return f"{metric.metric_name} below threshold"
    reason = " ".join((metric.reason or "").split())
    return f"{metric.metric_name} failed" + (f": {reason[:80]}" if reason else "")


def failure_reason(row: CaseResultRow, metrics: list[MetricResultRow]) -> str:
    """Why a case did not pass, in one line: its errors, else the metrics that failed."""
    reasons = list(row.errors) or [_metric_failed(m) for m in metrics if not m.passed and not m.informational]
    if row.tools_matched is False:
        reasons.append("expected tools not called")
    return "; ".join(reasons)[:300]


def _shown_score(metric: MetricResultRow) -> float | str:
    """A metric's score for a table: its value, else "error", or "n/a" for an informational
    value the agent did not report (tokens of an agent that reports none)."""
    if metric.score is not None:
        return round(metric.score, 3)
    return "n/a" if metric.informational and not metric.error else "error"


def _entry(row: CaseResultRow, metrics: list[MetricResultRow]) -> dict[str, Any]:
    return {
        "case": case_label(row),
        "state": row.state,
        "passed": bool(row.passed),
        **{m.metric_name: _shown_score(m) for m in metrics},
        "agent_ms": round(row.agent_ms, 1),
        "tokens": row.total_tokens,
        "why": failure_reason(row, metrics),
    }


def case_rows(*, session: Session, run: EvalRun, limit: int = MAX_TABLE_ROWS) -> list[dict[str, Any]]:
    """One row per case for a table, failing cases first, at most `limit` rows; each with its
    label against the history (newly failing, flaky, ...) and its evidence, as the reports and
    Slack give them."""
    rows = [
        _entry(*r) | {"case_id": r[0].case_id}
        for r in iter_results(session=session, run_id=run.id, passed=False, limit=limit)
    ]
    if len(rows) < limit:
        rows += [
            _entry(*r) | {"case_id": r[0].case_id}
            for r in iter_results(session=session, run_id=run.id, passed=True, limit=limit - len(rows))
        ]
    from proctor.models.comparison import LABEL_NAMES

    verdicts = {c["case_id"]: c for c in (run.comparison or {}).get("cases") or []}
    for row in rows:
        verdict = verdicts.get(row.pop("case_id")) or {}
        label = verdict.get("label")
        row["label"] = LABEL_NAMES.get(label, label) if label else ("passing" if row["passed"] else "")
        row["evidence"] = verdict.get("evidence") or ""  # as the reports and Slack give it
    return rows


def failing_cases(*, session: Session, run: EvalRun, limit: int) -> tuple[list[dict[str, Any]], int]:
    """Up to `limit` cases that did not pass, one entry per case however many repeats it had
    (with how many of them failed), and how many cases did not pass in all."""
    total = session.exec(
        select(func.count(func.distinct(CaseResultRow.case_id))).where(
            CaseResultRow.run_id == run.id, col(CaseResultRow.passed).is_not(True)
        )
    ).one()
    by_case: dict[str, dict[str, Any]] = {}
    for row, metrics in iter_results(session=session, run_id=run.id, passed=False):
        entry = by_case.get(row.case_id)
        if entry is None:
            if len(by_case) == limit:
                break
            entry = by_case[row.case_id] = {
                "case": row.case_name or row.case_id,
                "state": row.state,
                "why": failure_reason(row, metrics),
                "failed": 0,
            }
        entry["failed"] += 1
    for entry, runs in zip(by_case.values(), _runs_per_case(session, run, list(by_case)), strict=True):
        entry["runs"] = runs
    return list(by_case.values()), int(total)


def _runs_per_case(session: Session, run: EvalRun, case_ids: list[str]) -> list[int]:
    if not case_ids:
        return []
    counts = dict(
        session.exec(
            select(CaseResultRow.case_id, func.count())
            .where(CaseResultRow.run_id == run.id, col(CaseResultRow.case_id).in_(case_ids))
            .group_by(CaseResultRow.case_id)
        ).all()
    )
    return [int(counts.get(case_id, 0)) for case_id in case_ids]


def summary_markdown(*, session: Session, run: EvalRun, report_dir: str | None = None) -> str:
    failures = [
        _entry(*r)
        for r in iter_results(session=session, run_id=run.id, passed=False, limit=MAX_FAILURES_LISTED)
    ]
    return render(
        "summary.md.j2",
        run=run,
        no_history=None if run.comparison else no_history_line(session=session, run=run),
        metrics=metric_stats(session=session, run_id=run.id),
        failures=failures,
        more_failures=max(0, run.total_cases - run.passed_cases - len(failures)),
        unsteady=unsteady_cases(session=session, run=run),
        report_dir=report_dir,
        totals=run_totals(session=session, run_id=run.id),
    )
