"""`proctor run` on an ADK eval set: ADK's efficiency metrics are stored and shown as values in
the database and every report, while the cases pass or fail on their criteria alone."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from sqlmodel import Session, select

from proctor.cli import EXIT_FAILED, EXIT_PASSED, main
from proctor.metrics.adk.names import ADK_EFFICIENCY_METRICS
from proctor.models.outcome import AgentTurn
from proctor.models.tables import CaseResultRow, EvalRun, MetricResultRow
from proctor.reporting.summary import summary_markdown
from proctor.storage import get_engine

AGENT = """
def agent(request):
    text = request.input.lower()
    request.record_usage(prompt_tokens=100, completion_tokens=20)  # one model call...
    if "roll" in text:
        request.record_tool_call("roll_die", {"sides": 6}, 4)
        request.record_usage(prompt_tokens=100, completion_tokens=20)  # ...and one more after the tool
        return "I rolled a 4."
    return "I am a dice agent."
"""


def _invocation(text: str, sides: int | None) -> dict:
    uses = [{"name": "roll_die", "args": {"sides": sides}}] if sides else []
    return {
        "invocation_id": text,
        "user_content": {"role": "user", "parts": [{"text": text}]},
        "final_response": {"role": "model", "parts": [{"text": "I rolled a 4."}]},
        "intermediate_data": {"tool_uses": uses},
    }


@pytest.fixture
def run(
    tmp_path: Path,
    sqlite_url: str,
    prefect_harness: None,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> dict:
    monkeypatch.setenv("COLUMNS", "200")  # the summary table's rows unwrapped
    suite = tmp_path / "dice.test.json"
    cases = [
        {"eval_id": "roll", "conversation": [_invocation("Hello", None), _invocation("Roll a d6", 6)]},
        {"eval_id": "wrong_die", "conversation": [_invocation("Roll a d20", 20)]},  # the agent rolls a d6
    ]
    suite.write_text(json.dumps({"eval_set_id": "dice", "eval_cases": cases}))
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0}}))
    (tmp_path / "dice_agent.py").write_text(textwrap.dedent(AGENT))
    output = tmp_path / "reports"
    code = main(
        ["run", str(suite), "--agent", f"{tmp_path / 'dice_agent.py'}:agent"]
        + ["--db", sqlite_url, "--output", str(output), "--no-progress"]
    )
    with Session(get_engine(sqlite_url)) as session:
        run_row = session.exec(select(EvalRun)).one()
        cases_stored = {r.case_id: r for r in session.exec(select(CaseResultRow))}
        metrics = {(m.case_id, m.metric_name): m for m in session.exec(select(MetricResultRow))}
        summary = summary_markdown(session=session, run=run_row)
    return {
        "code": code,
        "out": capsys.readouterr().out,
        "run": run_row,
        "cases": cases_stored,
        "metrics": metrics,
        "summary": summary,
        "output": output,
        "db": sqlite_url,
    }


def _seconds(case: CaseResultRow) -> float:
    """ADK's invocation_duration_v1 of the stored turns: each to the millisecond, then the mean."""
    turns = [AgentTurn.model_validate(turn) for turn in case.turns]
    return round(sum(round(t.latency_ms / 1000, 3) for t in turns) / len(turns), 3)


@pytest.mark.flow
def test_the_values_are_stored_and_the_criteria_alone_decide(run: dict) -> None:
    assert run["code"] == EXIT_FAILED and "1/2 passed" in run["out"]
    assert run["cases"]["roll"].passed is True
    assert run["cases"]["wrong_die"].passed is False and run["cases"]["wrong_die"].errors == []
    expected = {
        "tool_call_count_v1": (0 + 1) / 2,
        "inference_call_count_v1": (1 + 2) / 2,
        "token_usage_v1": (120 + 240) / 2,
        "invocation_duration_v1": _seconds(run["cases"]["roll"]),
    }
    for name, value in expected.items():
        row = run["metrics"][("roll", name)]
        assert (row.score, row.informational, row.threshold, row.error) == (
            pytest.approx(value),
            True,
            None,
            None,
        )
    assert run["metrics"][("wrong_die", "token_usage_v1")].score == 240.0
    assert run["metrics"][("wrong_die", "tool_trajectory_avg_score")].passed is False
    assert run["metrics"][("wrong_die", "tool_trajectory_avg_score")].informational is False
    # The CLI's table gives no pass count for them.
    line = next(line for line in run["out"].splitlines() if "token_usage_v1" in line)
    assert line.split("│")[3].strip() == "–" and "210.000" in line  # the mean of the two cases
    assert "passed –: informational, a value (its mean per case) that never passes or fails" in run["out"]


@pytest.mark.flow
def test_every_report_shows_them_as_values_never_as_verdicts(
    run: dict, capsys: pytest.CaptureFixture
) -> None:
    [folder] = [p.parent for p in run["output"].rglob("report.json")]
    report = json.loads((folder / "report.json").read_text())
    roll, wrong = report["results"]
    tokens = next(m for m in roll["metric_results"] if m["metric_name"] == "token_usage_v1")
    assert (tokens["score"], tokens["informational"], roll["passed"]) == (180.0, True, True)
    assert "threshold" not in tokens
    assert wrong["passed"] is False

    markdown = (folder / "report.md").read_text()
    assert "| token\\_usage\\_v1 | 210.00 | – (informational) |" in markdown  # (180 + 240) / 2 cases
    assert "Token usage v1: 180 (informational)" in markdown
    assert "Tool call count v1: 0.5 (informational)" in markdown

    eval_report = json.loads((folder / "eval_report.json").read_text())
    first = eval_report["results"][0]
    assert [c["criterion"] for c in first["criterion_results"]] == ["tool_trajectory_avg_score"]
    assert {v["criterion"]: v["value"] for v in first["informational"]}["inference_call_count_v1"] == 1.5
    assert eval_report["summary"]["avg_score"] == 0.5  # the trajectory scores 1 and 0, no tokens
    assert eval_report["summary"]["criterion_stats"]["token_usage_v1"]["informational"] is True

    html = (folder / "report.html").read_text()
    assert "mean 210 over 2 cases · informational: never passes or fails" in html

    [failure] = [c for c in ET.parse(folder / "junit.xml").getroot() if c.find("failure") is not None]
    message = failure.find("failure").get("message")
    assert "tool_trajectory_avg_score" in message and "token_usage" not in message

    assert "| token\\_usage\\_v1 | 2 | – (informational) |" in run["summary"]
    assert "token\\_usage" not in run["summary"].split("## Failing cases")[1]

    assert main(["report", str(run["run"].id), "--format", "vanna", "--db", run["db"]]) == EXIT_PASSED
    roll_vanna, wrong_vanna = json.loads(capsys.readouterr().out)["results"]
    assert [e["evaluator_name"] for e in roll_vanna["evaluations"]] == ["tool_trajectory_avg_score"]
    assert (roll_vanna["overall_passed"], wrong_vanna["overall_passed"]) == (True, False)
    measured = roll_vanna["agent_result"]["metadata"]["informational"]
    assert [v["criterion"] for v in measured] == list(ADK_EFFICIENCY_METRICS)
    assert measured[2]["value"] == 180.0
