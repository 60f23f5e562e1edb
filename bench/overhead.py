"""Per-case orchestration overhead and parallel efficiency of a full Proctor run.

Every figure is for the whole run (with --prefect, a flow run and its Prefect tasks): the agent
call, three metrics per case (trajectory, ROUGE-1 response match, contains) and every result
persisted. Prints:

  overhead   (T(1000 zero-latency cases) - T(10)) / 990, in ms per case (goal <= 1 ms), and how
             much of it is executing + persisting and how much rendering the reports
  efficiency ideal / actual for 1000 cases at 50 ms agent latency, concurrency 32 (goal >= 90%),
             for the execution phase (first case started to last case stored, from the rows)
             and for the whole run (which adds Prefect's fixed start and finish costs)

Each figure is the median of --repeats runs; with --prefect each starts after a pause that lets
Prefect's API finish ingesting the previous run's events (its cost per run varies by seconds).

Without --prefect, runs go through `proctor.run.local_run` (what `proctor run` does with no Prefect
API configured); with --prefect, through the Prefect flow (point PREFECT_API_URL at a running
server to measure that path). Each also prints the fixed cost of a run (10 cases, whole run).

Usage: python bench/overhead.py [--prefect] [--postgres URL] [--cases 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")


AGENT = """
import asyncio
import os
from proctor.agents import AgentResponse
from proctor.models.agentflow import ToolCall

async def agent(request):
    # Read on every call: the module is imported once per process (imports are cached), and
    # the same agent runs first without latency, then with it.
    latency_s = float(os.environ.get("BENCH_AGENT_LATENCY_S", "0"))
    if latency_s:
        await asyncio.sleep(latency_s)
    city = request.input.rsplit(" ", 1)[-1]
    return AgentResponse(
        answer=f"The weather in {city} is 20 degrees and sunny.",
        tool_calls=[ToolCall(name="get_weather", args={"city": city})],
    )
"""


def write_suite(folder: Path, cases: int) -> Path:
    (folder / "bench_agent.py").write_text(AGENT)
    config = {
        "criteria": {
            "trajectory_match": {"threshold": 1.0},
            "response_match": {"threshold": 0.5},
            "contains": {"threshold": 1.0, "values": ["sunny"]},
        }
    }
    suite = {
        "eval_set_id": f"bench_{cases}",
        "metadata": {"agent": "bench_agent.py:agent", "eval_config": config},
        "eval_cases": [
            {
                "eval_id": f"case_{i}",
                "conversation": [
                    {
                        "invocation_id": "turn_1",
                        "user_content": {"role": "user", "content": f"Weather in city{i}"},
                        "expected_tool_trajectory": [{"name": "get_weather", "args": {"city": f"city{i}"}}],
                        "expected_final_response": {
                            "role": "assistant",
                            "content": f"The weather in city{i} is 20 degrees and sunny.",
                        },
                    }
                ],
            }
            for i in range(cases)
        ],
    }
    path = folder / f"bench_{cases}.evalset.json"
    path.write_text(json.dumps(suite))
    return path


# Prefect's API ingests task-run events at ~30/s here; a run started while it still digests the
# previous run's events waits for it. Each measured run starts once the server is idle again.
SETTLE_S = 4.0


ORCHESTRATION = {"mode": "none"}  # "none": what `proctor run` does with no Prefect API; "prefect": a flow run


def timed_run(suite: Path, database_url: str, concurrency: int, report_dir: Path) -> tuple[float, object]:
    from proctor.models.request import EvaluationRequest

    if ORCHESTRATION["mode"] == "prefect":
        from proctor.flows.evaluate import run_evaluation as evaluate

        time.sleep(SETTLE_S)
    else:
        from proctor.run.local_run import evaluate_in_process as evaluate
    request = EvaluationRequest(
        suite=str(suite), database_url=database_url, concurrency=concurrency, report_dir=str(report_dir)
    )
    started = time.perf_counter()
    summary = asyncio.run(evaluate(request))
    return time.perf_counter() - started, summary


def execution_phase(database_url: str, run_id: object) -> float:
    """Seconds from the first case starting to the last case stored, from the stored rows."""
    from sqlalchemy import func, select
    from sqlmodel import Session

    from proctor.models.tables import CaseResultRow
    from proctor.storage import get_engine

    with Session(get_engine(database_url)) as session:
        first, last = session.exec(
            select(func.min(CaseResultRow.started_at), func.max(CaseResultRow.finished_at)).where(
                CaseResultRow.run_id == run_id
            )
        ).one()
    return (last - first).total_seconds()


def report_seconds(database_url: str, run_id: object, folder: Path) -> float:
    """Time to render the three reports of a finished run again (what the flow's report task does)."""
    from proctor.tasks.report import render_reports

    started = time.perf_counter()
    render_reports(database_url=database_url, run_id=run_id, directory=folder)
    return time.perf_counter() - started


MADE: list[str] = []  # the PostgreSQL databases this bench made, dropped when it ends


def drop_made_databases(postgres: str) -> None:
    import psycopg
    from sqlalchemy.engine import make_url

    from proctor.storage.db import dispose_engines

    dispose_engines()
    admin = make_url(postgres).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(admin, autocommit=True) as conn:
        while MADE:
            conn.execute(f'DROP DATABASE IF EXISTS "{MADE.pop()}" WITH (FORCE)')


def fresh_database(kind: str, folder: Path, postgres: str | None, name: str) -> str:
    if kind == "sqlite":
        return f"sqlite:///{folder / (name + '.db')}"
    import uuid

    import psycopg
    from sqlalchemy.engine import make_url

    server = make_url(postgres)
    database = f"proctor_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(
        server.set(drivername="postgresql").render_as_string(False), autocommit=True
    ) as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
    MADE.append(database)
    return server.set(database=database).render_as_string(False)


