"""Runs: creating one, closing it with its tallies, and reading its results back.

Keyword-only functions taking a session; the caller owns the transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import case as sql_case
from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from proctor.costs import prices_used
from proctor.models.outcome import CaseState
from proctor.models.tables import CaseResultRow, EvalRun, MetricResultRow, RunStatus


def create_run(*, session: Session, run: EvalRun) -> EvalRun:
    session.add(run)
    session.flush()
    return run


def tally(*, session: Session, run_id: uuid.UUID) -> dict[str, int]:
    """Cases by outcome, counted in SQL: passed, failed (scored below threshold), errored."""
    errored_states = [CaseState.FILES_FAILED, CaseState.AGENT_FAILED, CaseState.EVALUATION_FAILED]
    row = session.exec(
        select(
            func.count(),
            func.sum(sql_case((col(CaseResultRow.passed).is_(True), 1), else_=0)),
            func.sum(sql_case((col(CaseResultRow.state).in_([s.value for s in errored_states]), 1), else_=0)),
        ).where(CaseResultRow.run_id == run_id)
    ).one()
    total, passed, errored = (int(value or 0) for value in row)
    return {"total": total, "passed": passed, "errored": errored, "failed": total - passed}


def finish_run(
    *,
    session: Session,
    run_id: uuid.UUID,
    status: RunStatus,
    error: str | None = None,
    report_dir: str | None = None,
) -> EvalRun:
    """Close a run with its tallies taken from the stored results (the source of truth)."""
    run = session.get(EvalRun, run_id)
    if run is None:
        raise LookupError(f"no run {run_id}")
    counts = tally(session=session, run_id=run_id)
    run.status = status
    run.error = error
    run.finished_at = datetime.now(UTC)
    started = run.started_at if run.started_at.tzinfo else run.started_at.replace(tzinfo=UTC)
    run.duration_ms = int((run.finished_at - started).total_seconds() * 1000)
    run.total_cases = counts["total"]
    run.passed_cases = counts["passed"]
    run.failed_cases = counts["failed"]
    run.errored_cases = counts["errored"]
    run.pass_rate = (100.0 * counts["passed"] / counts["total"]) if counts["total"] else None
    if report_dir is not None:
        run.report_dir = report_dir
    run.prices = prices_used(session=session, run=run)  # read back the same by every later reader
    session.add(run)
    return run


def complete_run(*, session: Session, run_id: uuid.UUID) -> EvalRun:
    """The run's last step: its reports, artifacts and notification are done (or recorded as
    failed on the run), so it is completed."""
    run = session.get(EvalRun, run_id)
    if run is None:
        raise LookupError(f"no run {run_id}")
    run.status = RunStatus.COMPLETED
    session.add(run)
    return run


def iter_results(
    *,
    session: Session,
    run_id: uuid.UUID,
    passed: bool | None = None,
    limit: int | None = None,
    batch_size: int = 500,
) -> Iterator[tuple[CaseResultRow, list[MetricResultRow]]]:
    """Each case row of a run in suite order, with its metric rows, read in batches.

    `passed=False` gives only the cases that did not pass, `passed=True` only those that did.
    Rows are read with SQLAlchemy Core rather than as ORM objects (which cost several times
    more to build); they carry the tables' columns as attributes.
    """
    case_table = CaseResultRow.__table__  # type: ignore[attr-defined]
    metric_table = MetricResultRow.__table__  # type: ignore[attr-defined]
    connection = session.connection()
    offset = 0
    while limit is None or offset < limit:
        query = sa_select(case_table).where(case_table.c.run_id == run_id)
        if passed is True:
            query = query.where(case_table.c.passed.is_(True))
        elif passed is False:
            query = query.where(case_table.c.passed.is_not(True))
        size = batch_size if limit is None else min(batch_size, limit - offset)
        rows = connection.execute(
            query.order_by(case_table.c.position, case_table.c.case_id, case_table.c.attempt)
            .offset(offset)
            .limit(size)
        ).all()
        if not rows:
            return
        ids = [row.id for row in rows]
        by_case: dict[uuid.UUID, list[Any]] = {row_id: [] for row_id in ids}
        for metric in connection.execute(
            sa_select(metric_table).where(metric_table.c.case_result_id.in_(ids))
        ):
            by_case[metric.case_result_id].append(metric)
        for row in rows:
            yield row, by_case[row.id]
        offset += len(rows)


def metric_stats(
    *, session: Session, run_id: uuid.UUID, case_ids: Collection[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Per metric: how many scored, how many passed, errors, and mean / min / max score;
    over the cases in `case_ids` only when given.

    An informational metric (a value without a verdict) has `informational` set and `passed`
    None: it has no pass count, so no pass rate, and its mean is of its values (tokens, seconds).
    """
    verdict = col(MetricResultRow.informational).is_not(True)
    query = (
        select(
            MetricResultRow.metric_name,
            func.count(),
            func.sum(sql_case((verdict & col(MetricResultRow.passed).is_(True), 1), else_=0)),
            func.sum(sql_case((col(MetricResultRow.error).is_not(None), 1), else_=0)),
            func.avg(MetricResultRow.score),
            func.min(MetricResultRow.score),
            func.max(MetricResultRow.score),
            func.coalesce(func.sum(MetricResultRow.judge_calls), 0),
            func.coalesce(func.sum(MetricResultRow.cached_calls), 0),
            func.coalesce(func.sum(MetricResultRow.prompt_tokens + MetricResultRow.completion_tokens), 0),
            func.sum(sql_case((verdict, 1), else_=0)),
        )
        .where(MetricResultRow.run_id == run_id)
        .group_by(MetricResultRow.metric_name)
        .order_by(MetricResultRow.metric_name)
    )
    if case_ids is not None:
        query = query.where(col(MetricResultRow.case_id).in_(list(case_ids)))
    rows = session.exec(query).all()
    return {
        name: {
            "evaluated": int(count),
            "informational": not verdicts,
            "passed": int(passed or 0) if verdicts else None,
            "errors": int(errors or 0),
            "avg_score": float(avg) if avg is not None else None,
            "min_score": float(low) if low is not None else None,
            "max_score": float(high) if high is not None else None,
            "judge_calls": int(calls),
            "cached_calls": int(cached),
            "judge_tokens": int(tokens),
        }
        for name, count, passed, errors, avg, low, high, calls, cached, tokens, verdicts in rows
    }


