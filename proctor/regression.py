"""A run compared with a baseline: which cases newly fail or pass, how each metric moved, and
whether a drop is a real regression or noise.

The baseline is the last completed run of the same suite, agent and variant that finished
before this run started, or a run pinned by id.

With one run per case, a case that passed before and fails now is a regression: nothing
else can be concluded from one sample. With repeats (`--repeat N`), each case has pass
counts k of n on both sides, and a drop counts only when Fisher's exact test (one-sided:
"the pass probability fell") rejects. The significance level α is the chance of a false
alarm for the whole comparison: half of it goes to the pooled pass counts of all common
cases (a broad drop), half to the cases one by one, Bonferroni-corrected over the cases
compared (one case that broke). An A/A rerun of a flaky agent therefore raises an alarm
with probability at most α; the simulation in tests/test_regression.py measures it.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlmodel import Session, col, select

from proctor.models.request import DEFAULT_SIGNIFICANCE
from proctor.models.tables import EvalRun, RunStatus
from proctor.storage.runs import metric_stats, pass_counts


def fisher_one_sided(passed_before: int, runs_before: int, passed_after: int, runs_after: int) -> float:
    """P-value of Fisher's exact test that the 'after' pass probability is lower.

    The 2x2 table [[passed_before, failed_before], [passed_after, failed_after]] with fixed
    margins: the probability, under equal pass probabilities, of `passed_after` passes or
    fewer among the after runs (hypergeometric lower tail).
    """
    total_passed = passed_before + passed_after
    total = runs_before + runs_after
    denominator = math.comb(total, total_passed)
    if denominator == 0:
        return 1.0
    low = max(0, total_passed - runs_before)
    tail = sum(
        math.comb(runs_after, k) * math.comb(runs_before, total_passed - k)
        for k in range(low, passed_after + 1)
    )
    return min(1.0, tail / denominator)


@dataclass
class MetricChange:
    name: str
    before: float | None
    after: float | None

    @property
    def delta(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before


@dataclass
class CaseChange:
    """One case's pass counts on both sides and the p-value of a drop."""

    case_id: str
    passed_before: int
    runs_before: int
    passed_after: int
    runs_after: int
    p_value: float

    @property
    def rate_before(self) -> float:
        return self.passed_before / self.runs_before if self.runs_before else 0.0

    @property
    def rate_after(self) -> float:
        return self.passed_after / self.runs_after if self.runs_after else 0.0


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
    changed_cases: list[CaseChange] = field(default_factory=list)
    repeated: bool = False
    significance: float = DEFAULT_SIGNIFICANCE
    significant_cases: list[str] = field(default_factory=list)
    pooled_p_value: float = 1.0
    compared: int = 0

    @property
    def pass_rate_delta(self) -> float:
        return self.pass_rate_after - self.pass_rate_before

    @property
    def regressed(self) -> bool:
        if not self.repeated:
            return bool(self.newly_failing)
        return bool(self.significant_cases) or self.pooled_p_value < self.significance / 2

    @property
    def method(self) -> str:
        if not self.repeated:
            return "one run per case: a case that passed in the baseline and fails now is a regression"
        return (
            f"Fisher's exact test, one-sided, α = {self.significance:g} overall: the pooled pass counts "
            f"at α/2 and each of {self.compared} cases at α/2/{self.compared} (Bonferroni)"
        )

    def worst_metrics(self, limit: int = 5) -> list[MetricChange]:
        """The metrics whose mean score fell, largest drop first."""
        fell = [m for m in self.metrics if m.delta is not None and m.delta < 0]
        return sorted(fell, key=lambda m: m.delta or 0.0)[:limit]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with the derived figures, for storing with the run."""
        data = asdict(self)
        data["baseline_id"], data["run_id"] = str(self.baseline_id), str(self.run_id)
        data.update(pass_rate_delta=self.pass_rate_delta, regressed=self.regressed, method=self.method)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Regression:
        fields = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        fields["baseline_id"], fields["run_id"] = uuid.UUID(data["baseline_id"]), uuid.UUID(data["run_id"])
        fields["metrics"] = [MetricChange(**m) for m in data.get("metrics", [])]
        fields["changed_cases"] = [CaseChange(**c) for c in data.get("changed_cases", [])]
        return cls(**fields)


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


def _rate(counts: dict[str, tuple[int, int]]) -> float:
    runs = sum(n for _, n in counts.values())
    return 100.0 * sum(k for k, _ in counts.values()) / runs if runs else 0.0


def compare_counts(
    before: dict[str, tuple[int, int]],
    after: dict[str, tuple[int, int]],
    *,
    baseline_id: uuid.UUID,
    run_id: uuid.UUID,
    significance: float = DEFAULT_SIGNIFICANCE,
) -> Regression:
    """The comparison of per-case pass counts (k, n), without metric scores: pure, so its
    false-alarm rate and power can be simulated (tests/test_regression.py)."""
    common = sorted(set(before) & set(after))
    all_passed = lambda k, n: n > 0 and k == n  # noqa: E731
    changed = [
        CaseChange(case, *before[case], *after[case], fisher_one_sided(*before[case], *after[case]))
        for case in common
        if before[case][0] * after[case][1] != after[case][0] * before[case][1]  # pass rates differ
    ]
    drops = [change for change in changed if change.rate_after < change.rate_before]
    repeated = any(n > 1 for _, n in before.values()) or any(n > 1 for _, n in after.values())
    per_case = significance / 2 / max(1, len(common))
    pooled = [sum(counts[case][i] for case in common) for counts in (before, after) for i in (0, 1)]
    return Regression(
        baseline_id=baseline_id,
        run_id=run_id,
        pass_rate_before=_rate(before),
        pass_rate_after=_rate(after),
        newly_failing=[c for c in common if all_passed(*before[c]) and not all_passed(*after[c])],
        newly_passing=[c for c in common if not all_passed(*before[c]) and all_passed(*after[c])],
        added=sorted(set(after) - set(before)),
        removed=sorted(set(before) - set(after)),
        changed_cases=changed,
        repeated=repeated,
        significance=significance,
        significant_cases=[change.case_id for change in drops if change.p_value < per_case],
        pooled_p_value=fisher_one_sided(*pooled) if common else 1.0,
        compared=len(common),
    )


def compare_runs(
    *,
    session: Session,
    baseline_id: uuid.UUID,
    run_id: uuid.UUID,
    significance: float = DEFAULT_SIGNIFICANCE,
) -> Regression:
    """`compare_counts` on the two runs' pass counts, with each metric's mean score before and after.

    Informational metrics (tool calls, tokens, seconds: values without a verdict) are left out:
    their means are not scores, and a change in them is not a regression."""
    regression = compare_counts(
        pass_counts(session=session, run_id=baseline_id),
        pass_counts(session=session, run_id=run_id),
        baseline_id=baseline_id,
        run_id=run_id,
        significance=significance,
    )
    stats_before = metric_stats(session=session, run_id=baseline_id)
    stats_after = metric_stats(session=session, run_id=run_id)
    regression.metrics = [
        MetricChange(
            name,
            (stats_before.get(name) or {}).get("avg_score"),
            (stats_after.get(name) or {}).get("avg_score"),
        )
        for name in sorted(set(stats_before) | set(stats_after))
        if not (stats_before.get(name) or {}).get("informational")
        and not (stats_after.get(name) or {}).get("informational")
    ]
    return regression


def record_comparison(
    *,
    session: Session,
    run: EvalRun,
    pinned_baseline: uuid.UUID | None = None,
    significance: float = DEFAULT_SIGNIFICANCE,
) -> Regression | None:
    """Compare `run` with its baseline (pinned, or found) and store the comparison on the run.

    Returns None when there is no baseline yet (the first run of a suite and agent).
    """
    if pinned_baseline is not None:
        baseline = session.get(EvalRun, pinned_baseline)
        if baseline is None:
            raise LookupError(f"baseline run {pinned_baseline} is not in this database")
    else:
        baseline = baseline_for(session=session, run=run)
    if baseline is None:
        return None
    regression = compare_runs(
        session=session, baseline_id=baseline.id, run_id=run.id, significance=significance
    )
    run.baseline_run_id = baseline.id
    run.comparison = regression.to_dict()
    session.add(run)
    return regression
