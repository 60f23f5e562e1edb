"""Text any database can store: what an agent, judge or file produced, made storable.

PostgreSQL refuses NUL in text, and neither SQLite nor PostgreSQL (nor orjson) can encode a
lone UTF-16 surrogate as UTF-8. One such character used to fail a whole group commit and, on
every resume, again. Rows are cleaned before they are queued: each such character becomes
U+FFFD, and the case keeps a note saying where and how many, so nothing is changed silently.
Every other character (control characters, every Unicode plane, megabyte strings) is stored
as it is; reports escape what they must.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable(text: str) -> bool:
    """Whether `text` holds a NUL or a lone surrogate. Fast on the common path: `in` is a
    memchr, `isascii` a flag CPython keeps on every string; only non-ASCII text is encoded."""
    if "\x00" in text:
        return True
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def needs_cleaning(value: Any) -> bool:
    """Whether any string in `value` (str, or dicts, lists and tuples of them) is unstorable, or
    any float is NaN or infinite (JSON has no form for them: the encoder would write null).
    Plain loops: this runs on every row written (measured ~5 µs for a typical case row);
    `x - x != 0.0` is true exactly for NaN and the infinities."""
    kind = type(value)
    if kind is str:
        return unstorable(value)
    if kind is float:
        return value - value != 0.0
    if kind is dict:
        for key, item in value.items():
            if type(key) is str and unstorable(key):
                return True
            kind = type(item)
            if kind is str:
                if unstorable(item):
                    return True
            elif kind is float:
                if item - item != 0.0:
                    return True
            elif (kind is dict or kind is list or kind is tuple) and needs_cleaning(item):
                return True
        return False
    if kind is list or kind is tuple:
        for item in value:
            kind = type(item)
            if kind is str:
                if unstorable(item):
                    return True
            elif kind is float:
                if item - item != 0.0:
                    return True
            elif (kind is dict or kind is list or kind is tuple) and needs_cleaning(item):
                return True
    return False


def storable(value: Any, where: str, notes: list[str]) -> Any:
    """`value` (a row: column -> value) with unstorable characters replaced, and a note appended
    to `notes` per string replaced, naming it by its path (`turns[0].response`). A NaN or
    infinite float inside a JSON column (a tool call's arguments, say) is kept as the text JSON5
    writes for it (`NaN`, `Infinity`, `-Infinity`), with a note, where the encoder would have
    written null; a whole column of that kind is stored as null, with a note. `value` itself
    when nothing needed replacing: the common path walks it once and copies nothing."""
    if not needs_cleaning(value):
        return value
    return _clean(value, where, notes, depth=0)


def _not_finite(value: float, where: str, notes: list[str], column: bool) -> str | None:
    text = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if column:
        notes.append(f"{where or 'value'}: {text} is not a number any column holds, stored as null")
        return None
    notes.append(f"{where or 'value'}: {text} has no JSON form, stored as the text {text!r}")
    return text


def _clean(value: Any, where: str, notes: list[str], depth: int = 1) -> Any:
    kind = type(value)
    if kind is float:
        return _not_finite(value, where, notes, column=depth == 1) if value - value != 0.0 else value
    if kind is str:
        fixed, count = _UNSTORABLE.subn(REPLACEMENT, value)
        if count:
            notes.append(
                f"{where or 'text'}: {count} character(s) no database can store (NUL or lone "
                "surrogate) replaced with U+FFFD"
            )
        return fixed
    if kind is dict:
        return {
            _clean(key, f"{where}(key)", notes) if type(key) is str else key: _clean(
                item, f"{where}.{key}" if where else str(key), notes, depth + 1
            )
            for key, item in value.items()
        }
    if kind is list or kind is tuple:
        return [_clean(item, f"{where}[{index}]", notes, depth + 1) for index, item in enumerate(value)]
    return value


def clean_agent_values(turns: list[Any], notes: list[str]) -> list[Any]:
    """What an agent recorded in its turns (tool calls' arguments and results, a turn's
    metadata), made storable before the turns are dumped: the JSON dump would turn NaN and the
    infinities into null without a word, so they become text here, with a note. The turns
    given are never changed (a checkpoint is written before scoring, which sees the agent's own
    values); `turns` itself comes back when nothing needed it, else copies of the turns that did."""
    cleaned, changed = list(turns), False
    for number, turn in enumerate(turns):
        changes: dict[str, Any] = {}
        calls = list(turn.tool_calls)
        for index, call in enumerate(calls):
            where = f"turns[{number}].tool_calls[{index}]"
            update = {}
            if call.args and needs_cleaning(call.args):
                update["args"] = _clean(call.args, f"{where}.args", notes, depth=2)
            if call.result is not None and needs_cleaning(call.result):
                update["result"] = _clean(call.result, f"{where}.result", notes, depth=2)
            if update:
                calls[index] = call.model_copy(update=update)
                changes["tool_calls"] = calls
        if turn.metadata and needs_cleaning(turn.metadata):
            changes["metadata"] = _clean(turn.metadata, f"turns[{number}].metadata", notes, depth=2)
        if changes:
            cleaned[number], changed = turn.model_copy(update=changes), True
    return cleaned if changed else turns


# -- values no column or JSON encoder can take ---------------------------------------------
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def safe_repr(value: Any) -> str:
    """A description of any value that never raises: user objects may break `repr` too."""
    try:
        return repr(value)[:200]
    except BaseException:  # noqa: BLE001 - user code: whatever its repr raises, it is described
        return f"<{type(value).__name__} that cannot be shown>"


def json_safe(value: Any, where: str, notes: list[str]) -> Any:
    """`value` with everything a database or its JSON encoder would refuse replaced, each with
    a note: objects JSON has no form for become their repr, sets become lists, integers past
    64 bits become text. The slow path, taken only after the plain write was refused or could
    not be built."""
    if value is None or isinstance(value, bool | float | str):
        return value
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return value
        notes.append(f"{where or 'value'}: a whole number past 64 bits stored as text")
        return str(value)
    if isinstance(value, dict):
        return {
            (key if isinstance(key, str) else safe_repr(key)): json_safe(
                item, f"{where}.{key}" if where else str(key), notes
            )
            for key, item in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=safe_repr) if isinstance(value, set | frozenset) else value
        return [json_safe(item, f"{where}[{index}]", notes) for index, item in enumerate(items)]
    if hasattr(value, "isoformat") or isinstance(value, uuid.UUID):  # dates and ids: columns take them
        return value
    shown = safe_repr(value)
    notes.append(
        f"{where or 'value'}: a value of type {type(value).__name__} no database can store, kept as its repr"
    )
    return shown


def json_safe_row(row: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    """A row (column -> value) made storable: a whole-number column past 64 bits (a token
    count no column holds, nor any sum of it) is stored as 0 with a note, JSON columns
    through `json_safe`."""
    safe: dict[str, Any] = {}
    for column, value in row.items():
        name = f"{where}.{column}" if where else column
        if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
            notes.append(f"{name}: a whole number past 64 bits no column can hold, stored as 0")
            safe[column] = 0
        else:
            safe[column] = json_safe(value, name, notes)
    return safe
