"""A run collects garbage less often, and leaves the process's own thresholds as it found them."""

from __future__ import annotations

import asyncio
import gc
import threading

from proctor.run.collection import RUN_THRESHOLD, fewer_collections


def test_a_run_raises_the_young_threshold_and_restores_it() -> None:
    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold()[0] == max(before[0], RUN_THRESHOLD)
        assert gc.get_threshold()[1:] == before[1:]
    assert gc.get_threshold() == before


def test_overlapping_runs_restore_the_thresholds_once_the_last_ends() -> None:
    before = gc.get_threshold()
    first, second = fewer_collections(), fewer_collections()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold()[0] == max(before[0], RUN_THRESHOLD)  # the second run is still going
    second.__exit__(None, None, None)
    assert gc.get_threshold() == before


def test_a_failing_run_restores_the_thresholds() -> None:
    before = gc.get_threshold()
    try:
        with fewer_collections():
            raise RuntimeError("the run failed")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before


def test_runs_in_threads_share_it_safely() -> None:
    before = gc.get_threshold()

    def run() -> None:
        async def body() -> None:
            with fewer_collections():
                await asyncio.sleep(0.01)

        asyncio.run(body())

    threads = [threading.Thread(target=run) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert gc.get_threshold() == before
