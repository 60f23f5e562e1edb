"""A suite's history as evidence: the last completed runs of the same suite, agent and variant,
and each case's pass counts in them, read in two queries (both answered from indexes:
`ix_eval_run_series`, `ix_case_result_history`).

History starts again after `proctor reset-history` (a `history_reset` row). A run that names
its agent's version (`agent_version`) reads only runs of that version, once one exists: the
first run of a new version is judged against the old version's runs (so a change the new
version brought is seen), later ones against the new version's alone.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import Integer, func, or_, type_coerce
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from proctor.models.request import DEFAULT_HISTORY_WINDOW
from proctor.models.tables import CaseResultRow, EvalRun, HistoryReset, RunStatus

Counts = dict[str, tuple[int, int]]  # case id -> (attempts passed, attempts)


def _series(query, *, suite_id: str, agent: str, variant: str | None):  # type: ignore[no-untyped-def]
    query = query.where(EvalRun.suite_id == suite_id, EvalRun.agent == agent)
    return (
        query.where(col(EvalRun.variant).is_(None))
        if variant is None
        else query.where(EvalRun.variant == variant)
    )


def agent_version(run: EvalRun) -> str | None:
    return (run.config or {}).get("agent_version") or None


def last_reset(*, session: Session, suite_id: str, agent: str, variant: str | None) -> datetime | None:
    """When the history of this series was last reset (`proctor reset-history`), if ever."""
    query = select(func.max(HistoryReset.reset_at)).where(
        HistoryReset.suite_id == suite_id,
        or_(col(HistoryReset.agent).is_(None), HistoryReset.agent == agent),
        or_(col(HistoryReset.variant).is_(None), HistoryReset.variant == variant),
    )
    value = session.exec(query).one()
    if value is not None and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


def record_reset(
    *, session: Session, suite_id: str, agent: str | None, variant: str | None, reason: str | None
) -> HistoryReset:
    reset = HistoryReset(suite_id=suite_id, agent=agent, variant=variant, reason=reason)
    session.add(reset)
    session.flush()
    return reset


def history_window(
    *, session: Session, run: EvalRun, window: int = DEFAULT_HISTORY_WINDOW, last: EvalRun | None = None
) -> list[EvalRun]:
    """The completed runs that are evidence for `run`'s verdict, oldest first: at most `window`
    runs of `last`'s series (by default `run`'s own) that started before `run`, up to and
    including `last` when given (a pinned baseline), after the series' last reset."""
    anchor = last or run
    query = _series(
        select(EvalRun).where(EvalRun.status == RunStatus.COMPLETED, EvalRun.id != run.id),
        suite_id=anchor.suite_id,
        agent=anchor.agent,
        variant=anchor.variant,
    )
    if last is not None:
        query = query.where(col(EvalRun.started_at) <= last.started_at)
    else:
        query = query.where(col(EvalRun.started_at) < run.started_at)
    reset = last_reset(session=session, suite_id=anchor.suite_id, agent=anchor.agent, variant=anchor.variant)
    if reset is not None:
        query = query.where(col(EvalRun.started_at) >= reset)
    runs = list(session.exec(query.order_by(col(EvalRun.started_at).desc()).limit(window)).all())
    if last is not None and runs and runs[0].id != last.id:
        runs.insert(0, last)  # a pinned run is always the baseline, even one before a reset
        runs = runs[:window]
    version = agent_version(run)
    if version is not None and any(agent_version(r) == version for r in runs):
        runs = [r for r in runs if agent_version(r) == version]  # its own version's, once it has one
    return list(reversed(runs))


PASSED, FAILED = (1, 1), (0, 1)  # one attempt's counts, shared: most cases run once a night


def pass_counts_by_run(*, session: Session, run_ids: list[uuid.UUID]) -> dict[uuid.UUID, Counts]:
    """Per run, per case: (attempts passed, attempts). One query per run, each a range of
    `ix_case_result_history` read in index order and counted here: on SQLite, a GROUP BY over
    the same rows takes three times as long as reading them (10,000 cases x 30 runs)."""
    table = CaseResultRow.__table__  # type: ignore[attr-defined]
    passed = type_coerce(table.c.passed, Integer)  # 0 / 1 / NULL as they are, no per-row conversion
    connection = session.connection()
    result: dict[uuid.UUID, Counts] = {}
    for run_id in run_ids:
        result_rows = connection.execute(sa_select(table.c.case_id, passed).where(table.c.run_id == run_id))
        # The driver's own tuples: nothing to convert in these two columns, and building a
        # Row per tuple cost as much as the query.
        rows = result_rows.cursor.fetchall()
        result_rows.close()
        counts: Counts = {case_id: PASSED if ok else FAILED for case_id, ok in rows}
        if len(counts) != len(rows):  # repeats: several rows a case
            tally: dict[str, list[int]] = {}
            for case_id, ok in rows:
                entry = tally.setdefault(case_id, [0, 0])
                entry[0] += 1 if ok else 0
                entry[1] += 1
            counts = {case_id: (k, n) for case_id, (k, n) in tally.items()}
        result[run_id] = counts
    return result
