"""Comparing agent variants run over the same suite (Vanna's `ComparisonReport`).

Per variant: pass rate, mean score per metric, mean agent latency and tokens; the best
variant has the highest pass rate, then the highest mean score, then the lowest latency.
Written as Markdown, a self-contained HTML page and CSV.
"""

from __future__ import annotations

import csv
import io
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import func
from sqlmodel import Session, select

from proctor.costs import RunTotals, run_totals
from proctor.models.tables import CaseResultRow, EvalRun
from proctor.rendering import render
from proctor.storage.runs import metric_stats


@dataclass
class VariantRow:
    variant: str
    agent: str
    run_id: uuid.UUID
    total: int
    passed: int
    pass_rate: float
    mean_score: float | None
    mean_agent_ms: float
    total_tokens: int  # the agent's
    totals: RunTotals = field(default_factory=RunTotals)
    metric_scores: dict[str, float | None] = field(default_factory=dict)


@dataclass
class Comparison:
    suite_name: str
    rows: list[VariantRow]
    metrics: list[str]
    best: str


def compare(*, session: Session, run_ids: list[uuid.UUID]) -> Comparison:
    rows = []
    for run_id in run_ids:
        run = session.get(EvalRun, run_id)
        assert run is not None, f"no run {run_id}"
        latency, tokens = session.exec(
            select(
                func.coalesce(func.avg(CaseResultRow.agent_ms), 0),
                func.coalesce(func.sum(CaseResultRow.total_tokens), 0),
            ).where(CaseResultRow.run_id == run_id)
        ).one()
        stats = metric_stats(session=session, run_id=run_id)
        scores = [  # informational values (tokens, seconds) are not scores
            s["avg_score"] for s in stats.values() if s["avg_score"] is not None and not s["informational"]
        ]
        rows.append(
            VariantRow(
                variant=run.variant or run.agent,
                agent=run.agent,
                run_id=run_id,
                total=run.total_cases,
                passed=run.passed_cases,
                pass_rate=run.pass_rate or 0.0,
                mean_score=sum(scores) / len(scores) if scores else None,
                mean_agent_ms=float(latency),
                total_tokens=int(tokens),
                totals=run_totals(session=session, run_id=run_id),
                metric_scores={name: s["avg_score"] for name, s in stats.items()},
            )
        )
    best = max(rows, key=lambda r: (r.pass_rate, r.mean_score or 0.0, -r.mean_agent_ms))
    metrics = sorted({name for row in rows for name in row.metric_scores})
    first = session.get(EvalRun, run_ids[0])
    return Comparison(
        suite_name=first.suite_name if first else "", rows=rows, metrics=metrics, best=best.variant
    )


def comparison_csv(comparison: Comparison) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        [
            "variant",
            "agent",
            "run_id",
            "cases",
            "passed",
            "pass_rate",
            "mean_score",
            "mean_agent_ms",
            "total_tokens",
            "judge_tokens",
            "cached_judge_calls",
            "estimated_cost_usd",
            *comparison.metrics,
            "best",
        ]
    )
    for row in comparison.rows:
        writer.writerow(
            [
                row.variant,
                row.agent,
                row.run_id,
                row.total,
                row.passed,
                f"{row.pass_rate:.2f}",
                "" if row.mean_score is None else f"{row.mean_score:.4f}",
                f"{row.mean_agent_ms:.1f}",
                row.total_tokens,
                row.totals.judge_tokens,
                row.totals.cached_judge_calls,
                "unknown" if row.totals.cost_usd is None else f"{row.totals.cost_usd:.6f}",
                *[
                    "" if row.metric_scores.get(m) is None else f"{row.metric_scores[m]:.4f}"
                    for m in comparison.metrics
                ],
                row.variant == comparison.best,
            ]
        )
    return out.getvalue()


def write_comparison(*, session: Session, run_ids: list[uuid.UUID], directory: Path) -> Comparison:
    comparison = compare(session=session, run_ids=run_ids)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "comparison.md").write_text(render("comparison.md.j2", c=comparison), encoding="utf-8")
    (directory / "comparison.html").write_text(render("comparison.html.j2", c=comparison), encoding="utf-8")
    (directory / "comparison.csv").write_text(comparison_csv(comparison), encoding="utf-8")
    return comparison
