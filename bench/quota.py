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

Then, side by side (run `peers`), the same workload through Inspect AI and promptfoo against
the same server, each with its documented rate-limit, retry and concurrency settings at their
defaults (Inspect: adaptive connections 10-100 starting at 20, unlimited retries with
exponential backoff; promptfoo: 4 at once, a 429 waits for Retry-After or the reset headers,
4 retries), on --peer-cases cases (default 500), with Proctor run again on the same number at
its default: a fresh server (empty window) for each. Each framework's evaluation call is timed
in its own process (Proctor in this one), start-up excluded. Printed per framework: cases per
minute, admitted requests per minute as a share of the quota, the share answered 429,
requests per case (2 when nothing is sent twice), failed and errored cases, and Proctor's
cases per minute over the peer's. Peers are found as `bench/peers.py` finds them: Inspect AI
in --peer-python (or $PROCTOR_PEER_PYTHON), promptfoo at --promptfoo (or $PROCTOR_PROMPTFOO);
one not named is skipped with a note. A run shorter than a few minutes shows more than 100 %
of the quota: the sliding window starts empty, so the first minute admits a full minute's
requests at whatever pace the client sends them.

The full figure (2,000 cases at 600 RPM) takes about 7 minutes per run; `--scale 10` runs the
same workload ten times faster (RPM x10, latency /10, so the same number of calls in flight
uses the same share of the quota), e.g. `--rpm 600 --scale 10` is 6,000 RPM at a 60 ms median;
Proctor's own work per call is then ten times as large a share of the time. The machine is
shared (2 cores, other jobs): figures are noisy, and the load average is printed with them.

Usage: python bench/quota.py [--cases 2000] [--rpm 600] [--scale 1] [--runs default,high,low,peers]
                             [--latency-median 0.6] [--latency-sigma 0.5] [--peer-cases 500]
                             [--peer-python PATH] [--promptfoo PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "bench"))

from peer_drivers import inspect_ai, promptfoo  # noqa: E402
from peer_drivers.common import PEER_PYTHON_ENV, PROMPTFOO_ENV, base_env, python_peers  # noqa: E402
from quota_server import QuotaServer  # noqa: E402

DEFAULT_CONCURRENCY = 8
HIGH = DEFAULT_CONCURRENCY * 10
INSTRUCTIONS = "Answer in one short sentence."
API_KEY = "sk-bench"


def questions(cases: int) -> list[dict[str, str]]:
    return [{"input": f"Question {i}: what is six times seven?", "expected": "42"} for i in range(cases)]


@dataclass
class Outcome:
    """One framework's run against a fresh quota server: what it reported, what the server saw."""

    cases: int
    completed: int
    failed: int
    errored: int
    wall: float
    admitted: int
    refused: int
    span: float
    waited: float | None = None
    note: str = ""

    def per_minute(self, count: float) -> float:
        return count / (self.wall / 60)


