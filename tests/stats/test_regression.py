"""The nightly verdict: each case against its own history (labels and their evidence), the
run-level test, and seeded runs in a real database (SQLite and PostgreSQL)."""

from __future__ import annotations

import itertools
import math
import random
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import Session

from proctor.models.tables import RunStatus
from proctor.stats.evidence import all_fail, failure_pmf, failure_tail, sum_tail, surprise
from proctor.stats.regression import CASE_FLAG_LEVEL, Regression, baseline_for, judge, record_comparison
from proctor.storage import get_engine
from proctor.storage.history import record_reset
from proctor.storage.runs import metric_stats
from tests.factories import seed_run

A, B = uuid.UUID(int=1), uuid.UUID(int=2)


# The statistics --------------------------------------------------------------------------


def test_predictive_failures_match_scipys_beta_binomial() -> None:
    stats = pytest.importorskip("scipy.stats")
    for attempts, passed, failed in ((1, 14, 0), (5, 20, 7), (10, 0, 0), (3, 150, 2)):
        expected = stats.betabinom(attempts, 1 + failed, 1 + passed).pmf(range(attempts + 1))
        assert failure_pmf(attempts, passed, failed) == pytest.approx(list(expected), abs=1e-12)
        assert all_fail(attempts, passed, failed) == pytest.approx(expected[-1], rel=1e-9)
    # Laplace's rule of succession: after 14 passes in 14, a failure has chance 1/16.
    assert failure_tail(1, 1, 14, 0) == pytest.approx(1 / 16)


def test_the_sum_of_cases_matches_counting_every_outcome() -> None:
    pmfs = [[0.9, 0.1], [0.5, 0.5], [0.2, 0.5, 0.3]]
    for observed in range(5):
        brute = sum(
            pmfs[0][a] * pmfs[1][b] * pmfs[2][c]
            for a, b, c in itertools.product(range(2), range(2), range(3))
            if a + b + c >= observed
        )
        assert sum_tail(pmfs, observed) == pytest.approx(brute, abs=1e-12)


def test_a_run_of_failures_is_judged_against_the_history_before_it() -> None:
    history = [(1, 1)] * 20 + [(0, 1), (0, 1)]
    streak = surprise(history, (0, 1))
    assert streak.streak_runs == 3 and (streak.passed_before, streak.attempts_before) == (20, 20)
    # P(3 failures in a row | 20 of 20 before) = 1*2*3 / (22*23*24)
    assert streak.streak == pytest.approx(6 / (22 * 23 * 24))
    assert streak.p_value == streak.streak < streak.tonight
    assert surprise(history, (1, 1)).p_value == 1.0


# Labels and the verdict from pass counts --------------------------------------------------


def _nights(**cases: str) -> list[dict[str, tuple[int, int]]]:
    """Per case, its nights as a string of 1 (passed) and 0 (failed), oldest first."""
    length = max(len(outcomes) for outcomes in cases.values())
    return [
        {case: (int(outcomes[night]), 1) for case, outcomes in cases.items() if night < len(outcomes)}
        for night in range(length)
    ]


def test_every_label_with_its_evidence() -> None:
    history = _nights(
        stable="1" * 14,
        flaky="10110111011011",
        broken="1" * 10 + "0000",
        repaired="1" * 10 + "0000",
        never="0" * 14,
        gone="1" * 14,
    )
    now = {
        "stable": (0, 1),
        "flaky": (0, 1),
        "broken": (0, 1),
        "repaired": (1, 1),
        "never": (0, 1),
        "new": (1, 1),
    }
    verdict = judge(history, now, baseline_id=A, run_id=B)
    labels = {case.case_id: case.label for case in verdict.cases}
    assert labels == {
        "stable": "newly_failing",
        "flaky": "flaky",
        "broken": "still_failing",
        "repaired": "fixed",
        "never": "still_failing",
        "new": "added",
        "gone": "removed",
    }
    assert verdict.counts == {
        "newly_failing": 1,
        "still_failing": 2,
        "flaky": 1,
        "fixed": 1,
        "added": 1,
        "removed": 1,
    }
    evidence = {case.case_id: case.evidence for case in verdict.cases}
    assert evidence["stable"] == "passed 14 of the last 14 runs (a 6% chance if nothing changed)"
    assert evidence["flaky"] == "passed 10 of 15 runs, tonight's included"
    assert evidence["broken"].startswith("failed the last 5 runs; passed 10 of 10 runs before")
    assert evidence["never"] == "failed all 14 runs of the history"
    assert evidence["repaired"] == "passes again after failing 4 runs in a row"
    assert verdict.fixed == verdict.newly_passing == ["repaired"]
    # The broken case's five failures in a row after ten passes are significant on their own.
    assert verdict.significant_cases == ["broken"] and verdict.regressed


