"""A small version of bench/alarms.py: seeded nights of a flaky agent written to a real
results database and judged by the real verdict. The bench measures the rates at full size;
this checks, for fixed seeds, that the behaviour the rates describe is there, and that SQLite
and PostgreSQL give the same verdict night for night."""

from __future__ import annotations

import pytest

from proctor.stats.nightly_simulation import (
    a_a_nights,
    broad_drop,
    change_nights,
    flaky_case_breaks,
    stable_case_breaks,
)
from proctor.storage import get_engine


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request, tmp_path):
    if request.param == "sqlite":
        return get_engine(f"sqlite:///{tmp_path}/nights.db")
    return get_engine(request.getfixturevalue("postgres_url"))


def test_a_flaky_agent_is_quiet_and_real_changes_are_named(engine) -> None:
    nights = a_a_nights(engine, seed=11, nights=25, cases=100)
    assert len(nights) == 24 and [n.history_runs for n in nights[:3]] == [1, 2, 3]
    assert sum(n.regressed for n in nights) <= 1  # the old rule: 24 of 24
    assert all("added" not in n.labels.values() for n in nights)
    # A stable case that breaks is named the night it breaks, among 100 flaky ones.
    stable = change_nights(
        engine, seed=12, warm_nights=15, nights_after=1, cases=100, change=stable_case_breaks
    )
    assert stable.case_night == 1
    # One case of 0.7 that breaks: named once its failures in a row are unlikely (3 nights here).
    flaky = change_nights(
        engine, seed=13, warm_nights=15, nights_after=3, cases=100, change=flaky_case_breaks
    )
    assert flaky.case_night is not None and flaky.case_night <= 3
    # Every case 15 points worse: the run regresses within two nights.
    broad = change_nights(engine, seed=14, warm_nights=15, nights_after=2, cases=100, change=broad_drop(0.15))
    assert broad.run_night is not None and broad.run_night <= 2


def test_sqlite_and_postgresql_give_the_same_verdicts(tmp_path, postgres_url) -> None:
    verdicts = [
        [
            (n.regressed, n.labels, n.significant)
            for n in a_a_nights(engine, seed=5, nights=12, cases=60, repeat=2)
        ]
        for engine in (get_engine(f"sqlite:///{tmp_path}/same.db"), get_engine(postgres_url))
    ]
    assert verdicts[0] == verdicts[1] and any(labels for _, labels, _ in verdicts[0])
