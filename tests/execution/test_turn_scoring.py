"""HoloDeck multi-turn cases are scored turn by turn: each turn against its own expectations,
stored per turn, and shown per turn in every report."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest
from sqlmodel import Session, select

from proctor.execution.pipeline import CaseWork, RunSettings, release_runtime, run_chunk, runtime_for
from proctor.execution.turn_scoring import NOT_SCORED, rollup_metrics
from proctor.loaders import load_suite
from proctor.models.case import MetricSpec, Turn
from proctor.models.outcome import AgentTurn
from proctor.models.tables import CaseResultRow, EvalRun, MetricResultRow
from proctor.reporting.reports import write_reports
from proctor.storage import get_engine
from tests.factories import make_case, stored_run

MULTI_TURN = Path(__file__).parents[1] / "data" / "holodeck" / "multi_turn"


def _run(url: str, cases: list, agent: str, suite_dir: Path) -> uuid.UUID:
    run_id = stored_run(url, agent=agent)
    settings = RunSettings(
        run_id=run_id, database_url=url, agent=agent, suite_dir=str(suite_dir), agent_timeout_s=10
    )
    asyncio.run(run_chunk([CaseWork(i, case) for i, case in enumerate(cases)], runtime_for(settings)))
    release_runtime(run_id)
    return run_id


def _rows(url: str, run_id: uuid.UUID) -> dict[str, CaseResultRow]:
    with Session(get_engine(url)) as session:
        rows = session.exec(select(CaseResultRow).where(CaseResultRow.run_id == run_id)).all()
        return {row.case_id: row for row in rows}


@pytest.fixture
def multi_turn_run(sqlite_url: str) -> uuid.UUID:
    suite = load_suite(MULTI_TURN / "agent.yaml")
    return _run(sqlite_url, suite.cases, f"{MULTI_TURN / 'agent.py'}:agent", MULTI_TURN)


def test_a_wrong_first_turn_fails_the_case_even_if_the_last_is_right(
    sqlite_url: str, multi_turn_run: uuid.UUID
) -> None:
    rows = _rows(sqlite_url, multi_turn_run)
    assert rows["first_turn_wrong"].passed is False
    assert rows["both_turns_right"].passed is True
    turns = [AgentTurn.model_validate(turn) for turn in rows["first_turn_wrong"].turns]
    assert [turn.expected_response for turn in turns] == ["Paris", "London"]
    assert [[m.score for m in turn.metrics] for turn in turns] == [[0.0], [1.0]]
    assert [turn.passed for turn in turns] == [False, True]
    with Session(get_engine(sqlite_url)) as session:
        metric = session.exec(
            select(MetricResultRow).where(
                MetricResultRow.run_id == multi_turn_run, MetricResultRow.case_id == "first_turn_wrong"
            )
        ).one()
    # HoloDeck's roll-up: the mean of the turns' scores, passed only if every turn passed
    assert (metric.metric_name, metric.score, metric.passed) == ("equality", 0.5, False)
    assert [t["score"] for t in metric.details["turns"]] == [0.0, 1.0]


def test_expected_tools_are_checked_per_turn_with_count_and_args(
    sqlite_url: str, multi_turn_run: uuid.UUID
) -> None:
    rows = _rows(sqlite_url, multi_turn_run)
    assert (rows["tools_each_turn"].passed, rows["tools_each_turn"].tools_matched) == (True, True)
    # lookup_order was called, but in turn 1: turn 2 earns no credit for it
    other = rows["tool_expected_in_the_other_turn"]
    assert (other.passed, other.tools_matched) == (False, False)
    turns = [AgentTurn.model_validate(turn) for turn in other.turns]
    assert [turn.tools_matched for turn in turns] == [None, False]
    assert turns[1].tool_problems == ["expected tool not called: lookup_order"]
    count = AgentTurn.model_validate(rows["count_not_met"].turns[0])
    assert (rows["count_not_met"].passed, count.tool_problems) == (
        False,
        ["expected 2 matching call(s) of refund, got 1"],
    )
    differ = AgentTurn.model_validate(rows["literal_args_differ"].turns[0])
    assert rows["literal_args_differ"].passed is False
    assert differ.tool_problems == ["expected refund: arg 'order_id' mismatch: expected 43, got 42"]


def test_every_report_shows_each_turns_expected_answer_and_score(
    sqlite_url: str, multi_turn_run: uuid.UUID, tmp_path: Path
) -> None:
    with Session(get_engine(sqlite_url)) as session:
        run = session.get(EvalRun, multi_turn_run)
        files = write_reports(session=session, run=run, directory=tmp_path)
    report = json.loads(files.json.read_text())
    result = next(r for r in report["results"] if r["test_name"] == "first_turn_wrong")
    assert [(t["ground_truth"], t["passed"]) for t in result["turns"]] == [("Paris", False), ("London", True)]
    assert [t["metric_results"][0]["score"] for t in result["turns"]] == [0.0, 1.0]
    markdown = files.markdown.read_text()
    section = markdown.split("first\\_turn\\_wrong")[1].split("### ")[0]
    assert "Expected: Paris" in section and "Expected: London" in section
    assert "Equality: 0.00" in section and "Equality: 1.00" in section
    html = files.html.read_text()
    assert "Expected (turn 1)" in html and "Expected (turn 2)" in html
    assert "not matched: expected tool not called: lookup_order" in html


def test_a_case_nothing_scores_is_not_scored_never_passed(sqlite_url: str, tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("def agent(request):\n    return 'anything'\n")
    unscored = make_case(case_id="unscored")  # no metric, no expected tools
    not_applicable = make_case(case_id="no_ground_truth", metrics=[MetricSpec(name="equality")])
    run_id = _run(sqlite_url, [unscored, not_applicable], f"{tmp_path / 'agent.py'}:agent", tmp_path)
    rows = _rows(sqlite_url, run_id)
    for row in rows.values():
        assert row.passed is False and row.errors == [NOT_SCORED]


def test_the_rollup_keeps_each_metric_once_with_turn_scores() -> None:
    from proctor.models.outcome import ScoredMetric

    def turn(score: float, passed: bool) -> AgentTurn:
        metric = ScoredMetric(
            metric_name="m", score=score, threshold=0.5, passed=passed, evaluation_time_ms=1
        )
        return AgentTurn(turn_id="t", input="x", metrics=[metric])

    (rolled,) = rollup_metrics([turn(0.9, True), turn(0.4, False), turn(0.8, True)])
    assert rolled.score == pytest.approx(0.7) and rolled.passed is False
    assert [t["turn"] for t in rolled.details["turns"]] == [1, 2, 3]


def test_informational_metrics_are_stored_but_never_decide_a_case(sqlite_url: str, tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(
        "def agent(request):\n"
        "    request.record_tool_call('lookup', {'q': request.input})\n"
        "    request.record_usage(prompt_tokens=100, completion_tokens=20)\n"
        "    return 'Paris'\n"
    )
    measured = [MetricSpec(name="tool_call_count_v1"), MetricSpec(name="token_usage_v1")]
    equality = [MetricSpec(name="equality"), *measured]
    cases = [
        make_case(case_id="right", expected_response="Paris", metrics=equality),
        make_case(case_id="wrong", expected_response="London", metrics=equality),
        make_case(case_id="measured_only", expected_response="Paris", metrics=measured),
        make_case(
            Turn(turn_id="t1", input="a", expected_response="Paris"),
            Turn(turn_id="t2", input="b", expected_response="Paris"),
            case_id="per_turn_measured_only",
            metrics=measured,
            score_per_turn=True,
        ),
    ]
    run_id = _run(sqlite_url, cases, f"{tmp_path / 'agent.py'}:agent", tmp_path)
    rows = _rows(sqlite_url, run_id)
    assert (rows["right"].passed, rows["right"].errors) == (True, [])
    assert rows["wrong"].passed is False  # equality alone decides
    for unscored in ("measured_only", "per_turn_measured_only"):  # values, but nothing that passes
        assert (rows[unscored].passed, rows[unscored].errors) == (False, [NOT_SCORED])
    with Session(get_engine(sqlite_url)) as session:
        stored = session.exec(select(MetricResultRow).where(MetricResultRow.run_id == run_id)).all()
    values = {(m.case_id, m.metric_name): m for m in stored}
    tokens = values[("right", "token_usage_v1")]
    assert (tokens.score, tokens.informational, tokens.threshold) == (120.0, True, None)
    assert values[("right", "tool_call_count_v1")].score == 1.0
    assert values[("right", "equality")].informational is False
    rolled = values[("per_turn_measured_only", "token_usage_v1")]
    assert (rolled.score, rolled.informational) == (120.0, True)  # per turn, averaged over both
    assert [t["score"] for t in rolled.details["turns"]] == [120.0, 120.0]


def test_the_turns_after_an_agent_error_run_and_are_scored_as_in_holodeck(
    sqlite_url: str, tmp_path: Path
) -> None:
    """HoloDeck records the error on the failed turn and runs the turns after it in the same
    session; the case fails, but the later turns' answers and scores are kept."""
    (tmp_path / "agent.py").write_text(
        "def agent(request):\n"
        "    if request.input == 'crash':\n"
        "        raise RuntimeError('fell over')\n"
        "    return f'{len(request.history)} before'\n"
    )
    (tmp_path / "agent.yaml").write_text(
        "evaluations:\n  metrics: [{type: standard, metric: equality}]\n"
        "test_cases:\n  - name: mid_failure\n    turns:\n"
        "      - {input: one, ground_truth: 0 before}\n"
        "      - {input: crash, ground_truth: anything}\n"
        "      - {input: three, ground_truth: 2 before}\n"
    )
    run_id = _run(
        sqlite_url, load_suite(tmp_path / "agent.yaml").cases, f"{tmp_path / 'agent.py'}:agent", tmp_path
    )
    row = _rows(sqlite_url, run_id)["mid_failure"]
    turns = [AgentTurn.model_validate(turn) for turn in row.turns]
    assert [(turn.response, turn.passed) for turn in turns] == [
        ("0 before", True),
        (None, False),
        ("2 before", True),
    ]
    assert "fell over" in turns[1].error and row.passed is False
    assert [[m.score for m in turn.metrics] for turn in turns] == [[1.0], [], [1.0]]


