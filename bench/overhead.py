"""Per-case orchestration overhead and parallel efficiency of a full Proctor run.

Every figure is for the whole flow: Prefect tasks, the agent call, three metrics per case
(trajectory, ROUGE-1 response match, contains) and every result persisted. Prints:

  overhead   (T(1000 zero-latency cases) - T(10)) / 990, in ms per case  (goal <= 1 ms)
  efficiency ideal / actual for 1000 cases at 50 ms agent latency, concurrency 32 (goal >= 90%)

Usage: python bench/overhead.py [--postgres URL] [--cases 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

AGENT = """
import asyncio
from proctor.agents import AgentResponse
from models.agentflow import ToolCall

LATENCY_S = float(__import__("os").environ.get("BENCH_AGENT_LATENCY_S", "0"))

async def agent(request):
    if LATENCY_S:
        await asyncio.sleep(LATENCY_S)
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


def timed_run(suite: Path, database_url: str, concurrency: int, report_dir: Path) -> tuple[float, object]:
    from flows.evaluate import EvaluationRequest, evaluate

    request = EvaluationRequest(
        suite=str(suite), database_url=database_url, concurrency=concurrency, report_dir=str(report_dir)
    )
    started = time.perf_counter()
    summary = asyncio.run(evaluate(request))
    return time.perf_counter() - started, summary


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
    return server.set(database=database).render_as_string(False)


def bench(kind: str, postgres: str | None, cases: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        small, large = write_suite(folder, 10), write_suite(folder, cases)
        os.environ["BENCH_AGENT_LATENCY_S"] = "0"
        timed_run(small, fresh_database(kind, folder, postgres, "warm"), 32, folder / "r0")  # warm-up
        t_small, _ = timed_run(small, fresh_database(kind, folder, postgres, "s"), 32, folder / "r1")
        t_large, s = timed_run(large, fresh_database(kind, folder, postgres, "l"), 32, folder / "r2")
        assert s.total == cases and s.passed == cases, s
        per_case_ms = (t_large - t_small) / (cases - 10) * 1000
        print(
            f"[{kind}] zero-latency: {10} cases {t_small:.2f} s, {cases} cases {t_large:.2f} s "
            f"-> overhead {per_case_ms:.3f} ms per case (goal <= 1 ms)"
        )

        os.environ["BENCH_AGENT_LATENCY_S"] = "0.05"
        import importlib

        import proctor.agents.targets as targets

        targets.load_target.cache_clear()  # re-import the agent with its latency
        importlib.invalidate_caches()
        t_latency, s = timed_run(large, fresh_database(kind, folder, postgres, "p"), 32, folder / "r3")
        assert s.total == cases, s
        ideal = cases * 0.05 / 32
        print(
            f"[{kind}] {cases} cases x 50 ms at concurrency 32: {t_latency:.2f} s, ideal {ideal:.2f} s "
            f"-> efficiency {100 * ideal / t_latency:.1f}% (goal >= 90%)"
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
    parser.add_argument("--cases", type=int, default=1000)
    args = parser.parse_args()
    bench("sqlite", None, args.cases)
    if args.postgres:
        bench("postgresql", args.postgres, args.cases)


if __name__ == "__main__":
    main()
