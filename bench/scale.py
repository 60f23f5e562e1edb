"""Large suites: 10,000 and 100,000 cases end to end, with peak memory and report time.

For each size, an agentflow suite of zero-latency echo cases (one deterministic
`response_match` metric, every tenth case failing) is streamed to disk, then run with
`proctor run SUITE --db URL --output DIR --no-progress --concurrency 32` as a subprocess.
Printed per size and database:

  wall       seconds for the whole command (interpreter start, Prefect's temporary API, loading,
             running, persisting, reports and artifacts), and per case in ms
  peak RSS   of the `proctor` process itself (os.wait4's ru_maxrss: exact, kernel-measured),
             and the sum over its process tree sampled every 50 ms (adds Prefect's temporary
             API server, a subprocess of its own)
  rows       the database holds exactly N case rows and N metric rows, and the run's tallies

then the 100k/10k time ratio (goal <= 11x) and the peak-memory growth per case with its
extrapolation to 100,000 cases (goal < 1 GB), and, from the 10,000-case run's database, the
time to render its reports (goal < 2 s): `proctor report RUN_ID --format html|md` as a
command (and minus the command's start-up), and in-process `html_report`, `markdown_report`
and `write_reports` (all five files, what the flow's report task does).

Usage: python bench/scale.py [--sizes 10000,100000] [--postgres URL] [--skip-100k] [--keep]
                            [--databases sqlite,postgresql] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
PROCTOR = str(Path(sys.executable).with_name("proctor"))
AGENT = 'async def agent(request):\n    return "answer " + request.input\n'
REPORT_SIZE = 10_000  # the size whose reports are timed (else the smallest size run)


def write_suite(folder: Path, cases: int) -> tuple[Path, int]:
    """Streamed to disk a case at a time, so the generator never holds the suite. Every tenth
    case expects another answer and fails. Returns the path and the number of failing cases."""
    (folder / "agent.py").write_text(AGENT)
    path = folder / f"scale{cases}.evalset.json"
    failing = 0
    with open(path, "w", encoding="utf-8") as out:
        out.write(f'{{"eval_set_id": "scale{cases}", "metadata": {{"agent": "agent.py:agent", ')
        out.write('"eval_config": {"criteria": {"response_match": {"threshold": 0.9}}}}, "eval_cases": [\n')
        for i in range(cases):
            fails = i % 10 == 0
            failing += fails
            case = {
                "eval_id": f"c{i}",
                "conversation": [
                    {
                        "invocation_id": "t1",
                        "user_content": {"role": "user", "content": f"question {i}"},
                        "expected_final_response": {
                            "role": "assistant",
                            "content": "something else entirely" if fails else f"answer question {i}",
                        },
                    }
                ],
            }
            out.write(("," if i else "") + json.dumps(case, separators=(",", ":")) + "\n")
        out.write("]}\n")
    return path, failing


def run_measured(command: list[str], env: dict[str, str]) -> tuple[float, float, float, float, int, str]:
    """Wall seconds, peak RSS in MB of the command's own process (kernel figure from wait4),
    peak of the sum over its process tree (sampled), when the process's own sampled peak
    came (seconds after the start), exit code, stderr's tail."""
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=errors)
        root = psutil.Process(process.pid)
        peak_tree = peak_own = peak_at = 0.0
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)  # reaps it; Popen is not asked
            if pid:
                break
            try:
                own = root.memory_info().rss
                if own > peak_own:
                    peak_own, peak_at = own, time.perf_counter() - started
                tree = own + sum(child.memory_info().rss for child in root.children(recursive=True))
                peak_tree = max(peak_tree, tree)
            except psutil.Error:
                pass
            time.sleep(0.05)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        tail = errors.read().decode(errors="replace")[-3000:]
    own = usage.ru_maxrss / 1024  # KiB on Linux
    return wall, own, max(own, peak_tree / 2**20), peak_at, process.returncode, tail


def query(url: str, sql: str, *params: object) -> list[tuple]:
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as connection:
            return connection.execute(sql.replace("%s", "?"), params).fetchall()
    import psycopg

    with psycopg.connect(url) as connection:
        return connection.execute(sql, params).fetchall()


def stored(url: str) -> tuple[str, int, int, tuple]:
    """The (only) run's id, its case and metric row counts, and its tallies."""
    [(run_id, status, total, passed, failed, errored)] = query(
        url, "SELECT id, status, total_cases, passed_cases, failed_cases, errored_cases FROM eval_run"
    )
    run_id = str(uuid.UUID(str(run_id)))
    key = run_id if url.startswith("postgresql") else uuid.UUID(run_id).hex
    [(cases,)] = query(url, "SELECT count(*) FROM case_result WHERE run_id = %s", key)
    [(metrics,)] = query(url, "SELECT count(*) FROM metric_result WHERE run_id = %s", key)
    return run_id, cases, metrics, (status, total, passed, failed, errored)


def render_in_process(url: str, run_id: str, folder: Path) -> dict[str, float]:
    """The reports rendered in this process from the stored run: no interpreter start-up."""
    from sqlmodel import Session

    from proctor.models.tables import EvalRun
    from proctor.reporting.html import html_report
    from proctor.reporting.reports import markdown_report, write_reports
    from proctor.storage import get_engine

    renders = {
        "html_report (HTML)": lambda session, run: html_report(session=session, run=run),
        "markdown_report (Markdown)": lambda session, run: "".join(markdown_report(session=session, run=run)),
        "write_reports (all 5 files)": lambda session, run: write_reports(
            session=session, run=run, directory=folder
        ),
    }
    seconds = {}
    engine = get_engine(url)
    for name, render in renders.items():
        with Session(engine) as session:  # a fresh session each: nothing cached from the last
            run = session.get(EvalRun, uuid.UUID(run_id))
            started = time.perf_counter()
            render(session, run)
            seconds[name] = time.perf_counter() - started
    engine.dispose()
    return seconds


