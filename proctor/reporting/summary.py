"""The short forms of a run: a Markdown summary and a case table (Prefect artifacts, CLI)."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session

from models.tables import CaseResultRow, EvalRun, MetricResultRow
from proctor.reporting.render import render
from proctor.storage.runs import iter_results, metric_stats

MAX_TABLE_ROWS = 500
MAX_FAILURES_LISTED = 50


def _why(errors: list[str], failed_metrics: list[str], tools_matched: bool | None) -> str:
    reasons = list(errors) or [f"{name} below threshold" for name in failed_metrics]
    if tools_matched is False:
        reasons.append("expected tools not called")
    return "; ".join(reasons)[:300]


def _entry(row: CaseResultRow, metrics: list[MetricResultRow]) -> dict[str, Any]:
    return {
        "case": row.case_name or row.case_id,
        "state": row.state,
        "passed": bool(row.passed),
        **{m.metric_name: (round(m.score, 3) if m.score is not None else "error") for m in metrics},
        "agent_ms": round(row.agent_ms, 1),
        "tokens": row.total_tokens,
        "why": _why(row.errors, [m.metric_name for m in metrics if not m.passed], row.tools_matched),
    }


def case_rows(*, session: Session, run: EvalRun, limit: int = MAX_TABLE_ROWS) -> list[dict[str, Any]]:
    """One row per case for a table, failing cases first, at most `limit` rows."""
    rows = [_entry(*r) for r in iter_results(session=session, run_id=run.id, passed=False, limit=limit)]
    if len(rows) < limit:
        rows += [
            _entry(*r)
            for r in iter_results(session=session, run_id=run.id, passed=True, limit=limit - len(rows))
        ]
    return rows


def summary_markdown(*, session: Session, run: EvalRun, report_dir: str | None = None) -> str:
    failures = [
        _entry(*r)
        for r in iter_results(session=session, run_id=run.id, passed=False, limit=MAX_FAILURES_LISTED)
    ]
    return render(
        "summary.md.j2",
        run=run,
        metrics=metric_stats(session=session, run_id=run.id),
        failures=failures,
        more_failures=max(0, run.total_cases - run.passed_cases - len(failures)),
        report_dir=report_dir,
    )
