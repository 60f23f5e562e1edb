"""What isolating an agent's code costs per call, for the choice in docs/agents.md
("How far an agent's code is isolated").

Calls a trivial agent CALLS times, CONCURRENCY at a time, through the real `AgentInvoker`
three ways, and prints the median of REPEATS timings per call:

- `main loop`: the async agent awaited directly on the run's own event loop, with the same
  timeout (what Proctor did before agents got a loop of their own);
- `agent loop`: the same agent through `AgentInvoker`, on the agents' event loop in its own
  thread (now: where agent code is kept from the run);
- `process`: the same request sent to a worker process and the answer sent back
  (`concurrent.futures.ProcessPoolExecutor`, the request pickled both ways): the floor of
  what running each agent call in another process would cost, before any agent state
  (clients, caches, loaded models) had to be rebuilt there.

Usage: python bench/isolation.py [--calls 2000] [--concurrency 8] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import statistics
import time

from proctor.agents.protocol import AgentRequest
from proctor.agents.targets import AgentInvoker


async def agent(request: AgentRequest) -> str:
    return "answer " + request.input


def sync_agent(request: AgentRequest) -> str:
    return "answer " + request.input


def _request(index: int) -> AgentRequest:
    return AgentRequest(
        case_id=f"c{index}", turn_id="t1", input=f"question {index}", thread_id=f"run:c{index}"
    )


async def _timed(call, calls: int, concurrency: int) -> float:  # type: ignore[no-untyped-def]
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int) -> None:
        async with gate:
            await call(_request(index))

    started = time.perf_counter()
    await asyncio.gather(*(one(index) for index in range(calls)))
    return (time.perf_counter() - started) / calls * 1e6


async def main(calls: int, concurrency: int, repeats: int) -> None:
    on_agent_loop = AgentInvoker(agent, max_threads=concurrency, timeout_s=300)
    loop = asyncio.get_running_loop()

    async def on_main(request: AgentRequest) -> str:
        return await asyncio.wait_for(agent(request), 300)

    with concurrent.futures.ProcessPoolExecutor(max_workers=concurrency) as pool:

        async def in_process(request: AgentRequest) -> str:
            return await loop.run_in_executor(pool, sync_agent, request)

        await _timed(in_process, concurrency * 4, concurrency)  # the workers started before timing
        ways = {"main loop": on_main, "agent loop": on_agent_loop.invoke, "process": in_process}
        timings: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(repeats):
            for name, call in ways.items():
                timings[name].append(await _timed(call, calls, concurrency))
    print(f"agent call overhead, {calls} calls at concurrency {concurrency}, median of {repeats}:")
    for name, values in timings.items():
        print(f"  {name:<10} {statistics.median(values):8.1f} µs per call")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.concurrency, options.repeats))