def test_one_failure_of_a_flaky_case_is_not_a_regression() -> None:
    history = _nights(**{f"c{i}": "1101101011" for i in range(20)})
    now = {f"c{i}": (1, 1) for i in range(20)} | {"c3": (0, 1)}
    verdict = judge(history, now, baseline_id=A, run_id=B)
    assert verdict.flaky == ["c3"] and verdict.newly_failing == [] and not verdict.regressed
    assert verdict.history_runs == 10 and not verdict.warming_up


def test_a_broad_drop_regresses_though_no_case_is_significant_alone() -> None:
    rng = random.Random(3)
    rates = {f"c{i}": 0.9 for i in range(60)}
    history = [{c: (int(rng.random() < p), 1) for c, p in rates.items()} for _ in range(20)]
    now = {c: (int(rng.random() < p - 0.3), 1) for c, p in rates.items()}
    verdict = judge(history, now, baseline_id=A, run_id=B)
    assert verdict.significant_cases == [] and verdict.broad_p_value < 0.001 and verdict.regressed
    assert verdict.observed_failures > 2 * verdict.expected_failures


def test_repeats_are_evidence_too() -> None:
    history = [{"a": (5, 5), "b": (3, 5)} for _ in range(3)]
    verdict = judge(history, {"a": (0, 5), "b": (2, 5)}, baseline_id=A, run_id=B)
    assert verdict.repeated and verdict.significant_cases == ["a"] and verdict.regressed
    assert verdict.verdict("a").evidence.startswith("passed 15 of the last 15 attempts")
    assert verdict.verdict("b").label == "flaky"


def test_a_short_history_says_it_is_warming_up() -> None:
    verdict = judge(_nights(a="11"), {"a": (0, 1)}, baseline_id=A, run_id=B)
    assert verdict.warming_up and "history: 2 earlier runs (window 30); warming up" in verdict.history_line
    assert not verdict.regressed  # two passes are no evidence that one failure is a change


def test_a_flaky_agent_is_not_called_regressed_night_after_night() -> None:
    """The issue's A/A: cases passing 50-100 % of the time, one run each night. The old rule
    (any pass-to-fail is a regression) fired on nearly every night."""
    rng = random.Random(20261126)
    rates = {f"c{i}": rng.uniform(0.5, 1.0) for i in range(100)}
    history: list[dict[str, tuple[int, int]]] = []
    regressed = old_rule = nights = 0
    for night in range(40):
        now = {c: (int(rng.random() < p), 1) for c, p in rates.items()}
        if night >= 5:
            verdict = judge(history[-30:], now, baseline_id=A, run_id=B)
            regressed += verdict.regressed
            old_rule += any(history[-1][c] == (1, 1) and now[c] == (0, 1) for c in now)
            nights += 1
            assert all(c.label != "added" for c in verdict.cases)
        history.append(now)
    assert old_rule == nights
    assert regressed / nights <= 0.05


def test_the_case_flag_level_names_a_stable_case_on_its_first_failure() -> None:
    # 5 passes in 5: a failure had a 1/7 chance; below the level, so named the first night.
    assert failure_tail(1, 1, 5, 0) < CASE_FLAG_LEVEL < failure_tail(1, 1, 4, 0)


