"""Regression detection: Fisher's exact test, seeded runs with known changes, and A/A reruns."""

from __future__ import annotations

import math
import random
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import Session

from proctor.models.tables import CaseResultRow, EvalRun, MetricResultRow, RunStatus
from proctor.regression import (
    Regression,
    baseline_for,
    compare_counts,
    fisher_one_sided,
    record_comparison,
)
from proctor.storage import get_engine
from proctor.storage.runs import metric_stats

A, B = uuid.UUID(int=1), uuid.UUID(int=2)


def test_fisher_matches_the_tea_tasting_table() -> None:
    # Fisher's lady tasting tea: [[3, 1], [1, 3]], one-sided p = 17/70.
    assert fisher_one_sided(3, 4, 1, 4) == pytest.approx(17 / 70)


def test_fisher_matches_scipy_values() -> None:
    # scipy.stats.fisher_exact([[k1, n1-k1], [k2, n2-k2]], alternative="greater").pvalue
    assert fisher_one_sided(10, 10, 2, 10) == pytest.approx(0.00035723, rel=1e-4)
    assert fisher_one_sided(9, 10, 6, 10) == pytest.approx(0.15170, rel=1e-4)
    assert fisher_one_sided(5, 10, 5, 10) == pytest.approx(0.67186, rel=1e-4)
    assert fisher_one_sided(0, 10, 10, 10) == pytest.approx(1.0)
    assert fisher_one_sided(1, 1, 0, 1) == pytest.approx(0.5)


def test_single_runs_call_any_pass_to_fail_a_regression() -> None:
    before = {"a": (1, 1), "b": (1, 1), "c": (0, 1), "gone": (1, 1)}
    after = {"a": (1, 1), "b": (0, 1), "c": (1, 1), "new": (0, 1)}
    change = compare_counts(before, after, baseline_id=A, run_id=B)
    assert not change.repeated and change.regressed
    assert (change.newly_failing, change.newly_passing) == (["b"], ["c"])
    assert (change.added, change.removed) == (["new"], ["gone"])
    assert change.compared == 3 and "one run per case" in change.method


def test_single_runs_with_no_change_do_not_regress() -> None:
    same = {"a": (1, 1), "b": (0, 1)}
    change = compare_counts(same, same, baseline_id=A, run_id=B)
    assert not change.regressed and change.pass_rate_delta == 0 and change.changed_cases == []


def test_repeats_tell_one_broken_case_from_noise() -> None:
    before = {f"c{i}": (9, 10) for i in range(20)} | {"broken": (10, 10)}
    after = {f"c{i}": (9, 10) for i in range(20)} | {"broken": (1, 10)}
    after["c3"] = (7, 10)  # a wobble: p = 0.29, not significant
    change = compare_counts(before, after, baseline_id=A, run_id=B)
    assert change.repeated and change.regressed
    assert change.significant_cases == ["broken"]
    assert "c3" in {c.case_id for c in change.changed_cases} and "c3" not in change.significant_cases
    assert "α = 0.05 overall" in change.method and "α/2/21" in change.method


def test_repeats_catch_a_broad_small_drop_through_the_pooled_counts() -> None:
    before = {f"c{i}": (9, 10) for i in range(30)}
    after = {f"c{i}": (7, 10) for i in range(30)}  # each case alone is noise; all together are not
    change = compare_counts(before, after, baseline_id=A, run_id=B)
    assert change.significant_cases == [] and change.pooled_p_value < 0.001 and change.regressed


def _flaky_run(rng: random.Random, rates: dict[str, float], repeats: int) -> dict[str, tuple[int, int]]:
    return {case: (sum(rng.random() < p for _ in range(repeats)), repeats) for case, p in rates.items()}


