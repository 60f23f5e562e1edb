"""A judge's reply that could be read two ways is unreadable, never a score (issue 26, item 12):
`{"score": 1, "score": 5}` was read as 5 and `{"score": true}` as 1. A real run, its judge
a local OpenAI-compatible server answering by the case it is asked about."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from proctor.cli import EXIT_FAILED
from tests.fakes import FakeOpenAI, judged, prompt_of
from tests.resilience.test_stored_values import proctor, rows

REPLIES = {
    "twice": '{"score": 1, "reason": "poor", "score": 5}',
    "boolean": '{"score": true, "reason": "fine"}',
    "plain": judged(5, "right"),
}


def _answer(body: dict[str, Any]) -> str:
    prompt = prompt_of(body)
    return next(reply for case, reply in REPLIES.items() if f"question-{case}" in prompt)


def test_a_score_given_twice_or_as_true_is_refused_as_unreadable_and_not_cached(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("def agent(request):\n    return 'answer to ' + request.input\n")
    cases = "\n".join(
        f"  - {{name: {case}, input: 'question-{case}', ground_truth: 'answer to question-{case}'}}"
        for case in REPLIES
    )
    (tmp_path / "agent.yaml").write_text(
        f"name: replies\ntest_cases:\n{cases}\nevaluations:\n  model: {{name: judge-model}}\n"
        "  metrics:\n    - {metric: llm_judge, threshold: 0.5}\n"
    )
    url = f"sqlite:///{tmp_path / 'results.db'}"
    with FakeOpenAI(default=_answer) as judge:
        done = proctor(
            "run",
            str(tmp_path / "agent.yaml"),
            "--agent",
            f"{tmp_path / 'agent.py'}:agent",
            "--db",
            url,
            "--output",
            str(tmp_path / "reports"),
            PROCTOR_JUDGE_API_KEY="sk-test-judge-key",
            PROCTOR_JUDGE_BASE_URL=judge.base_url,
        )
    output = done.stdout + done.stderr
    assert done.returncode == EXIT_FAILED, output  # before: both read as scores, and passed
    stored = {
        case: (score, error)
        for case, score, error in rows(url, "SELECT case_id, score, error FROM metric_result")
    }
    assert stored["plain"] == (1.0, None), stored
    assert stored["twice"][0] is None and "gives 'score' more than once" in stored["twice"][1], stored
    assert stored["boolean"][0] is None and "score is true, not a number" in stored["boolean"][1], stored
    cached = [json.loads(reply) for (reply,) in rows(url, "SELECT reply FROM judge_cache")]
    assert cached == [json.loads(REPLIES["plain"])], cached  # only a readable reply is kept
