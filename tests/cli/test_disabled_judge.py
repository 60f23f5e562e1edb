"""A criterion switched off (`"llm_judge": {"enabled": false}`) is never asked for a key: the run
scores the other criteria. It used to fail every case with "no API key for the judge" and lose
the trajectory scores beside it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlmodel import Session, select

from proctor.cli import EXIT_PASSED, main
from proctor.models.tables import MetricResultRow
from proctor.storage import get_engine
from tests.conftest import EXAMPLE_SUITE

CASE = {
    "eval_id": "tokyo",
    "conversation": [
        {
            "invocation_id": "t1",
            "user_content": {"role": "user", "content": "What's the weather in Tokyo?"},
            "expected_tool_trajectory": [{"name": "get_weather", "args": {"city": "Tokyo"}}],
            "expected_final_response": {"role": "assistant", "content": "22°C with clear skies."},
        }
    ],
}


def test_a_disabled_judge_needs_no_key_and_the_other_criteria_are_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "PROCTOR_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    shutil.copy(EXAMPLE_SUITE.parent / "agent.py", tmp_path / "agent.py")
    criteria = {"trajectory_match": {"threshold": 1.0}, "llm_judge": {"enabled": False}}
    suite = {
        "eval_set_id": "s",
        "metadata": {"agent": "agent.py:weather_agent", "eval_config": {"criteria": criteria}},
        "eval_cases": [CASE],
    }
    (tmp_path / "s.evalset.json").write_text(json.dumps(suite))
    database = f"sqlite:///{tmp_path / 'r.db'}"
    code = main(["run", str(tmp_path / "s.evalset.json"), "--db", database, "--no-prefect", "--no-progress"])
    assert code == EXIT_PASSED
    with Session(get_engine(database)) as session:
        rows = session.exec(select(MetricResultRow)).all()
    assert [(row.metric_name, row.passed, row.error) for row in rows] == [("trajectory_match", True, None)]
