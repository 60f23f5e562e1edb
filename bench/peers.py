"""Proctor against its peers on one zero-latency workload: pydantic-evals, Inspect AI, DeepEval, promptfoo.

The same N cases (default 1,000) go through each framework: every case is an input string and
an expected output, the "agent" returns its input at once (the expected output equals the
input), one deterministic exact-match metric scores it, and every result is persisted where
the framework persists it:

  proctor    `proctor run SUITE --db sqlite:///… --output DIR` on a generated agentflow
             `.evalset.json` with an echo agent module and the `equality` metric: every case and
             metric row in a fresh SQLite database, plus the five reports Proctor always renders
  pydantic-evals  `Dataset.evaluate_sync(task)` with the `EqualsExpected` evaluator, from a small
             driver script (it has no command of its own); it keeps its report in memory
  inspect    `inspect eval task.py`: the `mockllm/model` with scripted outputs (a function
             returning the sample's expected output), `generate()`, the `exact()` scorer; the
             `.eval` log file
  deepeval   `evaluate(test_cases, [ExactMatch()])` with a custom BaseMetric (no LLM) and
             `CacheConfig(write_cache=False)`; DeepEval still writes `.deepeval/.latest_run_full.json`
  promptfoo  `promptfoo eval -c config.json -o results.json` with the `echo` provider and an
             `equals` assertion, cache and sharing off; its SQLite database and the JSON output

Each framework is measured three ways, each the median of --repeats runs:

  command         wall time of the whole command as a subprocess (interpreter start-up, imports,
                  the run, exit)
  in-process      the evaluation call alone, timed inside a driver process after the imports
                  (Proctor: `proctor.run.local_run.evaluate_in_process`, what `proctor run` runs with
                  no Prefect server; pydantic-evals: `Dataset.evaluate_sync`; Inspect:
                  `inspect_ai.eval`; DeepEval: `evaluate`, test-case construction included;
                  promptfoo: its Node API `evaluate`)
  in-process warm a second evaluation in the same driver process, after a pause: what is left once
                  one-time costs (Prefect's ephemeral API start, lazy imports, DB migrations) are
                  paid

and the ratio printed is Proctor's per-case time divided by the peer's, for the same measure.
Every framework runs once on 10 cases first, untimed, and the frameworks take turns within each
repeat. All runs go through one concurrency setting (--concurrency, default 32).

Peers are found, never installed: Python peers (pydantic-evals, Inspect AI, DeepEval) in the Python
named by --peer-python or $PROCTOR_PEER_PYTHON, promptfoo at --promptfoo or $PROCTOR_PROMPTFOO;
neither has a default tied to a machine's folders. A missing or unnamed one is skipped with a note.

First, Proctor's bundled 5-case example as a user runs it (`proctor run
examples/weather/weather.evalset.json`, whole command, median of --example-repeats): with no Prefect
server configured, and against a running one (--prefect-api-url URL, or --start-server to start one).

Telemetry, sharing and update checks are switched off for all of them; Prefect gets a
temporary PREFECT_HOME.

Usage: python bench/peers.py [--cases 5,100,1000] [--repeats 3] [--concurrency 32]
                             [--peer-python PATH] [--promptfoo PATH] [--only NAME,...]
                             [--start-server | --prefect-api-url URL] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from contextlib import closing, suppress
from dataclasses import dataclass, field
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
WARMUP_CASES = 10
PEER_PYTHON_ENV = "PROCTOR_PEER_PYTHON"  # a Python with inspect-ai, deepeval, pydantic-evals
PROMPTFOO_ENV = "PROCTOR_PROMPTFOO"  # promptfoo's command (node_modules/.bin/promptfoo)
EXAMPLE = PROJECT / "examples" / "weather" / "weather.evalset.json"
RESULT_PREFIX = "PEERS_RESULT "
MEASURES = ("command", "in-process", "in-process warm")
FRAMEWORKS = ("proctor", "pydantic-evals", "inspect", "deepeval", "promptfoo")

# Nothing may phone home; variables that would load telemetry hooks are removed.
QUIET_ENV = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
    "DEEPEVAL_UPDATE_WARNING_OPT_IN": "0",
    "DEEPEVAL_NO_INSPECT_PROMPT": "1",
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_SHARING": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
    "INSPECT_DISPLAY": "none",
    "NO_COLOR": "1",
}
REMOVED_ENV = ("INSPECT_TELEMETRY", "INSPECT_API_KEY_OVERRIDE", "INSPECT_REQUIRED_HOOKS", "INSPECT_LOG_DIR")

# ---------------------------------------------------------------------------------------------
# Generated files: the agent and task definitions, and the in-process drivers. Each driver runs
# the evaluation --runs times and prints one line: RESULT_PREFIX + JSON.
# ---------------------------------------------------------------------------------------------

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

INSPECT_TASK = """
import json
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import exact
from inspect_ai.solver import generate