def test_each_turn_is_sent_its_own_files_up_to_ten_per_turn(sqlite_url: str, tmp_path: Path) -> None:
    """HoloDeck limits files per turn (6 + 6 over two turns is a valid file) and sends each turn
    its own files only."""
    for number in range(12):
        (tmp_path / f"f{number}.txt").write_text(f"file {number}\n")
    (tmp_path / "agent.py").write_text(
        "def agent(request):\n    return ' '.join(f.markdown_content.split()[1] for f in request.files)\n"
    )
    files = lambda numbers: ", ".join(f"{{path: f{n}.txt, type: text}}" for n in numbers)  # noqa: E731
    (tmp_path / "agent.yaml").write_text(
        "evaluations:\n  metrics: [{type: standard, metric: equality}]\n"
        "test_cases:\n  - name: twelve_files\n    turns:\n"
        f"      - {{input: one, ground_truth: 0 1 2 3 4 5, files: [{files(range(6))}]}}\n"
        f"      - {{input: two, ground_truth: 6 7 8 9 10 11, files: [{files(range(6, 12))}]}}\n"
        "      - {input: three}\n"
    )
    suite = load_suite(tmp_path / "agent.yaml")
    run_id = _run(sqlite_url, suite.cases, f"{tmp_path / 'agent.py'}:agent", tmp_path)
    row = _rows(sqlite_url, run_id)["twelve_files"]
    turns = [AgentTurn.model_validate(turn) for turn in row.turns]
    assert [turn.response for turn in turns] == ["0 1 2 3 4 5", "6 7 8 9 10 11", ""]
    assert [turn.passed for turn in turns[:2]] == [True, True]