def test_a_a_reruns_of_a_flaky_agent_raise_false_alarms_at_most_at_the_stated_level() -> None:
    rng = random.Random(20261122)
    rates = {f"case_{i}": rng.choice([0.5, 0.7, 0.9, 1.0]) for i in range(25)}
    trials, alarms, single_run_alarms = 400, 0, 0
    for _ in range(trials):
        before, after = _flaky_run(rng, rates, 10), _flaky_run(rng, rates, 10)
        alarms += compare_counts(before, after, baseline_id=A, run_id=B).regressed
        one_before, one_after = _flaky_run(rng, rates, 1), _flaky_run(rng, rates, 1)
        single_run_alarms += compare_counts(one_before, one_after, baseline_id=A, run_id=B).regressed
    assert alarms / trials <= 0.05
    # Without repeats the same flaky agent "regresses" on most nights: why --repeat exists.
    assert single_run_alarms / trials > 0.9


def _power(rng: random.Random, rates: dict[str, float], broken: dict[str, float], repeats: int) -> float:
    found = sum(
        compare_counts(
            _flaky_run(rng, rates, repeats), _flaky_run(rng, broken, repeats), baseline_id=A, run_id=B
        ).regressed
        for _ in range(200)
    )
    return found / 200


def test_a_real_drop_is_found_and_more_repeats_find_smaller_ones() -> None:
    rng = random.Random(7)
    rates = {f"case_{i}": 0.9 for i in range(25)}
    one_case_broke = rates | {"case_3": 0.0}
    two_cases_worse = rates | {"case_3": 0.2, "case_11": 0.3}
    assert _power(rng, rates, one_case_broke, repeats=10) >= 0.9
    assert 0.5 <= _power(rng, rates, two_cases_worse, repeats=10) < 0.9
    assert _power(rng, rates, two_cases_worse, repeats=20) >= 0.95


def test_regression_round_trips_through_json() -> None:
    change = compare_counts({"a": (5, 5)}, {"a": (1, 5)}, baseline_id=A, run_id=B)
    stored = change.to_dict()
    assert stored["regressed"] is True and stored["pass_rate_delta"] == -80.0
    again = Regression.from_dict(stored)
    assert again.changed_cases == change.changed_cases and again.regressed


# Seeded runs in a database -----------------------------------------------------------------


def _seed_run(
    session: Session,
    *,
    outcomes: dict[str, list[bool]],
    scores: dict[str, float] | None = None,
    informational: dict[str, float] | None = None,
    started: datetime,
    status: RunStatus = RunStatus.COMPLETED,
    agent: str = "agent.py:agent",
    variant: str | None = None,
) -> EvalRun:
    """A run whose cases passed or failed as given, one bool per repeat (a suite of its own
    per session, so tests sharing the PostgreSQL database never see each other's runs)."""
    run = EvalRun(
        suite_id=session.info["suite_id"],
        suite_name="weather",
        suite_path="weather.json",
        source_format="native",
        agent=agent,
        variant=variant,
        proctor_version="test",
        status=status,
        started_at=started,
    )
    session.add(run)
    session.flush()
    for case_id, repeats in outcomes.items():
        for attempt, passed in enumerate(repeats):
            row = CaseResultRow(
                run_id=run.id,
                case_id=case_id,
                attempt=attempt,
                state="passed" if passed else "failed",
                passed=passed,
                input="x",
            )
            session.add(row)
            session.flush()
            for name, score in (scores or {}).items():
                session.add(
                    MetricResultRow(
                        run_id=run.id,
                        case_result_id=row.id,
                        case_id=case_id,
                        metric_name=name,
                        score=score,
                        passed=passed,
                    )
                )
            for name, value in (informational or {}).items():  # values without a verdict
                session.add(
                    MetricResultRow(
                        run_id=run.id,
                        case_result_id=row.id,
                        case_id=case_id,
                        metric_name=name,
                        score=value,
                        passed=True,
                        informational=True,
                    )
                )
    session.commit()
    return run


@pytest.fixture(params=["sqlite", "postgres"])
def session(request, tmp_path) -> Session:
    url = (
        f"sqlite:///{tmp_path}/r.db" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    )
    with Session(get_engine(url), expire_on_commit=False) as session:
        session.info["suite_id"] = f"weather-{uuid.uuid4().hex[:8]}"
        yield session