CASES = json.loads(Path(__file__).with_name("cases.json").read_text())
SCRIPT = {case["input"]: case["expected"] for case in CASES}


def scripted(input, tools, tool_choice, config):
    # The scripted output for this sample (its expected output). Usage is set so that mockllm
    # does not count tokens with tiktoken, which downloads its encoding on first use.
    output = ModelOutput.from_content(model="mockllm/model", content=SCRIPT[input[-1].text])
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


@task
def peers_echo():
    samples = [Sample(id=i, input=c["input"], target=c["expected"]) for i, c in enumerate(CASES)]
    return Task(
        dataset=MemoryDataset(samples),
        solver=generate(),
        scorer=exact(),
        model=get_model("mockllm/model", custom_outputs=scripted),
    )
"""

INSPECT_DRIVER = """
import json, sys, time

task_file, work, runs, concurrency, settle = sys.argv[1:6]
started = time.perf_counter()
from inspect_ai import eval as inspect_eval
import_s = time.perf_counter() - started


def passed(log):
    if log.status != "success" or not log.results or not log.results.scores:
        return 0
    metrics = log.results.scores[0].metrics
    mean = (metrics.get("mean") or metrics.get("accuracy")).value
    return round(mean * log.results.completed_samples)


results = []
for k in range(int(runs)):
    if k:
        time.sleep(float(settle))
    started = time.perf_counter()
    logs = inspect_eval(
        task_file, log_dir=f"{work}/logs{k}", display="none",
        max_samples=int(concurrency), max_connections=int(concurrency),
    )
    seconds = time.perf_counter() - started
    log = logs[0]
    total = log.results.total_samples if log.results else 0
    results.append({"seconds": seconds, "total": total, "passed": passed(log), "status": log.status})
print("PEERS_RESULT " + json.dumps({"import_s": import_s, "runs": results}), flush=True)
"""

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

INSPECT_CHECK = """
import json, sys

from inspect_ai.log import list_eval_logs, read_eval_log

log = read_eval_log(list_eval_logs(sys.argv[1])[0], header_only=True)
ok = log.status == "success" and log.results and log.results.scores
mean = log.results.scores[0].metrics["mean"].value if ok else 0.0
total = log.results.total_samples if log.results else 0
print("PEERS_RESULT " + json.dumps({"passed": round(mean * total), "total": total}))
"""

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

PROMPTFOO_DRIVER = """
import { readFileSync } from 'node:fs';

