"""HoloDeck's deterministic and NLP metrics scored by Proctor and by holodeck-ai 0.7.1's own
evaluators on the same answers: equal scores (to 1e-9) and equal verdicts.

Proctor's side is what a run does: the agent.yaml read by the loader, each metric built from
its spec and given its threshold. HoloDeck's side is its evaluator (`EqualityEvaluator`,
`NumericEvaluator`, `BLEUEvaluator` from holodeck.lib.evaluators) and its executor's verdict
rule (`TestExecutor._run_evaluations`: the written threshold if any, else the evaluator's
`passed`). HoloDeck's ROUGE calls Hugging Face `evaluate.load("rouge")`, which fetches its
script from the Hub and cannot run offline: its computation (rouge-score's `RougeScorer` with
`use_stemmer=False` and no tokenizer, one prediction, so the bootstrap's mid is the score
itself) is called here directly.

holodeck-ai is installed without its dependencies (CI: .ci/run, half 2): only deepeval and the
few packages its evaluators import are needed, and its full set would replace Proctor's openai.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.needs_extra  # CI runs these with holodeck-ai installed
from tests.upstream_holodeck import run_holodeck, skip_without_holodeck  # noqa: E402

skip_without_holodeck()

from rouge_score import rouge_scorer  # noqa: E402

from proctor.loaders import load_suite  # noqa: E402
from proctor.metrics import REGISTRY, BoundMetric  # noqa: E402
from tests.factories import agent_turn, make_case, make_ctx  # noqa: E402

PAIRS = [  # (agent's answer, ground truth)
    ("The cat sat on the mat.", "The cat is on the mat."),
    ("Paris is the capital of France.", "The capital of France is Paris."),
    ("yes", "yes"),
    ("Yes", "yes"),
    ("YES!", "yes"),
    ("STRASSE", "straße"),
    ("  Forty-two  \n", "forty-two"),
    ("1557", "1557"),
    ("1,557", "1557"),
    ("1 557", "1557"),
    ("35.8%", "0.358"),
    ("0.358", "35.8%"),
    ("12, 1557 or 99999", "1557"),
    ("The answer is 1557", "1557"),
    ("1557.0000001", "1557"),
    ("1e3", "1000"),
    ("nan", "nan"),
    ("inf", "inf"),
    ("no", "yes"),
    ("Zürich, München und Köln", "Zurich, Munchen und Koln"),
    ("東京は日本の首都です。", "日本の首都は東京です。"),
    ("The dogs were running quickly", "The dog runs quick"),
    ("a", "a b c d e f g"),
]

METRICS = """
- {type: standard, metric: bleu}
- {type: standard, metric: bleu, threshold: 0.35}
- {type: standard, metric: rouge}
- {type: standard, metric: rouge, threshold: 0.5}
- {type: standard, metric: equality}
- {type: standard, metric: equality, case_insensitive: true, strip_whitespace: true, strip_punctuation: true}
- {type: standard, metric: numeric}
- {type: standard, metric: numeric, relative_tolerance: 0.01, accept_percent: true, accept_thousands_separators: true}
- {type: standard, metric: numeric, absolute_tolerance: 0.5, threshold: 0.0}
"""


HOLODECK_SCRIPT = """
import asyncio, json, sys
from holodeck.lib.evaluators.deterministic import EqualityEvaluator, NumericEvaluator
from holodeck.lib.evaluators.nlp_metrics import BLEUEvaluator
EVALUATORS = {"bleu": BLEUEvaluator, "equality": EqualityEvaluator, "numeric": NumericEvaluator}
results = []
for metric, answer, truth in json.load(sys.stdin):
    flags = {k: v for k, v in metric.items() if k not in ("type", "metric", "threshold")}
    result = asyncio.run(EVALUATORS[metric["metric"]](**flags).evaluate(response=answer, ground_truth=truth))
    results.append({k: v for k, v in result.items() if k != "error"})
print(json.dumps(results))
"""


def _verdict(name: str, threshold: float | None, result: dict) -> tuple[float, bool]:
    """HoloDeck's executor (`TestExecutor._run_evaluations`): the score under the metric's name,
    passed by the written threshold if any, else by the evaluator's `passed`."""
    score = result.get(name, result.get("score", 0.0))
    passed = score >= threshold if threshold is not None else bool(result.get("passed", score > 0))
    return score, passed


def _holodeck_results(entries: list[dict]) -> dict[tuple[int, str, str], tuple[float, bool]]:
    """Every (entry, answer, truth) scored as HoloDeck scores it; ROUGE as evaluate computes it."""
    asked = [(index, entry, answer, truth) for index, entry in enumerate(entries) for answer, truth in PAIRS]
    own = [(entry, answer, truth) for _, entry, answer, truth in asked if entry["metric"] != "rouge"]
    answers = iter(run_holodeck(HOLODECK_SCRIPT, own))
    results = {}
    for index, entry, answer, truth in asked:
        threshold = entry.get("threshold")
        if entry["metric"] == "rouge":  # evaluate's "rouge" metric, offline (see the module docstring)
            score = (
                rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
                .score(truth, answer)["rougeL"]
                .fmeasure
            )
            result = {"rouge": score, "passed": True if threshold is None else score >= threshold}
        else:
            result = next(answers)
        results[(index, answer, truth)] = _verdict(entry["metric"], threshold, result)
    return results


@pytest.fixture(scope="module")
def specs(tmp_path_factory: pytest.TempPathFactory) -> list:
    folder: Path = tmp_path_factory.mktemp("holodeck")
    (folder / "agent.yaml").write_text(
        "evaluations:\n  metrics:\n"
        + textwrap.indent(textwrap.dedent(METRICS), "    ")
        + "test_cases: [{input: q, ground_truth: a}]\n"
    )
    return load_suite(folder / "agent.yaml").cases[0].metrics


def test_scores_and_verdicts_equal_holodecks_own_evaluators(specs: list) -> None:
    import yaml

    entries = yaml.safe_load(METRICS)
    assert len(entries) == len(specs)
    holodeck = _holodeck_results(entries)
    compared = 0
    for index, (entry, spec) in enumerate(zip(entries, specs, strict=True)):
        bound = BoundMetric(spec, REGISTRY.build(spec))
        for answer, truth in PAIRS:
            score = bound.metric.evaluate(make_ctx(make_case(expected_response=truth), agent_turn(answer)))
            ours = (score.value, score.passed if score.passed is not None else score.value >= bound.threshold)
            theirs = holodeck[(index, answer, truth)]
            assert ours[0] == pytest.approx(theirs[0], abs=1e-9), (entry, answer, truth)
            assert ours[1] == theirs[1], (entry, answer, truth, ours, theirs)
            compared += 1
    assert compared == len(entries) * len(PAIRS)
