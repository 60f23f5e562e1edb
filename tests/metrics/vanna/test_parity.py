"""Proctor's Vanna evaluators, Vanna report and variant ranking against Vanna 2.0.2's own code.

Seeded generated datasets (every branch of Vanna's four evaluators: no outcome, an empty one,
each kind of miss, clamping, duplicates, its own and the case's limits, a failed agent, every
way a judge reply is read) are read by Vanna's `EvaluationDataset` and by Proctor's loader from
the same file. Each variant's behaviour on each case (tools, answer, UI components, time,
tokens, an error) is given to Vanna's evaluators as its `AgentResult` and to Proctor's scoring
as the agent's turn; the judge answers both the same reply for the same prompt (Vanna's through
a scripted `LlmService`, Proctor's through its judge client and the local fake OpenAI server).
Proctor's results are stored and read back as `proctor report --format vanna` and the variant
comparison read them, and asserted equal to Vanna's `EvaluationResult`s (score to 1e-9,
verdict, reasoning text), `TestCaseResult.overall_score()`, `EvaluationReport.average_score()`
and `ComparisonReport.get_best_variant()` rankings. Proctor's one documented difference, a
case whose agent failed fails even where only `EfficiencyEvaluator` scores it, is asserted
as such. Needs the `vanna` extra (`pip install -e '.[vanna]'`, which CI installs).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.needs_extra  # CI runs these again with the vanna extra installed
pytest.importorskip("vanna", reason="vanna is not installed (pip install -e '.[vanna]')")

from sqlalchemy import insert  # noqa: E402
from sqlmodel import Session  # noqa: E402
from vanna.components.rich.text import RichTextComponent  # noqa: E402
from vanna.core.components import UiComponent  # noqa: E402
from vanna.core.evaluation import (  # noqa: E402
    AgentResult,
    ComparisonReport,
    EfficiencyEvaluator,
    EvaluationDataset,
    EvaluationReport,
    LLMAsJudgeEvaluator,
    OutputEvaluator,
    TrajectoryEvaluator,
)
from vanna.core.evaluation import TestCaseResult as VannaCaseResult  # noqa: E402
from vanna.core.llm import LlmService  # noqa: E402
from vanna.core.llm.models import LlmResponse  # noqa: E402
from vanna.core.rich_component import ComponentType, RichComponent  # noqa: E402

from proctor.execution.turn_scoring import score_outcome, score_vanna_failure  # noqa: E402
from proctor.judges import Judge, JudgeClient  # noqa: E402
from proctor.loaders import load_suite  # noqa: E402
from proctor.metrics import REGISTRY, BoundMetric, MetricContext  # noqa: E402
from proctor.models.agentflow import ToolCall  # noqa: E402
from proctor.models.case import Case, MetricSpec  # noqa: E402
from proctor.models.outcome import AgentTurn, CaseOutcome, CaseState, TokenUsage  # noqa: E402
from proctor.models.tables import CaseResultRow, EvalRun, MetricResultRow, RunStatus  # noqa: E402
from proctor.reporting.comparison import compare  # noqa: E402
from proctor.reporting.vanna import vanna_report  # noqa: E402
from proctor.storage import get_engine  # noqa: E402
from proctor.storage.rows import case_row, metric_rows  # noqa: E402
from proctor.storage.runs import finish_run  # noqa: E402
from tests.fakes import FakeOpenAI, prompt_of  # noqa: E402

TOOLS = ["run_sql", "visualize_data", "search_docs", "drop_table", "send_email"]
WORDS = [
    "revenue",
    "Revenue",
    "SELECT",
    "region",
    "north",
    "error",
    "Straße",
    "STRASSE",
    "İstanbul",
    "ok",
    "",
]
TIMES = [0.0, 49.6, 50.0, 99.5, 100.0, 100.4, 100.5, 150.0, 250.0, 999.9, 1000.0, 2400.0]
TOKENS = [0, 10, 499, 500, 501, 2000]
COMPONENT_TYPES = ["rich_text", "text", "chart", "table"]
CRITERIA = "The answer states the revenue for the region asked about."
JUDGE_REPLIES = [
    "SCORE: 0.9\nPASSED: yes\nREASONING: Correct region and figure.",
    "SCORE: 0.9\nPASSED: no\nREASONING: Wrong region.",  # PASSED decides, not the score
    "SCORE: 0.3\nPASSED: true\nREASONING: lenient",
    "SCORE: 0.75\r\nPASSED: Pass\r\nREASONING: ok\r",
    "I think it is fine.",  # unreadable: 0.5, failed, the whole reply as reasoning
    "SCORE: n/a\nPASSED: yes",
    "REASONING: first\nSCORE: 1\nPASSED: no\nREASONING: second",
    "SCORE: 0.5 \nPASSED:yes",
    "",
    " SCORE: 0.9\nPASSED: yes",  # a line that does not start with SCORE: is not read
    "SCORE: 1e-1\nPASSED: nope\nREASONING: tiny",
    "SCORE: 0\nPASSED: YES\nSCORE: 0.8",
]

# Each dataset's evaluators, as the file names them and as Vanna's code builds them.
DATASETS: dict[str, list[Any]] = {
    "defaults": [],  # no `evaluators:`: Vanna's three
    "all_four": [
        "TrajectoryEvaluator",
        "OutputEvaluator",
        {"name": "EfficiencyEvaluator", "max_execution_time_ms": 100, "max_tokens": 500},
        {"name": "LLMAsJudgeEvaluator", "criteria": CRITERIA},
    ],
    "judge_and_time": [
        {"name": "EfficiencyEvaluator", "max_execution_time_ms": 250},
        {"name": "LLMAsJudgeEvaluator", "criteria": CRITERIA},
    ],
    "efficiency_only": ["EfficiencyEvaluator"],
    "output_only": ["OutputEvaluator"],
}
CASES_PER_DATASET = 40
VARIANTS = ["alpha", "beta", "alpha_again", "gamma"]  # alpha_again behaves as alpha: a tie


def judge_reply(prompt: str) -> str:
    """The same reply for the same prompt, whichever side asks."""
    return JUDGE_REPLIES[int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % len(JUDGE_REPLIES)]


class ScriptedJudge(LlmService):
    """Vanna's judge LLM, answering as the fake OpenAI server answers Proctor's judge."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def send_request(self, request):  # type: ignore[no-untyped-def]
        prompt = request.messages[0].content
        self.prompts.append(prompt)
        assert request.temperature == 0.0 and len(request.messages) == 1
        return LlmResponse(content=judge_reply(prompt))

    async def stream_request(self, request):  # type: ignore[no-untyped-def]
        raise NotImplementedError
        yield  # pragma: no cover

    async def validate_tools(self, tools):  # type: ignore[no-untyped-def]
        return []


