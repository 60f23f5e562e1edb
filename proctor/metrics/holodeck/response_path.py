"""HoloDeck's `response_path`: grade one field of a JSON answer instead of the whole text.

The grammar is HoloDeck's: dotted keys with bracketed indices (`answer`, `result.value`,
`items[0].score`). The leaf must be a scalar; it is graded as `str(value)`. An answer that is
not JSON, or lacks the path, fails the metric with the reason, without calling it.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from proctor.metrics.base import MetricContext

_SEGMENT = r"[A-Za-z_][\w-]*(?:\[\d+\])*"
PATH_RE = re.compile(rf"^{_SEGMENT}(?:\.{_SEGMENT})*$")
_TOKEN = re.compile(r"([A-Za-z_][\w-]*)|\[(\d+)\]")


def is_valid_path(path: str) -> bool:
    return bool(PATH_RE.match(path))


def extract(response: str, path: str) -> tuple[str | None, str | None]:
    """`(leaf as text, None)`, or `(None, why not)`."""
    try:
        cursor: Any = json.loads(response)
    except (TypeError, ValueError) as error:
        return None, f"response_path={path!r} but the answer is not JSON ({error}); got {response[:80]!r}"
    for match in _TOKEN.finditer(path):
        key, index = match.groups()
        if index is not None:
            if not isinstance(cursor, list) or int(index) >= len(cursor):
                return None, f"response_path={path!r}: no item [{index}] in {type(cursor).__name__}"
            cursor = cursor[int(index)]
        elif not isinstance(cursor, dict) or key not in cursor:
            available = sorted(cursor) if isinstance(cursor, dict) else type(cursor).__name__
            return None, f"response_path={path!r}: key {key!r} not found (available: {available})"
        else:
            cursor = cursor[key]
    if isinstance(cursor, dict | list):
        return None, f"response_path={path!r}: the value is a {type(cursor).__name__}, not a scalar"
    return str(cursor), None


def with_response_at(ctx: MetricContext, path: str) -> tuple[MetricContext | None, str | None]:
    """The context with the final answer replaced by the value at `path`, or why it cannot be."""
    value, problem = extract(ctx.final_response, path)
    if value is None:
        return None, problem
    turns = [*ctx.turns[:-1], ctx.turns[-1].model_copy(update={"response": value})]
    return dataclasses.replace(ctx, turns=turns), None