def test_seeded_runs_compare_with_the_last_completed_one(session: Session) -> None:
    now = datetime.now(UTC)
    old = _seed_run(session, outcomes={"a": [True], "b": [True]}, started=now - timedelta(days=2))
    good = _seed_run(
        session,
        outcomes={"a": [True], "b": [True], "c": [False]},
        scores={"rouge": 0.8},
        started=now - timedelta(days=1),
    )
    _seed_run(session, outcomes={"a": [False]}, started=now - timedelta(hours=2), status=RunStatus.FAILED)
    _seed_run(session, outcomes={"a": [False]}, started=now - timedelta(hours=1), variant="other")
    tonight = _seed_run(
        session, outcomes={"a": [True], "b": [False], "c": [True]}, scores={"rouge": 0.5}, started=now
    )
    assert baseline_for(session=session, run=tonight).id == good.id  # not the failed run, not the variant
    change = record_comparison(session=session, run=tonight)
    session.commit()
    assert change is not None and change.baseline_id == good.id
    assert (change.newly_failing, change.newly_passing) == (["b"], ["c"])
    (rouge,) = change.metrics
    assert rouge.name == "rouge" and rouge.delta == pytest.approx(-0.3)
    assert change.worst_metrics()[0].name == "rouge"
    session.refresh(tonight)
    assert tonight.baseline_run_id == good.id and tonight.comparison["newly_failing"] == ["b"]
    # A pinned baseline wins over the last completed run.
    pinned = record_comparison(session=session, run=tonight, pinned_baseline=old.id)
    assert pinned.baseline_id == old.id and pinned.added == ["c"]


def test_informational_values_are_left_out_of_the_comparison(session: Session) -> None:
    """Tokens per turn growing fortyfold, tool calls falling: neither is a score nor a regression;
    the verdicts (and the scores of metrics that give one) alone are compared."""
    now = datetime.now(UTC)
    _seed_run(
        session,
        outcomes={"a": [True], "b": [True]},
        scores={"rouge": 0.8},
        informational={"token_usage_v1": 120.0, "tool_call_count_v1": 3.0},
        started=now - timedelta(days=1),
    )
    tonight = _seed_run(
        session,
        outcomes={"a": [True], "b": [True]},
        scores={"rouge": 0.8},
        informational={"token_usage_v1": 5000.0, "tool_call_count_v1": 0.0},
        started=now,
    )
    change = record_comparison(session=session, run=tonight)
    assert change is not None and not change.regressed
    assert [m.name for m in change.metrics] == ["rouge"] and change.worst_metrics() == []
    assert (change.pass_rate_before, change.pass_rate_after) == (100.0, 100.0)
    stats = metric_stats(session=session, run_id=tonight.id)
    assert stats["token_usage_v1"]["informational"] and stats["token_usage_v1"]["passed"] is None
    assert stats["token_usage_v1"]["avg_score"] == 5000.0
    assert (stats["rouge"]["informational"], stats["rouge"]["passed"]) == (False, 2)


def test_first_run_has_no_baseline_and_an_unknown_pin_is_an_error(session: Session) -> None:
    first = _seed_run(session, outcomes={"a": [True]}, started=datetime.now(UTC))
    assert record_comparison(session=session, run=first) is None
    with pytest.raises(LookupError, match="is not in this database"):
        record_comparison(session=session, run=first, pinned_baseline=uuid.uuid4())


def test_seeded_repeats_count_k_of_n_per_case(session: Session) -> None:
    now = datetime.now(UTC)
    before = _seed_run(
        session, outcomes={"steady": [True] * 8, "broken": [True] * 8}, started=now - timedelta(days=1)
    )
    after = _seed_run(
        session, outcomes={"steady": [True] * 7 + [False], "broken": [False] * 7 + [True]}, started=now
    )
    change = record_comparison(session=session, run=after)
    assert change.baseline_id == before.id and change.repeated
    counts = {
        c.case_id: (c.passed_before, c.runs_before, c.passed_after, c.runs_after)
        for c in change.changed_cases
    }
    assert counts == {"steady": (8, 8, 7, 8), "broken": (8, 8, 1, 8)}
    broken = next(c for c in change.changed_cases if c.case_id == "broken")
    assert broken.p_value == pytest.approx(math.comb(8, 1) * math.comb(8, 8) / math.comb(16, 9))
    assert change.significant_cases == ["broken"] and change.regressed