def vanna_evaluators(entries: list[Any], judge: ScriptedJudge) -> list[Any]:
    if not entries:
        return [TrajectoryEvaluator(), OutputEvaluator(), EfficiencyEvaluator()]
    built = []
    for entry in entries:
        name, args = (entry, {}) if isinstance(entry, str) else (entry["name"], dict(entry))
        args.pop("name", None)
        if name == "LLMAsJudgeEvaluator":
            built.append(LLMAsJudgeEvaluator(judge_llm=judge, criteria=args["criteria"]))
        else:
            built.append(
                {
                    "TrajectoryEvaluator": TrajectoryEvaluator,
                    "OutputEvaluator": OutputEvaluator,
                    "EfficiencyEvaluator": EfficiencyEvaluator,
                }[name](**args)
            )
    return built


# -- generated material -------------------------------------------------------------------
def _some(rng: random.Random, pool: list[str], most: int) -> list[str]:
    return [rng.choice(pool) for _ in range(rng.randint(1, most))]  # repeats allowed, as in files


def generated_outcome(rng: random.Random) -> dict[str, Any] | None:
    roll = rng.random()
    if roll < 0.12:
        return None  # no expected_outcome: passes by default
    if roll < 0.18:
        return {}  # stated and empty: checks nothing
    outcome: dict[str, Any] = {}
    for field, pool, most in (
        ("tools_called", TOOLS, 5),
        ("tools_not_called", TOOLS, 3),
        ("final_answer_contains", WORDS, 4),
        ("final_answer_not_contains", WORDS, 3),
    ):
        pick = rng.random()
        if pick < 0.1:
            outcome[field] = []
        elif pick < 0.65:
            outcome[field] = _some(rng, pool, most)
    if rng.random() < 0.45:
        outcome["max_execution_time_ms"] = rng.choice([50, 100, 100.4, 250.0, 1000])
    if rng.random() < 0.3:
        low = rng.randint(0, 3)
        outcome["min_components"], outcome["max_components"] = low, low + rng.randint(0, 2)
    return outcome


