"""What a notification says about a run, gathered once from the database.

Slack (and any later channel) formats a `Digest`; it never queries the database itself, so
a notifier that fails cannot disturb stored results, and the formatting is testable alone.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from proctor.costs import RunTotals, run_totals
from proctor.models.tables import EvalRun
from proctor.reporting.summary import failure_reason
from proctor.stats.regression import Regression
from proctor.storage.history import no_history_line
from proctor.storage.runs import iter_results, pass_counts

MAX_RESPONSE_CHARS = 300


@dataclass
class FailingCase:
    case_id: str
    state: str
    reason: str
    response: str | None = None
    passes: tuple[int, int] | None = None  # with repeats: (k, n), passed k of n runs
    label: str | None = None  # against the history: "newly failing", "flaky", ...
    evidence: str | None = None


@dataclass
class Digest:
    run_id: uuid.UUID | None  # None: the run never started (no suite, no database)
    suite_name: str
    agent: str
    variant: str | None
    status: str
    total: int
    passed: int
    failed: int
    errored: int
    pass_rate: float | None
    regression: Regression | None = None
    failing: list[FailingCase] = field(default_factory=list)
    more_failing: int = 0
    report_link: str | None = None
    flow_run_link: str | None = None
    error: str | None = None
    totals: RunTotals | None = None
    repeat: int = 1
    not_passed: int | None = None  # cases that did not pass (with repeats: not every time)
    no_history: str | None = None  # without a verdict: the first run, or the first since a reset

    @property
    def cases_not_passed(self) -> int:
        return self.total - self.passed if self.not_passed is None else self.not_passed

    @property
    def has_failures(self) -> bool:
        return self.failed > 0 or self.status != "completed"

    @property
    def regressed(self) -> bool:
        return self.regression is not None and self.regression.regressed


def _failing(row: Any, metrics: list[Any], passes: tuple[int, int] | None = None) -> FailingCase:
    return FailingCase(
        case_id=row.case_id,
        state=row.state,
        reason=failure_reason(row, metrics) or "did not pass",
        response=(row.response or "")[:MAX_RESPONSE_CHARS] or None,
        passes=passes,
    )


def build_digest(
    *,
    session: Session,
    run: EvalRun,
    regression: Regression | None,
    report_link: str | None = None,
    flow_run_link: str | None = None,
    max_failures: int = 20,
) -> Digest:
    repeat = run.repeat or 1
    if repeat == 1:
        failing = [
            _failing(row, metrics)
            for row, metrics in iter_results(session=session, run_id=run.id, passed=False, limit=max_failures)
        ]
        not_passed = run.total_cases - run.passed_cases
    else:  # each case once, with how many of its runs passed, not once per failed attempt
        counts = pass_counts(session=session, run_id=run.id, unsteady_only=True)
        failing = []
        for row, metrics in iter_results(session=session, run_id=run.id, passed=False):
            if len(failing) >= max_failures:
                break
            if row.case_id not in {case.case_id for case in failing}:
                failing.append(_failing(row, metrics, counts.get(row.case_id)))
        not_passed = len(counts)
    if regression is not None:
        from proctor.models.comparison import LABEL_NAMES

        verdicts = {case.case_id: case for case in regression.cases}
        for case in failing:
            verdict = verdicts.get(case.case_id)
            if verdict is not None:
                case.label, case.evidence = LABEL_NAMES[verdict.label], verdict.evidence
    return Digest(
        run_id=run.id,
        suite_name=run.suite_name,
        agent=run.agent,
        variant=run.variant,
        status=run.reported_status,
        total=run.total_cases,
        passed=run.passed_cases,
        failed=run.failed_cases,
        errored=run.errored_cases,
        pass_rate=run.pass_rate,
        regression=regression,
        failing=failing,
        more_failing=max(0, not_passed - len(failing)),
        repeat=repeat,
        not_passed=not_passed,
        report_link=report_link,
        flow_run_link=flow_run_link,
        error=run.error,
        totals=run_totals(session=session, run_id=run.id),
        no_history=None if regression is not None else no_history_line(session=session, run=run),
    )


def unfinished_digest(
    *, suite: str, agent: str | None, reason: str, flow_run_link: str | None = None
) -> Digest:
    """What Slack hears of a run that ended before it could be recorded or reported: the
    suite asked for, why, and where to look. No counts: none were made."""
    return Digest(
        run_id=None,
        suite_name=suite,
        agent=agent or "the suite's agent",
        variant=None,
        status="failed",
        total=0,
        passed=0,
        failed=0,
        errored=0,
        pass_rate=None,
        flow_run_link=flow_run_link,
        error=reason,
    )
