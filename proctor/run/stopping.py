"""Telling a run that was stopped (Ctrl-C, SIGTERM) from one that failed.

A stopped run is left as it stands, to be resumed; a failed one is recorded as failed. In a
Prefect flow run, Prefect owns SIGTERM: it raises its `TerminationSignal` wherever the main
thread is, and inside a task run may raise an error of its own while it handles it. So the
SIGTERM itself is noted here as well, before Prefect's handler runs, and whatever the run
then raises is read as a stop.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

SIGTERM_RECEIVED = threading.Event()


def stop_signal_in(outcome: object) -> BaseException | None:
    """The Ctrl-C, or SIGTERM as Prefect raises it (`TerminationSignal`), that `outcome` is or
    was caused by; None for anything else. Any other BaseException from a chunk (a worker
    that died) fails the chunk, and a retried flow run resumes the run."""
    signals: tuple[type[BaseException], ...] = (KeyboardInterrupt,)
    if "prefect.exceptions" in sys.modules:
        from prefect.exceptions import ExternalSignal

        signals += (ExternalSignal,)
    seen: set[int] = set()
    error = outcome if isinstance(outcome, BaseException) else None
    while error is not None and id(error) not in seen:
        if isinstance(error, signals):
            return error
        seen.add(id(error))
        error = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
    return None


@contextlib.contextmanager
def noting_sigterm() -> Iterator[None]:
    """Note a SIGTERM in `SIGTERM_RECEIVED`, then hand it to the handler already installed
    (Prefect's, in a flow run). Only in the main thread, where signals are delivered."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)

    def note(signum: int, frame: Any) -> None:
        SIGTERM_RECEIVED.set()
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
