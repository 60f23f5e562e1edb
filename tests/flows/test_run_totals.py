"""Every run says what it spent: agent and judge tokens, cached judge calls, estimated cost,
in the CLI summary, the reports, `proctor history`, the Prefect artifact and Slack."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session

from proctor.cli import main
from proctor.costs import run_totals
from proctor.models.tables import EvalRun
from proctor.notify.digest import build_digest
from proctor.notify.slack import summary_blocks
from proctor.reporting.summary import summary_markdown
from proctor.storage import get_engine
from tests.fakes import FakeOpenAI, Fault, judged

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

SUITE = """
name: hours-agent
test_cases:
  - name: opening
    input: When do you open?
    ground_truth: We open at 9am.
evaluations:
  model: {name: judge-model}
  metrics:
    - metric: llm_judge
      threshold: 0.7
"""

AGENT = """
def agent(request):
    request.record_usage(prompt_tokens=120, completion_tokens=30)
    return "Doors open at nine."
"""


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, FakeOpenAI]]:
    (tmp_path / "agent.py").write_text(textwrap.dedent(AGENT))
    (tmp_path / "agent.yaml").write_text(SUITE)
    with FakeOpenAI(default=judged(5, "same")) as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield tmp_path, api


def _run(folder: Path, url: str, capsys, report: str) -> str:
    agent = f"{folder / 'agent.py'}:agent"
    args = ["run", str(folder / "agent.yaml"), "--agent", agent, "--db", url, "--no-progress"]
    main([*args, "--output", str(folder / report)])
    return capsys.readouterr().out


def _latest(url: str) -> EvalRun:
    from sqlmodel import col, select

    with Session(get_engine(url)) as session:
        return session.exec(select(EvalRun).order_by(col(EvalRun.started_at).desc())).first()


def test_a_run_reports_its_tokens_cache_and_cost(suite, sqlite_url: str, capsys, monkeypatch) -> None:
    folder, api = suite
    out = " ".join(_run(folder, sqlite_url, capsys, "first").split())
    spent = api.usage_sent[0]
    judge_tokens = spent["prompt_tokens"] + spent["completion_tokens"]
    assert f"agent tokens 150 · judge tokens {judge_tokens}" in out
    assert "0 of 1 judge calls cached" in out
    assert "estimated cost unknown (no price for the agent's model, judge-model)" in out
    report = (folder / "first" / "report.md").read_text()
    assert f"**Tokens**: agent 150, judge {judge_tokens} (0 saved by the cache)" in report
    assert "No baseline yet" in report
    html = (folder / "first" / "report.html").read_text()
    assert "estimated cost unknown" in html and "No baseline yet" in html

    prices = folder / "prices.json"
    prices.write_text(json.dumps({"judge-model": [1.0, 2.0]}))
    monkeypatch.setenv("PROCTOR_PRICES", str(prices))
    out = " ".join(_run(folder, sqlite_url, capsys, "second").split())  # answered from the cache
    assert "agent tokens 150 · judge tokens 0" in out and "1 of 1 judge calls cached" in out
    assert f"{judge_tokens} tokens saved" in out
    assert len(api.completions) == 1
    run = _latest(sqlite_url)
    with Session(get_engine(sqlite_url)) as session:
        totals = run_totals(session=session, run_id=run.id)
        artifact = summary_markdown(session=session, run=run)
        blocks = json.dumps(summary_blocks(build_digest(session=session, run=run, regression=None)))
    assert (totals.judge_tokens, totals.judge_saved_tokens, totals.cached_judge_calls) == (0, judge_tokens, 1)
    assert totals.cost_usd is None and totals.unpriced == ["the agent's model"]  # the judge is priced now
    for shown in (artifact.replace("\\", ""), blocks):
        assert "agent tokens 150" in shown and "1 of 1 judge calls cached" in shown

    main(["history", "--db", sqlite_url])
    history = capsys.readouterr().out
    spent = history.split("what each run spent")[1]
    rows = [line.split("│")[1:-1] for line in spent.splitlines() if line.count("│") == 6]
    cells = [[cell.strip() for cell in row] for row in rows]  # newest first
    assert [row[1:] for row in cells] == [
        ["150", "0", "1 (1)", "unknown"],
        ["150", str(judge_tokens), "1 (0)", "unknown"],
    ]


def test_a_priced_run_has_a_cost_and_an_unpriced_one_never_shows_zero(
    suite, sqlite_url: str, capsys, monkeypatch
) -> None:
    folder, api = suite
    (folder / "agent.py").write_text("def agent(request):\n    return 'Doors open at nine.'\n")
    prices = folder / "prices.json"
    prices.write_text(json.dumps({"judge-model": [1.0, 2.0]}))
    monkeypatch.setenv("PROCTOR_PRICES", str(prices))
    _run(folder, sqlite_url, capsys, "r")
    spent = api.usage_sent[0]
    with Session(get_engine(sqlite_url)) as session:
        totals = run_totals(session=session, run_id=_latest(sqlite_url).id)
    expected = (spent["prompt_tokens"] * 1.0 + spent["completion_tokens"] * 2.0) / 1_000_000
    assert totals.cost_usd == pytest.approx(expected) and totals.cost_usd > 0
    assert totals.cost_text == f"${expected:.4f}"


def _answer_as_agent_or_judge(body: dict) -> str:
    return "Doors open at nine." if body["model"] == "agent-model" else judged(5, "same")


def test_an_openai_agents_run_is_priced_with_the_prices_it_ran_with(
    tmp_path: Path, sqlite_url: str, capsys, monkeypatch
) -> None:
    (tmp_path / "agent.yaml").write_text(SUITE)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"agent-model": [2.0, 4.0], "judge-model": [1.0, 2.0]}))
    monkeypatch.setenv("PROCTOR_PRICES", str(prices))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAI(default=_answer_as_agent_or_judge) as api:
        api.script(Fault.status(503))  # the agent's first request: its client sends it again
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        (tmp_path / "bot.yaml").write_text(
            f'name: bot\nmodel: {{name: agent-model, endpoint: "{api.base_url}", api_key: "${{OPENAI_API_KEY}}"}}\n'
        )
        args = ["run", str(tmp_path / "agent.yaml"), "--agent", f"openai:{tmp_path / 'bot.yaml'}"]
        main([*args, "--db", sqlite_url, "--no-progress", "--output", str(tmp_path / "r")])
        requests = len(api.completions)
        sent = list(zip([c["body"]["model"] for c in api.completions[1:]], api.usage_sent, strict=True))
    rates = {"agent-model": (2.0, 4.0), "judge-model": (1.0, 2.0)}
    expected = (
        sum(u["prompt_tokens"] * rates[m][0] + u["completion_tokens"] * rates[m][1] for m, u in sent) / 1e6
    )
    assert {model for model, _ in sent} == {"agent-model", "judge-model"}
    out = " ".join(capsys.readouterr().out.split())
    assert f"estimated cost ${expected:.4f}" in out
    assert requests == len(sent) + 1 and "retried: agent 1, judge 0" in out  # the 503 shows
    run = _latest(sqlite_url)
    assert run.agent_model == "agent-model" and run.prices == {k: list(v) for k, v in rates.items()}

    prices.write_text(json.dumps({"agent-model": [900.0, 900.0]}))  # the reader's prices differ
    for readers_prices in (str(prices), None):
        if readers_prices is None:
            monkeypatch.delenv("PROCTOR_PRICES")
        with Session(get_engine(sqlite_url)) as session:
            totals = run_totals(session=session, run_id=run.id)
        assert totals.cost_usd == pytest.approx(expected) and totals.cost_text == f"${expected:.4f}"
