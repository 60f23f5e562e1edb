"""Stored runs read back: Vanna's results, comparing runs of different suites, reports in a pipe."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from proctor.cli import EXIT_BAD_INPUT, main

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

VANNA_SUITE = """
dataset:
  name: charts
  test_cases:
    - id: sales_chart
      message: Show me sales by month
      conversation_id: conv-7
      user: {id: analyst-1, email: a@example.com, group_memberships: [analysts]}
      metadata: {area: sales}
      expected_outcome: {final_answer_contains: [chart], min_components: 2, max_components: 3}
"""

AGENT = """
def agent(request):
    return {
        "answer": "Here is the chart.",
        "components": [{"type": "rich_text", "content": "Here is the chart."}, {"type": "chart", "metadata": {"kind": "bar"}}],
    }
"""

OTHER_SUITE = """
dataset:
  name: other
  test_cases:
    - {id: different_case, message: hi, expected_outcome: {final_answer_contains: [chart]}}
"""


@pytest.fixture
def runs(tmp_path: Path, sqlite_url: str, capsys) -> tuple[str, str]:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "charts.yaml").write_text(VANNA_SUITE)
    (tmp_path / "other.yaml").write_text(OTHER_SUITE)
    ids = []
    for suite in ("charts.yaml", "other.yaml"):
        args = ["run", str(tmp_path / suite), "--agent", f"{tmp_path / 'agent.py'}:agent", "--db", sqlite_url]
        assert main([*args, "--no-progress", "--output", str(tmp_path / ("reports-" + suite))]) == 0
        out = " ".join(capsys.readouterr().out.split())
        ids.append(out.split(" · run ")[1].split()[0])
    return ids[0], ids[1]


def test_vanna_results_are_complete_and_count_the_agents_components(runs, sqlite_url: str, capsys) -> None:
    charts, _ = runs
    assert main(["report", charts, "--format", "vanna", "--db", sqlite_url]) == 0
    report = json.loads(capsys.readouterr().out)
    (result,) = report["results"]
    case = result["test_case"]
    assert case["user"]["id"] == "analyst-1" and case["user"]["group_memberships"] == ["analysts"]
    assert case["conversation_id"] == "conv-7" and case["metadata"] == {"area": "sales"}
    assert case["expected_outcome"]["min_components"] == 2
    assert [c["type"] for c in result["agent_result"]["components"]] == ["rich_text", "chart"]
    efficiency = next(e for e in result["evaluations"] if e["evaluator_name"] == "EfficiencyEvaluator")
    assert (
        efficiency["passed"] is True
        and efficiency["reasoning"] == "Efficiency evaluation: Within resource limits"
    )
    # the component bounds are Proctor's own check, listed apart from Vanna's evaluations
    assert "proctor_component_bounds" not in [e["evaluator_name"] for e in result["evaluations"]]
    (bounds,) = result["agent_result"]["metadata"]["informational"]
    assert (bounds["criterion"], bounds["value"], bounds["details"]["within_bounds"]) == (
        "proctor_component_bounds",
        2,
        True,
    )
    assert result["overall_passed"] is True


def test_runs_of_different_suites_sharing_no_case_are_not_compared(runs, sqlite_url: str, capsys) -> None:
    charts, other = runs
    assert main(["compare", charts, other, "--db", sqlite_url]) == EXIT_BAD_INPUT
    assert "share no case" in capsys.readouterr().err


def test_a_report_cut_short_by_its_reader_ends_quietly_and_junit_times_are_iso(runs, sqlite_url: str) -> None:
    charts, _ = runs
    proctor = [sys.executable, "-m", "proctor.cli", "report", charts, "--db", sqlite_url]
    piped = subprocess.run(
        f"{' '.join(proctor)} --format md | head -1", shell=True, capture_output=True, text=True, timeout=300
    )
    assert piped.stdout.startswith("# Test Report") and "Traceback" not in piped.stderr, piped.stderr
    junit = subprocess.run([*proctor, "--format", "junit"], capture_output=True, text=True, timeout=300)
    stamp = ET.fromstring(junit.stdout.split("?>", 1)[1]).get("timestamp")
    assert len(stamp) == 19 and stamp[10] == "T"  # 2026-11-23T08:35:56


def test_names_inside_code_spans_are_not_backslash_escaped(runs, sqlite_url: str, tmp_path: Path) -> None:
    from sqlmodel import Session

    from proctor.cli.stored import find_run
    from proctor.reporting.summary import summary_markdown
    from proctor.storage import get_engine

    charts, _ = runs
    with Session(get_engine(sqlite_url)) as session:
        run = find_run(session, charts)
        artifact = summary_markdown(session=session, run=run, report_dir=str(tmp_path / "reports_here"))
    assert "_" in run.agent and f"Agent `{run.agent}`" in artifact
    assert f"`{tmp_path / 'reports_here'}`" in artifact
