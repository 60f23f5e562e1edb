"""Every report renders for a run in which every kind of failure happens (files, agent, agent
mid-conversation, metric error, wrong answer, tools not matched, not scored) beside a pass."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from proctor.cli import EXIT_FAILED, EXIT_PASSED, main

FAILURES = Path(__file__).resolve().parents[1] / "data" / "holodeck" / "failures"


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness")
def test_every_report_renders_when_every_kind_of_failure_happens(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "reports"
    code = main(
        [
            "run",
            str(FAILURES / "agent.yaml"),
            "--agent",
            f"{FAILURES / 'agent.py'}:agent",
            "--db",
            sqlite_url,
            "--output",
            str(out),
            "--no-progress",
        ]
    )
    printed = capsys.readouterr()
    assert code == EXIT_FAILED, printed.err
    assert "Traceback" not in printed.err
    names = {p.name for p in out.iterdir()}
    assert {"report.json", "report.md", "eval_report.json", "report.html", "junit.xml"} <= names
    report = json.loads((out / "report.json").read_text())
    results = {r["test_name"]: r for r in report["results"]}
    assert [name for name, r in results.items() if r["passed"]] == ["passes"]
    assert results["agent_fails_with_expected_tools"]["tools_matched"] is False
    assert any("not scored" in e for e in results["not_scored"]["errors"])
    assert any("turn_2: the agent fell over" in e for e in results["agent_fails_in_second_turn"]["errors"])
    # as HoloDeck: the failed turn is not passed, the turns around it run and are scored
    turns = results["agent_fails_in_second_turn"]["turns"]
    assert [(t["passed"], t.get("response")) for t in turns] == [(True, "3"), (False, None), (True, "3")]
    assert results["agent_fails_in_second_turn"]["passed"] is False
    run_id = re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", printed.out)
    assert run_id, printed.out
    for form in ("md", "json", "html", "junit"):
        assert main(["report", run_id.group(0), "--format", form, "--db", sqlite_url]) == EXIT_PASSED
        shown = capsys.readouterr()
        assert "Traceback" not in shown.err and "agent_fails_with_expected_tools" in shown.out.replace(
            "\\_", "_"
        )
