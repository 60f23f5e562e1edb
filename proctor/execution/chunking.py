"""How a suite is cut into chunks, the unit of Prefect task runs.

A task run costs 4-33 ms of orchestration here, so one per case cannot scale; one per
chunk with asyncio inside costs about 0.075 ms per case. Small suites get one case per
chunk so each case shows as its own task runs in the Prefect UI.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from proctor.execution.case_work import CaseWork

T = TypeVar("T")

PER_CASE_UP_TO = 20  # suites this small show every case as its own tasks
TARGET_CHUNKS = 8
MIN_CHUNK, MAX_CHUNK = 25, 1000


def auto_chunk_size(total_cases: int) -> int:
    if total_cases <= PER_CASE_UP_TO:
        return 1
    return max(MIN_CHUNK, min(MAX_CHUNK, math.ceil(total_cases / TARGET_CHUNKS)))


def chunked(items: Sequence[T], size: int) -> Iterator[tuple[int, Sequence[T]]]:
    """(offset, items) pairs of at most `size` items each, in order."""
    for start in range(0, len(items), size):
        yield start, items[start : start + size]


class Chunk:
    """Some consecutive cases of a suite, on their way through the stages.

    A plain object on purpose: Prefect walks lists, dicts, dataclasses and Pydantic models in
    task inputs and results (measured: most of a stage's orchestration cost on large chunks),
    but treats a plain object as one value."""

    __slots__ = ("label", "works")

    def __init__(self, label: str, works: list[CaseWork]) -> None:
        self.label = label
        self.works = works

    def __repr__(self) -> str:
        return f"Chunk({self.label!r}, {len(self.works)} cases)"


async def settle_all(awaitables: Iterable[Awaitable[object]]) -> None:
    """Await every case of a stage, then raise the first failure, if any.

    `asyncio.gather` raises as soon as one case fails while its siblings run on, past their
    stage and past the run's end, when the run's agent threads are closed under them: cases
    whose agent was never called were then stored as agent failures. Here nobody outlives
    the stage."""
    for result in await asyncio.gather(*awaitables, return_exceptions=True):
        if isinstance(result, BaseException):
            raise result
