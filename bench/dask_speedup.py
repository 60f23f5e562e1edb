"""When does `--dask-address` pay off? The same suite in-process and on a local Dask cluster.

Each case's agent burns --cpu-ms of pure-Python CPU (a sync agent holds the GIL, so in one
process the cases take turns on one core) and one `response_match` metric scores it. Every
run is `proctor run SUITE --no-prefect` as a subprocess, whole command, with a fresh SQLite
database: in-process, then with `--dask-address local:N` (N worker processes, cluster start-up
included). Prints wall time per size and the speed-up, with the machine's load.

Usage: python bench/dask_speedup.py [--sizes 200,2000] [--cpu-ms 10] [--workers 2] [--repeats 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from tests.factories import echo_suite  # noqa: E402

AGENT = """
import os, time

CPU_S = float(os.environ["BENCH_CPU_MS"]) / 1000

def agent(request):
    deadline = time.thread_time() + CPU_S
    while time.thread_time() < deadline:  # pure-Python work: holds the GIL
        sum(range(200))
    return "answer " + request.input
"""


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
    parser.add_argument("--workers", type=int, default=2, help="Dask worker processes")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    env = {**os.environ, "BENCH_CPU_MS": str(args.cpu_ms), "PREFECT_LOGGING_LEVEL": "WARNING"}
    print(
        f"{os.cpu_count()} CPUs, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{args.cpu_ms:g} ms CPU per case"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            folder = Path(tmp) / f"n{size}"
            folder.mkdir()
            suite = echo_suite(
                folder, name=f"dask_bench_{size}", cases=size, agent=AGENT, fails=lambda i: False
            )
            figures = {}
            for label, extra in (
                ("in-process", ["--concurrency", "8"]),
                (
                    f"Dask local:{args.workers}",
                    ["--concurrency", "8", "--dask-address", f"local:{args.workers}"],
                ),
            ):
                runs = []
                for k in range(args.repeats):
                    out = folder / f"{label.replace(' ', '_').replace(':', '')}-{k}"
                    out.mkdir()
                    runs.append(whole_command(suite, out, extra, env))
                figures[label] = statistics.median(runs)
                print(f"  {size:>6} cases  {label:<14} {figures[label]:7.2f} s", flush=True)
            local, dask = figures.values()
            print(f"  {size:>6} cases  speed-up with Dask: {local / dask:.2f}x", flush=True)
    print(f"load at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