@dataclass
class ResumePoint:
    """Where a run stopped: the case runs (case id, attempt) that reached a final state, and
    the turns of those whose agent had finished but not their metrics (their checkpoint)."""

    finished: set[tuple[str, int]] = field(default_factory=set)
    checkpoints: dict[tuple[str, int], CaseResultRow] = field(default_factory=dict)


def resume_point(*, session: Session, run_id: uuid.UUID) -> ResumePoint:
    """Read once when a run is resumed; only the unfinished cases' rows are kept whole."""
    final = [state.value for state in CaseState if state.is_final]
    point = ResumePoint()
    for case_id, attempt in session.exec(
        select(CaseResultRow.case_id, CaseResultRow.attempt).where(
            CaseResultRow.run_id == run_id, col(CaseResultRow.state).in_(final)
        )
    ):
        point.finished.add((case_id, attempt))
    point.finished -= refused_by_quota(session=session, run_id=run_id)  # redone
    for row in session.exec(
        select(CaseResultRow).where(
            CaseResultRow.run_id == run_id, CaseResultRow.state == CaseState.AGENT_COMPLETE.value
        )
    ):
        point.checkpoints[(row.case_id, row.attempt)] = row
    return point


def refused_by_quota(*, session: Session, run_id: uuid.UUID) -> set[tuple[str, int]]:
    """The case runs that ended in an error because the model provider still refused a call
    after the quota patience (`proctor.calls.quota.QUOTA_ERROR`), or because another case's
    agent code blocked the agents' event loop or cancelled the call
    (`proctor.user_code.BY_ANOTHER_CASE`): not the agent's fault, so a resume runs them again,
    even in a run that completed."""
    from proctor.calls.quota import QUOTA_ERROR
    from proctor.user_code import BY_ANOTHER_CASE

    errored = [CaseState.AGENT_FAILED.value, CaseState.EVALUATION_FAILED.value]
    return {
        (case_id, attempt)
        for case_id, attempt, errors in session.exec(
            select(CaseResultRow.case_id, CaseResultRow.attempt, CaseResultRow.errors).where(
                CaseResultRow.run_id == run_id, col(CaseResultRow.state).in_(errored)
            )
        )
        if any(QUOTA_ERROR in str(error) or BY_ANOTHER_CASE in str(error) for error in errors or [])
    }


