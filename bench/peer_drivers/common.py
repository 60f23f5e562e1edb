"""What every peer driver shares: the quiet environment, running a command, reading a driver's
result line, the workload's cases, and the `Framework` each peer module fills in."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

PROJECT = Path(__file__).resolve().parents[2]
WARMUP_CASES = 10
PEER_PYTHON_ENV = "PROCTOR_PEER_PYTHON"  # a Python with inspect-ai, deepeval, pydantic-evals
PROMPTFOO_ENV = "PROCTOR_PROMPTFOO"  # promptfoo's command (node_modules/.bin/promptfoo)
RESULT_PREFIX = "PEERS_RESULT "
MEASURES = ("command", "in-process", "in-process warm")

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
class DriverFramework(Framework):
    """A framework with no command of its own (pydantic-evals' `evaluate_sync`, DeepEval's
    `evaluate`): its command is a driver script in the peer Python, reading the shared cases.json,
    which prints `PEERS_RESULT {json}`; one run of it is the whole command."""

    python: str = ""
    concurrency: int = 32
    settle: float = 4.0
    env: dict[str, str] = field(default_factory=dict)
    driver_file: ClassVar[str] = ""
    driver_text: ClassVar[str] = ""
    label: ClassVar[str] = ""  # the name a failed check is reported under

    def _driver(self, workload: Path, out: Path, runs: int) -> tuple[float, dict]:
        driver = out / self.driver_file
        driver.write_text(self.driver_text)
        args = [str(workload / "cases.json"), str(runs), str(self.concurrency), str(self.settle)]
        # cwd=out: what a framework writes under the working directory stays in the run's folder
        seconds, output, code = run(
            [self.python, str(driver), *args], cwd=out, env=self.env, timeout=self.timeout * runs
        )
        return seconds, driver_result(output, code)

    def command(self, workload: Path, out: Path, cases: int) -> float:
        seconds, result = self._driver(workload, out, 1)
        first = result["runs"][0]
        check_all_passed(self.label, first["total"], first["passed"], cases)
        return seconds

    def in_process(self, workload: Path, out: Path, cases: int, runs: int) -> dict:
        return self._driver(workload, out, runs)[1]


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


def python_peers(args: argparse.Namespace, wanted: set[str]) -> tuple[Path | None, dict[str, str | None]]:
    """The Python named by --peer-python and the versions of the Python peers installed in it,
    with a note when it is unnamed, missing or cannot be asked."""
    peer_python = Path(args.peer_python) if args.peer_python else None
    versions: dict[str, str | None] = {}
    if wanted & {"inspect", "deepeval", "pydantic-evals"}:
        if peer_python is None:
            print(f"note: no --peer-python (or ${PEER_PYTHON_ENV}): Python peers skipped")
        elif peer_python.exists():
            try:
                versions = python_versions(str(peer_python), ["inspect_ai", "deepeval", "pydantic-evals"])
            except (RunFailed, OSError, subprocess.TimeoutExpired) as exc:
                print(f"note: could not ask {peer_python} for its packages: {exc}")
        else:
            print(f"note: {peer_python} does not exist: Python peers skipped")
    if peer_python is not None and not peer_python.exists():
        peer_python = None
    return peer_python, versions


def cases_for(n: int) -> list[dict[str, str]]:
    return [
        {
            "input": f"Case {i}: repeat this sentence exactly.",
            "expected": f"Case {i}: repeat this sentence exactly.",
        }
        for i in range(n)
    ]
