"""A time limit that counts the call, not the wait for its turn (`proctor.calls.call_clock`)."""

from __future__ import annotations

import asyncio

import pytest

from proctor.calls.call_clock import calling, limited, waiting_for_turn


def test_waiting_for_a_turn_does_not_count_against_the_limit() -> None:
    async def main() -> None:
        async with limited(0.3):
            with waiting_for_turn():
                await asyncio.sleep(0.9)  # three times the limit, spent waiting
            with calling():
                await asyncio.sleep(0.01)

    asyncio.run(main())


def test_the_call_itself_still_times_out() -> None:
    async def main() -> bool:
        clock = None
        try:
            async with limited(0.1) as clock:
                with waiting_for_turn():
                    await asyncio.sleep(0.05)
                with calling():
                    await asyncio.sleep(5)
        except TimeoutError:
            return clock is not None and clock.expired
        return False

    assert asyncio.run(main())


def test_a_call_in_flight_keeps_the_clock_running_while_a_sibling_waits() -> None:
    async def waits() -> None:
        with waiting_for_turn():
            await asyncio.sleep(5)

    async def calls() -> None:
        with calling():
            await asyncio.sleep(5)

    async def main() -> None:
        async with limited(0.1):
            await asyncio.gather(waits(), calls())

    with pytest.raises(TimeoutError):
        asyncio.run(main())