const [indexUrl, configPath, work, runs, concurrency, settle] = process.argv.slice(2);
let started = performance.now();
const promptfoo = await import(indexUrl);
const importS = (performance.now() - started) / 1000;
const config = JSON.parse(readFileSync(configPath, 'utf8'));
const results = [];
for (let k = 0; k < Number(runs); k++) {
  if (k) await new Promise((resolve) => setTimeout(resolve, Number(settle) * 1000));
  started = performance.now();
  // writeLatestResults: persist to promptfoo's database, as the CLI does.
  const record = await promptfoo.evaluate(
    { ...config, writeLatestResults: true, outputPath: `${work}/results${k}.json` },
    { maxConcurrency: Number(concurrency), cache: false, showProgressBar: false },
  );
  const seconds = (performance.now() - started) / 1000;
  const stats = (await record.toEvaluateSummary()).stats;
  results.push({ seconds, total: stats.successes + stats.failures + stats.errors, passed: stats.successes });
}
console.log('PEERS_RESULT ' + JSON.stringify({ import_s: importS, runs: results }));
process.exit(0);
"""


def cases_for(n: int) -> list[dict[str, str]]:
    return [
        {
            "input": f"Case {i}: repeat this sentence exactly.",
            "expected": f"Case {i}: repeat this sentence exactly.",
        }
        for i in range(n)
    ]


def write_workload(folder: Path, n: int, concurrency: int) -> Path:
    """Every framework's copy of the same n cases, in folder."""
    folder.mkdir(parents=True)
    cases = cases_for(n)
    (folder / "cases.json").write_text(json.dumps(cases))
    # Proctor: agentflow evalset, echo agent beside it, one exact-match metric.
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
    # Inspect: a task file reading cases.json beside it.
    (folder / "inspect_task.py").write_text(INSPECT_TASK)
    # promptfoo: the prompt is the input itself, so `echo` returns it; one `equals` assertion.
    config = {
        "description": f"peers echo {n}",
        "prompts": ["{{input}}"],
        "providers": ["echo"],
        "sharing": False,
        "evaluateOptions": {"cache": False, "maxConcurrency": concurrency, "showProgressBar": False},
        "tests": [
            {
                "description": f"case_{i}",
                "vars": {"input": case["input"]},
                "assert": [{"type": "equals", "value": case["expected"]}],
            }
            for i, case in enumerate(cases)
        ],
    }
    (folder / "promptfooconfig.json").write_text(json.dumps(config))
    return folder


# ---------------------------------------------------------------------------------------------
# Running things
# ---------------------------------------------------------------------------------------------


class RunFailed(Exception):
    pass


def base_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in REMOVED_ENV}
    env.update(QUIET_ENV)
    env.update(extra or {})
    return env


def run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[float, str, int]:
    """Run cmd; returns (wall seconds, combined output, exit code)."""
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        raise RunFailed(f"timed out after {timeout:.0f} s: {' '.join(cmd[:3])} …") from exc
    return time.perf_counter() - started, proc.stdout or "", proc.returncode


def tail(output: str, lines: int = 12) -> str:
    return textwrap.indent("\n".join(output.strip().splitlines()[-lines:]), "      | ")


def driver_result(output: str, code: int) -> dict:
    for line in reversed(output.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX) :])
    raise RunFailed(f"the driver printed no result (exit code {code}):\n{tail(output)}")


def check_all_passed(name: str, total: int, passed: int, cases: int) -> None:
    if total != cases or passed != cases:
        raise RunFailed(f"{name}: {passed} of {total} cases passed, expected {cases} of {cases}")


@dataclass
class Framework:
    """How to run one framework: its command, its in-process driver, how to check a run."""

    name: str
    version: str
    timeout: float
    samples: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in MEASURES})
    import_s: list[float] = field(default_factory=list)

    def command(self, workload: Path, out: Path, cases: int) -> float:  # pragma: no cover
        raise NotImplementedError

    def in_process(self, workload: Path, out: Path, cases: int, runs: int) -> dict:  # pragma: no cover
        raise NotImplementedError


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


@dataclass
class Inspect(Framework):
    python: str = ""
    cli: list[str] = field(default_factory=list)
    concurrency: int = 32
    settle: float = 4.0
    env: dict[str, str] = field(default_factory=dict)

    def command(self, workload: Path, out: Path, cases: int) -> float:
        logs = out / "logs"
        seconds, output, code = run(
            [
                *self.cli,
                "eval",
                "inspect_task.py",
                "--log-dir",
                str(logs),
                "--display",
                "none",
                "--max-samples",
                str(self.concurrency),
                "--max-connections",
                str(self.concurrency),
            ],
            cwd=workload,  # Inspect takes task files relative to the working directory
            env=self.env,
            timeout=self.timeout,
        )
        if code != 0:
            raise RunFailed(f"inspect eval exited {code}:\n{tail(output)}")
        check = out / "inspect_check.py"  # reads the log's header, untimed
        check.write_text(INSPECT_CHECK)
        _, output, code = run([self.python, str(check), str(logs)], cwd=out, env=self.env, timeout=300)
        result = driver_result(output, code)
        check_all_passed("inspect eval", result["total"], result["passed"], cases)
        return seconds

    def in_process(self, workload: Path, out: Path, cases: int, runs: int) -> dict:
        driver = out / "inspect_driver.py"
        driver.write_text(INSPECT_DRIVER)
        args = [
            "inspect_task.py",
            str(out),
            str(runs),
            str(self.concurrency),
            str(self.settle),
        ]
        _, output, code = run(
            [self.python, str(driver), *args], cwd=workload, env=self.env, timeout=self.timeout * runs
        )
        return driver_result(output, code)


