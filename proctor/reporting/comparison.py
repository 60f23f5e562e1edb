"""Comparing agent variants run over the same suite (Vanna's `ComparisonReport`).

Per variant: pass rate, mean score per metric, mean agent latency and tokens. Variants of a
Vanna dataset are ranked as Vanna's `ComparisonReport.get_best_variant()` ranks them: by
`EvaluationReport.average_score()` (each case's mean evaluator score, averaged over the cases),
highest first, the earlier variant first on a tie. Other suites' variants are ranked by pass
rate, then mean score, then lowest latency. Written as Markdown, a self-contained HTML page and CSV.
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
from proctor.reporting.convert import vanna_result
from proctor.storage.runs import iter_results, metric_stats

VANNA_RULE = "Vanna's ComparisonReport: highest average score (mean of each case's evaluator scores)"
PROCTOR_RULE = "highest pass rate, then mean score, then lowest agent time"


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
    ranking: list[str] = field(default_factory=list)  # best first
    rule: str = PROCTOR_RULE


def vanna_average_score(*, session: Session, run: EvalRun) -> float:
    """Vanna's `EvaluationReport.average_score()` for a stored run: each case's
    `TestCaseResult.overall_score()` (0.0 for a case nothing scored), averaged over the cases."""
    scores = [
        vanna_result(row, metrics, run).overall_score()
        for row, metrics in iter_results(session=session, run_id=run.id)
    ]
    return sum(scores) / len(scores) if scores else 0.0


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
        if run.source_format == "vanna":  # Vanna's own average, which its ComparisonReport ranks by
            scores = [vanna_average_score(session=session, run=run)]
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
    first = session.get(EvalRun, run_ids[0])
    vanna = first is not None and first.source_format == "vanna"
    if vanna:  # max() over the variants in order: the first of equal scores wins, as in Vanna
        ranked = sorted(rows, key=lambda r: -(r.mean_score or 0.0))
    else:
        ranked = sorted(rows, key=lambda r: (-r.pass_rate, -(r.mean_score or 0.0), r.mean_agent_ms))
    metrics = sorted({name for row in rows for name in row.metric_scores})
    return Comparison(
        suite_name=first.suite_name if first else "",
        rows=rows,
        metrics=metrics,
        best=ranked[0].variant,
        ranking=[row.variant for row in ranked],
        rule=VANNA_RULE if vanna else PROCTOR_RULE,
    )


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value: str) -> str:
    """A name as a spreadsheet shows it, never runs it: text starting like a formula (`=`, `+`,
    `-`, `@`, a tab or carriage return) gets a leading `'` (OWASP's advice for CSV injection).
    Only names and agents pass here; numbers Proctor formats are written as they are."""
    return f"'{value}" if value.startswith(FORMULA_STARTS) else value


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
            *[csv_text(metric) for metric in comparison.metrics],
            "best",
            "rank",
        ]
    )
    for row in comparison.rows:
        writer.writerow(
            [
                csv_text(row.variant),
                csv_text(row.agent),
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
                comparison.ranking.index(row.variant) + 1,
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
