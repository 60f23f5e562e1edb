"""DeepEval in the peers bench: `evaluate(test_cases, [ExactMatch()])` with a custom BaseMetric
(no LLM) and `CacheConfig(write_cache=False)`; DeepEval still writes
`.deepeval/.latest_run_full.json`."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import DriverFramework

DEEPEVAL_DRIVER = """
import json, sys, time

cases_file, runs, concurrency, settle = sys.argv[1:5]
started = time.perf_counter()
from deepeval import evaluate
from deepeval.evaluate.configs import AsyncConfig, CacheConfig, DisplayConfig
from deepeval.metrics import BaseMetric
from deepeval.test_case import LLMTestCase
import_s = time.perf_counter() - started


class ExactMatch(BaseMetric):
    \"\"\"Deterministic: 1 if the actual output equals the expected output. No LLM.\"\"\"

    def __init__(self, threshold: float = 1.0):
        self.threshold = threshold
        self.async_mode = True

    def measure(self, test_case, *args, **kwargs):
        self.score = float(test_case.actual_output == test_case.expected_output)
        self.reason = "equal" if self.score else "differs from the expected output"
        self.success = self.score >= self.threshold
        return self.score

    async def a_measure(self, test_case, *args, **kwargs):
        return self.measure(test_case)

    def is_successful(self):
        return bool(self.success)

    @property
    def __name__(self):
        return "ExactMatch"


def agent(text):
    return text


cases = json.loads(open(cases_file).read())
results = []
for k in range(int(runs)):
    if k:
        time.sleep(float(settle))
    started = time.perf_counter()
    test_cases = [
        LLMTestCase(input=c["input"], actual_output=agent(c["input"]), expected_output=c["expected"])
        for c in cases
    ]
    result = evaluate(
        test_cases,
        [ExactMatch()],
        async_config=AsyncConfig(run_async=True, max_concurrent=int(concurrency)),
        cache_config=CacheConfig(write_cache=False, use_cache=False),
        display_config=DisplayConfig(show_indicator=False, print_results=False, inspect_after_run=False),
    )
    seconds = time.perf_counter() - started
    passed = sum(1 for r in result.test_results if r.success)
    results.append({"seconds": seconds, "total": len(result.test_results), "passed": passed})
print("PEERS_RESULT " + json.dumps({"import_s": import_s, "runs": results}), flush=True)
"""


def write_files(folder: Path, cases: list[dict[str, str]], n: int, concurrency: int) -> None:
    """DeepEval reads the shared cases.json: nothing of its own to write."""


class DeepEval(DriverFramework):
    driver_file = "deepeval_driver.py"
    driver_text = DEEPEVAL_DRIVER
    label = "deepeval evaluate"


def find(
    args: argparse.Namespace,
    peer_python: Path | None,
    versions: dict[str, str | None],
    env: dict,
    common: dict,
) -> DeepEval | None:
    if peer_python is None:
        return None
    if not versions.get("deepeval"):
        print(f"note: DeepEval skipped: deepeval is not installed in {peer_python}")
        return None
    return DeepEval("deepeval", versions["deepeval"], python=str(peer_python), env=env, **common)