@dataclass
class DeepEval(Framework):
    python: str = ""
    concurrency: int = 32
    settle: float = 4.0
    env: dict[str, str] = field(default_factory=dict)

    def _driver(self, workload: Path, out: Path, runs: int) -> tuple[float, dict]:
        driver = out / "deepeval_driver.py"
        driver.write_text(DEEPEVAL_DRIVER)
        args = [str(workload / "cases.json"), str(runs), str(self.concurrency), str(self.settle)]
        # cwd=out: DeepEval writes .deepeval/.latest_run_full.json under the working directory.
        seconds, output, code = run(
            [self.python, str(driver), *args], cwd=out, env=self.env, timeout=self.timeout * runs
        )
        return seconds, driver_result(output, code)

    def command(self, workload: Path, out: Path, cases: int) -> float:
        # DeepEval's `evaluate` has no command of its own: the command is the driver, one run.
        seconds, result = self._driver(workload, out, 1)
        check_all_passed("deepeval evaluate", result["runs"][0]["total"], result["runs"][0]["passed"], cases)
        return seconds

    def in_process(self, workload: Path, out: Path, cases: int, runs: int) -> dict:
        return self._driver(workload, out, runs)[1]


@dataclass
class PydanticEvals(Framework):
    """pydantic-evals keeps its report in memory (it persists nothing unless Logfire is set up)."""

    python: str = ""
    concurrency: int = 32
    settle: float = 4.0
    env: dict[str, str] = field(default_factory=dict)

    def _driver(self, workload: Path, out: Path, runs: int) -> tuple[float, dict]:
        driver = out / "pydantic_evals_driver.py"
        driver.write_text(PYDANTIC_EVALS_DRIVER)
        args = [str(workload / "cases.json"), str(runs), str(self.concurrency), str(self.settle)]
        seconds, output, code = run(
            [self.python, str(driver), *args], cwd=out, env=self.env, timeout=self.timeout * runs
        )
        return seconds, driver_result(output, code)

    def command(self, workload: Path, out: Path, cases: int) -> float:
        # `evaluate_sync` has no command of its own: the command is the driver, one run.
        seconds, result = self._driver(workload, out, 1)
        first = result["runs"][0]
        check_all_passed("pydantic-evals", first["total"], first["passed"], cases)
        return seconds

    def in_process(self, workload: Path, out: Path, cases: int, runs: int) -> dict:
        return self._driver(workload, out, runs)[1]


@dataclass
class Promptfoo(Framework):
    cli: str = ""
    node: str = ""
    index_url: str = ""
    concurrency: int = 32
    settle: float = 4.0
    env: dict[str, str] = field(default_factory=dict)

    def _env(self, out: Path) -> dict[str, str]:
        # A fresh promptfoo home (database, logs) per process, as Proctor gets a fresh database.
        return {**self.env, "PROMPTFOO_CONFIG_DIR": str(out / "promptfoo-home")}

    def command(self, workload: Path, out: Path, cases: int) -> float:
        results = out / "results.json"
        seconds, output, code = run(
            [
                self.cli,
                "eval",
                "-c",
                str(workload / "promptfooconfig.json"),
                "-o",
                str(results),
                "--no-cache",
                "--no-share",
                "--no-table",
                "--no-progress-bar",
                "-j",
                str(self.concurrency),
            ],
            cwd=out,
            env=self._env(out),
            timeout=self.timeout,
        )
        if code != 0 or not results.exists():
            raise RunFailed(f"promptfoo eval exited {code}:\n{tail(output)}")
        stats = json.loads(results.read_text())["results"]["stats"]
        total = stats["successes"] + stats["failures"] + stats["errors"]
        check_all_passed("promptfoo eval", total, stats["successes"], cases)
        if not (out / "promptfoo-home" / "promptfoo.db").exists():
            raise RunFailed("promptfoo eval wrote no database")
        return seconds

    def in_process(self, workload: Path, out: Path, cases: int, runs: int) -> dict:
        driver = out / "promptfoo_driver.mjs"
        driver.write_text(PROMPTFOO_DRIVER)
        args = [self.index_url, str(workload / "promptfooconfig.json"), str(out), str(runs)]
        _, output, code = run(
            [self.node, str(driver), *args, str(self.concurrency), str(self.settle)],
            cwd=out,
            env=self._env(out),
            timeout=self.timeout * runs,
        )
        return driver_result(output, code)