def time_command(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def report_times(kind: str, size: int, url: str, run_id: str, folder: Path, env: dict[str, str]) -> None:
    # the command's own start-up: the interpreter and the imports `proctor report` needs
    imports = "import proctor.cli, proctor.reporting, proctor.reporting.html, proctor.storage, sqlmodel"
    start_up = time_command([sys.executable, "-c", imports], {**env, "PYTHONPATH": str(ROOT)})
    for fmt in ("html", "md"):
        whole = time_command([PROCTOR, "report", run_id, "--db", url, "--format", fmt], env)
        print(
            f"{kind:10} {size:>7} cases  proctor report --format {fmt:4}: {whole:5.2f} s "
            f"({whole - start_up:5.2f} s after the command's {start_up:.2f} s start-up; goal < 2 s)"
        )
    for name, seconds in render_in_process(url, run_id, folder / "again").items():
        print(f"{kind:10} {size:>7} cases  in-process {name:28}: {seconds:5.2f} s")


def fresh_database(kind: str, folder: Path, postgres: str | None, size: int) -> tuple[str, str | None]:
    if kind == "sqlite":
        return f"sqlite:///{folder / f'scale{size}.db'}", None
    import psycopg

    name = f"proctor_bench_scale_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return postgres.rsplit("/", 1)[0] + f"/{name}", name


def drop_database(postgres: str, name: str) -> None:
    import psycopg

    with psycopg.connect(postgres, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def bench(kind: str, sizes: list[int], args: argparse.Namespace, folder: Path, env: dict[str, str]) -> None:
    times: dict[int, float] = {}
    memory: dict[int, float] = {}
    report_size = REPORT_SIZE if REPORT_SIZE in sizes else min(sizes)
    for size in sizes:
        work = folder / f"{kind}{size}"
        work.mkdir()
        started = time.perf_counter()
        suite, failing = write_suite(work, size)
        written = time.perf_counter() - started
        url, database = fresh_database(kind, folder, args.postgres, size)
        try:
            command = [PROCTOR, "run", str(suite), "--db", url, "--output", str(work / "reports")]
            command += ["--no-progress", "--concurrency", str(args.concurrency)]
            wall, own, tree, peak_at, code, errors = run_measured(command, env)
            if code not in (0, 1):
                print(f"{kind:10} {size:>7} cases  proctor run exited {code}:\n{errors}")
                continue
            run_id, cases, metrics, (status, total, passed, failed, errored) = stored(url)
            exact = "exact" if cases == metrics == size else "WRONG"
            tallies = "as expected" if (failed, passed) == (failing, size - failing) else "UNEXPECTED"
            times[size], memory[size] = wall, own
            print(
                f"{kind:10} {size:>7} cases  suite {suite.stat().st_size / 2**20:.1f} MB written in "
                f"{written:.1f} s; run {wall:7.1f} s = {1000 * wall / size:5.2f} ms/case; exit {code}"
            )
            print(
                f"{kind:10} {size:>7} cases  peak RSS: proctor {own:6.0f} MB, process tree "
                f"(with Prefect's API server) {tree:6.0f} MB; proctor's peak came at {peak_at:.0f} s "
                f"of {wall:.0f} s"
            )
            print(
                f"{kind:10} {size:>7} cases  rows: {cases} case, {metrics} metric ({exact}); run {status}, "
                f"{total} total, {passed} passed, {failed} failed, {errored} errored ({tallies})"
            )
            if size == report_size:
                report_times(kind, size, url, run_id, work, env)
        finally:
            if database and not args.keep:
                drop_database(args.postgres, database)
    if len(times) > 1:
        small, large = min(times), max(times)
        slope = (memory[large] - memory[small]) / (large - small)
        print(
            f"{kind:10} time ratio {large}/{small} cases: {times[large] / times[small]:.1f}x "
            f"(linear: {large / small:.0f}x; goal <= {1.1 * large / small:.0f}x)"
        )
        print(
            f"{kind:10} peak RSS grows {1024 * slope:.1f} KB per case -> "
            f"{memory[small] + slope * (100_000 - small):.0f} MB at 100,000 cases (goal < 1024 MB)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated case counts")
    parser.add_argument("--postgres", metavar="URL", help="also run against this PostgreSQL server")
    parser.add_argument("--skip-100k", action="store_true", help="leave out sizes of 100,000 and more")
    parser.add_argument(
        "--databases", default="sqlite,postgresql", help="which to run (PostgreSQL only with --postgres)"
    )
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--keep", action="store_true", help="keep the work folder and PostgreSQL databases")
    args = parser.parse_args()
    sizes = sorted({int(size) for size in args.sizes.split(",")})
    if args.skip_100k:
        sizes = [size for size in sizes if size < 100_000]
    folder = Path(tempfile.mkdtemp(prefix="proctor-scale-"))
    env = {
        **os.environ,
        "PREFECT_HOME": tempfile.mkdtemp(prefix="prefect-home-", dir=folder),
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        # 100,000 cases make a ~19 MB file, near the default 20 MB cap on one suite file
        "PROCTOR_MAX_SUITE_BYTES": os.environ.get("PROCTOR_MAX_SUITE_BYTES", str(256 * 2**20)),
    }
    print(f"sizes {sizes}; {os.cpu_count()} CPUs; work folder {folder}")
    try:
        if "sqlite" in args.databases:
            bench("sqlite", sizes, args, folder, env)
        if args.postgres and "postgres" in args.databases:
            bench("postgresql", sizes, args, folder, env)
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
