"""A self-contained HTML report of one run: summary, score per metric, the pass-rate trend
of the suite's recent runs, and every case (failing first). Autoescaped Jinja2; no scripts,
no external files."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session, col, select

from proctor.costs import run_totals
from proctor.models.outcome import AgentTurn
from proctor.models.tables import EvalRun, RunStatus
from proctor.rendering import render
from proctor.reporting.convert import case_label
from proctor.reporting.tool_diff import case_tool_diffs
from proctor.storage.history import no_history_line
from proctor.storage.runs import iter_results, metric_stats, unsteady_cases

TREND_RUNS = 20


def trend(*, session: Session, run: EvalRun) -> list[dict[str, object]]:
    """Pass rates of the suite's last completed runs before this one, oldest first, and this
    run last: its report is written before it is stored as completed, and a trend without it
    would show the night before as the latest point (a falling run drawing a rising chart)."""
    earlier = session.exec(
        select(EvalRun)
        .where(
            EvalRun.suite_id == run.suite_id,
            EvalRun.status == RunStatus.COMPLETED,
            EvalRun.id != run.id,
            col(EvalRun.started_at) <= run.started_at,
        )
        .order_by(col(EvalRun.started_at).desc())
        .limit(TREND_RUNS - 1)
    ).all()
    return [
        {"id": str(r.id)[:8], "pass_rate": r.pass_rate or 0.0, "label": r.variant or r.agent}
        for r in [*reversed(earlier), run]
    ]


# A page lists this many passing cases (a browser is no place for 100,000 rows); every case
# is in report.json, eval_report.json and junit.xml.
PASSING_LISTED = 5_000


class HtmlBuilder:
    """Failing cases in full (conversation, metrics, errors), passing ones folded to a line."""

    def __init__(self, run: EvalRun) -> None:
        self.run = run
        self.failing: list[dict[str, Any]] = []
        self.passing: list[dict[str, Any]] = []
        self.passing_total = 0

    def add(self, row: Any, metrics: list[Any]) -> None:
        if row.passed:
            self.passing_total += 1
            if len(self.passing) < PASSING_LISTED:
                self.passing.append(
                    {
                        "name": case_label(row),
                        "scores": {m.metric_name: m.score for m in metrics},
                        "informational": {m.metric_name for m in metrics if m.informational},
                    }
                )
        else:
            turns = [AgentTurn.model_validate(turn) for turn in row.turns]
            self.failing.append(
                {
                    "row": row,
                    "label": case_label(row),
                    "metrics": metrics,
                    "turns": turns,
                    "tool_diffs": case_tool_diffs(turns, metrics),
                }
            )

    def html(self, session: Session) -> str:
        return render(
            "report.html.j2",
            run=self.run,
            no_history=None if self.run.comparison else no_history_line(session=session, run=self.run),
            metrics=metric_stats(session=session, run_id=self.run.id),
            trend=trend(session=session, run=self.run),
            unsteady=unsteady_cases(session=session, run=self.run),
            cases=self.failing,
            passing=self.passing,
            passing_total=self.passing_total,
            totals=run_totals(session=session, run_id=self.run.id),
        )


def html_report(*, session: Session, run: EvalRun) -> str:
    builder = HtmlBuilder(run)
    for row, metrics in iter_results(session=session, run_id=run.id):
        builder.add(row, metrics)
    return builder.html(session)