# ---------------------------------------------------------------------------------------------
# Finding the frameworks
# ---------------------------------------------------------------------------------------------


def python_versions(python: str, distributions: list[str]) -> dict[str, str | None]:
    """Installed versions of distributions in the environment of python (None: not installed)."""
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        "for d in sys.argv[1:]:\n"
        "    try: out[d] = m.version(d)\n"
        "    except m.PackageNotFoundError: out[d] = None\n"
        "print(json.dumps(out))"
    )
    proc = subprocess.run(
        [python, "-c", code, *distributions], capture_output=True, text=True, timeout=120, env=base_env()
    )
    if proc.returncode != 0:
        raise RunFailed(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "python failed")
    return json.loads(proc.stdout)


def promptfoo_package(cli: Path) -> tuple[Path, str] | None:
    """The promptfoo package folder behind the CLI and its version."""
    folder = cli.resolve().parent
    for candidate in (folder, *folder.parents):
        manifest = candidate / "package.json"
        if manifest.exists():
            try:
                data = json.loads(manifest.read_text())
            except ValueError:
                continue
            if data.get("name") == "promptfoo":
                return candidate, data.get("version", "?")
    return None


def promptfoo_index(package: Path) -> Path:
    data = json.loads((package / "package.json").read_text())
    entry = data.get("exports", {}).get(".", {})
    target = entry.get("import") if isinstance(entry, dict) else entry
    return package / (target or data.get("main", "dist/src/index.js"))


