"""Large suites: 10,000 and 100,000 cases end to end, with peak memory and report time.

For each size, a suite of zero-latency echo cases (one `response_match` metric, every tenth
case failing) is written to disk, then run with `proctor run` as a subprocess; its peak
resident memory (the process tree, sampled every 50 ms) and wall time are printed, and the
database is checked to hold exactly N case rows and N metric rows. Then, from the 10k run's
database, `proctor report --format html|md` are timed (goal: < 2 s), and the 100k/10k time
ratio is printed (goal: <= 11x).

Usage: python bench/scale.py [--sizes 10000,100000] [--postgres URL] [--keep]
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


def write_suite(folder: Path, cases: int) -> Path:
    """Streamed to disk, so the generator itself never holds the suite."""
    (folder / "agent.py").write_text(AGENT)
    path = folder / f"scale{cases}.evalset.json"
    with open(path, "w") as out:
        out.write(f'{{"eval_set_id": "scale{cases}", "metadata": {{"agent": "agent.py:agent", ')
        out.write('"eval_config": {"criteria": {"response_match": {"threshold": 0.9}}}}, "eval_cases": [')
        for i in range(cases):
            expected = "something else" if i % 10 == 0 else f"answer question {i}"
            case = {
                "eval_id": f"c{i}",
                "conversation": [
                    {
                        "invocation_id": "t1",
                        "user_content": {"role": "user", "content": f"question {i}"},
                        "expected_final_response": {"role": "assistant", "content": expected},
                    }
                ],
            }
            out.write(("," if i else "") + json.dumps(case))
        out.write("]}")
    return path


def run_measured(command: list[str], env: dict[str, str]) -> tuple[float, float, float, int]:
    """Wall seconds, peak RSS in MB of the proctor process and of its whole tree (which
    includes Prefect's temporary API server when no PREFECT_API_URL is set), exit code."""
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    root = psutil.Process(process.pid)
    peak_own = peak_tree = 0
    while process.poll() is None:
        try:
            own = root.memory_info().rss
            tree = own + sum(child.memory_info().rss for child in root.children(recursive=True))
            peak_own, peak_tree = max(peak_own, own), max(peak_tree, tree)
        except psutil.Error:
            pass
        time.sleep(0.05)
    error = process.stderr.read().decode() if process.stderr else ""
    if process.returncode not in (0, 1):
        print(error[-3000:])
    return time.perf_counter() - started, peak_own / 2**20, peak_tree / 2**20, process.returncode


def count_rows(url: str) -> tuple[int, int]:
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as connection:
            return tuple(
                connection.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("case_result", "metric_result")
            )
    import psycopg

    with psycopg.connect(url) as connection:
        return tuple(
            connection.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("case_result", "metric_result")
        )


def last_run_id(url: str) -> str:
    query = "SELECT id FROM eval_run ORDER BY started_at DESC LIMIT 1"
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as connection:
            return str(uuid.UUID(connection.execute(query).fetchone()[0]))
    import psycopg

    with psycopg.connect(url) as connection:
        return str(connection.execute(query).fetchone()[0])


def render_seconds(url: str, run_id: str) -> dict[str, float]:
    """The Markdown and HTML reports rendered in this process from the stored run (what the
    goal of < 2 s for 10,000 cases is about: no interpreter start-up)."""
    sys.path.insert(0, str(ROOT))
    from sqlmodel import Session

    from models.tables import EvalRun
    from proctor.reporting.html import html_report
    from proctor.reporting.reports import markdown_report
    from proctor.storage import get_engine

    seconds = {}
    with Session(get_engine(url)) as session:
        run = session.get(EvalRun, uuid.UUID(run_id))
        for name, render in (
            ("md", lambda: "".join(markdown_report(session=session, run=run))),
            ("html", lambda: html_report(session=session, run=run)),
        ):
            started = time.perf_counter()
            render()
            seconds[name] = time.perf_counter() - started
    return seconds


def fresh_database(kind: str, folder: Path, postgres: str | None, size: int) -> tuple[str, str | None]:
    if kind == "sqlite":
        return f"sqlite:///{folder / f'scale{size}.db'}", None
    import psycopg

    name = f"proctor_scale_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return postgres.rsplit("/", 1)[0] + f"/{name}", name


def drop_database(postgres: str, name: str) -> None:
    import psycopg

    with psycopg.connect(postgres, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--postgres", help="also run against this PostgreSQL server")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="proctor-scale-"))
    env = {**os.environ, "PREFECT_HOME": str(folder / "prefect"), "PREFECT_LOGGING_LEVEL": "WARNING"}
    print(f"cases: {sizes}; {os.cpu_count()} CPUs; work folder {folder}")
    kinds = ["sqlite"] + (["postgres"] if args.postgres else [])
    try:
        for kind in kinds:
            times: dict[int, float] = {}
            for size in sizes:
                suite_dir = folder / f"{kind}{size}"
                suite_dir.mkdir()
                suite = write_suite(suite_dir, size)
                url, dropme = fresh_database(kind, folder, args.postgres, size)
                command = [PROCTOR, "run", str(suite), "--db", url, "--output", str(suite_dir / "reports")]
                command += ["--no-progress", "--concurrency", str(args.concurrency)]
                wall, own, tree, code = run_measured(command, env)
                cases, metrics = count_rows(url)
                exact = "exact" if cases == metrics == size else "WRONG"
                times[size] = wall
                print(
                    f"{kind:8} {size:>7} cases  {wall:8.1f} s  {1000 * wall / size:6.2f} ms/case  "
                    f"peak RSS {own:6.0f} MB (with Prefect's server {tree:6.0f} MB)  exit {code}  "
                    f"rows: {cases} cases, {metrics} metrics ({exact})"
                )
                if size == 10_000 or size == min(sizes):
                    run_id = last_run_id(url)
                    for fmt in ("html", "md"):
                        report = [PROCTOR, "report", run_id, "--db", url, "--format", fmt]
                        started = time.perf_counter()
                        subprocess.run(report, env=env, stdout=subprocess.DEVNULL, check=True)
                        whole = time.perf_counter() - started
                        started = time.perf_counter()
                        subprocess.run([PROCTOR, "--version"], env=env, stdout=subprocess.DEVNULL, check=True)
                        start_up = time.perf_counter() - started
                        print(
                            f"{kind:8} {size:>7} cases  report --format {fmt:4}: {whole:5.2f} s "
                            f"({whole - start_up:5.2f} s after the command's {start_up:.2f} s start-up)"
                        )
                if size == 10_000 or size == min(sizes):
                    rendered = render_seconds(url, last_run_id(url))
                    print(
                        f"{kind:8} {size:>7} cases  rendered in-process: Markdown {rendered['md']:.2f} s, "
                        f"HTML {rendered['html']:.2f} s (goal < 2 s)"
                    )
                if dropme:
                    drop_database(args.postgres, dropme)
            if len(times) > 1:
                small, large = min(times), max(times)
                print(
                    f"{kind:8} time ratio {large}/{small} cases: {times[large] / times[small]:.1f}x "
                    f"(linear: {large / small:.0f}x; goal <= {1.1 * large / small:.0f}x)"
                )
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