def forget_refused_by_quota(*, session: Session, run_id: uuid.UUID) -> int:
    """Delete the rows of the case runs the provider refused (`refused_by_quota`), so a resume
    stores them afresh; returns how many. The caller commits."""
    refused = refused_by_quota(session=session, run_id=run_id)
    for case_id, attempt in refused:
        row = session.exec(
            select(CaseResultRow).where(
                CaseResultRow.run_id == run_id,
                CaseResultRow.case_id == case_id,
                CaseResultRow.attempt == attempt,
            )
        ).first()
        if row is None:
            continue
        for metric in session.exec(select(MetricResultRow).where(MetricResultRow.case_result_id == row.id)):
            session.delete(metric)
        session.flush()
        session.delete(row)
    session.flush()
    return len(refused)


def reopen_run(*, session: Session, run_id: uuid.UUID, flow_run_id: str | None) -> EvalRun:
    """Mark a stopped run as running again (it keeps its id, start time and stored cases)."""
    run = session.get(EvalRun, run_id)
    if run is None:
        raise LookupError(f"no run {run_id}")
    run.status, run.error, run.finished_at = RunStatus.RUNNING, None, None
    if flow_run_id:
        run.flow_run_id = flow_run_id
    session.add(run)
    return run


def run_of_flow_run(*, session: Session, flow_run_id: str, variant: str | None) -> EvalRun | None:
    """The unfinished run a Prefect flow run started before it was retried, if any."""
    query = select(EvalRun).where(EvalRun.flow_run_id == flow_run_id, EvalRun.status != RunStatus.COMPLETED)
    query = (
        query.where(col(EvalRun.variant).is_(None))
        if variant is None
        else query.where(EvalRun.variant == variant)
    )
    return session.exec(query.order_by(col(EvalRun.started_at).desc()).limit(1)).first()


def pass_counts(
    *, session: Session, run_id: uuid.UUID, unsteady_only: bool = False, limit: int | None = None
) -> dict[str, tuple[int, int]]:
    """Per case: (runs passed, runs) over its repeats, counted in SQL. `unsteady_only` keeps the
    cases that did not pass every repeat, fewest passes first (for reports of repeated runs)."""
    passed = func.sum(sql_case((col(CaseResultRow.passed).is_(True), 1), else_=0))
    query = (
        select(CaseResultRow.case_id, passed, func.count())
        .where(CaseResultRow.run_id == run_id)
        .group_by(CaseResultRow.case_id)
    )
    if unsteady_only:
        query = query.having(passed < func.count()).order_by(passed, CaseResultRow.case_id)
    if limit is not None:
        query = query.limit(limit)
    return {case_id: (int(k or 0), int(n)) for case_id, k, n in session.exec(query).all()}


def unsteady_cases(*, session: Session, run: EvalRun) -> dict[str, tuple[int, int]]:
    """With repeats, the cases that did not pass every time, k of n, worst first."""
    if run.repeat <= 1:
        return {}
    return pass_counts(session=session, run_id=run.id, unsteady_only=True, limit=50)