def discover(args: argparse.Namespace, tmp: Path) -> list[Framework]:
    wanted = set(args.only.split(",")) if args.only else set(FRAMEWORKS)
    common = {"timeout": args.timeout, "concurrency": args.concurrency, "settle": args.settle}
    found: list[Framework] = []

    if "proctor" in wanted:
        python = Path(args.proctor_python)
        cli = python.parent / "proctor"
        if python.exists() and cli.exists():
            env = base_env({"PREFECT_HOME": str(tmp / "prefect-home")})
            version = python_versions(str(python), ["proctor", "prefect"])
            label = f"{version['proctor']} (prefect {version['prefect']})"
            found.append(
                Proctor("proctor", label, python=str(python), cli=str(cli), env=env, **common)  # type: ignore[arg-type]
            )
        else:
            print(f"note: Proctor skipped: no {python} with a `proctor` command beside it")

    peer_python = Path(args.peer_python) if args.peer_python else None
    if wanted & {"inspect", "deepeval", "pydantic-evals"}:
        versions: dict[str, str | None] = {}
        if peer_python is None:
            print(f"note: no --peer-python (or ${PEER_PYTHON_ENV}): Python peers skipped")
        elif peer_python.exists():
            try:
                versions = python_versions(str(peer_python), ["inspect_ai", "deepeval", "pydantic-evals"])
            except (RunFailed, OSError, subprocess.TimeoutExpired) as exc:
                print(f"note: could not ask {peer_python} for its packages: {exc}")
        else:
            print(f"note: {peer_python} does not exist: Python peers skipped")
        env = base_env()
        if "pydantic-evals" in wanted and peer_python and peer_python.exists():
            if versions.get("pydantic-evals"):
                found.append(
                    PydanticEvals(
                        "pydantic-evals",
                        versions["pydantic-evals"],
                        python=str(peer_python),
                        env=env,
                        **common,  # type: ignore[arg-type]
                    )
                )
            else:
                print(f"note: pydantic-evals skipped: not installed in {peer_python}")
        if "inspect" in wanted and peer_python and peer_python.exists():
            if versions.get("inspect_ai"):
                script = peer_python.parent / "inspect"
                cli = [str(script)] if script.exists() else [str(peer_python), "-m", "inspect_ai"]
                found.append(
                    Inspect(
                        "inspect",
                        versions["inspect_ai"],
                        python=str(peer_python),
                        cli=cli,
                        env=env,
                        **common,  # type: ignore[arg-type]
                    )
                )
            else:
                print(f"note: Inspect AI skipped: inspect_ai is not installed in {peer_python}")
        if "deepeval" in wanted and peer_python and peer_python.exists():
            if versions.get("deepeval"):
                found.append(
                    DeepEval("deepeval", versions["deepeval"], python=str(peer_python), env=env, **common)  # type: ignore[arg-type]
                )
            else:
                print(f"note: DeepEval skipped: deepeval is not installed in {peer_python}")

    if "promptfoo" in wanted:
        cli = Path(args.promptfoo) if args.promptfoo else None
        node = shutil.which("node")
        package = promptfoo_package(cli) if cli and cli.exists() else None
        if cli is None:
            print(f"note: no --promptfoo (or ${PROMPTFOO_ENV}): promptfoo skipped")
        elif package is None:
            print(f"note: promptfoo skipped: no promptfoo at {cli}")
        elif node is None:
            print("note: promptfoo skipped: no `node` on PATH")
        else:
            folder, version = package
            found.append(
                Promptfoo(
                    "promptfoo",
                    version,
                    cli=str(cli),
                    node=node,
                    index_url=promptfoo_index(folder).as_uri(),
                    env=base_env(),
                    **common,  # type: ignore[arg-type]
                )
            )
    return found


# ---------------------------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------------------------


def measure(fw: Framework, workload: Path, out: Path, cases: int, label: str) -> None:
    """One repeat of one framework: its command, then its driver with a first and a warm run."""
    (out / "command").mkdir(parents=True)
    (out / "driver").mkdir()
    try:
        seconds = fw.command(workload, out / "command", cases)
        fw.samples["command"].append(seconds)
        print(f"  {label} {fw.name:<9} command          {seconds:7.2f} s", flush=True)
    except Exception as exc:  # a failing framework is reported, never stops the benchmark
        print(f"  {label} {fw.name:<9} command          FAILED: {exc}", flush=True)
    try:
        result = fw.in_process(workload, out / "driver", cases, 2)
        fw.import_s.append(result["import_s"])
        for measure_name, one in zip(("in-process", "in-process warm"), result["runs"], strict=False):
            check_all_passed(f"{fw.name} {measure_name}", one["total"], one["passed"], cases)
            fw.samples[measure_name].append(one["seconds"])
            print(f"  {label} {fw.name:<9} {measure_name:<16} {one['seconds']:7.2f} s", flush=True)
    except Exception as exc:
        print(f"  {label} {fw.name:<9} in-process       FAILED: {exc}", flush=True)


def warm_up(fw: Framework, workload: Path, out: Path) -> None:
    out.mkdir(parents=True)
    try:
        seconds = fw.command(workload, out, WARMUP_CASES)
        print(f"  warm-up {fw.name:<9} {WARMUP_CASES} cases         {seconds:7.2f} s", flush=True)
    except Exception as exc:
        print(f"  warm-up {fw.name:<9} FAILED: {exc}", flush=True)