def generated_case(rng: random.Random, number: int) -> dict[str, Any]:
    case: dict[str, Any] = {"id": f"case_{number:03d}", "message": f"Question {number}: {rng.choice(WORDS)}?"}
    if rng.random() < 0.3:
        case |= {"user_id": f"user{number}", "user_groups": ["analysts"]}
    outcome = generated_outcome(rng)
    if outcome is not None:
        case["expected_outcome"] = outcome
    return case


@dataclass(frozen=True)
class Behaviour:
    """What one variant's agent did on one case."""

    tools: list[str]
    answer: str
    components: list[tuple[str, str]]  # reported UI components; none: the answer is one text
    agent_ms: float
    tokens: int
    error: str | None


def generated_behaviour(rng: random.Random) -> Behaviour:
    components: list[tuple[str, str]] = []
    if rng.random() < 0.35:
        components = [
            (rng.choice(COMPONENT_TYPES), " ".join(rng.sample(WORDS, rng.randint(0, 3))))
            for _ in range(rng.randint(1, 4))
        ]
    return Behaviour(
        tools=[rng.choice(TOOLS) for _ in range(rng.randint(0, 4))],
        answer=" ".join(rng.sample(WORDS, rng.randint(0, 5))),
        components=components,
        agent_ms=rng.choice(TIMES),
        tokens=rng.choice(TOKENS),
        error=f"agent crashed on step {rng.randint(1, 9)}" if rng.random() < 0.08 else None,
    )


def shown_components(behaviour: Behaviour) -> list[tuple[str, str]]:
    if behaviour.components:
        return behaviour.components
    return [("rich_text", behaviour.answer)] if behaviour.answer else []


# -- Vanna's side ---------------------------------------------------------------------------
def vanna_component(kind: str, content: str) -> UiComponent:
    if kind in ("rich_text", "text"):
        return UiComponent(rich_component=RichTextComponent(content=content))
    return UiComponent(rich_component=RichComponent(type=ComponentType(kind), data={"title": content}))


def vanna_agent_result(case_id: str, behaviour: Behaviour) -> AgentResult:
    failed = behaviour.error is not None
    return AgentResult(
        test_case_id=case_id,
        components=[] if failed else [vanna_component(k, c) for k, c in shown_components(behaviour)],
        tool_calls=[{"tool_name": tool} for tool in behaviour.tools],
        execution_time_ms=behaviour.agent_ms,
        total_tokens=behaviour.tokens,
        error=behaviour.error,
    )


async def vanna_report_for(
    name: str, test_cases: list[Any], behaviours: list[Behaviour], evaluators: list[Any]
):
    results = []
    for test_case, behaviour in zip(test_cases, behaviours, strict=True):
        agent_result = vanna_agent_result(test_case.id, behaviour)
        evaluations = [await evaluator.evaluate(test_case, agent_result) for evaluator in evaluators]
        results.append(VannaCaseResult(test_case, agent_result, evaluations, behaviour.agent_ms))
    return EvaluationReport(agent_name=name, results=results, evaluators=evaluators)


def vanna_ranking(comparison: ComparisonReport) -> list[str]:
    """Vanna's `get_best_variant()` applied again to the variants left: its ranking."""
    left, ranking = dict(comparison.reports), []
    while left:
        best = ComparisonReport(variants=[], reports=left, test_cases=[]).get_best_variant("score")
        ranking.append(best)
        del left[best]
    return ranking


# -- Proctor's side -------------------------------------------------------------------------
def proctor_turn(message: str, behaviour: Behaviour) -> AgentTurn:
    return AgentTurn(
        turn_id="turn_1",
        input=message,
        response=None if behaviour.error else behaviour.answer,
        tool_calls=[ToolCall(name=tool, args={}) for tool in behaviour.tools],
        usage=TokenUsage(total_tokens=behaviour.tokens, completion_tokens=behaviour.tokens),
        metadata={"components": [{"type": k, "content": c} for k, c in behaviour.components]}
        if behaviour.components and not behaviour.error
        else {},
        error=behaviour.error,
    )