def median(values: list[float]) -> float:
    return statistics.median(values)


def bench(kind: str, postgres: str | None, cases: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        small, large = write_suite(folder, 10), write_suite(folder, cases)
        os.environ["BENCH_AGENT_LATENCY_S"] = "0"
        timed_run(small, fresh_database(kind, folder, postgres, "warm"), 32, folder / "warm")  # warm-up
        t_small, t_large, t_exec, t_report = [], [], [], []
        small_exec, small_report = [], []
        for i in range(repeats):
            url = fresh_database(kind, folder, postgres, f"s{i}")
            t, summary = timed_run(small, url, 32, folder / f"s{i}")
            t_small.append(t)
            small_exec.append(execution_phase(url, summary.run_id))
            small_report.append(report_seconds(url, summary.run_id, folder / f"again-s{i}"))
            url = fresh_database(kind, folder, postgres, f"l{i}")
            t, summary = timed_run(large, url, 32, folder / f"l{i}")
            assert summary.total == cases and summary.passed == cases, summary
            t_large.append(t)
            t_exec.append(execution_phase(url, summary.run_id))
            t_report.append(report_seconds(url, summary.run_id, folder / f"again{i}"))
        per_case = (median(t_large) - median(t_small)) / (cases - 10) * 1000
        # The parts by the same difference (1,000 cases less 10), so they add up to per_case:
        # what a case adds while cases run and are stored, to the reports, and to the rest
        # (loading the suite, closing the run, the flow run's own steps).
        executing = (median(t_exec) - median(small_exec)) / (cases - 10) * 1000
        reporting = (median(t_report) - median(small_report)) / (cases - 10) * 1000
        rest = per_case - executing - reporting
        print(
            f"[{kind}] load {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
            f"orchestration: {ORCHESTRATION['mode']}"
        )
        print(f"[{kind}] fixed cost of a run (10 zero-latency cases, whole run): {median(t_small):.3f} s")
        print(
            f"[{kind}] zero latency, median of {repeats}: 10 cases {median(t_small):.2f} s, "
            f"{cases} cases {median(t_large):.2f} s -> {per_case:.3f} ms per case (goal <= 1 ms)"
        )
        print(
            f"[{kind}]   of which: executing + persisting {executing:.3f} ms, rendering the reports "
            f"{reporting:.3f} ms, the rest of the run {rest:.3f} ms per case (adding up to {per_case:.3f})"
        )

        os.environ["BENCH_AGENT_LATENCY_S"] = "0.05"
        ideal = cases * 0.05 / 32
        whole, phase = [], []
        for i in range(repeats):
            url = fresh_database(kind, folder, postgres, f"p{i}")
            t, summary = timed_run(large, url, 32, folder / f"p{i}")
            assert summary.total == cases, summary
            whole.append(t)
            phase.append(execution_phase(url, summary.run_id))
        if median(whole) < ideal:  # faster than possible: the agent did not wait its 50 ms
            raise SystemExit(f"[{kind}] the 50 ms runs took {median(whole):.2f} s < ideal {ideal:.2f} s")
        print(
            f"[{kind}] {cases} cases x 50 ms, concurrency 32, ideal {ideal:.2f} s: execution phase "
            f"{median(phase):.2f} s -> {100 * ideal / median(phase):.1f}% efficiency (goal >= 90%); "
            f"whole run {median(whole):.2f} s -> {100 * ideal / median(whole):.1f}%"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--postgres",
        default=os.environ.get("PROCTOR_TEST_POSTGRES_URL"),
        help="also measure against this PostgreSQL server",
    )
    parser.add_argument(
        "--prefect",
        action="store_true",
        help="measure Prefect flow runs (against PREFECT_API_URL, else a temporary server) instead of "
        "in-process runs, what `proctor run` does with no Prefect API configured",
    )
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    ORCHESTRATION["mode"] = "prefect" if args.prefect else "none"
    bench("sqlite", None, args.cases, args.repeats)
    if args.postgres:
        try:
            bench("postgresql", args.postgres, args.cases, args.repeats)
        finally:
            drop_made_databases(args.postgres)


if __name__ == "__main__":
    main()