def report(frameworks: list[Framework], cases: int, repeats: int) -> None:
    proctor = next((fw for fw in frameworks if fw.name == "proctor"), None)

    def per_case_ms(fw: Framework, measure_name: str) -> float | None:
        values = fw.samples[measure_name]
        return statistics.median(values) / cases * 1000 if values else None

    header = ("framework", "version", "measure", "cases", "total s", "per-case ms", "Proctor ÷ peer", "runs")
    rows = []
    for measure_name in MEASURES:
        base = per_case_ms(proctor, measure_name) if proctor else None
        for fw in frameworks:
            values = fw.samples[measure_name]
            ms = per_case_ms(fw, measure_name)
            if ms is None:
                rows.append((fw.name, fw.version, measure_name, str(cases), "-", "-", "-", "0"))
                continue
            ratio = f"{base / ms:.2f}" if base is not None and ms > 0 else "-"
            rows.append(
                (
                    fw.name,
                    fw.version,
                    measure_name,
                    str(cases),
                    f"{statistics.median(values):.2f}",
                    f"{ms:.3f}",
                    ratio,
                    str(len(values)),
                )
            )
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    line = "  ".join("-" * w for w in widths)
    print()
    print(
        f"Medians of {repeats} repeat(s); per-case = total / {cases}; "
        "Proctor ÷ peer = Proctor's per-case time / the peer's"
    )
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print(line)
    previous = None
    for row in rows:
        if previous is not None and row[2] != previous:
            print(line)
        previous = row[2]
        cells = [
            c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(cells))
    imports = [f"{fw.name} {statistics.median(fw.import_s):.2f} s" for fw in frameworks if fw.import_s]
    if imports:
        print(f"\nImport time in the drivers (not in 'in-process'): {', '.join(imports)}")


def proctor_example(cli: str, tmp: Path, env: dict[str, str], repeats: int, timeout: float) -> list[float]:
    """`proctor run examples/weather/weather.evalset.json` as a user types it, in a fresh folder
    each time: whole-command seconds (it exits 1: one case fails on purpose)."""
    seconds = []
    for k in range(repeats):
        folder = tmp / f"run-{k}"
        folder.mkdir(parents=True)
        took, output, code = run(
            [cli, "run", str(EXAMPLE), "--no-progress"], cwd=folder, env=env, timeout=timeout
        )
        if code != 1 or "4/5 passed" not in output:
            raise RunFailed(f"proctor run of the example exited {code}:\n{tail(output)}")
        seconds.append(took)
    return seconds


def start_prefect_server(python: str, home: Path, timeout: float = 300.0) -> tuple[subprocess.Popen, str]:
    """`prefect server start` on a free port with its own PREFECT_HOME; (process, API URL)."""
    import socket
    import urllib.request

    with closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = base_env({"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"})
    env.pop("PREFECT_API_URL", None)
    home.mkdir(parents=True, exist_ok=True)
    log = (home / "server.log").open("w")
    server = subprocess.Popen(
        [python, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, stopped as one
    )
    url = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as answer:
                if answer.status == 200:
                    return server, url
        except OSError:
            time.sleep(1)
        if server.poll() is not None:
            break
    stop_server(server)
    raise RunFailed(f"the Prefect server did not start within {timeout:.0f} s (log: {home / 'server.log'})")


def stop_server(server: subprocess.Popen) -> None:
    import signal

    with suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)


