"""A run compared with a baseline: which cases newly fail or pass, how each metric moved.

The baseline is the last completed run of the same suite, agent and variant that finished
before this run started, or a run pinned by id.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from sqlmodel import Session, col, select

from models.tables import CaseResultRow, EvalRun, RunStatus
from proctor.storage.runs import metric_stats


@dataclass
class MetricChange:
    name: str
    before: float | None
    after: float | None

    @property
    def delta(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before


@dataclass
class Regression:
    baseline_id: uuid.UUID
    run_id: uuid.UUID
    pass_rate_before: float
    pass_rate_after: float
    newly_failing: list[str] = field(default_factory=list)
    newly_passing: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    metrics: list[MetricChange] = field(default_factory=list)

    @property
    def pass_rate_delta(self) -> float:
        return self.pass_rate_after - self.pass_rate_before

    @property
    def regressed(self) -> bool:
        return bool(self.newly_failing)


def baseline_for(*, session: Session, run: EvalRun) -> EvalRun | None:
    """The last completed run of the same suite, agent and variant before `run`."""
    query = (
        select(EvalRun)
        .where(
            EvalRun.suite_id == run.suite_id,
            EvalRun.agent == run.agent,
            EvalRun.status == RunStatus.COMPLETED,
            EvalRun.id != run.id,
            col(EvalRun.started_at) < run.started_at,
        )
        .order_by(col(EvalRun.started_at).desc())
    )
    query = (
        query.where(col(EvalRun.variant).is_(None))
        if run.variant is None
        else query.where(EvalRun.variant == run.variant)
    )
    return session.exec(query.limit(1)).first()


def _passes(session: Session, run_id: uuid.UUID) -> dict[str, bool]:
    rows = session.exec(
        select(CaseResultRow.case_id, CaseResultRow.passed).where(CaseResultRow.run_id == run_id)
    ).all()
    return {case_id: bool(passed) for case_id, passed in rows}


def compare_runs(*, session: Session, baseline_id: uuid.UUID, run_id: uuid.UUID) -> Regression:
    before, after = _passes(session, baseline_id), _passes(session, run_id)
    rate = lambda passes: 100.0 * sum(passes.values()) / len(passes) if passes else 0.0  # noqa: E731
    stats_before = metric_stats(session=session, run_id=baseline_id)
    stats_after = metric_stats(session=session, run_id=run_id)
    common = sorted(set(before) & set(after))
    return Regression(
        baseline_id=baseline_id,
        run_id=run_id,
        pass_rate_before=rate(before),
        pass_rate_after=rate(after),
        newly_failing=[case for case in common if before[case] and not after[case]],
        newly_passing=[case for case in common if not before[case] and after[case]],
        added=sorted(set(after) - set(before)),
        removed=sorted(set(before) - set(after)),
        metrics=[
            MetricChange(
                name,
                (stats_before.get(name) or {}).get("avg_score"),
                (stats_after.get(name) or {}).get("avg_score"),
            )
            for name in sorted(set(stats_before) | set(stats_after))
        ],
    )
