"""A stopped run is told apart from a failed one, however Prefect surfaces the SIGTERM."""

from __future__ import annotations

import os
import signal

import pytest

from proctor.run.stopping import SIGTERM_RECEIVED, noting_sigterm, stop_signal_in


def test_a_sigterm_is_noted_then_handed_to_the_handler_that_was_there() -> None:
    """In a flow run that handler is Prefect's, which raises its TerminationSignal."""
    seen: list[int] = []

    class Raised(Exception):
        pass

    def prefects(signum: int, frame: object) -> None:
        seen.append(signum)
        raise Raised()

    previous = signal.signal(signal.SIGTERM, prefects)
    SIGTERM_RECEIVED.clear()
    try:
        with pytest.raises(Raised), noting_sigterm():
            os.kill(os.getpid(), signal.SIGTERM)
        assert seen == [signal.SIGTERM] and SIGTERM_RECEIVED.is_set()
        assert signal.getsignal(signal.SIGTERM) is prefects  # restored
    finally:
        signal.signal(signal.SIGTERM, previous)
        SIGTERM_RECEIVED.clear()


def test_only_interrupts_and_prefects_signals_count_as_stops() -> None:
    from prefect.exceptions import TerminationSignal

    class WorkerDied(BaseException):
        pass

    assert isinstance(stop_signal_in(KeyboardInterrupt()), KeyboardInterrupt)
    assert isinstance(stop_signal_in(TerminationSignal(15)), TerminationSignal)
    assert stop_signal_in(WorkerDied()) is None and stop_signal_in(ValueError("x")) is None
