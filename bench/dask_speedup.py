"""When does `--dask-address` pay off? The same suite in-process and on a local Dask cluster.

Two workloads, one `response_match` metric per case:
- CPU-bound (default): each case's agent burns --cpu-ms of pure-Python CPU (a sync agent holds
  the GIL, so in one process the cases take turns on one core);
- latency-bound (--sleep-ms 200): an async agent that waits --sleep-ms and uses no CPU, as an
  agent waiting on a model does; here one run adds up over Dask workers, since each worker runs
  a chunk at a time with its own --concurrency.
Every run is `proctor run SUITE --no-prefect` as a subprocess, whole command, with a fresh
SQLite database: in-process, then with `--dask-address local:N` for each N of --workers
(N worker processes, cluster start-up included) or, with --standing, a cluster started before
the command (`dask scheduler` and N `dask worker --nthreads 1` processes on this machine, stopped
by pid afterwards), as a team's standing cluster is: the run pays no start-up. Prints wall time
per size, the speed-up over in-process, and the throughput ratio to one Dask worker when 1 is
among --workers, with the load.

Usage: python bench/dask_speedup.py [--sizes 200,2000] [--cpu-ms 10 | --sleep-ms 200]
                                    [--workers 2 | --workers 1,2,4] [--standing] [--concurrency 8]
                                    [--repeats 1]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from tests.factories import echo_suite  # noqa: E402
from tests.fakes.processes import free_port, running  # noqa: E402

AGENT = """
import os, time

CPU_S = float(os.environ["BENCH_CPU_MS"]) / 1000

def agent(request):
    deadline = time.thread_time() + CPU_S
    while time.thread_time() < deadline:  # pure-Python work: holds the GIL
        sum(range(200))
    return "answer " + request.input
"""


SLEEPING_AGENT = """
import asyncio, os

SLEEP_S = float(os.environ["BENCH_SLEEP_MS"]) / 1000

async def agent(request):
    await asyncio.sleep(SLEEP_S)  # waits as for a model: no CPU, no GIL
    return "answer " + request.input
"""


@contextlib.contextmanager
def standing_cluster(workers: int, folder: Path, env: dict[str, str]) -> Iterator[str]:
    """A scheduler and `workers` single-threaded worker processes, up before the command runs."""
    from distributed import Client

    dask = [str(Path(sys.executable).parent / "dask")]
    address = f"tcp://127.0.0.1:{free_port()}"
    with contextlib.ExitStack() as stack:
        stack.enter_context(
            running(
                [
                    *dask,
                    "scheduler",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    address.rsplit(":", 1)[1],
                    "--no-dashboard",
                ],
                env=env,
                log=folder / "scheduler.log",
            )
        )
        for n in range(workers):
            stack.enter_context(
                running(
                    [*dask, "worker", address, "--nthreads", "1", "--no-dashboard", "--name", f"w{n}"],
                    env=env,
                    log=folder / f"worker{n}.log",
                    cwd=PROJECT,
                )
            )
        with Client(address, timeout=120) as client:
            client.wait_for_workers(workers, timeout=300)
        yield address


def whole_command(suite: Path, folder: Path, extra: list[str], env: dict[str, str]) -> float:
    cli = Path(sys.executable).parent / "proctor"
    command = [
        str(cli),
        "run",
        str(suite),
        "--no-prefect",
        "--no-progress",
        "--db",
        f"sqlite:///{folder}/r.db",
    ]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--output", str(folder / "reports"), *extra], env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"proctor run exited {done.returncode}: {done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="200,2000")
    parser.add_argument("--cpu-ms", type=float, default=10.0, help="CPU time each agent call burns")
    parser.add_argument(
        "--sleep-ms", type=float, help="latency-bound instead: an async agent that waits this long, no CPU"
    )
    parser.add_argument("--workers", default="2", help="Dask worker processes, one count or several (1,2,4)")
    parser.add_argument("--concurrency", type=int, default=8, help="--concurrency (per chunk on Dask)")
    parser.add_argument(
        "--standing", action="store_true", help="a cluster up before each command, not local:N"
    )
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    counts = [int(n) for n in str(args.workers).split(",")]
    env = {
        **os.environ,
        "BENCH_CPU_MS": str(args.cpu_ms),
        "BENCH_SLEEP_MS": str(args.sleep_ms or 0),
        "PREFECT_LOGGING_LEVEL": "WARNING",
    }
    workload = f"{args.cpu_ms:g} ms CPU per case"
    if args.sleep_ms:
        workload = f"agent waits {args.sleep_ms:g} ms (no CPU)"
    print(
        f"{os.cpu_count()} CPUs, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{workload}; --concurrency {args.concurrency}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            folder = Path(tmp) / f"n{size}"
            folder.mkdir()
            suite = echo_suite(
                folder,
                name=f"dask_bench_{size}",
                cases=size,
                agent=SLEEPING_AGENT if args.sleep_ms else AGENT,
                fails=lambda i: False,
            )
            concurrency = ["--concurrency", str(args.concurrency)]
            cluster = "standing" if args.standing else "local"
            figures = {}
            for label, n in (("in-process", 0), *((f"Dask {cluster}:{n}", n) for n in counts)):
                runs = []
                for k in range(args.repeats):
                    out = folder / f"{label.replace(' ', '_').replace(':', '')}-{k}"
                    out.mkdir()
                    with contextlib.ExitStack() as stack:
                        address = f"local:{n}"
                        if n and args.standing:
                            address = stack.enter_context(standing_cluster(n, out, env))
                        extra = [*concurrency, "--dask-address", address] if n else concurrency
                        runs.append(whole_command(suite, out, extra, env))
                figures[label] = statistics.median(runs)
                ratio = ""
                if n and f"Dask {cluster}:1" in figures:
                    ratio = f", {figures[f'Dask {cluster}:1'] / figures[label]:.2f}x {cluster}:1"
                seconds = figures[label]
                print(
                    f"  {size:>6} cases  {label:<14} {seconds:7.2f} s  {size / seconds:7.1f} cases/s"
                    f"  speed-up over in-process {figures['in-process'] / figures[label]:.2f}x{ratio}",
                    flush=True,
                )
    print(f"load at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
