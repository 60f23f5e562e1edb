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

from sqlalchemy import func, or_
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


def is_selection(run: EvalRun) -> bool:
    """The run ran only some of its suite's cases (`--case`, `--tag`, `--meta`, FILE:ids): its
    cases are evidence for their own history, but the cases it did not select were not removed,
    and it is no baseline for a run of the whole suite."""
    config = run.config or {}
    return bool(config.get("cases") or config.get("tags") or config.get("metadata"))


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


def no_history_line(*, session: Session, run: EvalRun) -> str:
    """What a run with no history says instead of a verdict, in every view: the first run of
    its suite and agent, or the first since its history was reset (when, and why)."""
    variant = f" (variant {run.variant})" if run.variant else ""
    query = select(HistoryReset).where(
        HistoryReset.suite_id == run.suite_id,
        or_(col(HistoryReset.agent).is_(None), HistoryReset.agent == run.agent),
        or_(col(HistoryReset.variant).is_(None), HistoryReset.variant == run.variant),
    )
    reset = session.exec(query.order_by(col(HistoryReset.reset_at).desc()).limit(1)).first()
    if reset is None:
        return (
            f"No baseline yet: this is the first run of this suite and agent{variant}, so nothing is "
            "compared; the next run is judged against this one."
        )
    when = reset.reset_at if reset.reset_at.tzinfo else reset.reset_at.replace(tzinfo=UTC)
    why = f" ({reset.reason})" if reset.reason else ""
    return (
        f"No baseline yet: this is the first run of this suite and agent{variant} since its history "
        f"was reset on {when.astimezone(UTC):%Y-%m-%d %H:%M} UTC{why}, so nothing is compared; the "
        "next run is judged against this one."
    )


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


class RunCounts(dict):  # type: ignore[type-arg]
    """One run's Counts, with the entries that are not a single pass (`unusual`) listed apart:
    most cases pass their one attempt, and the verdict need not look at those one by one."""

    unusual: list[tuple[str, tuple[int, int]]]


def pass_counts_by_run(*, session: Session, run_ids: list[uuid.UUID]) -> dict[uuid.UUID, Counts]:
    """Per run, per case: (attempts passed, attempts). Two queries per run, each a range of
    `ix_case_result_history`: the case ids, and those of the rows that did not pass. On SQLite
    a GROUP BY over the same rows takes three times as long as reading them, and a dict of
    10,000 single passes is built in C from the ids (10,000 cases x 30 runs)."""
    table = CaseResultRow.__table__  # type: ignore[attr-defined]
    connection = session.connection()

    def driver_rows(query):  # type: ignore[no-untyped-def]
        # The driver's own tuples: nothing to convert in these columns, and building a Row
        # per tuple cost as much as the query.
        result = connection.execute(query)
        rows = result.cursor.fetchall()
        result.close()
        return rows

    counts_by_run: dict[uuid.UUID, Counts] = {}
    for run_id in run_ids:
        ids = [row[0] for row in driver_rows(sa_select(table.c.case_id).where(table.c.run_id == run_id))]
        failing = [
            row[0]
            for row in driver_rows(
                sa_select(table.c.case_id).where(table.c.run_id == run_id, table.c.passed.is_not(True))
            )
        ]
        counts = RunCounts.fromkeys(ids, PASSED)
        if len(counts) == len(ids):
            counts.update(dict.fromkeys(failing, FAILED))
            counts.unusual = [(case_id, FAILED) for case_id in counts.keys() & set(failing)]
        else:  # repeats: several rows a case
            tally = {case_id: [0, 0] for case_id in counts}
            for case_id in ids:
                tally[case_id][0] += 1
                tally[case_id][1] += 1
            for case_id in failing:
                tally[case_id][0] -= 1
            counts = RunCounts((case_id, (k, n)) for case_id, (k, n) in tally.items())
            counts.unusual = [(case_id, value) for case_id, value in counts.items() if value != PASSED]
        counts_by_run[run_id] = counts
    return counts_by_run
