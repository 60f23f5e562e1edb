"""Numbers in tool arguments that JSON or a 64-bit column cannot hold are kept, said, and scored
as ADK scores them: an expected call with a whole number past 64 bits matches the same call
(google-adk compares `args` with ==, so it scores 1.0); NaN and the infinities, which a JSON
encoder writes as null without a word, are stored as the text JSON5 gives them, with a note."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.cli import main
from tests.resilience.harness import stored
from tests.resilience.test_integrity import database, fresh_postgres  # noqa: F401 - fixtures

AGENT = """
def agent(request):
    request.record_tool_call("measure", {"x": float("nan"), "top": float("inf"), "low": float("-inf")}, "ok")
    return "measured"
"""


def _evalset(folder: Path, args: dict) -> Path:
    invocation = {
        "invocation_id": "i1",
        "user_content": {"parts": [{"text": "Measure it"}]},
        "intermediate_data": {"tool_uses": [{"name": "measure", "args": args}]},
    }
    path = folder / "numbers.evalset.json"
    path.write_text(
        json.dumps({"eval_set_id": "numbers", "eval_cases": [{"eval_id": "a", "conversation": [invocation]}]})
    )
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0}}))
    return path


def test_nan_and_infinities_in_tool_arguments_are_stored_as_text_with_a_note(
    tmp_path: Path,
    database: str,  # noqa: F811 - the fixture imported above
) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    path = _evalset(tmp_path, {"x": 1.0})
    code = main(
        [
            "run",
            str(path),
            "--agent",
            f"{tmp_path / 'agent.py'}:agent",
            "--db",
            database,
            "--no-prefect",
            "--no-progress",
            "--output",
            str(tmp_path / "out"),
        ]
    )
    assert code == 1  # the arguments differ from the expected ones: a verdict, not an error
    row = stored(database).cases["a"]
    [call] = row.turns[0]["tool_calls"]
    assert call["args"] == {"x": "NaN", "top": "Infinity", "low": "-Infinity"}
    notes = "\n".join(row.notes or [])
    for text in ("NaN", "Infinity", "-Infinity"):
        assert f"{text} has no JSON form, stored as the text '{text}'" in notes
    assert "turns[0].tool_calls[0].args.x" in notes


BIG = 123456789012345678901234567890
BIG_AGENT = f"""
def agent(request):
    request.record_tool_call("measure", {{"n": {BIG}}}, {BIG})
    return "measured"
"""


def test_a_whole_number_past_64_bits_matches_as_in_adk_and_is_stored_with_a_note(
    tmp_path: Path,
    database: str,  # noqa: F811 - the fixture imported above
) -> None:
    (tmp_path / "agent.py").write_text(BIG_AGENT)
    path = _evalset(tmp_path, {"n": BIG})
    arguments = [
        "--agent",
        f"{tmp_path / 'agent.py'}:agent",
        "--db",
        database,
        "--no-prefect",
        "--no-progress",
    ]
    assert main(["run", str(path), *arguments, "--output", str(tmp_path / "out")]) == 0
    row = stored(database).cases["a"]
    [metric] = [m for m in stored(database).metrics if m.metric_name == "tool_trajectory_avg_score"]
    assert (metric.score, metric.passed) == (1.0, True)
    assert row.turns[0]["tool_calls"][0]["args"] == {"n": str(BIG)}
    assert any("past 64 bits" in note for note in row.notes or [])


@pytest.mark.needs_extra
def test_adk_scores_the_same_call_past_64_bits_as_a_match() -> None:
    """google-adk 2.13.0's own trajectory evaluator on the same call: 1.0."""
    pytest.importorskip("google.adk", reason="the adk extra (google-adk 2.13.0) is not installed")
    from google.adk.evaluation.eval_case import IntermediateData, Invocation
    from google.adk.evaluation.eval_metrics import EvalMetric
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
    from google.genai import types

    def invocation() -> Invocation:
        call = types.FunctionCall(name="measure", args={"n": BIG})
        user = types.Content(parts=[types.Part(text="Measure it")], role="user")
        return Invocation(user_content=user, intermediate_data=IntermediateData(tool_uses=[call]))

    evaluator = TrajectoryEvaluator(
        eval_metric=EvalMetric(metric_name="tool_trajectory_avg_score", threshold=1.0)
    )
    result = evaluator.evaluate_invocations([invocation()], [invocation()])
    assert result.overall_score == 1.0
