"""Workers that add up: one, two and four process workers on one Prefect work pool.

A Prefect server of its own (free port, PREFECT_HOME in a temporary folder), the `proctor`
process pool and the deployments of `prefect.yaml` (`prefect --no-prompt deploy --all`, as
the README says), then for each worker count N: N workers (`prefect worker start --pool proctor
--limit 1`, each in its own process group, stopped by its pid), --runs flow runs of the
`evaluate` deployment triggered at once through the API (what the UI's Run button does), each
of --cases cases of a latency-bound agent (`await asyncio.sleep(0.2)`, no model, no quota) at
--concurrency, and the wall time from the trigger until every flow run is final. Printed per N:
cases per second, the ratio to one worker (goal >= 1.8x for two, >= 3.5x for four), and whether
each case was stored once (every run holds exactly --cases case rows, each case id once).

A flow run is one process: a run's cases share one worker's slot, so workers add up over runs
(a nightly of several suites, agents or variants), not within one run; a single run spreads
over processes with the Dask runner (`--dask-address`). Workers poll the pool every
PREFECT_WORKER_QUERY_SECONDS (default 10 s; 1 s here, so a worker that finished a run does not
idle before taking the next). The Prefect server and the results are on PostgreSQL when
--postgres (or PROCTOR_TEST_POSTGRES_URL) names a server, in databases made and dropped here;
else on SQLite files, where the Prefect server's database locks under four workers. The machine
is shared (2 cores): the load average is printed.

Usage: python bench/workers.py [--workers 1,2,4] [--runs 4] [--cases 400] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.processes import free_port, running, wait_http  # noqa: E402

_SCRIPT = Path(sys.executable).with_name("prefect")
PREFECT = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "prefect"]
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
AGENT = (
    "import asyncio\n\n\nasync def agent(request):\n"
    "    await asyncio.sleep(0.2)\n    return 'answer ' + request.input\n"
)


def write_suite(folder: Path, name: str, cases: int) -> Path:
    (folder / "slow_agent.py").write_text(AGENT)
    suite = {
        "eval_set_id": name,
        "metadata": {
            "agent": str(folder / "slow_agent.py") + ":agent",
            "eval_config": {"criteria": {"response_match": {"threshold": 0.9}}},
        },
        "eval_cases": [
            {
                "eval_id": f"c{i}",
                "conversation": [
                    {
                        "invocation_id": "t1",
                        "user_content": {"role": "user", "content": f"question {i}"},
                        "expected_final_response": {"role": "assistant", "content": f"answer question {i}"},
                    }
                ],
            }
            for i in range(cases)
        ],
    }
    path = folder / f"{name}.evalset.json"
    path.write_text(json.dumps(suite))
    return path


def client(api: str) -> Any:
    from prefect.client.orchestration import SyncPrefectClient

    return SyncPrefectClient(api)


def wait_for_workers(api: str, names: set[str], timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with client(api) as prefect:
            seen = {worker.name for worker in prefect.read_workers_for_work_pool("proctor")}
        if names <= seen:
            return
        time.sleep(0.5)
    raise SystemExit(f"workers {sorted(names - seen)} never polled the pool")


def trigger_and_wait(
    api: str, requests: list[dict[str, Any]], timeout: float = 1800.0
) -> tuple[float, list[Any]]:
    with client(api) as prefect:
        deployment = prefect.read_deployment_by_name("proctor-evaluate/evaluate")
        started = time.perf_counter()
        runs = [
            prefect.create_flow_run_from_deployment(deployment.id, parameters={"request": request})
            for request in requests
        ]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runs = [prefect.read_flow_run(run.id) for run in runs]
            if all(run.state and run.state.type.value in FINAL for run in runs):
                return time.perf_counter() - started, runs
            time.sleep(0.2)
    raise SystemExit("flow runs did not finish in time")


def stored_once(database_url: str, flow_run_ids: list[str], cases: int) -> tuple[bool, str]:
    from sqlalchemy import func
    from sqlmodel import Session, col, select

    from proctor.models.tables import CaseResultRow, EvalRun
    from proctor.storage import get_engine

    with Session(get_engine(database_url)) as session:
        runs = session.exec(select(EvalRun).where(col(EvalRun.flow_run_id).in_(flow_run_ids))).all()
        counts = []
        for run in runs:
            rows, distinct = session.exec(
                select(func.count(), func.count(func.distinct(CaseResultRow.case_id))).where(
                    CaseResultRow.run_id == run.id
                )
            ).one()
            counts.append((rows, distinct, run.status))
    ok = len(runs) == len(flow_run_ids) and all(rows == distinct == cases for rows, distinct, _ in counts)
    return ok, ", ".join(f"{rows} rows/{distinct} ids ({status})" for rows, distinct, status in counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--runs", type=int, default=4, help="flow runs triggered at once per measure")
    parser.add_argument("--cases", type=int, default=400, help="cases per run")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--postgres",
        default=os.environ.get("PROCTOR_TEST_POSTGRES_URL"),
        help="a PostgreSQL server (postgresql://user@host:port/db) for the Prefect server's database and "
        "the results, as the README's scale section sets them up (default PROCTOR_TEST_POSTGRES_URL; "
        "without one both are SQLite files, and the Prefect server's SQLite locks under four workers)",
    )
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="proctor-workers-"))
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {
        **os.environ,
        "PREFECT_HOME": str(folder / "prefect-home"),
        "PREFECT_API_URL": api,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
        "PREFECT_WORKER_QUERY_SECONDS": "1",
    }
    env.pop("PREFECT_PROFILES_PATH", None)
    os.environ.update({k: v for k, v in env.items() if k.startswith("PREFECT_")})
    database_url = f"sqlite:///{folder}/results.db"
    with contextlib.ExitStack() as databases:
        if args.postgres:
            prefect_db = databases.enter_context(fresh_postgres(args.postgres))
            env["PREFECT_API_DATABASE_CONNECTION_URL"] = prefect_db.replace(
                "postgresql://", "postgresql+asyncpg://", 1
            )
            database_url = databases.enter_context(fresh_postgres(args.postgres))
        measure(args, folder, api, port, env, database_url)
    print(f"(logs in {folder})")


def fresh_postgres(server_url: str) -> Any:
    """A database of its own on the server, dropped afterwards."""
    import psycopg
    from sqlalchemy.engine import make_url

    @contextlib.contextmanager
    def made() -> Any:
        server = make_url(server_url)
        name = f"proctor_workers_{uuid.uuid4().hex[:8]}"
        admin = server.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        try:
            yield server.set(drivername="postgresql", database=name).render_as_string(hide_password=False)
        finally:
            from proctor.storage.db import dispose_engines

            dispose_engines()
            with psycopg.connect(admin, autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return made()


def measure(
    args: argparse.Namespace, folder: Path, api: str, port: int, env: dict[str, str], database_url: str
) -> None:
    load = os.getloadavg()
    databases = "PostgreSQL" if database_url.startswith("postgresql") else "SQLite"
    print(
        f"{args.runs} flow runs x {args.cases} cases (agent 200 ms, no model) at --concurrency "
        f"{args.concurrency}, workers --limit 1, Prefect server and results on {databases}; "
        f"load average {load[0]:.1f} on {os.cpu_count()} cores"
    )
    server_log = folder / "server.log"
    with running(
        [*PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)], env=env, log=server_log
    ) as server:
        wait_http(f"{api}/health", timeout=180, process=server, log=server_log)
        for command in (
            [*PREFECT, "work-pool", "create", "proctor", "--type", "process"],
            [*PREFECT, "--no-prompt", "deploy", "--all"],
        ):
            done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
            if done.returncode:
                raise SystemExit(f"{command}: {done.stdout}\n{done.stderr}")
        base: float | None = None
        for count in (int(n) for n in args.workers.split(",")):
            names = [f"w{count}-{i}" for i in range(count)]
            with contextlib.ExitStack() as stack:
                for name in names:
                    stack.enter_context(
                        running(
                            [
                                *PREFECT,
                                "worker",
                                "start",
                                "--pool",
                                "proctor",
                                "--limit",
                                "1",
                                "--name",
                                name,
                            ],
                            env=env,
                            log=folder / f"{name}.log",
                            cwd=ROOT,
                        )
                    )
                wait_for_workers(api, set(names))
                tag = uuid.uuid4().hex[:6]
                requests = [
                    {
                        "suite": str(write_suite(folder, f"w{count}r{i}{tag}", args.cases)),
                        "database_url": database_url,
                        "report_dir": str(folder / "reports" / f"{count}-{i}"),
                        "concurrency": args.concurrency,
                    }
                    for i in range(args.runs)
                ]
                wall, runs = trigger_and_wait(api, requests)
            throughput = args.runs * args.cases / wall
            base = base or throughput
            ok, detail = stored_once(database_url, [str(run.id) for run in runs], args.cases)
            states = sorted({run.state.type.value for run in runs})
            print(
                f"{count} worker(s): {wall:6.1f} s, {throughput:6.1f} cases/s, "
                f"{throughput / base:4.2f}x one worker; "
                f"flow runs {'/'.join(states)}; each case stored once: {'yes' if ok else 'NO'} ({detail})"
            )


if __name__ == "__main__":
    main()