async def proctor_outcome(case: Case, behaviour: Behaviour, bind) -> CaseOutcome:  # type: ignore[no-untyped-def]
    """The case scored as the pipeline scores it, with the agent's turn and time as given."""
    turn = proctor_turn(case.first_input, behaviour)
    outcome = CaseOutcome(case_id=case.case_id, turns=[turn], agent_ms=behaviour.agent_ms)
    if behaviour.error:
        outcome.errors.append(f"agent failed on turn turn_1: {behaviour.error}")
        await score_vanna_failure(case, outcome, bind)
        outcome.state = CaseState.AGENT_FAILED
        return outcome
    context = MetricContext(case=case, turns=[turn], agent_ms=behaviour.agent_ms)
    await score_outcome(case, outcome, context, bind)
    outcome.state = CaseState.EVALUATION_FAILED if outcome.errors else CaseState.COMPLETE
    return outcome


def store_run(
    url: str, suite_name: str, variant: str, cases: list[Case], outcomes: list[CaseOutcome]
) -> uuid.UUID:
    engine = get_engine(url)
    with Session(engine) as session:
        run = EvalRun(
            suite_id=suite_name,
            suite_name=suite_name,
            suite_path=f"{suite_name}.dataset.json",
            source_format="vanna",
            agent="agent.py:agent",
            variant=variant,
            proctor_version="test",
        )
        session.add(run)
        session.commit()
        run_id = run.id
        for position, (case, outcome) in enumerate(zip(cases, outcomes, strict=True)):
            session.execute(insert(CaseResultRow.__table__), [case_row(run_id, case, outcome, position)])
            rows = metric_rows(run_id, case, outcome)
            if rows:
                session.execute(insert(MetricResultRow.__table__), rows)
        finish_run(session=session, run_id=run_id, status=RunStatus.COMPLETED)
        session.commit()
    return run_id


# -- the comparison ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def judge_api():
    with FakeOpenAI(default=lambda body: judge_reply(prompt_of(body))) as server:
        yield server


@pytest.mark.parametrize("dataset", sorted(DATASETS))
def test_proctor_scores_ranks_and_reports_as_vanna_does(
    dataset: str, judge_api: FakeOpenAI, tmp_path: Path, sqlite_url: str
) -> None:
    compare_with_vanna(dataset, judge_api, tmp_path, sqlite_url)


