"""A small version of bench/alarms.py: seeded nights of a flaky agent written to a real
results database and judged by the real verdict. The bench measures the rates at full size;
this checks, for fixed seeds, that the behaviour the rates describe is there, and that SQLite
and PostgreSQL give the same verdict night for night."""

from __future__ import annotations

import subprocess
import sys

import pytest

from proctor.stats.nightly_simulation import (
    a_a_nights,
    broad_drop,
    change_nights,
    flaky_case_breaks,
    stable_case_breaks,
)
from proctor.storage import get_engine
from tests.conftest import ROOT


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request, tmp_path):
    if request.param == "sqlite":
        return get_engine(f"sqlite:///{tmp_path}/nights.db")
    return get_engine(request.getfixturevalue("postgres_url"))


def test_a_flaky_agent_is_quiet_and_real_changes_are_named(engine) -> None:
    nights = a_a_nights(engine, seed=11, nights=25, cases=100)
    assert len(nights) == 24 and [n.history_runs for n in nights[:3]] == [1, 2, 3]
    # During the warm-up the verdict says how much history it has, and that it is warming up.
    assert nights[0].history_line.startswith("history: 1 earlier run (window 30); warming up")
    assert "warming up" in nights[3].history_line and "4 earlier runs" in nights[3].history_line
    assert nights[4].history_line == "history: 5 earlier runs (window 30)"
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


def test_the_bench_prints_every_figure_from_the_verdicts_it_ran() -> None:
    """bench/alarms.py at a tiny size: each figure of docs/regressions.md is printed, and what
    the warm-up verdict says is the verdict's own text, not a line of the bench's."""
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "alarms.py"),
            "--sims",
            "2",
            "--aa-sims",
            "1",
            "--nights",
            "8",
            "--warm",
            "6",
            "--case-nights",
            "3",
            "--speed-cases",
            "50",
            "--speed-runs",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "A/A, 100 cases at 50-100 %, 1 run(s) per case a night, 1 x 8 nights" in out
    assert "A/A, 100 cases at 50-100 %, 3 run(s) per case a night" in out
    assert "with 1 earlier run(s) the verdict says: history: 1 earlier run (window 30); warming up" in out
    assert "with 5 earlier run(s) the verdict says: history: 5 earlier runs (window 30)\n" in out
    for figure in ("stable case (0.95-1.0) breaks", "case at 0.7 breaks", "all cases 15 points worse"):
        assert out.split("goals")[0].count(figure) == 2  # one run a night, then --repeat 3
    assert "reading 50 cases x 3 runs of history and deciding (sqlite)" in out
    # Then each of the goals with what was measured; at this size, not their verdicts.
    goals = out.split("goals (issue 23):\n")[1]
    for goal in (
        "A/A, 1 run(s) a night: false 'Regressed' on at most 5 % of nights after a warm-up of 5 nights",
        "during the warm-up the verdict says how much history it has",
        "A/A, 3 run(s) a night: false 'Regressed'",
        "not measured at its size: reading 10,000 cases x 30 runs and deciding under 2 s (sqlite)",
        "stable case (0.95-1.0) breaks, 1 run a night: named the first night in at least 95 %",
        "stable case (0.95-1.0) breaks, --repeat 3: detected at least as fast",
        "case at 0.7 breaks, 1 run a night: named within 3 nights in at least 80 %",
        "all cases 15 points worse, 1 run a night: 'Regressed' within 2 nights in at least 80 %",
        "all cases 15 points worse, --repeat 3: detected at least as fast",
    ):
        assert goal in goals, goal
