"""A run judged against its suite's history: each case labelled (newly failing, still failing,
flaky, fixed, added, removed) with its evidence, and a run-level verdict, "Regressed", raised
only by a significant change.

The evidence for a run is the window of the last K completed runs of the same suite, agent
and variant (`proctor.storage.history`), plus the run's own repeats; the baseline is the last
run of that window (or a run pinned by id: then the window ends there). The statistics are in
`proctor.stats.evidence`; docs/regressions.md states the model and bench/alarms.py measures it.

Two levels, on purpose:
- A case is *newly failing* when its history gave tonight's failures (or its unbroken run of
  failures) less than `CASE_FLAG_LEVEL` chance: a stable case that breaks is named the first
  night. That is one look per case, so on a flaky suite a few such names a night are chance;
  each comes with its evidence ("passed 14 of the last 14 runs").
- The run is *Regressed* only when the change is significant at `significance` (α) for the
  whole run: α/2 for the run's failure count against the sum of the cases' predictive
  distributions (a broad drop), α/2 for the cases one by one, Bonferroni over the cases
  compared (one case that clearly broke).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlmodel import Session

from proctor.models.comparison import LABELS
from proctor.models.request import DEFAULT_SIGNIFICANCE
from proctor.models.tables import EvalRun
from proctor.stats.evidence import expected_failures, failure_pmf, sum_tail, surprise
from proctor.storage.history import (
    DEFAULT_HISTORY_WINDOW,
    Counts,
    history_window,
    is_selection,
    pass_counts_by_run,
)
from proctor.storage.runs import metric_stats

# A failing case is named newly failing when its history gave this failure less than this
# chance. 0.15: a case that passed its last 5 or more runs, failing now, is named (Beta(1, 1)
# prior: 1/7 < 0.15); bench/alarms.py measures what it costs on a flaky suite.
CASE_FLAG_LEVEL = 0.15
# Fewer runs of history than this: the verdict says it is warming up (its tests are cautious).
WARM_UP_RUNS = 5


@dataclass
class MetricChange:
    name: str
    before: float | None
    after: float | None

    @property
    def delta(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before


@dataclass
class CaseVerdict:
    """One case's label and the evidence for it: tonight's passes, the window's, the run of
    failures it is in, and how likely that was had nothing changed."""

    case_id: str
    label: str
    passed_now: int
    attempts_now: int
    passed_before: int = 0  # over the window
    attempts_before: int = 0
    runs_before: int = 0  # runs of the window that had the case
    streak_runs: int = 0  # runs in a row (tonight's included) with no pass
    p_value: float = 1.0
    significant: bool = False
    evidence: str = ""


@dataclass
class Regression:
    baseline_id: uuid.UUID
    run_id: uuid.UUID
    pass_rate_before: float
    pass_rate_after: float
    newly_failing: list[str] = field(default_factory=list)
    still_failing: list[str] = field(default_factory=list)
    flaky: list[str] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    cases: list[CaseVerdict] = field(default_factory=list)  # every labelled case, not the passing ones
    metrics: list[MetricChange] = field(default_factory=list)
    repeated: bool = False
    significance: float = DEFAULT_SIGNIFICANCE
    significant_cases: list[str] = field(default_factory=list)
    broad_p_value: float = 1.0
    expected_failures: float = 0.0
    observed_failures: int = 0
    compared: int = 0
    history_runs: int = 0
    window: int = DEFAULT_HISTORY_WINDOW
    selection: bool = False  # the run ran some of the suite's cases (--case, --tag, --meta)

    @property
    def pass_rate_delta(self) -> float:
        return self.pass_rate_after - self.pass_rate_before

    @property
    def regressed(self) -> bool:
        return bool(self.significant_cases) or self.broad_p_value < self.significance / 2

    @property
    def newly_passing(self) -> list[str]:
        """The cases that pass again after being broken (the label's older name)."""
        return self.fixed

    @property
    def warming_up(self) -> bool:
        return self.history_runs < WARM_UP_RUNS

    @property
    def counts(self) -> dict[str, int]:
        return {label: len(getattr(self, label)) for label in LABELS}

    @property
    def history_line(self) -> str:
        """How much evidence the verdict had, said in every view."""
        runs = f"{self.history_runs} earlier run{'s' if self.history_runs != 1 else ''}"
        line = f"history: {runs} (window {self.window})"
        if self.warming_up:
            line += f"; warming up: under {WARM_UP_RUNS} runs the tests are cautious and can miss a change"
        if self.selection:
            line += "; a selection of the suite's cases: the cases it did not run are not compared"
        return line

    @property
    def method(self) -> str:
        attempts = "attempt" if self.observed_failures == 1 else "attempts"
        return (
            f"each case against its own history (Beta-Binomial, uniform prior), α = {self.significance:g}: "
            f"{self.observed_failures} failed {attempts} where history expected {self.expected_failures:.1f} "
            f"(p = {self.broad_p_value:.3g}, tested at α/2); each of {self.compared} cases at "
            f"α/2/{self.compared} (Bonferroni)"
        )

    def verdict(self, case_id: str) -> CaseVerdict | None:
        return next((case for case in self.cases if case.case_id == case_id), None)

    def worst_metrics(self, limit: int = 5) -> list[MetricChange]:
        """The metrics whose mean score fell, largest drop first."""
        fell = [m for m in self.metrics if m.delta is not None and m.delta < 0]
        return sorted(fell, key=lambda m: m.delta or 0.0)[:limit]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with the derived figures, for storing with the run."""
        data = asdict(self)
        data["baseline_id"], data["run_id"] = str(self.baseline_id), str(self.run_id)
        data.update(
            pass_rate_delta=self.pass_rate_delta,
            regressed=self.regressed,
            method=self.method,
            counts=self.counts,
            history_line=self.history_line,
            warming_up=self.warming_up,
        )
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Regression:
        fields = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        fields["baseline_id"], fields["run_id"] = uuid.UUID(data["baseline_id"]), uuid.UUID(data["run_id"])
        fields["metrics"] = [MetricChange(**m) for m in data.get("metrics", [])]
        fields["cases"] = [CaseVerdict(**c) for c in data.get("cases", [])]
        return cls(**fields)


def _runs(count: int) -> str:
    return f"{count} run{'s' if count != 1 else ''}"


def _evidence(case: CaseVerdict, repeated: bool, streak_before: tuple[int, int]) -> str:
    unit = "attempts" if repeated else "runs"
    chance = f"{case.p_value:.0%}" if case.p_value >= 0.01 else f"{case.p_value:.1g}"
    if case.label == "added":
        return "new: not in the history"
    if case.label == "removed":
        return "in the baseline, not in this run"
    if case.label == "fixed":
        return f"passes again after failing {_runs(case.streak_runs)} in a row"
    if case.label == "flaky":
        total = case.passed_before + case.passed_now, case.attempts_before + case.attempts_now
        return f"passed {total[0]} of {total[1]} {unit}, tonight's included"
    if case.label == "still_failing" and case.passed_before == 0:
        if case.attempts_before == 1:
            return f"failed the one {unit[:-1]} of the history too"
        return f"failed all {case.attempts_before} {unit} of the history"
    if case.streak_runs > 1:
        passed, attempts = streak_before
        text = f"failed the last {_runs(case.streak_runs)}; passed {passed} of {attempts} {unit} before"
    else:
        text = f"passed {case.passed_before} of the last {case.attempts_before} {unit}"
    return f"{text} (a {chance} chance if nothing changed)"


def judge(
    history: list[Counts],
    now: Counts,
    *,
    baseline_id: uuid.UUID,
    run_id: uuid.UUID,
    significance: float = DEFAULT_SIGNIFICANCE,
    window: int = DEFAULT_HISTORY_WINDOW,
    baseline: Counts | None = None,
    selection: bool = False,
) -> Regression:
    """The verdict from pass counts alone: `history` holds the window's runs oldest first, each
    case -> (passed, attempts); `now` this run's; `baseline` the run compared with for the pass
    rate and removed cases (default: the window's last). A `selection` (a run of some of the
    suite's cases) has no removed cases, and its pass rate before is over the cases it ran.
    Pure, so bench/alarms.py can simulate it; the database path (`compare_with_history`) calls
    exactly this."""
    baseline = history[-1] if baseline is None and history else (baseline or {})
    # Per case: the runs that had it, and its attempts and passes over them. Counted in C
    # (Counter over the runs' keys), with only the runs where a case did not pass once in
    # once looked at one by one: 10,000 cases x 30 runs are read and judged in about a second.
    present: Counter[str] = Counter()
    adjust: dict[str, list[int]] = {}  # case -> [passes, attempts] beyond one pass per run
    unusual_runs: dict[str, list[tuple[int, tuple[int, int]]]] = {}  # case -> [(run, counts)]
    now_keys = now.keys()
    same_cases = 0  # runs whose cases are tonight's: each case's presence is counted once for all
    for index, run in enumerate(history):
        if run.keys() == now_keys:
            same_cases += 1
        else:
            present.update(run.keys())
        unusual = getattr(run, "unusual", None)
        if unusual is None:
            unusual = [item for item in run.items() if item[1] != (1, 1)]
        for case_id, counts in unusual:
            entry = adjust.setdefault(case_id, [0, 0])
            entry[0] += counts[0] - 1
            entry[1] += counts[1] - 1
            unusual_runs.setdefault(case_id, []).append((index, counts))
    every_run_same = same_cases == len(history)
    if same_cases:
        present.update(dict.fromkeys(now_keys, same_cases))

    def case_runs(case_id: str) -> list[tuple[int, int]]:
        """The case's counts per run that had it, oldest first."""
        if not every_run_same:
            return [run[case_id] for run in history if case_id in run]
        runs = [(1, 1)] * len(history)
        for index, counts in unusual_runs.get(case_id, ()):
            runs[index] = counts
        return runs

    repeated = any(extra[1] > 0 for extra in adjust.values()) or any(n > 1 for _, n in now.values())
    common = [case_id for case_id in now if case_id in present]
    per_case_level = significance / 2 / max(1, len(common))
    labelled: list[CaseVerdict] = []
    pmfs: list[list[float]] = []
    observed = 0
    for case_id in sorted(now):
        passed_now, attempts_now = now[case_id]
        runs_before = present.get(case_id, 0)
        if not runs_before:
            case = CaseVerdict(case_id, "added", passed_now, attempts_now)
            case.evidence = _evidence(case, repeated, (0, 0))
            labelled.append(case)
            continue
        extra = adjust.get(case_id, (0, 0))
        passed_before, attempts_before = runs_before + extra[0], runs_before + extra[1]
        pmfs.append(failure_pmf(attempts_now, passed_before, attempts_before - passed_before))
        observed += attempts_now - passed_now
        failed_now = passed_now < attempts_now
        if not failed_now and case_id not in unusual_runs:
            continue  # passing now, and a single pass in every run before: nothing to say
        runs = case_runs(case_id)
        last_k, last_n = runs[-1]
        last_failed = last_k < last_n
        if not failed_now and not last_failed:
            continue  # passing, as before: nothing to say
        tonight = surprise(runs, (passed_now, attempts_now), (passed_before, attempts_before))
        flagged = failed_now and tonight.p_value <= CASE_FLAG_LEVEL
        flagged_before = (
            last_failed
            and len(runs) > 1
            and surprise(runs[:-1], runs[-1], (passed_before - last_k, attempts_before - last_n)).p_value
            <= CASE_FLAG_LEVEL
        )
        never_passed = passed_before == 0
        if failed_now:
            if flagged:
                label = "still_failing" if flagged_before else "newly_failing"
            else:
                label = "still_failing" if never_passed else "flaky"
        elif flagged_before or never_passed:
            label = "fixed"
        else:
            continue  # passing again after a failure its history expected
        streak = tonight.streak_runs
        if label == "fixed":
            streak = 0
            for k, _n in reversed(runs):
                if k > 0:
                    break
                streak += 1
        case = CaseVerdict(
            case_id,
            label,
            passed_now,
            attempts_now,
            passed_before=passed_before,
            attempts_before=attempts_before,
            runs_before=runs_before,
            streak_runs=streak,
            p_value=tonight.p_value if failed_now else 1.0,
            significant=failed_now and tonight.p_value < per_case_level,
        )
        case.evidence = _evidence(case, repeated, (tonight.passed_before, tonight.attempts_before))
        labelled.append(case)
    for case_id in sorted(set() if selection else set(baseline) - set(now)):
        case = CaseVerdict(case_id, "removed", 0, 0)
        case.evidence = _evidence(case, repeated, (0, 0))
        labelled.append(case)
    # Most telling first: significant, then by how unlikely had nothing changed.
    labelled.sort(key=lambda c: (not c.significant, c.p_value, c.case_id))
    by_label = {label: [c.case_id for c in labelled if c.label == label] for label in LABELS}
    return Regression(
        baseline_id=baseline_id,
        run_id=run_id,
        pass_rate_before=_rate({k: v for k, v in baseline.items() if k in now} if selection else baseline),
        pass_rate_after=_rate(now),
        **by_label,
        cases=labelled,
        repeated=repeated,
        significance=significance,
        significant_cases=[c.case_id for c in labelled if c.significant],
        broad_p_value=sum_tail(pmfs, observed) if pmfs else 1.0,
        expected_failures=round(expected_failures(pmfs), 3),
        observed_failures=observed,
        compared=len(common),
        history_runs=len(history),
        window=window,
        selection=selection,
    )


def _rate(counts: Counts) -> float:
    runs = sum(n for _, n in counts.values())
    return 100.0 * sum(k for k, _ in counts.values()) / runs if runs else 0.0


def metric_changes(
    *,
    session: Session,
    baseline_id: uuid.UUID,
    run_id: uuid.UUID,
    case_ids: Collection[str] | None = None,
) -> list[MetricChange]:
    """Each metric's mean score in the baseline (over `case_ids` only, when given: a selection's
    cases) and now. Informational metrics (tool calls, tokens, seconds: values without a
    verdict) are left out: their means are not scores, and a change in them is not a regression."""
    before = metric_stats(session=session, run_id=baseline_id, case_ids=case_ids)
    after = metric_stats(session=session, run_id=run_id)
    return [
        MetricChange(
            name, (before.get(name) or {}).get("avg_score"), (after.get(name) or {}).get("avg_score")
        )
        for name in sorted(set(before) | set(after))
        if not (before.get(name) or {}).get("informational")
        and not (after.get(name) or {}).get("informational")
    ]


def compare_with_history(
    *,
    session: Session,
    run: EvalRun,
    last: EvalRun | None = None,
    window: int = DEFAULT_HISTORY_WINDOW,
    significance: float = DEFAULT_SIGNIFICANCE,
) -> Regression | None:
    """`run` judged against its history window (ending at `last`, a pinned baseline, when given);
    None when there is no history yet (the first run of a suite and agent).

    The baseline is `last`, else the window's last run of the whole suite: a run of some of its
    cases (`--case`, `--tag`, `--meta`) is evidence for those cases, not what a whole run's pass
    rate, metric means and removed cases are compared with."""
    runs = history_window(session=session, run=run, window=window, last=last)
    if not runs:
        return None
    selection = is_selection(run)
    baseline = last
    if baseline is None:
        whole = [r for r in runs if not is_selection(r)]
        baseline = whole[-1] if whole else runs[-1]
    run_ids = [r.id for r in runs] + [run.id]
    if baseline.id not in run_ids:  # pinned, but of another agent version than the window's
        run_ids.append(baseline.id)
    counts = pass_counts_by_run(session=session, run_ids=run_ids)
    regression = judge(
        [counts[r.id] for r in runs],
        counts[run.id],
        baseline_id=baseline.id,
        run_id=run.id,
        significance=significance,
        window=window,
        baseline=counts[baseline.id],
        selection=selection,
    )
    regression.metrics = metric_changes(
        session=session,
        baseline_id=baseline.id,
        run_id=run.id,
        case_ids=counts[run.id].keys() if selection else None,
    )
    return regression


def baseline_for(*, session: Session, run: EvalRun) -> EvalRun | None:
    """The last completed run of the same suite, agent and variant before `run` (after any reset)."""
    runs = history_window(session=session, run=run, window=1)
    return runs[-1] if runs else None


def record_comparison(
    *,
    session: Session,
    run: EvalRun,
    pinned_baseline: uuid.UUID | None = None,
    significance: float = DEFAULT_SIGNIFICANCE,
    window: int = DEFAULT_HISTORY_WINDOW,
) -> Regression | None:
    """Judge `run` against its history and store the verdict on the run.

    Returns None when there is no history yet (the first run of a suite and agent).
    """
    last = None
    if pinned_baseline is not None:
        last = session.get(EvalRun, pinned_baseline)
        if last is None:
            raise LookupError(f"baseline run {pinned_baseline} is not in this database")
        if last.suite_id != run.suite_id:
            raise ValueError(
                f"baseline run {pinned_baseline} is a run of suite {last.suite_id!r}, not {run.suite_id!r}"
            )
    regression = compare_with_history(
        session=session, run=run, last=last, window=window, significance=significance
    )
    if regression is None:
        return None
    run.baseline_run_id = regression.baseline_id
    run.comparison = regression.to_dict()
    session.add(run)
    return regression
