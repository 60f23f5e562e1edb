"""A Vanna run reported as Vanna reports it: the Vanna report agrees with the run's verdicts,
and variants are ranked as Vanna's `ComparisonReport` ranks them (by average score, not pass rate)."""

from __future__ import annotations

import asyncio
import csv
import json
import uuid
from pathlib import Path

from sqlmodel import Session

from proctor.execution.pipeline import CaseWork, RunSettings, release_runtime, run_chunk, runtime_for
from proctor.loaders import load_suite
from proctor.models.tables import EvalRun, RunStatus
from proctor.reporting.comparison import VANNA_RULE, compare, write_comparison
from proctor.reporting.vanna import vanna_report
from proctor.storage import get_engine
from proctor.storage.runs import finish_run

OUTCOME = (
    "{tools_called: [run_sql, chart], tools_not_called: [drop_table], "
    "final_answer_contains: [revenue], final_answer_not_contains: [error]}"
)
RANKED = f"""
dataset:
  name: sales
  test_cases:
    - {{id: one, message: one, expected_outcome: {OUTCOME}}}
    - {{id: two, message: two, expected_outcome: {OUTCOME}}}
"""
# Passes case one (1.0) and wrecks case two (0, 0, 1: 1/3): half its cases pass, average 0.667.
UNEVEN = """
def agent(request):
    if request.input == "one":
        request.record_tool_call("run_sql"); request.record_tool_call("chart")
        return "revenue is 5"
    request.record_tool_call("drop_table")
    return "error"
"""
# Half right on both (0.75, 0.5, 1: 0.75 each): no case passes, average 0.75: Vanna's best.
STEADY = """
def agent(request):
    request.record_tool_call("run_sql")
    return "done"
"""

CRASHING = """
dataset:
  name: odd
  evaluators: [EfficiencyEvaluator]
  test_cases:
    - {id: crash, message: crash}
"""
UNSCORED = """
dataset:
  name: odd
  evaluators: [proctor_component_bounds]
  test_cases:
    - {id: bounded, message: hi, expected_outcome: {max_components: 1}}
"""
CRASHES = """
def agent(request):
    if request.input == "crash":
        raise RuntimeError("database is down")
    return "hi"
"""


