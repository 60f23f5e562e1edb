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
    """Whether any string in `value` (str, or dicts, lists and tuples of them) is unstorable.
    Plain loops: this runs on every row written (measured ~5 µs for a typical case row)."""
    kind = type(value)
    if kind is str:
        return unstorable(value)
    if kind is dict:
        for key, item in value.items():
            if type(key) is str and unstorable(key):
                return True
            kind = type(item)
            if kind is str:
                if unstorable(item):
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
            elif (kind is dict or kind is list or kind is tuple) and needs_cleaning(item):
                return True
    return False


def storable(value: Any, where: str, notes: list[str]) -> Any:
    """`value` with unstorable characters replaced, and a note appended to `notes` per string
    replaced, naming it by its path (`turns[0].response`). `value` itself when nothing needed
    replacing: the common path walks it once and copies nothing."""
    if not needs_cleaning(value):
        return value
    return _clean(value, where, notes)


def _clean(value: Any, where: str, notes: list[str]) -> Any:
    kind = type(value)
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
                item, f"{where}.{key}" if where else str(key), notes
            )
            for key, item in value.items()
        }
    if kind is list or kind is tuple:
        return [_clean(item, f"{where}[{index}]", notes) for index, item in enumerate(value)]
    return value