def compare_with_vanna(dataset: str, judge_api: FakeOpenAI, tmp_path: Path, sqlite_url: str) -> list[str]:
    """One dataset scored, ranked and reported by both; Vanna's reasons for every evaluation."""
    rng = random.Random(f"vanna-parity-{dataset}")
    raw_cases = [generated_case(rng, number) for number in range(CASES_PER_DATASET)]
    document = {"dataset": {"name": dataset, "test_cases": raw_cases}}
    if DATASETS[dataset]:
        document["dataset"]["evaluators"] = DATASETS[dataset]
    path = tmp_path / f"{dataset}.dataset.json"
    path.write_text(json.dumps(document))
    if not DATASETS[dataset]:  # a file Vanna itself saved (its `save_yaml`), read by both
        path = tmp_path / f"{dataset}.dataset.yaml"
        EvaluationDataset.from_json(str(path.with_suffix(".json"))).save_yaml(str(path))
    read = EvaluationDataset.from_yaml if path.suffix == ".yaml" else EvaluationDataset.from_json
    vanna_cases = read(str(path)).test_cases  # Vanna's own loader
    cases = load_suite(path).cases  # Proctor's
    behaviours = {name: [generated_behaviour(rng) for _ in raw_cases] for name in VARIANTS}
    behaviours["alpha_again"] = behaviours["alpha"]

    judge = ScriptedJudge()
    evaluators = vanna_evaluators(DATASETS[dataset], judge)
    client = JudgeClient(base_url=judge_api.base_url, api_key="sk-test")

    def bind(spec: MetricSpec) -> BoundMetric:
        metric = REGISTRY.build(spec)
        proctor_judge = (
            Judge.for_spec(spec, client, None, default_model="judge-model", timeout_s=30)
            if metric.kind == "llm"
            else None
        )
        return BoundMetric(spec, metric, proctor_judge)

    async def score_every_variant() -> dict[str, Any]:
        """Both sides, in one event loop (the judge client's connections belong to it)."""
        done = {}
        for name in VARIANTS:
            report = await vanna_report_for(name, vanna_cases, behaviours[name], evaluators)
            outcomes = [
                await proctor_outcome(c, b, bind) for c, b in zip(cases, behaviours[name], strict=True)
            ]
            done[name] = (report, outcomes)
        await client.aclose()
        return done

    asked_before = len(judge_api.completions)
    scored = asyncio.run(score_every_variant())
    reports = {name: report for name, (report, _) in scored.items()}
    run_ids = [store_run(sqlite_url, dataset, name, cases, scored[name][1]) for name in VARIANTS]
    vanna_comparison = ComparisonReport(variants=[], reports=reports, test_cases=vanna_cases)

    # The judge was asked Vanna's prompt, word for word, as often as Vanna asked it.
    proctor_prompts = [prompt_of(r["body"]) for r in judge_api.completions[asked_before:]]
    assert sorted(proctor_prompts) == sorted(judge.prompts)

    compared_evaluations = failed_agent_differences = 0
    seen_reasons: list[str] = []
    with Session(get_engine(sqlite_url)) as session:
        for name, run_id in zip(VARIANTS, run_ids, strict=True):
            run = session.get(EvalRun, run_id)
            proctor = json.loads("".join(vanna_report(session=session, run=run)))["results"]
            vanna = reports[name].results
            assert [r["test_case"]["id"] for r in proctor] == [r.test_case.id for r in vanna]
            for ours, theirs in zip(proctor, vanna, strict=True):
                where = f"{dataset}/{name}/{theirs.test_case.id}"
                assert [e["evaluator_name"] for e in ours["evaluations"]] == [
                    type(e).__name__ for e in evaluators
                ], where
                for mine, vannas in zip(ours["evaluations"], theirs.evaluations, strict=True):
                    assert mine["score"] == pytest.approx(vannas.score, abs=1e-9), where
                    assert (mine["passed"], mine["reasoning"]) == (vannas.passed, vannas.reasoning), where
                    seen_reasons.append(vannas.reasoning)
                    compared_evaluations += 1
                assert ours["overall_score"] == pytest.approx(theirs.overall_score(), abs=1e-9), where
                # Proctor's one difference: a case whose agent failed fails, whatever scored it
                failed_agent = theirs.agent_result.error is not None
                assert ours["overall_passed"] is (theirs.overall_passed() and not failed_agent), where
                failed_agent_differences += failed_agent and theirs.overall_passed()
        comparison = compare(session=session, run_ids=run_ids)

    rows = {row.variant: row for row in comparison.rows}
    for name in VARIANTS:
        assert rows[name].mean_score == pytest.approx(reports[name].average_score(), abs=1e-9)
        passed = sum(r.overall_passed() and r.agent_result.error is None for r in reports[name].results)
        assert rows[name].pass_rate == pytest.approx(100.0 * passed / len(raw_cases), abs=1e-9)
    assert comparison.best == vanna_comparison.get_best_variant("score")
    assert comparison.ranking == vanna_ranking(vanna_comparison)
    assert comparison.ranking.index("alpha") < comparison.ranking.index("alpha_again")  # tie: first given

    assert compared_evaluations >= CASES_PER_DATASET * len(VARIANTS)
    if dataset == "efficiency_only":  # the difference is exercised, and only there
        assert failed_agent_differences > 0
    return seen_reasons


EVERY_BRANCH = [
    "No expected outcome specified, passing by default",
    "Agent execution failed: ",
    "Trajectory evaluation: All expected tools called, no unexpected tools",
    "was not called",
    "Unexpected tool '",
    "Output evaluation: All expected content present, no forbidden content",
    "not found in output",
    "found in output",
    "Efficiency evaluation: Within resource limits",
    "exceeded test case limit",
    "ms exceeded limit",
    "Token usage ",
    "Correct region and figure.",
    "Wrong region.",
    "I think it is fine.",
    "SCORE: n/a\nPASSED: yes",
]


def test_the_generated_cases_reach_every_branch_of_vannas_evaluators(
    judge_api: FakeOpenAI, tmp_path: Path
) -> None:
    """What the comparisons cover, each dataset compared again here: this test may run in
    another process than theirs (pytest -n)."""
    reasons = []
    for dataset in sorted(DATASETS):
        folder = tmp_path / dataset
        folder.mkdir()
        reasons += compare_with_vanna(dataset, judge_api, folder, f"sqlite:///{folder / 'results.db'}")
    assert [branch for branch in EVERY_BRANCH if branch not in "\n".join(reasons)] == []
