"""Inspect AI in the peers bench: `inspect eval task.py` with the `mockllm/model` and scripted
outputs (a function returning the sample's expected output), `generate()`, the `exact()`
scorer; its `.eval` log file. In process: `inspect_ai.eval`.

In the quota bench (`bench/quota.py`): the same agent-plus-judge workload as Proctor's, through
`inspect_ai.eval` with the `openai-api` provider pointed at the quota server (`generate()` for
the agent, `model_graded_qa()` with a judge model for the score) and nothing set about rate
limits, retries or concurrency: Inspect's defaults (adaptive connections, unlimited retries
with exponential backoff)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path

from .common import Framework, RunFailed, check_all_passed, driver_result, run, tail

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
INSPECT_CHECK = """
import json, sys

from inspect_ai.log import list_eval_logs, read_eval_log

log = read_eval_log(list_eval_logs(sys.argv[1])[0], header_only=True)
ok = log.status == "success" and log.results and log.results.scores
mean = log.results.scores[0].metrics["mean"].value if ok else 0.0
total = log.results.total_samples if log.results else 0
print("PEERS_RESULT " + json.dumps({"passed": round(mean * total), "total": total}))
"""


QUOTA_TASK = """
import json
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import model_graded_qa
from inspect_ai.solver import generate, system_message

WORKLOAD = json.loads(Path(__file__).with_name("quota_workload.json").read_text())
CASES = WORKLOAD["cases"]


@task
def quota_bench():
    # Agent and judge are models behind the quota server (QUOTA_BASE_URL, QUOTA_API_KEY). Nothing
    # about rate limits, retries or concurrency is set: Inspect's defaults.
    samples = [Sample(id=i, input=c["input"], target=c["expected"]) for i, c in enumerate(CASES)]
    return Task(
        dataset=MemoryDataset(samples),
        solver=[system_message(WORKLOAD["instructions"]), generate()],
        scorer=model_graded_qa(model="openai-api/quota/judge-model"),
        model="openai-api/quota/agent-model",
        config=GenerateConfig(temperature=0),
    )
"""

QUOTA_DRIVER = """
import json, sys, time

task_file, work = sys.argv[1:3]
started = time.perf_counter()
from inspect_ai import eval as inspect_eval
import_s = time.perf_counter() - started
started = time.perf_counter()
log = inspect_eval(task_file, log_dir=f"{work}/logs", display="none")[0]
seconds = time.perf_counter() - started
samples = log.samples or []
errored = sum(1 for s in samples if s.error)
passed = 0
for s in samples:
    score = next(iter((s.scores or {}).values()), None)
    passed += int(score is not None and score.value == "C")
result = {
    "import_s": import_s, "seconds": seconds, "total": len(samples), "passed": passed,
    "errored": errored, "status": log.status,
}
print("PEERS_RESULT " + json.dumps(result), flush=True)
"""


def write_files(folder: Path, cases: list[dict[str, str]], n: int, concurrency: int) -> None:
    """Inspect's copy of the workload: a task file reading cases.json beside it."""
    (folder / "inspect_task.py").write_text(INSPECT_TASK)


def write_quota_files(folder: Path, cases: list[dict[str, str]], instructions: str) -> None:
    """The quota bench's workload for Inspect: a task file reading quota_workload.json beside it."""
    (folder / "quota_workload.json").write_text(json.dumps({"instructions": instructions, "cases": cases}))
    (folder / "inspect_quota_task.py").write_text(QUOTA_TASK)


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

    def quota(self, workload: Path, out: Path, base_url: str, api_key: str) -> dict:
        """The quota workload in one `inspect_ai.eval` at Inspect's defaults: seconds of the eval
        call, samples, passed, errored."""
        driver = out / "inspect_quota_driver.py"
        driver.write_text(QUOTA_DRIVER)
        env = {**self.env, "QUOTA_BASE_URL": base_url, "QUOTA_API_KEY": api_key}
        _, output, code = run(
            [self.python, str(driver), "inspect_quota_task.py", str(out)],
            cwd=workload,
            env=env,
            timeout=self.timeout,
        )
        return driver_result(output, code)


def find(
    args: argparse.Namespace,
    peer_python: Path | None,
    versions: dict[str, str | None],
    env: dict,
    common: dict,
) -> Inspect | None:
    """Inspect AI in the peer Python, by its `inspect` command beside it (else `-m inspect_ai`)."""
    if peer_python is None:
        return None
    if not versions.get("inspect_ai"):
        print(f"note: Inspect AI skipped: inspect_ai is not installed in {peer_python}")
        return None
    script = peer_python.parent / "inspect"
    cli = [str(script)] if script.exists() else [str(peer_python), "-m", "inspect_ai"]
    return Inspect("inspect", versions["inspect_ai"], python=str(peer_python), cli=cli, env=env, **common)
