"""Proctor in the peers bench: `proctor run SUITE --db sqlite:///… --output DIR` on a generated
agentflow `.evalset.json` with an echo agent module and the `equality` metric (every case and
metric row in a fresh SQLite database, plus the five reports Proctor always renders), and in
process `proctor.run.local_run.evaluate_in_process`, what `proctor run` runs with no Prefect
server."""

from __future__ import annotations

import argparse
import json
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from .common import (
    PROJECT,
    Framework,
    RunFailed,
    base_env,
    check_all_passed,
    driver_result,
    python_versions,
    run,
    tail,
)

PROCTOR_AGENT = """
async def agent(request):
    return request.input
"""

PROCTOR_DRIVER = """
import asyncio, json, sys, time

project, suite, work, runs, concurrency, settle = sys.argv[1:7]
started = time.perf_counter()
from proctor.run.local_run import evaluate_in_process as evaluate  # what `proctor run` does with no server
from proctor.models.request import EvaluationRequest
import_s = time.perf_counter() - started
results = []
for k in range(int(runs)):
    if k:
        time.sleep(float(settle))
    request = EvaluationRequest(
        suite=suite, database_url=f"sqlite:///{work}/run{k}.db", report_dir=f"{work}/reports{k}",
        concurrency=int(concurrency),
    )
    started = time.perf_counter()
    summary = asyncio.run(evaluate(request))
    seconds = time.perf_counter() - started
    results.append({"seconds": seconds, "total": summary.total, "passed": summary.passed})
print("PEERS_RESULT " + json.dumps({"import_s": import_s, "runs": results}), flush=True)
"""


def write_files(folder: Path, cases: list[dict[str, str]], n: int, concurrency: int) -> None:
    """Proctor's copy of the workload: an agentflow evalset, the echo agent beside it, one
    exact-match metric."""
    (folder / "echo_agent.py").write_text(PROCTOR_AGENT)
    suite = {
        "eval_set_id": f"peers_echo_{n}",
        "metadata": {
            "agent": "echo_agent.py:agent",
            "eval_config": {"criteria": {"equality": {"threshold": 1.0}}},
        },
        "eval_cases": [
            {
                "eval_id": f"case_{i}",
                "conversation": [
                    {
                        "invocation_id": "turn_1",
                        "user_content": {"role": "user", "content": case["input"]},
                        "expected_final_response": {"role": "assistant", "content": case["expected"]},
                    }
                ],
            }
            for i, case in enumerate(cases)
        ],
    }
    (folder / "peers.evalset.json").write_text(json.dumps(suite))


@dataclass
class Proctor(Framework):
    python: str = ""
    cli: str = ""
    concurrency: int = 32
    settle: float = 4.0
    env: dict[str, str] = field(default_factory=dict)

    def command(self, workload: Path, out: Path, cases: int) -> float:
        db = out / "proctor.db"
        seconds, output, code = run(
            [
                self.cli,
                "run",
                str(workload / "peers.evalset.json"),
                "--db",
                f"sqlite:///{db}",
                "--output",
                str(out / "reports"),
                "--no-progress",
                "--concurrency",
                str(self.concurrency),
            ],
            cwd=out,
            env=self.env,
            timeout=self.timeout,
        )
        if code != 0:
            raise RunFailed(f"proctor run exited {code}:\n{tail(output)}")
        with closing(sqlite3.connect(db)) as conn:  # every case and metric persisted, and passed
            total, passed = conn.execute(
                "SELECT count(*), coalesce(sum(passed), 0) FROM case_result"
            ).fetchone()
            metrics = conn.execute("SELECT count(*) FROM metric_result").fetchone()[0]
        check_all_passed("proctor run", total, passed, cases)
        if metrics != cases:
            raise RunFailed(f"proctor run stored {metrics} metric results for {cases} cases")
        return seconds

    def in_process(self, workload: Path, out: Path, cases: int, runs: int) -> dict:
        driver = out / "proctor_driver.py"
        driver.write_text(PROCTOR_DRIVER)
        args = [str(PROJECT), str(workload / "peers.evalset.json"), str(out), str(runs)]
        _, output, code = run(
            [self.python, str(driver), *args, str(self.concurrency), str(self.settle)],
            cwd=out,
            env=self.env,
            timeout=self.timeout * runs,
        )
        return driver_result(output, code)


def find(args: argparse.Namespace, tmp: Path, common: dict) -> Proctor | None:
    """Proctor in --proctor-python's environment, its `proctor` command beside it."""
    python = Path(args.proctor_python)
    cli = python.parent / "proctor"
    if not (python.exists() and cli.exists()):
        print(f"note: Proctor skipped: no {python} with a `proctor` command beside it")
        return None
    env = base_env({"PREFECT_HOME": str(tmp / "prefect-home")})
    version = python_versions(str(python), ["proctor", "prefect"])
    label = f"{version['proctor']} (prefect {version['prefect']})"
    return Proctor("proctor", label, python=str(python), cli=str(cli), env=env, **common)
