"""pydantic-evals in the peers bench: `Dataset.evaluate_sync(task)` with the `EqualsExpected`
evaluator, from a small driver script (it has no command of its own); it keeps its report in
memory."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import DriverFramework

PYDANTIC_EVALS_DRIVER = """
import json, sys, time

cases_file, runs, concurrency, settle = sys.argv[1:5]
started = time.perf_counter()
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import EqualsExpected
import_s = time.perf_counter() - started


async def echo(text: str) -> str:
    return text


results = []
for k in range(int(runs)):
    if k:
        time.sleep(float(settle))
    started = time.perf_counter()
    cases = json.load(open(cases_file))
    dataset = Dataset(
        name="peers_echo",
        cases=[
            Case(name=f"case_{i}", inputs=c["input"], expected_output=c["expected"])
            for i, c in enumerate(cases)
        ],
        evaluators=[EqualsExpected()],
    )
    report = dataset.evaluate_sync(echo, max_concurrency=int(concurrency), progress=False)
    seconds = time.perf_counter() - started
    passed = sum(
        1 for case in report.cases
        if case.assertions and all(a.value is True for a in case.assertions.values())
    )
    results.append({"seconds": seconds, "total": len(report.cases) + len(report.failures), "passed": passed})
print("PEERS_RESULT " + json.dumps({"import_s": import_s, "runs": results}), flush=True)
"""


def write_files(folder: Path, cases: list[dict[str, str]], n: int, concurrency: int) -> None:
    """pydantic-evals reads the shared cases.json: nothing of its own to write."""


class PydanticEvals(DriverFramework):
    """pydantic-evals keeps its report in memory (it persists nothing unless Logfire is set up)."""

    driver_file = "pydantic_evals_driver.py"
    driver_text = PYDANTIC_EVALS_DRIVER
    label = "pydantic-evals"


def find(
    args: argparse.Namespace,
    peer_python: Path | None,
    versions: dict[str, str | None],
    env: dict,
    common: dict,
) -> PydanticEvals | None:
    if peer_python is None:
        return None
    if not versions.get("pydantic-evals"):
        print(f"note: pydantic-evals skipped: not installed in {peer_python}")
        return None
    return PydanticEvals(
        "pydantic-evals", versions["pydantic-evals"], python=str(peer_python), env=env, **common
    )
