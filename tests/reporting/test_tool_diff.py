"""A failed tool check shows, per turn, the expected calls against the actual ones and their
arguments; report.json keeps the markdown the agent saw for each file, bounded, with its size."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest
from sqlmodel import Session

from proctor.cli import EXIT_BAD_INPUT, main
from proctor.execution.pipeline import CaseWork, RunSettings, release_runtime, run_chunk, runtime_for
from proctor.loaders import load_suite
from proctor.models.agentflow import ToolCall
from proctor.models.case import MetricSpec
from proctor.models.holodeck import FileInput
from proctor.models.tables import EvalRun
from proctor.reporting.reports import write_reports
from proctor.reporting.tool_diff import diff_calls, shown
from proctor.storage import get_engine
from tests.conftest import EXAMPLE_SUITE
from tests.factories import make_case, stored_run

MULTI_TURN = Path(__file__).parents[1] / "data" / "holodeck" / "multi_turn"


def _statuses(diff: dict) -> list[tuple[str, str]]:
    return [(call["status"], call["name"]) for call in diff["calls"]]


def test_missing_unexpected_and_mismatched_calls_and_arguments_are_marked() -> None:
    expected = [
        {"name": "lookup", "args": {"order_id": 43, "full": True}},
        {"name": "refund", "args": {"order_id": 43}},
    ]
    actual = [
        {"name": "lookup", "args": {"order_id": 42, "full": True, "verbose": 1}},
        {"name": "delete_account", "args": {"id": 7}},
    ]
    diff = diff_calls(expected, actual)
    assert _statuses(diff) == [
        ("mismatch", "lookup"),
        ("missing", "refund"),
        ("unexpected", "delete_account"),
    ]
    lookup = diff["calls"][0]["args"]
    assert [(a["key"], a["status"]) for a in lookup] == [
        ("order_id", "mismatch"),
        ("full", "match"),
        ("verbose", "unexpected"),
    ]
    assert (lookup[0]["expected"], lookup[0]["actual"]) == ("43", "42")
    assert diff["calls"][1]["args"] == [{"key": "order_id", "status": "missing", "expected": "43"}]
    assert diff["order_differs"] is False


def test_an_exact_pair_wins_over_a_same_name_one_and_order_is_reported() -> None:
    expected = [{"name": "f", "args": {"x": 1}}, {"name": "f", "args": {"x": 2}}]
    actual = [{"name": "f", "args": {"x": 2}}, {"name": "f", "args": {"x": 1}}]
    diff = diff_calls(expected, actual)
    assert _statuses(diff) == [("match", "f"), ("match", "f")]
    assert [call["position"] for call in diff["calls"]] == [2, 1]
    assert diff["order_differs"] is True


def test_names_only_and_forbidden_tools_as_vanna_checks_them() -> None:
    diff = diff_calls(
        [{"name": "run_sql"}],
        [{"name": "run_sql", "args": {"q": "select 1"}}, {"name": "drop"}, {"name": "plot"}],
        forbidden=["drop"],
    )
    assert _statuses(diff) == [("match", "run_sql"), ("unexpected", "drop"), ("not checked", "plot")]
    assert diff["calls"][0]["args"] == [{"key": "q", "status": "not checked", "actual": '"select 1"'}]


def test_long_values_are_cut_with_their_size() -> None:
    text = shown("x" * 5000)
    assert text.startswith('"' + "x" * 199) and text.endswith("… (5,002 characters)") and len(text) < 230
    diff = diff_calls([{"name": "f", "args": {"q": "a" * 1000}}], [{"name": "f", "args": {"q": "b" * 1000}}])
    assert diff["calls"][0]["args"][0]["actual"].endswith("(1,002 characters)")  # the JSON string


def _run(url: str, cases: list, tmp_path: Path) -> uuid.UUID:
    agent = f"{MULTI_TURN / 'agent.py'}:agent"
    run_id = stored_run(url, agent=agent)
    settings = RunSettings(
        run_id=run_id, database_url=url, agent=agent, suite_dir=str(tmp_path), agent_timeout_s=10
    )
    asyncio.run(run_chunk([CaseWork(i, case) for i, case in enumerate(cases)], runtime_for(settings)))
    release_runtime(run_id)
    return run_id


@pytest.fixture
def reports(sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PROCTOR_STORED_FILE_CHARS", "60")
    (tmp_path / "short.txt").write_text("Refunds within 30 days.", encoding="utf-8")
    (tmp_path / "long.txt").write_text("Policy line. " * 40, encoding="utf-8")
    trajectory = make_case(
        input="refund order 42",
        expected_tools=[ToolCall(name="refund", args={"order_id": 43}), ToolCall(name="notify", args={})],
        metrics=[MetricSpec(name="trajectory_match"), MetricSpec(name="tool_trajectory_avg_score")],
        case_id="wrong_refund",
        files=[FileInput(path="short.txt", type="text"), FileInput(path="long.txt", type="text")],
    )
    holodeck = next(
        case for case in load_suite(MULTI_TURN / "agent.yaml").cases if case.case_id == "literal_args_differ"
    )
    vanna = make_case(
        input="refund order 42",
        metrics=[MetricSpec(name="TrajectoryEvaluator")],
        case_id="vanna_refund",
        metadata={"expected_outcome": {"tools_called": ["notify"], "tools_not_called": ["refund"]}},
    )
    run_id = _run(sqlite_url, [trajectory, holodeck, vanna], tmp_path)
    with Session(get_engine(sqlite_url)) as session:
        write_reports(session=session, run=session.get(EvalRun, run_id), directory=tmp_path / "out")
    return tmp_path / "out"


def test_reports_show_expected_against_actual_calls_per_turn(reports: Path) -> None:
    markdown = (reports / "report.md").read_text(encoding="utf-8")
    for metric in (
        "trajectory\\_match",
        "tool\\_trajectory\\_avg\\_score",
        "expected\\_tools",
        "TrajectoryEvaluator",
    ):
        assert f"**Tool calls, expected against actual** ({metric}):" in markdown
    assert (
        "≠ mismatch `refund` (call 1): `order_id` mismatch expected `43`, actual `42`;"
        " `amount` unexpected actual `19.99`" in markdown
    )
    assert "❌ missing `notify`" in markdown
    # HoloDeck asserts only the arguments it names: the others are shown, not held against the call
    assert "`order_id` mismatch expected `43`, actual `42`; `amount` not checked actual `19.99`" in markdown
    # Vanna checks names over the whole conversation: a forbidden tool called is unexpected
    assert (
        "- Turn all turns:\n  - ❌ missing `notify`\n  - ➕ unexpected `refund` (call 1): `order_id` unexpected actual `42`"
        in markdown
    )
    html = (reports / "report.html").read_text(encoding="utf-8")
    assert html.count("Tool calls, expected against actual") == 4
    assert "<td><code>notify</code></td><td>missing</td>" in html
    assert "<code>order_id</code> mismatch: expected <code>43</code>, actual <code>42</code>" in html


def test_report_json_keeps_each_files_markdown_bounded_with_its_size(reports: Path) -> None:
    report = json.loads((reports / "report.json").read_text(encoding="utf-8"))
    case = next(result for result in report["results"] if result["test_name"] == "wrong_refund")
    short, long = case["processed_files"]
    assert short["markdown_content"].strip() == "Refunds within 30 days."
    assert short["metadata"]["markdown_truncated"] is False
    full = len("Policy line. " * 40)
    assert long["markdown_content"].startswith("Policy line. Policy line.")
    assert long["markdown_content"].endswith(
        f"[… truncated: first 60 of {long['metadata']['markdown_chars']:,} characters kept]"
    )
    assert long["metadata"]["markdown_truncated"] is True and long["metadata"]["markdown_chars"] >= full - 1


def test_a_malformed_bound_is_refused_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("PROCTOR_STORED_FILE_CHARS", "20k")
    database = f"sqlite:///{tmp_path / 'r.db'}"
    command = ["run", str(EXAMPLE_SUITE), "--no-prefect", "--no-progress", "--db", database]
    assert main([*command, "--output", str(tmp_path / "out")]) == EXIT_BAD_INPUT
    error = capsys.readouterr().err.strip()
    assert "nothing was run" in error
    assert "environment: PROCTOR_STORED_FILE_CHARS: expected a whole number of characters, got '20k'" in error
    assert not (tmp_path / "out").exists()