def _run(url: str, folder: Path, suite_text: str, agent_code: str, variant: str) -> uuid.UUID:
    """The suite run with the agent, stored as one variant's run, closed with its tallies."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agent.py").write_text(agent_code)
    (folder / "d.dataset.yaml").write_text(suite_text)
    suite = load_suite(folder / "d.dataset.yaml")
    agent = f"{folder / 'agent.py'}:agent"
    engine = get_engine(url)
    with Session(engine) as session:
        run = EvalRun(
            suite_id=suite.suite_id,
            suite_name=suite.name,
            suite_path=suite.path,
            source_format=suite.source_format,
            agent=agent,
            variant=variant,
            proctor_version="test",
        )
        session.add(run)
        session.commit()
        run_id = run.id
    settings = RunSettings(
        run_id=run_id, database_url=url, agent=agent, suite_dir=str(folder), concurrency=2, agent_timeout_s=30
    )
    asyncio.run(run_chunk([CaseWork(i, case) for i, case in enumerate(suite.cases)], runtime_for(settings)))
    release_runtime(run_id)
    with Session(engine) as session:
        finish_run(session=session, run_id=run_id, status=RunStatus.COMPLETED)
        session.commit()
    return run_id


def _report(url: str, run_id: uuid.UUID) -> dict:
    with Session(get_engine(url)) as session:
        return json.loads("".join(vanna_report(session=session, run=session.get(EvalRun, run_id))))


def test_variants_are_ranked_by_vannas_average_score_not_pass_rate(sqlite_url: str, tmp_path: Path) -> None:
    uneven = _run(sqlite_url, tmp_path / "uneven", RANKED, UNEVEN, "uneven")
    steady = _run(sqlite_url, tmp_path / "steady", RANKED, STEADY, "steady")
    with Session(get_engine(sqlite_url)) as session:
        comparison = compare(session=session, run_ids=[uneven, steady])
    rows = {row.variant: row for row in comparison.rows}
    assert (rows["uneven"].pass_rate, rows["steady"].pass_rate) == (50.0, 0.0)
    assert rows["uneven"].mean_score == (1.0 + 1 / 3) / 2 and rows["steady"].mean_score == 0.75
    assert comparison.best == "steady" and comparison.ranking == ["steady", "uneven"]
    assert comparison.rule == VANNA_RULE
    with Session(get_engine(sqlite_url)) as session:
        write_comparison(session=session, run_ids=[uneven, steady], directory=tmp_path / "out")
    table = list(csv.DictReader((tmp_path / "out" / "comparison.csv").open()))
    assert [(r["variant"], r["best"], r["rank"]) for r in table] == [
        ("uneven", "False", "2"),
        ("steady", "True", "1"),
    ]
    # the ranking is a paragraph of its own: a table straight after a line is no table in MkDocs
    assert "1. steady; 2. uneven\n\n| Variant |" in (tmp_path / "out" / "comparison.md").read_text()


def test_a_tie_goes_to_the_variant_given_first_as_in_vanna(sqlite_url: str, tmp_path: Path) -> None:
    later = _run(sqlite_url, tmp_path / "a", RANKED, STEADY, "first")
    again = _run(sqlite_url, tmp_path / "b", RANKED, STEADY, "second")
    with Session(get_engine(sqlite_url)) as session:
        assert compare(session=session, run_ids=[later, again]).ranking == ["first", "second"]
        assert compare(session=session, run_ids=[again, later]).ranking == ["second", "first"]


def test_the_vanna_report_gives_the_runs_verdict_and_why(sqlite_url: str, tmp_path: Path) -> None:
    """Vanna's own `overall_passed()` would say True for both: the efficiency evaluator ignores
    the agent's crash, and no evaluation at all is `all([])`. The run failed both, and so does
    the report, with the run's reasons."""
    (crash,) = _report(sqlite_url, _run(sqlite_url, tmp_path / "crash", CRASHING, CRASHES, "v"))["results"]
    assert [(e["evaluator_name"], e["passed"]) for e in crash["evaluations"]] == [
        ("EfficiencyEvaluator", True)
    ]
    assert crash["overall_passed"] is False and "database is down" in " ".join(crash["errors"])
    (bounded,) = _report(sqlite_url, _run(sqlite_url, tmp_path / "bounds", UNSCORED, CRASHES, "v"))["results"]
    assert bounded["evaluations"] == [] and bounded["overall_passed"] is False
    assert any(error.startswith("not scored") for error in bounded["errors"])


def test_the_vanna_report_scores_are_vannas_overall_scores(sqlite_url: str, tmp_path: Path) -> None:
    report = _report(sqlite_url, _run(sqlite_url, tmp_path, RANKED, UNEVEN, "uneven"))
    results = {r["test_case"]["id"]: r for r in report["results"]}
    assert (results["one"]["overall_passed"], results["one"]["overall_score"]) == (True, 1.0)
    two = results["two"]
    assert (two["overall_passed"], two["overall_score"]) == (False, 1 / 3)
    assert [e["reasoning"] for e in two["evaluations"]][:2] == [
        "Trajectory evaluation: Expected tool 'run_sql' was not called; Expected tool 'chart' was not "
        "called; Unexpected tool 'drop_table' was called",
        "Output evaluation: Expected content 'revenue' not found in output; Forbidden content 'error' "
        "found in output",
    ]


def test_the_markdown_report_says_why_a_case_without_outcome_passed(sqlite_url: str, tmp_path: Path) -> None:
    from proctor.reporting.reports import markdown_report

    suite = "dataset:\n  name: chat\n  test_cases:\n    - {id: hello, message: hi}\n"
    run_id = _run(sqlite_url, tmp_path, suite, STEADY, "v")
    with Session(get_engine(sqlite_url)) as session:
        text = "".join(markdown_report(session=session, run=session.get(EvalRun, run_id)))
    assert (
        "PASSED" in text and text.count("(No expected outcome specified, passing by default)") == 2
    )  # trajectory, output
