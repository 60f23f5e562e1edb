"""Every secret value Proctor knows of, and text with all of them cut out.

A secret is remembered when Proctor resolves it: a judge's or agent's API key, a Slack token
or webhook URL (and the webhook's secret path), an HTTP agent's header variables, a database
password. A server may reflect any of them back: a webhook's path echoed in a 404 body, a
judge "reason" quoting the key it was sent. So everything Proctor stores (case and metric
rows, the judge cache, the run's notification), prints (terminal errors) or logs passes
through `scrub`, which cuts every known secret out, whole and wherever its first characters
appear (servers echo keys masked, "sk-abc12****wxyz").

Imports nothing else of Proctor, so every layer can use it.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any
from urllib.parse import unquote, urlsplit

import orjson

MASK = "***"
MIN_LENGTH = 6  # shorter values would cut ordinary words out of text
ECHOED_PREFIX = 8  # characters of a key a server may echo back (OpenAI's 401 shows `sk-proj-…`)

_known: dict[str, bool] = {}  # secret -> whether its first characters are cut too
_pattern: re.Pattern[str] | None = None
_json_needles: tuple[bytes, ...] = ()  # the same needles as they appear in JSON text
_lock = threading.Lock()


def cut(text: str, secrets: tuple[str, ...] | list[str], *, by_prefix: bool = True) -> str:
    """`text` with each of `secrets` cut out, whole and (`by_prefix`) by its first characters."""
    for secret in secrets:
        if not secret:
            continue
        text = text.replace(secret, MASK)
        if by_prefix and len(secret) >= 2 * ECHOED_PREFIX:
            text = re.sub(re.escape(secret[:ECHOED_PREFIX]) + r"[^\s'\";,]*", MASK, text)
    return text


def remember(value: str | None, *, by_prefix: bool = True) -> None:
    """Know `value` as a secret from now on, in this process. `by_prefix=False` for values
    whose first characters are not secret (a URL's `https://host`)."""
    global _pattern, _json_needles
    if not value or len(value) < MIN_LENGTH or (value in _known and (_known[value] or not by_prefix)):
        return
    with _lock:
        _known[value] = _known.get(value, False) or by_prefix
        needles = {secret for secret in _known}
        needles |= {
            secret[:ECHOED_PREFIX]
            for secret, prefix in _known.items()
            if prefix and len(secret) >= 2 * ECHOED_PREFIX
        }
        ordered = sorted(needles, key=len, reverse=True)
        _pattern = re.compile("|".join(re.escape(needle) for needle in ordered))
        _json_needles = tuple(orjson.dumps(needle)[1:-1] for needle in ordered)
    _install_log_scrubbing()


def remember_url(url: str | None) -> None:
    """A URL that is itself a secret (a Slack webhook): the whole URL, its path and its last
    segment, each of which a server may echo on its own; its password, if it has one."""
    if not url:
        return
    remember(url, by_prefix=False)
    parts = urlsplit(url)
    if parts.password:
        remember(unquote(parts.password))
    if parts.path.strip("/"):
        remember(parts.path, by_prefix=False)
        remember(parts.path.rstrip("/").rsplit("/", 1)[-1])


def known() -> frozenset[str]:
    return frozenset(_known)


def scrub(text: str) -> str:
    """`text` with every known secret cut out; `text` itself when it holds none."""
    pattern = _pattern
    if pattern is None or not isinstance(text, str) or pattern.search(text) is None:
        return text
    ordered = sorted(_known.items(), key=lambda item: len(item[0]), reverse=True)
    for secret, by_prefix in ordered:
        text = cut(text, [secret], by_prefix=by_prefix)
    return text


def scrub_value(value: Any) -> Any:
    """`value` (text, or dicts and lists of it) with every known secret cut out of its strings;
    `value` itself, not a copy, when none holds one. The common path is one JSON encoding and
    a substring search per secret (a few µs for a case row), not a walk over every string."""
    if _pattern is None:
        return value
    try:
        encoded = orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError):  # a value JSON cannot hold: walk it instead
        holds = _holds_secret(value)
    else:
        holds = any(needle in encoded for needle in _json_needles)
    return _scrubbed(value) if holds else value


def _holds_secret(value: Any) -> bool:
    kind = type(value)
    if kind is str:
        return _pattern is not None and _pattern.search(value) is not None
    if kind is dict:
        return any(_holds_secret(key) or _holds_secret(item) for key, item in value.items())
    if kind is list or kind is tuple:
        return any(_holds_secret(item) for item in value)
    return False


def _scrubbed(value: Any) -> Any:
    kind = type(value)
    if kind is str:
        return scrub(value)
    if kind is dict:
        return {_scrubbed(key): _scrubbed(item) for key, item in value.items()}
    if kind is list or kind is tuple:
        return [_scrubbed(item) for item in value]
    return value


_installed = False


def _install_log_scrubbing() -> None:
    """From the first secret on, every log record (Proctor's, Prefect's, any library's, on the
    terminal or sent to Prefect's API) is made with its message scrubbed."""
    global _installed
    if _installed:
        return
    _installed = True
    make_record = logging.getLogRecordFactory()

    def scrubbed_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make_record(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is logging's to report
            return record
        clean = scrub(message)
        if clean is not message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            trace = logging.Formatter().formatException(record.exc_info)
            clean = scrub(trace)
            if clean is not trace:
                record.exc_text, record.exc_info = clean, None
        return record

    logging.setLogRecordFactory(scrubbed_record)