def test_regression_round_trips_through_json() -> None:
    verdict = judge(_nights(a="11111", b="11111"), {"a": (0, 1), "c": (1, 1)}, baseline_id=A, run_id=B)
    stored = verdict.to_dict()
    assert stored["counts"]["newly_failing"] == 1 and stored["counts"]["removed"] == 1
    assert stored["regressed"] is verdict.regressed and "history: 5 earlier runs" in stored["history_line"]
    again = Regression.from_dict(stored)
    assert again.cases == verdict.cases and again.regressed == verdict.regressed


# Seeded runs in a database -----------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def session(request, tmp_path) -> Session:
    url = (
        f"sqlite:///{tmp_path}/r.db" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    )
    with Session(get_engine(url), expire_on_commit=False) as session:
        session.info["suite_id"] = f"weather-{uuid.uuid4().hex[:8]}"
        yield session


def test_seeded_runs_are_judged_against_the_same_suite_agent_and_variant(session: Session) -> None:
    now = datetime.now(UTC)
    old = seed_run(session, outcomes={"a": [True], "b": [True]}, started=now - timedelta(days=2))
    good = seed_run(
        session,
        outcomes={"a": [True], "b": [True], "c": [False]},
        scores={"rouge": 0.8},
        started=now - timedelta(days=1),
    )
    seed_run(session, outcomes={"a": [False]}, started=now - timedelta(hours=2), status=RunStatus.FAILED)
    seed_run(session, outcomes={"a": [False]}, started=now - timedelta(hours=1), variant="other")
    tonight = seed_run(
        session, outcomes={"a": [True], "b": [False], "c": [True]}, scores={"rouge": 0.5}, started=now
    )
    assert baseline_for(session=session, run=tonight).id == good.id  # not the failed run, not the variant
    change = record_comparison(session=session, run=tonight)
    session.commit()
    assert change is not None and change.baseline_id == good.id and change.history_runs == 2
    assert change.flaky == ["b"]  # passed 2 of 2: a failure had a 1/4 chance, no alarm
    assert change.still_failing == [] and change.fixed == ["c"] and not change.regressed
    (rouge,) = change.metrics
    assert rouge.name == "rouge" and rouge.delta == pytest.approx(-0.3)
    assert change.worst_metrics()[0].name == "rouge"
    session.refresh(tonight)
    assert tonight.baseline_run_id == good.id and tonight.comparison["flaky"] == ["b"]
    # A pinned baseline ends the history there.
    pinned = record_comparison(session=session, run=tonight, pinned_baseline=old.id)
    assert pinned.baseline_id == old.id and pinned.added == ["c"] and pinned.history_runs == 1


def test_the_window_the_reset_and_the_agent_version_bound_the_history(session: Session) -> None:
    start = datetime.now(UTC) - timedelta(days=30)
    runs = [
        seed_run(session, outcomes={"a": [True]}, started=start + timedelta(days=night), config=config)
        for night, config in enumerate([{}] * 6 + [{"agent_version": "2"}] * 2)
    ]
    tonight = seed_run(session, outcomes={"a": [False]}, started=start + timedelta(days=9))
    assert record_comparison(session=session, run=tonight, window=4).history_runs == 4
    assert record_comparison(session=session, run=tonight).history_runs == 8
    versioned = seed_run(
        session, outcomes={"a": [False]}, started=start + timedelta(days=10), config={"agent_version": "2"}
    )
    assert record_comparison(session=session, run=versioned).history_runs == 2  # version 2 only
    new_version = seed_run(
        session, outcomes={"a": [False]}, started=start + timedelta(days=11), config={"agent_version": "3"}
    )
    # The first run of a version is judged against what came before it.
    assert record_comparison(session=session, run=new_version).history_runs == 10
    record_reset(session=session, suite_id=runs[0].suite_id, agent=None, variant=None, reason="new prompt")
    session.commit()
    later = seed_run(session, outcomes={"a": [False]}, started=datetime.now(UTC) + timedelta(hours=1))
    assert record_comparison(session=session, run=later) is None  # nothing since the reset


