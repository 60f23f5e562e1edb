"""An ADK eval set scored on an ADK agent package run by `--agent adk:...` (google-adk's Runner)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from sqlmodel import Session, select

from proctor.flows.evaluate import EvaluationRequest, run_evaluation
from proctor.models.tables import CaseResultRow
from proctor.storage import get_engine
from tests.agents.test_adk_agent import ROLL, _package
from tests.fakes import FakeOpenAI

pytestmark = [pytest.mark.flow, pytest.mark.needs_extra, pytest.mark.usefixtures("prefect_harness")]


def _case(eval_id: str, question: str, sides: int) -> dict:
    return {
        "eval_id": eval_id,
        "conversation": [
            {
                "invocation_id": "i1",
                "user_content": {"role": "user", "parts": [{"text": question}]},
                "final_response": {"role": "model", "parts": [{"text": "You rolled a 4."}]},
                "intermediate_data": {"tool_uses": [{"name": "roll_die", "args": {"sides": sides}}]},
            }
        ],
    }


def _model_turn(body: dict) -> object:
    """A tool call first; the answer once the tool's result is in the conversation."""
    return "You rolled a 4." if body["messages"][-1]["role"] == "tool" else ROLL


def test_an_adk_agent_is_scored_on_its_eval_set(tmp_path: Path, sqlite_url: str, monkeypatch) -> None:
    suite = tmp_path / "dice.test.json"
    evalset = {
        "eval_set_id": "dice",
        "eval_cases": [_case("roll", "Roll a d6", 6), _case("d20", "Roll a d20", 20)],
    }
    suite.write_text(json.dumps(evalset))
    with FakeOpenAI(default=_model_turn) as api:
        monkeypatch.setenv("ADK_TEST_BASE_URL", api.base_url)
        request = EvaluationRequest(
            suite=str(suite),
            agent=f"adk:{_package(tmp_path)}",
            database_url=sqlite_url,
            report_dir=str(tmp_path / "r"),
        )
        summary = asyncio.run(run_evaluation(request))
    assert (summary.total, summary.passed) == (2, 1)  # the d20 case expects sides 20; the agent rolls a d6
    with Session(get_engine(sqlite_url)) as session:
        rows = {
            r.case_id: r
            for r in session.exec(select(CaseResultRow).where(CaseResultRow.run_id == summary.run_id))
        }
    assert rows["roll"].response == "You rolled a 4."
    assert rows["roll"].tool_calls == [
        {
            "name": "roll_die",
            "args": {"sides": 6},
            "call_id": rows["roll"].tool_calls[0]["call_id"],
            "result": {"result": 4, "sides": 6},
        }
    ]
    assert rows["roll"].total_tokens > 0 and rows["d20"].passed is False
