"""A HoloDeck suite's report.json validates against HoloDeck 0.7.1's own `TestReport`
(holodeck/models/test_result.py, from holodeck-ai), as HoloDeck's code writes it: every metric
result with its `kind`, the scale "0-1", a score where a metric errored, a judge's reasoning;
and still against Proctor's own model of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from proctor.cli import EXIT_FAILED
from proctor.models.holodeck import TestReport
from tests.fakes import FakeOpenAI, judged

AGENT = """
def agent(request):
    if request.input == "crash":
        raise RuntimeError("fell over")
    request.record_tool_call("lookup_order", {"order_id": 42}, {"status": "shipped"})
    return "Order 42 shipped."
"""

GRADER = """
def shipped(ctx):
    return {"score": 1.0 if "shipped" in ctx.agent_response else 0.0, "reason": "looked for shipped"}
"""

SUITE = """
name: orders
evaluations:
  model: {{provider: openai, name: judge-model, endpoint: "{endpoint}", api_key: "${{JUDGE_KEY}}"}}
  metrics:
    - {{type: standard, metric: equality, case_insensitive: true}}
    - {{type: standard, metric: bleu}}
    - {{type: standard, metric: numeric}}
    - {{type: geval, name: Helpful, criteria: Answers the question, evaluation_steps: [Check the answer]}}
    - {{type: rag, metric_type: faithfulness}}
    - {{type: code, grader: "graders.py:shipped", name: Shipped}}
test_cases:
  - name: single
    input: Where is order 42?
    ground_truth: Order 42 shipped.
    expected_tools: [lookup_order]
    retrieval_context: [Order 42 shipped on 3 May.]
    files: [{{path: order.txt, type: text}}]
  - name: conversation
    turns:
      - {{input: "Where is order 42?", ground_truth: order 42 shipped., expected_tools: [lookup_order]}}
      - {{input: crash, ground_truth: anything}}
      - {{input: "And now?", ground_truth: "42"}}
"""


VALIDATE = """
import json, sys
from holodeck.models.test_result import TestReport
report = TestReport.model_validate(json.load(sys.stdin))
print(json.dumps({
    "results": len(report.results),
    "total_tests": report.summary.total_tests,
    "responses": [turn.response for turn in report.results[1].turns],
    "kinds": {m.metric_name: m.kind for m in report.results[0].metric_results},
}))
"""


@pytest.fixture
def report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("JUDGE_KEY", "sk-judge")
    (tmp_path / "agent.py").write_text(textwrap.dedent(AGENT))
    (tmp_path / "graders.py").write_text(textwrap.dedent(GRADER))
    (tmp_path / "order.txt").write_text("Order 42: shipped on 3 May.\n")
    with FakeOpenAI(default=judged(4, "mostly right")) as api:
        (tmp_path / "agent.yaml").write_text(SUITE.format(endpoint=api.base_url))
        # its own process: the agent's failure and the run's process-wide state stay out of
        # the tests after this one
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from proctor.cli import main; sys.exit(main(sys.argv[1:]))",
                "run",
                str(tmp_path / "agent.yaml"),
                "--agent",
                f"{tmp_path / 'agent.py'}:agent",
                "--no-prefect",
                "--no-progress",
                "--db",
                f"sqlite:///{tmp_path / 'runs.db'}",
                "--output",
                str(tmp_path / "out"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "PREFECT_API_URL": ""},
        )
    assert done.returncode == EXIT_FAILED, done.stderr  # the conversation's agent fails on turn 2
    return json.loads((tmp_path / "out" / "report.json").read_text())


def test_the_report_is_written_as_holodeck_writes_its_own(report: dict) -> None:
    TestReport.model_validate(report)
    single, conversation = report["results"]
    kinds = {m["metric_name"]: m["kind"] for m in single["metric_results"]}
    assert kinds == {
        "equality": "standard",
        "bleu": "standard",
        "numeric": "standard",
        "Helpful": "geval",
        "faithfulness": "rag",
        "Shipped": "code",
    }
    assert {m["scale"] for m in single["metric_results"]} == {"0-1"}
    reasons = {m["metric_name"]: m.get("reasoning") for m in single["metric_results"]}
    assert reasons["Helpful"] == reasons["faithfulness"] == "mostly right" and reasons["bleu"] is None
    numeric = next(m for m in single["metric_results"] if m["metric_name"] == "numeric")
    assert (numeric["score"], numeric["passed"]) == (0.0, False)  # "Order 42 shipped." is no number
    turns = conversation["turns"]
    assert [turn.get("response") for turn in turns] == ["Order 42 shipped.", None, "Order 42 shipped."]
    assert "fell over" in turns[1]["errors"][0] and not conversation["passed"]
    assert all(m["kind"] for turn in turns for m in turn["metric_results"])


@pytest.mark.needs_extra  # CI runs it with holodeck-ai installed
def test_the_report_validates_against_holodecks_own_model(report: dict) -> None:
    from tests.upstream_holodeck import run_holodeck, skip_without_holodeck

    skip_without_holodeck()
    checked = run_holodeck(VALIDATE, report)
    assert checked["results"] == 2 and checked["total_tests"] == 2
    assert checked["responses"] == ["Order 42 shipped.", None, "Order 42 shipped."]
    kinds = checked["kinds"]
    assert kinds["faithfulness"] == "rag" and kinds["Helpful"] == "geval" and kinds["Shipped"] == "code"
