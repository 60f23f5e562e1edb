"""What a Prefect global concurrency limit on model calls costs per call (`--model-call-limit`).

Runs CALLS concurrent "model calls" of SECONDS each under a limit of LIMIT slots, once through
Prefect's own `concurrency()` (what Proctor used before) and once through `ModelCallGate`
(what every agent, judge and simulated-user call goes through now), against an ephemeral
Prefect API. Prints the wall time, the ideal (CALLS / LIMIT * SECONDS) and the overhead per call.

Usage: python bench/limits.py [--limit 1] [--calls 8] [--seconds 1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="proctor-bench-"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

NAME = "proctor-bench-model-calls"


async def _measure(
    label: str, slot: Callable[[], AbstractAsyncContextManager[Any]], calls: int, seconds: float, limit: int
) -> None:
    async def call() -> None:
        async with slot():
            await asyncio.sleep(seconds)

    started = time.perf_counter()
    await asyncio.gather(*(call() for _ in range(calls)))
    took = time.perf_counter() - started
    ideal = calls / limit * seconds
    print(
        f"{label:<28} {took:6.2f} s  (ideal {ideal:.2f} s, {(took - ideal) / calls * 1000:+.0f} ms per call)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=1)
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.concurrency.asyncio import concurrency
    from prefect.testing.utilities import prefect_test_harness

    from proctor.calls.limits import ModelCallGate

    with prefect_test_harness(server_startup_timeout=120):
        with get_client(sync_client=True) as client:
            client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=NAME, limit=args.limit))
        print(f"{args.calls} calls of {args.seconds:g} s under a limit of {args.limit}:")
        asyncio.run(
            _measure(
                "prefect concurrency()",
                lambda: concurrency(NAME, occupy=1, strict=True),
                args.calls,
                args.seconds,
                args.limit,
            )
        )

        async def gated() -> None:
            gate = ModelCallGate(NAME)
            await _measure("proctor ModelCallGate", gate.slot, args.calls, args.seconds, args.limit)
            await gate.aclose()

        asyncio.run(gated())


if __name__ == "__main__":
    main()
