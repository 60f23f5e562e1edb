"""The regression views of a run's own reports: its pass-rate trend ends with it, and the
labels, added and removed cases and each metric's mean before and after are shown in
report.md and report.html as the CLI and Slack show them."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlmodel import Session

from proctor.models.tables import RunStatus
from proctor.reporting import case_rows, write_reports
from proctor.reporting.html import trend
from proctor.stats.regression import record_comparison
from proctor.storage import get_engine
from tests.factories import seed_run


@pytest.fixture
def session(tmp_path: Path) -> Session:
    with Session(get_engine(f"sqlite:///{tmp_path}/views.db"), expire_on_commit=False) as session:
        session.info["suite_id"] = f"views-{uuid.uuid4().hex[:8]}"
        yield session


def _tonight(session: Session) -> object:
    start = datetime.now(UTC) - timedelta(days=10)
    for night in range(6):
        seed_run(
            session,
            outcomes={"steady": [True], "wobbly": [night % 2 == 0], "dropped": [True]},
            scores={"rouge": 0.9},
            started=start + timedelta(days=night),
        )
    # Tonight's run as its reports see it: its cases have ended, it is not yet stored as completed.
    run = seed_run(
        session,
        outcomes={"steady": [False], "wobbly": [False], "brand_new": [True]},
        scores={"rouge": 0.4},
        started=start + timedelta(days=7),
        status=RunStatus.RUNNING,
    )
    run.finished_at, run.pass_rate = run.started_at + timedelta(minutes=1), 100 / 3
    assert record_comparison(session=session, run=run) is not None
    session.commit()
    return run


def test_the_prefect_case_table_labels_each_case(session: Session) -> None:
    run = _tonight(session)
    rows = {row["case"]: (row["label"], row["evidence"]) for row in case_rows(session=session, run=run)}
    assert rows == {
        "steady": ("newly failing", "passed 6 of the last 6 runs (a 12% chance if nothing changed)"),
        "wobbly": ("flaky", "passed 3 of 7 runs, tonight's included"),
        "brand_new": ("added", "new: not in the history"),
    }


def test_the_trend_ends_with_the_run_itself(session: Session) -> None:
    run = _tonight(session)
    points = trend(session=session, run=run)
    assert len(points) == 7 and points[-1]["id"] == str(run.id)[:8]
    assert points[-1]["pass_rate"] == pytest.approx(100 / 3) and points[-2]["pass_rate"] == pytest.approx(
        200 / 3
    )


def test_reports_show_labels_added_removed_and_metric_means(session: Session, tmp_path: Path) -> None:
    run = _tonight(session)
    files = write_reports(session=session, run=run, directory=tmp_path / "out")
    markdown = files.markdown.read_text()
    assert "newly failing 1 · still failing 0 · flaky 1 · fixed 0 · added 1 · removed 1" in markdown
    assert (
        "| `steady` | newly failing | passed 6 of the last 6 runs (a 12% chance if nothing changed) |"
        in markdown
    )
    assert "| `wobbly` | flaky | passed 3 of 7 runs, tonight's included |" in markdown
    assert "| `brand_new` | added | new: not in the history |" in markdown
    assert "| `dropped` | removed | in the baseline, not in this run |" in markdown
    assert "| rouge | 0.900 | 0.400 | -0.500 |" in markdown
    html = files.html.read_text()
    assert "<td>brand_new</td><td>added</td>" in html and "<td>dropped</td><td>removed</td>" in html
    assert "<td>rouge</td><td>0.900</td><td>0.400</td><td>-0.500</td>" in html
    verdict = json.loads(files.verdict.read_text())
    assert verdict["run_id"] == str(run.id) and verdict["comparison"]["counts"]["removed"] == 1
    assert [c["case_id"] for c in verdict["comparison"]["cases"] if c["label"] == "newly_failing"] == [
        "steady"
    ]
    # The trend drawn in the page has tonight's point last: 33.3 %.
    titles = re.findall(r"<title>([0-9a-f]{8}) [^<]*: ([0-9.]+)%</title>", html)
    assert titles[-1] == (str(run.id)[:8], "33.3")