def suite(folder: Path, cases: int, base_url: str) -> Path:
    lines = "\n".join(
        f"  - {{name: c{i}, input: '{case['input']}', ground_truth: '{case['expected']}'}}"
        for i, case in enumerate(questions(cases))
    )
    key = "${BENCH_MODEL_KEY}"
    model = f'{{provider: openai, name: NAME, endpoint: "{base_url}", api_key: "{key}", temperature: 0}}'
    path = folder / "agent.yaml"
    path.write_text(
        textwrap.dedent("""\
            name: quota-bench
            model: AGENT
            instructions: INSTRUCTIONS
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
        .replace("INSTRUCTIONS", INSTRUCTIONS)
    )
    return path


def server_for(args: argparse.Namespace) -> QuotaServer:
    # The same calls in flight use the same share of the quota at any --scale.
    return QuotaServer(
        rpm=args.rpm * args.scale, median_s=args.latency_median / args.scale, sigma=args.latency_sigma
    )


def observed(stats: dict, wall: float, **reported: object) -> Outcome:
    admitted, refused = stats["admitted"], stats["refused"]
    span = (stats["admitted_at"][-1] - stats["admitted_at"][0]) if admitted > 1 else wall
    return Outcome(wall=wall, admitted=admitted, refused=refused, span=span, **reported)  # type: ignore[arg-type]


def run_proctor(args: argparse.Namespace, concurrency: int | None, cases: int) -> Outcome:
    from proctor.models.request import EvaluationRequest
    from proctor.run.local_run import evaluate_in_process

    with server_for(args) as server:
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
    figures = summary.quota or {}
    return observed(
        stats,
        wall,
        cases=cases,
        completed=summary.total,
        failed=summary.failed,
        errored=summary.errored,
        waited=figures.get("waited_s", 0),
        note=figures.get("note") or "",
    )


def one_run(label: str, args: argparse.Namespace, concurrency: int | None, cases: int) -> Outcome:
    outcome = run_proctor(args, concurrency, cases)
    rpm = args.rpm * args.scale
    admitted, refused, wall = outcome.admitted, outcome.refused, outcome.wall
    share = admitted / (wall / 60) / rpm
    print(
        f"{label:<34} {share * 100:5.1f}% of quota ({admitted / (wall / 60):6.0f} of {rpm:g} rpm; "
        f"first-to-last {admitted / max(outcome.span, 1e-9) * 60 / rpm * 100:5.1f}%)  "
        f"cases {outcome.completed}: {outcome.failed} failed, {outcome.errored} errored  "
        f"429s {refused} ({refused / max(admitted + refused, 1) * 100:.2f}% of requests)  "
        f"waited {outcome.waited or 0:.0f} s  wall {wall:.1f} s"
    )
    if outcome.note:
        print(f"{'':<34} note: {outcome.note}")
    return outcome


def run_peer(args: argparse.Namespace, name: str, fw: object, cases: int) -> Outcome:
    """One peer on the quota workload in its own process, against a fresh quota server."""
    folder = Path(tempfile.mkdtemp(prefix=f"proctor-quota-{name}-"))
    with server_for(args) as server:
        if name == "inspect":
            inspect_ai.write_quota_files(folder, questions(cases), INSTRUCTIONS)
            result = fw.quota(folder, folder, server.base_url, API_KEY)  # type: ignore[attr-defined]
        else:
            promptfoo.write_quota_files(folder, questions(cases), INSTRUCTIONS, server.base_url, API_KEY)
            result = fw.quota(folder, folder)  # type: ignore[attr-defined]
        stats = server.stats()
    total, passed, errored = result["total"], result["passed"], result["errored"]
    missing = max(0, cases - total)  # cases the framework never reported
    return observed(
        stats,
        result["seconds"],
        cases=cases,
        completed=total,
        failed=total - passed - errored,
        errored=errored + missing,
        note=f"status {result['status']}" if result.get("status", "success") != "success" else "",
    )


def find_peers(args: argparse.Namespace) -> list[tuple[str, str, object]]:
    """(name, version, framework) of the peers named and installed, as bench/peers.py finds them."""
    common = {"timeout": args.timeout, "concurrency": 0, "settle": 0.0}
    peer_python, versions = python_peers(args, {"inspect"})
    found: list[tuple[str, str, object]] = []
    inspect = inspect_ai.find(args, peer_python, versions, base_env(), common)
    if inspect is not None:
        found.append(("inspect", inspect.version, inspect))
    foo = promptfoo.find(args, common)
    if foo is not None:
        found.append(("promptfoo", foo.version, foo))
    return found


def side_by_side(args: argparse.Namespace) -> None:
    """Proctor, Inspect AI and promptfoo on the same workload, each at its defaults."""
    cases, rpm = args.peer_cases, args.rpm * args.scale
    print(
        f"\nSide by side: {cases} cases (agent + judge), each framework at its default rate-limit, "
        f"retry and concurrency settings, a fresh server (empty window) for each"
    )
    peers = find_peers(args)
    from importlib.metadata import version

    rows: list[tuple[str, str, Outcome | str]] = []
    for name, peer_version, fw in [("proctor", version("proctor"), None), *peers]:
        outcome: Outcome | str
        try:
            outcome = run_proctor(args, None, cases) if fw is None else run_peer(args, name, fw, cases)
            print(f"  {name} done: {outcome.wall:.1f} s", flush=True)
        except Exception as exc:  # a failing framework is reported, never stops the bench
            outcome = f"FAILED: {exc}"
        rows.append((name, peer_version, outcome))
    base = rows[0][2]
    header = (
        "framework", "version", "wall s", "cases/min", "admitted rpm", "% of quota",
        "first-to-last %", "429 share", "requests/case", "failed", "errored", "Proctor ÷ peer",
    )  # fmt: skip
    table = []
    for name, peer_version, one in rows:
        if isinstance(one, str):  # failed: the reason is printed under the table
            table.append((name, peer_version, *["-"] * (len(header) - 2)))
            continue
        sent = one.admitted + one.refused
        throughput = one.per_minute(one.completed - one.errored)
        ratio = "-"
        if isinstance(base, Outcome) and throughput > 0:
            ratio = f"{base.per_minute(base.completed - base.errored) / throughput:.2f}"
        table.append(
            (
                name,
                peer_version,
                f"{one.wall:.1f}",
                f"{throughput:.0f}",
                f"{one.per_minute(one.admitted):.0f}",
                f"{one.per_minute(one.admitted) / rpm * 100:.1f}",
                f"{one.admitted / max(one.span, 1e-9) * 60 / rpm * 100:.1f}",
                f"{one.refused / max(sent, 1) * 100:.2f}%",
                f"{sent / max(one.completed, 1):.2f}",
                str(one.failed),
                str(one.errored),
                ratio,
            )
        )
    widths = [max(len(row[i]) for row in (header, *table)) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(
            c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    print(line(header))
    print("  ".join("-" * w for w in widths))
    for row in table:
        print(line(row))
    for name, _, one in rows:
        if isinstance(one, str):
            print(f"  {name}: {one}")
        elif one.note:
            print(f"  {name}: {one.note}")
    print(
        "cases/min counts cases that were scored (errored ones not); requests/case counts every request "
        "sent, 429s included; Proctor ÷ peer = Proctor's cases/min over the peer's"
    )
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--rpm", type=float, default=600)
    parser.add_argument("--scale", type=float, default=1.0, help="RPM times this (a faster variant)")
    parser.add_argument("--runs", default="default,high,low,peers")
    parser.add_argument("--peer-cases", type=int, default=500, help="cases of the side-by-side run (peers)")
    parser.add_argument(
        "--peer-python", default=os.environ.get(PEER_PYTHON_ENV), help="Python with inspect-ai (for peers)"
    )
    parser.add_argument(
        "--promptfoo", default=os.environ.get(PROMPTFOO_ENV), help="promptfoo's command (for peers)"
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="limit per peer run (s)")
    parser.add_argument(
        "--low-cases", type=int, help="cases of the x10-too-low run (default: a tenth; one at a time is slow)"
    )
    parser.add_argument("--latency-median", type=float, default=0.6)
    parser.add_argument("--latency-sigma", type=float, default=0.5)
    args = parser.parse_args()
    os.environ.setdefault("PROCTOR_NO_PREFECT", "1")
    os.environ["BENCH_MODEL_KEY"] = API_KEY
    names = args.runs.split(",")
    cases = args.cases if set(names) - {"peers"} else args.peer_cases
    load = os.getloadavg()
    print(
        f"{cases} cases (agent + judge), quota {args.rpm * args.scale:g} RPM, latency median "
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
    for name in names:
        if name == "peers":
            side_by_side(args)
            continue
        if name not in runs:
            parser.error(f"--runs takes names from default,high,low,peers, not {name!r}")
        label, concurrency, cases = runs[name]
        one_run(label, args, concurrency, cases)


if __name__ == "__main__":
    main()
