"""Stored runs read back: history, reports in every format, and what changed between two runs."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from proctor.cli import EXIT_FAILED, EXIT_PASSED, main
from tests.conftest import EXAMPLE_SUITE, ROOT

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

WORSE = "def agent(request):\n    return 'Sorry, no idea.'\n"


@pytest.fixture
def two_runs(tmp_path: Path, sqlite_url: str, capsys) -> tuple[str, str, str]:
    """The weather agent, then a worse agent, over the example suite: two stored runs."""
    (tmp_path / "worse.py").write_text(WORSE)
    weather = f"{ROOT / 'examples' / 'weather' / 'agent.py'}:weather_agent"
    main(
        [
            "run",
            str(EXAMPLE_SUITE),
            "--db",
            sqlite_url,
            "--no-progress",
            "--output",
            str(tmp_path / "a"),
            "--variant",
            f"good={weather}",
            "--variant",
            f"worse={tmp_path / 'worse.py'}:agent",
        ]
    )
    capsys.readouterr()
    assert main(["history", "--db", sqlite_url]) == EXIT_PASSED
    lines = [line for line in capsys.readouterr().out.splitlines() if "weather_" in line]
    worse_id, good_id = (line.split("│")[1].strip() for line in lines[:2])
    return sqlite_url, good_id, worse_id


def test_compare_names_the_regressions(two_runs, capsys) -> None:
    url, good, worse = two_runs
    assert main(["compare", good, worse, "--db", url]) == EXIT_FAILED
    out = capsys.readouterr().out
    assert "pass rate 80.0% -> 0.0% (-80.0 points)" in out
    # One earlier run is little evidence about any one case (a pass, then a failure: 1 in 3),
    # but five failures where history expected two are a drop of the whole run.
    assert "newly failing 0 · still failing 1 · flaky 4 · fixed 0 · added 0 · removed 0" in out
    assert "flaky: basic_weather — passed 1 of 2 runs, tonight's included" in out
    assert "regressed" in out and "5 failed attempts where history expected 2.0" in out
    assert main(["compare", worse, good, "--db", url]) == EXIT_PASSED
    out = capsys.readouterr().out
    assert "fixed 4" in out and "fixed: basic_weather — passes again after failing 1 run in a row" in out
    # A run judged against its own history ending at itself, or a window of none, is refused.
    assert main(["compare", good, worse, "--db", url, "--history-window", "0"]) == 2


def test_reports_of_a_stored_run_in_every_format(two_runs, capsys) -> None:
    url, good, _ = two_runs
    assert main(["report", good, "--db", url, "--format", "junit"]) == EXIT_PASSED
    suite = ET.fromstring(capsys.readouterr().out.split("?>", 1)[-1])
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("5", "1", "0")
    failure = suite.find("testcase/failure")
    assert failure is not None and "trajectory_match" in failure.get("message")
    assert main(["report", good, "--db", url, "--format", "html"]) == EXIT_PASSED
    html = capsys.readouterr().out
    assert (
        html.startswith("<!doctype html>")
        and "4/5 passed" in html
        and "<svg" in html
        and "<script" not in html
    )
    assert main(["report", good, "--db", url, "--format", "json"]) == EXIT_PASSED
    assert json.loads(capsys.readouterr().out)["summary"]["passed"] == 4
    assert main(["report", "ffffffff", "--db", url]) == 2


def test_every_run_writes_html_and_junit(two_runs) -> None:
    url, _, _ = two_runs
    folder = Path(url.removeprefix("sqlite:///")).parent / "a" / "good"
    assert (folder / "report.html").exists() and (folder / "junit.xml").exists()