def test_a_run_of_some_cases_removes_none_and_is_no_baseline_for_the_whole_suite(session: Session) -> None:
    start = datetime.now(UTC) - timedelta(days=5)
    every = {"a": [True], "b": [True], "c": [True]}
    whole = [
        seed_run(session, outcomes=every, scores={"rouge": 0.9}, started=start + timedelta(days=night))
        for night in range(3)
    ]
    last_whole = seed_run(
        session,
        outcomes={"a": [True], "b": [False], "c": [True]},
        scores={"rouge": {"a": 0.8, "b": 0.2, "c": 0.8}},
        started=start + timedelta(days=3),
    )
    # `proctor run suite --case a`: the cases it did not select were not removed from the suite,
    # and its pass rate and metric means are compared over case a alone.
    picked = seed_run(
        session,
        outcomes={"a": [True]},
        scores={"rouge": 0.7},
        started=start + timedelta(days=4),
        config={"cases": ["a"]},
    )
    change = record_comparison(session=session, run=picked)
    assert change.baseline_id == last_whole.id and change.removed == [] and change.counts["removed"] == 0
    assert (change.pass_rate_before, change.pass_rate_after) == (100.0, 100.0)
    (rouge,) = change.metrics
    assert (rouge.before, rouge.after) == pytest.approx((0.8, 0.7))
    assert (
        "a selection of the suite's cases: the cases it did not run are not compared" in change.history_line
    )
    # The next run of the whole suite is compared with the last whole run, not with the selection;
    # the selection's case a still counts as one more night of a's history.
    tonight = seed_run(session, outcomes=every, scores={"rouge": 0.9}, started=start + timedelta(days=5))
    change = record_comparison(session=session, run=tonight)
    assert change.baseline_id == last_whole.id and change.history_runs == 5
    assert change.pass_rate_before == pytest.approx(200 / 3) and change.removed == [] and not change.selection
    assert change.fixed == [] and change.verdict("b") is None  # b failed once in 4 nights: nothing to say
    assert whole[0].id != change.baseline_id


def test_a_baseline_of_another_suite_is_refused(session: Session) -> None:
    now = datetime.now(UTC)
    tonight = seed_run(session, outcomes={"a": [True]}, started=now)
    session.info["suite_id"] = "another-suite"
    other = seed_run(session, outcomes={"a": [True]}, started=now - timedelta(days=1))
    with pytest.raises(ValueError, match="is a run of suite 'another-suite'"):
        record_comparison(session=session, run=tonight, pinned_baseline=other.id)


def test_informational_values_are_left_out_of_the_comparison(session: Session) -> None:
    """Tokens per turn growing fortyfold, tool calls falling: neither is a score nor a regression;
    the verdicts (and the scores of metrics that give one) alone are compared."""
    now = datetime.now(UTC)
    seed_run(
        session,
        outcomes={"a": [True], "b": [True]},
        scores={"rouge": 0.8},
        informational={"token_usage_v1": 120.0, "tool_call_count_v1": 3.0},
        started=now - timedelta(days=1),
    )
    tonight = seed_run(
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
    first = seed_run(session, outcomes={"a": [True]}, started=datetime.now(UTC))
    assert record_comparison(session=session, run=first) is None
    with pytest.raises(LookupError, match="is not in this database"):
        record_comparison(session=session, run=first, pinned_baseline=uuid.uuid4())


def test_seeded_repeats_count_attempts_per_case(session: Session) -> None:
    now = datetime.now(UTC)
    for night in range(3):
        seed_run(
            session,
            outcomes={"steady": [True] * 4, "broken": [True] * 4},
            started=now - timedelta(days=3 - night),
        )
    after = seed_run(session, outcomes={"steady": [True] * 3 + [False], "broken": [False] * 4}, started=now)
    change = record_comparison(session=session, run=after)
    assert change.repeated and change.significant_cases == ["broken"] and change.regressed
    broken = change.verdict("broken")
    assert (broken.passed_before, broken.attempts_before, broken.passed_now, broken.attempts_now) == (
        12,
        12,
        0,
        4,
    )
    assert broken.p_value == pytest.approx(math.factorial(4) * math.factorial(13) / math.factorial(17))
    # One failure in 4 after 12 of 12: a 4/17 chance had nothing changed, so flaky, not named.
    assert change.verdict("steady").label == "flaky" and change.verdict("steady").p_value == pytest.approx(
        4 / 17
    )