def example_section(args: argparse.Namespace, tmp: Path) -> None:
    """Proctor's 5-case example, whole command: without a Prefect server, and against one."""
    python = Path(args.proctor_python)
    cli = str(python.parent / "proctor")
    home = tmp / "example-prefect-home"  # no profile naming a server
    env = base_env({"PREFECT_HOME": str(home)})
    env.pop("PREFECT_API_URL", None)
    print(
        f"\nThe bundled example ({EXAMPLE.relative_to(PROJECT)}, 5 cases), whole command, "
        f"median of {args.example_repeats}:"
    )
    figures = {}
    try:
        figures["no Prefect server (in-process run)"] = proctor_example(
            cli, tmp / "example-local", env, args.example_repeats, args.timeout
        )
    except RunFailed as exc:
        print(f"  without a server: FAILED: {exc}")
    server, url = None, args.prefect_api_url
    try:
        if not url and args.start_server:
            started = time.perf_counter()
            server, url = start_prefect_server(str(python), tmp / "server-home")
            print(f"  (started a Prefect server at {url} in {time.perf_counter() - started:.1f} s)")
        if url:
            proctor_example(cli, tmp / "example-warm", {**env, "PREFECT_API_URL": url}, 1, args.timeout)
            figures[f"against a running Prefect server ({url})"] = proctor_example(
                cli,
                tmp / "example-server",
                {**env, "PREFECT_API_URL": url},
                args.example_repeats,
                args.timeout,
            )
        else:
            print("  against a running server: skipped (pass --prefect-api-url URL or --start-server)")
    except RunFailed as exc:
        print(f"  against a running server: FAILED: {exc}")
    finally:
        if server is not None:
            stop_server(server)
    for label, values in figures.items():
        spread = f"{min(values):.2f}-{max(values):.2f}"
        print(f"  proctor  {label:<60} {statistics.median(values):6.2f} s  (range {spread} s; goal <= 3 s)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--cases", default="5,100,1000", help="comma-separated suite sizes (default 5,100,1000)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32, help="cases at once, for every framework")
    parser.add_argument(
        "--peer-python",
        default=os.environ.get(PEER_PYTHON_ENV),
        help=f"Python with inspect-ai, deepeval, pydantic-evals (default ${PEER_PYTHON_ENV})",
    )
    parser.add_argument(
        "--promptfoo",
        default=os.environ.get(PROMPTFOO_ENV),
        help=f"promptfoo's command, node_modules/.bin/promptfoo (default ${PROMPTFOO_ENV})",
    )
    parser.add_argument(
        "--proctor-python",
        default=str(PROJECT / ".venv" / "bin" / "python"),
        help="Python of Proctor's environment (its `proctor` command beside it)",
    )
    parser.add_argument("--only", help=f"comma-separated subset of {','.join(FRAMEWORKS)}")
    parser.add_argument("--settle", type=float, default=4.0, help="pause before each warm in-process run (s)")
    parser.add_argument("--timeout", type=float, default=900.0, help="limit per run (s)")
    parser.add_argument("--example-repeats", type=int, default=5, help="runs of the bundled example (median)")
    parser.add_argument("--prefect-api-url", help="a running Prefect server for the example's second figure")
    parser.add_argument(
        "--start-server", action="store_true", help="start a Prefect server for that figure (and stop it)"
    )
    parser.add_argument("--no-example", action="store_true", help="skip the bundled example's figures")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder with every output")
    args = parser.parse_args()
    try:
        sizes = [int(size) for size in args.cases.split(",")]
    except ValueError:
        parser.error("--cases takes sizes separated by commas, e.g. 5,100,1000")
    if min(sizes) < 1 or args.repeats < 1 or args.example_repeats < 1:
        parser.error("--cases, --repeats and --example-repeats must be at least 1")

    tmp = Path(tempfile.mkdtemp(prefix="proctor-peers-"))
    try:
        load = os.getloadavg()
        print(
            f"sizes {args.cases}, zero latency, exact match, concurrency {args.concurrency}, "
            f"{args.repeats} repeat(s); {os.cpu_count()} CPUs, "
            f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
            f"{platform.platform()}, Python {platform.python_version()}; work folder {tmp}"
        )
        if not args.no_example and (args.only is None or "proctor" in args.only.split(",")):
            example_section(args, tmp)
        frameworks = discover(args, tmp)
        if not frameworks:
            print("nothing to measure")
            return
        print("measuring: " + ", ".join(f"{fw.name} {fw.version}" for fw in frameworks), flush=True)
        small = write_workload(tmp / f"workload-{WARMUP_CASES}", WARMUP_CASES, args.concurrency)
        for fw in frameworks:
            warm_up(fw, small, tmp / "warm-up" / fw.name)
        for cases in sizes:
            for fw in frameworks:
                fw.samples = {m: [] for m in MEASURES}
                fw.import_s = []
            workload = write_workload(tmp / f"workload-n{cases}", cases, args.concurrency)
            for i in range(args.repeats):
                for fw in frameworks:
                    label = f"[{cases} cases {i + 1}/{args.repeats}]"
                    measure(fw, workload, tmp / f"n{cases}-repeat-{i}" / fw.name, cases, label)
            report(frameworks, cases, args.repeats)
        load = os.getloadavg()
        print(f"\nload at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    finally:
        if args.keep:
            print(f"\noutputs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
