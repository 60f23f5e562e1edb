"""What an MCP tool costs a run: starting its server once, and each call through it. Runs the
real runner (`proctor.agents.tools.mcp_runner`) against the test server written with the `mcp`
SDK (tests/fakes/mcp_server.py), over stdio, as a run does: opened once, then called by
`--cases` cases at `--concurrency` at once, then closed.

    python bench/mcp_calls.py [--cases 200] [--concurrency 8] [--repeats 3]

Prints, per repeat: the open time (server process start, `initialize`, `tools/list`), the
per-call latency (median and 95th percentile, ms), the calls per second, and the close time
(stdin closed, the process gone). Wall-clock figures of a shared machine: compare them on one
machine, not across machines.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from proctor.agents.protocol import AgentRequest  # noqa: E402
from proctor.agents.tools import ToolContext  # noqa: E402
from proctor.agents.tools.mcp_runner import mcp_runner  # noqa: E402
from proctor.models.holodeck import LLMProvider  # noqa: E402

SERVER = Path(__file__).resolve().parent.parent / "tests" / "fakes" / "mcp_server.py"


async def one_run(cases: int, concurrency: int) -> dict[str, float]:
    context = ToolContext(base_dir=SERVER.parent, agent_name="bench", model=LLMProvider(name="m"))
    entry = {"name": "orders", "type": "mcp", "description": "d"}
    entry |= {"command": sys.executable, "args": [str(SERVER)]}
    runner = mcp_runner(entry, context)
    started = time.perf_counter()
    await runner.open()
    opened = time.perf_counter()
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def case(index: int) -> None:
        request = AgentRequest(case_id=str(index), turn_id="t", input="", thread_id=str(index))
        async with gate:
            sent = time.perf_counter()
            result = await runner.call("add", {"a": index, "b": 1}, request)
            latencies.append((time.perf_counter() - sent) * 1000)
            assert result == str(index + 1), result

    await asyncio.gather(*(case(i) for i in range(cases)))
    called = time.perf_counter()
    await runner.aclose()
    closed = time.perf_counter()
    latencies.sort()
    return {
        "open_s": opened - started,
        "median_ms": statistics.median(latencies),
        "p95_ms": latencies[int(0.95 * (len(latencies) - 1))],
        "calls_per_s": cases / (called - opened),
        "close_s": closed - called,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"MCP over stdio, {args.cases} calls at concurrency {args.concurrency}, {args.repeats} runs")
    for repeat in range(args.repeats):
        figures = asyncio.run(one_run(args.cases, args.concurrency))
        print(
            f"run {repeat + 1}: open {figures['open_s']:.2f} s, "
            f"call median {figures['median_ms']:.1f} ms, p95 {figures['p95_ms']:.1f} ms, "
            f"{figures['calls_per_s']:.0f} calls/s, close {figures['close_s']:.2f} s"
        )


if __name__ == "__main__":
    main()
