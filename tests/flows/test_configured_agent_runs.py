"""A HoloDeck agent.yaml that defines its agent runs end to end without --agent."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest
from sqlmodel import Session, select

from proctor.flows.evaluate import EvaluationRequest, run_evaluation
from proctor.models.tables import CaseResultRow
from proctor.storage import get_engine
from tests.fakes import FakeOpenAI

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]


def _model_turn(body: dict):
    """Call get_weather first; answer once the tool result is in the conversation."""
    tool_messages = [m for m in body["messages"] if m["role"] == "tool"]
    if not tool_messages:
        city = "Tokyo" if "Tokyo" in body["messages"][-1]["content"] else "Oslo"
        return {"tool_calls": [{"name": "get_weather", "arguments": {"city": city}}]}
    return f"It is {tool_messages[-1]['content']} there."


def test_the_agent_yaml_is_the_agent(tmp_path: Path, sqlite_url: str, monkeypatch) -> None:
    with FakeOpenAI(default=_model_turn) as api:
        monkeypatch.setenv("WEATHER_MODEL_KEY", "sk-model")
        (tmp_path / "tools.py").write_text("def get_weather(city):\n    return f'{city}: 22C'\n")
        (tmp_path / "agent.yaml").write_text(
            textwrap.dedent(f"""
            name: weather-bot
            model: {{name: weather-model, endpoint: "{api.base_url}", api_key: "${{WEATHER_MODEL_KEY}}"}}
            instructions: Answer with the tool's result.
            tools:
              - {{name: get_weather, parameters: {{type: object, properties: {{city: {{type: string}}}}}}, function: tools.py:get_weather}}
            evaluations:
              metrics:
                - {{metric: contains, values: ["22C"]}}
            test_cases:
              - {{name: tokyo, input: "Weather in Tokyo?", expected_tools: [get_weather]}}
              - {{name: oslo, input: "Weather in Oslo?", expected_tools: [get_forecast]}}
        """)
        )
        summary = asyncio.run(
            run_evaluation(
                EvaluationRequest(
                    suite=str(tmp_path / "agent.yaml"),
                    database_url=sqlite_url,
                    report_dir=str(tmp_path / "r"),
                )
            )
        )
    assert (summary.total, summary.passed) == (2, 1)  # oslo expected a tool the agent never calls
    with Session(get_engine(sqlite_url)) as session:
        rows = {
            r.case_id: r
            for r in session.exec(select(CaseResultRow).where(CaseResultRow.run_id == summary.run_id))
        }
    assert rows["tokyo"].response == "It is Tokyo: 22C there." and rows["tokyo"].tools_matched is True
    assert rows["tokyo"].tool_calls == [
        {"name": "get_weather", "args": {"city": "Tokyo"}, "result": "Tokyo: 22C"}
    ]
    assert rows["oslo"].tools_matched is False and rows["tokyo"].total_tokens > 0
