"""Progress notifications from the pipeline to whoever is watching in this process.

The CLI subscribes a progress bar; a deployed run has no listener and logs instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

Listener = Callable[[str, dict[str, Any]], None]
_listeners: list[Listener] = []


def subscribe(listener: Listener) -> Callable[[], None]:
    _listeners.append(listener)
    return lambda: _listeners.remove(listener)


def publish(event: str, **data: Any) -> None:
    for listener in list(_listeners):
        with contextlib.suppress(Exception):  # a broken progress bar must never break a run
            listener(event, data)
