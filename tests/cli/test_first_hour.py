"""What a newcomer meets in the first hour: each error says what is wrong and what to do next."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.cli import EXIT_BAD_INPUT, EXIT_PASSED, main

AGENT = "def agent(request):\n    return 'Sunny.'\n"


def _suite(folder: Path, *, agent: bool = False) -> Path:
    (folder / "agent.py").write_text(AGENT)
    turn = {
        "invocation_id": "t1",
        "user_content": {"role": "user", "content": "Weather?"},
        "expected_final_response": {"role": "assistant", "content": "Sunny."},
    }
    suite = {"eval_set_id": "mine", "eval_cases": [{"eval_id": "c1", "conversation": [turn]}]}
    if agent:
        suite["metadata"] = {"agent": "agent.py:agent"}
    path = folder / "mine.evalset.json"
    path.write_text(json.dumps(suite))
    return path


def _run(suite: Path, folder: Path, *options: str) -> int:
    db = f"sqlite:///{folder / 'r.db'}"
    return main(
        [
            "run",
            str(suite),
            "--db",
            db,
            "--no-prefect",
            "--no-progress",
            "--output",
            str(folder / "out"),
            *options,
        ]
    )


def test_a_judge_from_agentflows_default_criteria_says_where_it_came_from_and_how_to_choose(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "PROCTOR_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    suite = _suite(tmp_path)
    assert _run(suite, tmp_path, "--agent", f"{tmp_path / 'agent.py'}:agent") == EXIT_BAD_INPUT
    error = " ".join(capsys.readouterr().err.split())
    assert "metric 'llm_judge': no API key for the judge" in error
    assert "one of agentflow's default criteria" in error and "--config FILE" in error
    # what it says to do works: criteria of one's own, no judge, the run goes
    (tmp_path / "eval_config.json").write_text(json.dumps({"criteria": {"response_match": 0.7}}))
    assert _run(suite, tmp_path, "--agent", f"{tmp_path / 'agent.py'}:agent") == EXIT_PASSED


def test_variants_without_agent_run_each_variant_and_a_bad_one_is_named_as_given(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    suite = _suite(tmp_path)
    (tmp_path / "eval_config.json").write_text(json.dumps({"criteria": {"response_match": 0.7}}))
    good = f"{tmp_path / 'agent.py'}:agent"
    assert _run(suite, tmp_path, "--variant", f"a={good}", "--variant", f"b={good}") == EXIT_PASSED
    assert "best variant" in capsys.readouterr().out
    assert _run(
        suite, tmp_path, "--variant", f"a={good}", "--variant", f"b={tmp_path / 'agent.py'}:nope"
    ) == (EXIT_BAD_INPUT)
    error = " ".join(capsys.readouterr().err.split())
    assert f"--variant b={tmp_path / 'agent.py'}:nope" in error and "metadata.agent" not in error


def test_a_mistyped_agent_or_metric_is_answered_with_what_to_write_instead(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A newcomer's typos: the attribute after the colon, the agent file's path, a metric's name.
    Each error names what exists, so the fix can be copied from it."""
    monkeypatch.chdir(tmp_path)
    suite = _suite(tmp_path)
    (tmp_path / "eval_config.json").write_text(json.dumps({"criteria": {"respnse_match": 0.7}}))
    assert _run(suite, tmp_path, "--agent", "agent.py:agent") == EXIT_BAD_INPUT
    said = " ".join(capsys.readouterr().err.split())
    assert "unknown metric 'respnse_match'; did you mean 'response_match'?" in said
    (tmp_path / "eval_config.json").write_text(json.dumps({"criteria": {"response_match": 0.7}}))
    assert _run(suite, tmp_path, "--agent", "agent.py:agnet") == EXIT_BAD_INPUT
    said = " ".join(capsys.readouterr().err.split())
    assert "agent.py has no attribute 'agnet'; it defines agent" in said
    assert _run(suite, tmp_path, "--agent", "agents/agent.py:agent") == EXIT_BAD_INPUT
    said = " ".join(capsys.readouterr().err.split())
    assert f"file agents/agent.py not found (a relative path is read from {tmp_path})" in said


def test_a_misspelt_field_in_a_suite_says_what_was_meant_or_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    suite = _suite(tmp_path)
    written = json.loads(suite.read_text())
    written["eval_set_idd"] = written.pop("eval_set_id")  # beside a required field now missing
    written["eval_cases"][0]["conversaton"] = written["eval_cases"][0]["conversation"]
    suite.write_text(json.dumps(written))
    assert _run(suite, tmp_path, "--agent", f"{tmp_path / 'agent.py'}:agent") == EXIT_BAD_INPUT
    said = " ".join(capsys.readouterr().err.split())
    assert "eval_set_idd: Extra inputs are not permitted; found 'mine'; did you mean 'eval_set_id'" in said
    assert "eval_cases[0].conversaton: Extra inputs are not permitted" in said
    assert "remove it, or correct its spelling" in said


def test_a_misspelt_metadata_agent_is_pointed_at(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    suite = _suite(tmp_path)
    written = json.loads(suite.read_text())
    written["metadata"] = {"agnet": "agent.py:agent"}
    suite.write_text(json.dumps(written))
    (tmp_path / "eval_config.json").write_text(json.dumps({"criteria": {"response_match": 0.7}}))
    assert _run(suite, tmp_path) == EXIT_BAD_INPUT
    said = " ".join(capsys.readouterr().err.split())
    assert "no agent: pass --agent" in said and "(its metadata has 'agnet': rename it 'agent')" in said


def test_a_suite_path_not_found_says_where_it_was_looked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _run(Path("evals/mine.evalset.json"), tmp_path, "--agent", "agent.py:agent") == EXIT_BAD_INPUT
    said = " ".join(capsys.readouterr().err.split())
    assert (
        f"evals/mine.evalset.json: file not found in {tmp_path} (where a relative path is read from)" in said
    )
    assert main(["validate", "evals/"]) == EXIT_BAD_INPUT
    assert f"evals: file not found in {tmp_path}" in " ".join(capsys.readouterr().err.split())


def test_no_prefect_says_why_the_run_is_not_a_flow_run_when_an_api_is_configured(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # configured; never called
    suite = _suite(tmp_path, agent=True)
    (tmp_path / "eval_config.json").write_text(json.dumps({"criteria": {"response_match": 0.7}}))
    assert _run(suite, tmp_path) == EXIT_PASSED
    said = " ".join(capsys.readouterr().err.split())
    assert "not a Prefect flow run (--no-prefect)" in said and "no Prefect API configured" not in said
