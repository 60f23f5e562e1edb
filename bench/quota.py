"""How close to the provider's quota a run gets: `bench/quota_server.py` enforcing RPM like a provider.

N cases (default 2,000), each an `openai:` agent call and one `llm_judge` call to the same
endpoint and key, against a server that allows --rpm requests per minute (sliding window, 429
with Retry-After, x-ratelimit headers) and answers after a log-normal latency (median
--latency-median s). Proctor runs in this process as `proctor run --no-prefect` does
(`evaluate_in_process`), with no setting about the quota: it learns it from the answers.

Three runs: the default concurrency (no tuning), --concurrency ten times too high, and ten
times too low (where the summary must say that concurrency limits the run; a tenth of the
cases by default, since one case at a time takes ten times as long). Printed per run:
throughput as a share of the quota (requests the server admitted per minute of the run, over
--rpm), failed and errored cases, the share of requests answered 429, time calls waited for
quota, and the summary's note.

The full figure (2,000 cases at 600 RPM) takes about 7 minutes per run; `--scale 10` runs the
same workload ten times faster (RPM x10, latency /10, so the same number of calls in flight
uses the same share of the quota), e.g. `--rpm 600 --scale 10` is 6,000 RPM at a 60 ms median;
Proctor's own work per call is then ten times as large a share of the time. The machine is
shared (2 cores, other jobs): figures are noisy, and the load average is printed with them.

Usage: python bench/quota.py [--cases 2000] [--rpm 600] [--scale 1] [--runs default,high,low]
                             [--latency-median 0.6] [--latency-sigma 0.5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "bench"))

from quota_server import QuotaServer  # noqa: E402

DEFAULT_CONCURRENCY = 8
HIGH = DEFAULT_CONCURRENCY * 10


def suite(folder: Path, cases: int, base_url: str) -> Path:
    lines = "\n".join(
        f"  - {{name: c{i}, input: 'Question {i}: what is six times seven?', ground_truth: '42'}}"
        for i in range(cases)
    )
    key = "${BENCH_MODEL_KEY}"
    model = f'{{provider: openai, name: NAME, endpoint: "{base_url}", api_key: "{key}", temperature: 0}}'
    path = folder / "agent.yaml"
    path.write_text(
        textwrap.dedent("""\
            name: quota-bench
            model: AGENT
            instructions: Answer in one short sentence.
            test_cases:
            CASES
            evaluations:
              model: JUDGE
              metrics:
                - metric: llm_judge
                  threshold: 0.5
            """)
        .replace("AGENT", model.replace("NAME", "agent-model"))
        .replace("JUDGE", model.replace("NAME", "judge-model"))
        .replace("CASES", lines)
    )
    return path


def one_run(label: str, args: argparse.Namespace, concurrency: int | None, cases: int) -> None:
    from proctor.models.request import EvaluationRequest
    from proctor.run.local_run import evaluate_in_process

    rpm = args.rpm * args.scale
    median_s = args.latency_median / args.scale  # the same calls in flight at the same share
    with QuotaServer(rpm=rpm, median_s=median_s, sigma=args.latency_sigma) as server:
        folder = Path(tempfile.mkdtemp(prefix="proctor-quota-"))
        fields = {
            "suite": str(suite(folder, cases, server.base_url)),
            "database_url": f"sqlite:///{folder}/r.db",
            "report_dir": str(folder / "reports"),
        }
        if concurrency is not None:
            fields["concurrency"] = concurrency
        request = EvaluationRequest(**fields)
        started = time.perf_counter()
        summary = asyncio.run(evaluate_in_process(request))
        wall = time.perf_counter() - started
        stats = server.stats()
    admitted, refused = stats["admitted"], stats["refused"]
    span = (stats["admitted_at"][-1] - stats["admitted_at"][0]) if admitted > 1 else wall
    share = admitted / (wall / 60) / rpm
    figures = summary.quota or {}
    print(
        f"{label:<34} {share * 100:5.1f}% of quota ({admitted / (wall / 60):6.0f} of {rpm:g} rpm; "
        f"first-to-last {admitted / max(span, 1e-9) * 60 / rpm * 100:5.1f}%)  "
        f"cases {summary.total}: {summary.failed} failed, {summary.errored} errored  "
        f"429s {refused} ({refused / max(admitted + refused, 1) * 100:.2f}% of requests)  "
        f"waited {figures.get('waited_s', 0):.0f} s  wall {wall:.1f} s"
    )
    if figures.get("note"):
        print(f"{'':<34} note: {figures['note']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--rpm", type=float, default=600)
    parser.add_argument("--scale", type=float, default=1.0, help="RPM times this (a faster variant)")
    parser.add_argument("--runs", default="default,high,low")
    parser.add_argument(
        "--low-cases", type=int, help="cases of the x10-too-low run (default: a tenth; one at a time is slow)"
    )
    parser.add_argument("--latency-median", type=float, default=0.6)
    parser.add_argument("--latency-sigma", type=float, default=0.5)
    args = parser.parse_args()
    os.environ.setdefault("PROCTOR_NO_PREFECT", "1")
    os.environ["BENCH_MODEL_KEY"] = "sk-bench"
    load = os.getloadavg()
    print(
        f"{args.cases} cases (agent + judge), quota {args.rpm * args.scale:g} RPM, latency median "
        f"{args.latency_median / args.scale:g} s (log-normal, sigma {args.latency_sigma:g}); load average "
        f"{load[0]:.1f} on {os.cpu_count()} cores (shared machine: noisy)"
    )
    low_cases = args.low_cases or max(1, args.cases // 10)
    runs = {
        "default": ("default concurrency (no tuning)", None, args.cases),
        "high": (
            f"concurrency {DEFAULT_CONCURRENCY * 10} (x10 too high)",
            DEFAULT_CONCURRENCY * 10,
            args.cases,
        ),
        "low": (f"concurrency 1 (x10 too low), {low_cases} cases", 1, low_cases),
    }
    for name in args.runs.split(","):
        label, concurrency, cases = runs[name]
        one_run(label, args, concurrency, cases)


if __name__ == "__main__":
    main()
