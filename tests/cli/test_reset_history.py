"""`proctor reset-history`: later verdicts of a suite read only the runs after it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlmodel import Session

from proctor.cli import EXIT_BAD_INPUT, EXIT_PASSED, main
from proctor.stats.regression import record_comparison
from proctor.storage import get_engine
from tests.factories import seed_run


def test_a_reset_starts_the_history_afresh(sqlite_url, capsys) -> None:
    with Session(get_engine(sqlite_url), expire_on_commit=False) as session:
        session.info["suite_id"] = "weather-agent-v1"
        for night in range(5):
            seed_run(session, outcomes={"a": [True]}, started=datetime.now(UTC) - timedelta(days=5 - night))
    assert main(["reset-history", "nowhere", "--db", sqlite_url]) == EXIT_BAD_INPUT
    assert "no stored run of suite 'nowhere'" in capsys.readouterr().err
    assert (
        main(["reset-history", "weather-agent-v1", "--reason", "new prompt", "--db", sqlite_url])
        == EXIT_PASSED
    )
    assert (
        "for suite weather-agent-v1 · every agent: later runs start a new history" in capsys.readouterr().out
    )
    with Session(get_engine(sqlite_url), expire_on_commit=False) as session:
        session.info["suite_id"] = "weather-agent-v1"
        first = seed_run(session, outcomes={"a": [False]}, started=datetime.now(UTC) + timedelta(minutes=1))
        assert record_comparison(session=session, run=first) is None  # five passes before the reset: gone
        second = seed_run(session, outcomes={"a": [False]}, started=datetime.now(UTC) + timedelta(minutes=2))
        verdict = record_comparison(session=session, run=second)
        assert verdict is not None and verdict.history_runs == 1 and verdict.still_failing == ["a"]
