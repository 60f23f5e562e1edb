"""Jinja2 rendering of reports: one environment, templates in `proctor/reporting/templates/`.

This module imports nothing of Proctor but the comparison labels (a leaf of `models`), so
the data models can render themselves (HoloDeck's `TestReport.to_markdown`, whose lazy import
of this module is the one import in the package that climbs back up) without depending on
storage, statistics or the report writers.

HTML templates are autoescaped; Markdown and JSON templates escape through the `md`
and `json` filters, so agent output can never break a report's layout.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from proctor.models.comparison import LABEL_NAMES, LABELS

if TYPE_CHECKING:  # only for hints: the models import this module
    from proctor.models.holodeck import ReportSummary, TestReport, TestResult

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#&~])")
# Control characters shown as their symbols (ESC as ␛): raw, they would drive the terminal of
# whoever reads report.md with `cat` or `less -R` (C1 controls too, which some terminals obey).
_CONTROL_SYMBOLS = {code: chr(0x2400 + code) for code in range(0x20)} | {0x7F: "\u2421"}
_CONTROL_SYMBOLS |= {code: "\ufffd" for code in range(0x80, 0xA0)}


def md_inline(text: Any) -> str:
    """Text safe inside a Markdown line or table cell: specials escaped, newlines folded,
    control characters shown as symbols."""
    if text is None:
        return ""
    escaped = _MD_SPECIAL.sub(r"\\\1", str(text))
    return " ".join(escaped.split()).translate(_CONTROL_SYMBOLS)


def md_code(text: Any, cell: bool = False) -> str:
    """Text as an inline code span: Markdown is not interpreted inside one, so only a backtick
    (which would close it) is replaced, newlines folded and control characters shown as
    symbols. In a table cell (`cell=True`) a pipe is escaped too: GFM splits cells on every
    unescaped pipe, inside code spans as well."""
    folded = " ".join(str(text).replace("`", "'").split()).translate(_CONTROL_SYMBOLS)
    return "`" + (folded.replace("|", "\\|") if cell else folded) + "`"


def to_json(value: Any, indent: int | None = None) -> str:
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json", exclude_none=True)
    return json.dumps(value, indent=indent, ensure_ascii=False)


def seconds(milliseconds: float | int | None) -> str:
    return f"{(milliseconds or 0) / 1000:.1f}s"


def measured(value: float | None) -> str:
    """An informational value (tool calls, tokens, seconds) as written: up to 3 decimals, no
    trailing zeros ("2", "1534.5", "0.412"); "n/a" when not available."""
    if value is None:
        return "n/a"
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def title(metric_name: str) -> str:
    """HoloDeck's heading for a metric: first letter up, the rest as written
    ("classification_accuracy" -> "Classification accuracy", "TrajectoryEvaluator" unchanged)."""
    text = metric_name.replace("_", " ")
    return text[:1].upper() + text[1:]


def verdict_view(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """A stored comparison (`eval_run.comparison`) as the reports show it: the counts of every
    label, the listed cases per label with their evidence, each metric's mean before and after.
    A comparison stored by an older Proctor (no labels, no history) shows what it has."""
    if not data:
        return None
    cases = data.get("cases") or []
    groups = [
        {"label": label, "name": LABEL_NAMES[label], "cases": [c for c in cases if c.get("label") == label]}
        for label in LABELS
    ]
    for group in groups:  # an older comparison: names only
        if not group["cases"] and data.get(group["label"]):
            group["cases"] = [
                {"case_id": case, "evidence": "", "significant": False} for case in data[group["label"]]
            ]
    counts = data.get("counts") or {group["label"]: len(group["cases"]) for group in groups}
    return {
        "regressed": bool(data.get("regressed")),
        "baseline_id": data.get("baseline_id"),
        "pass_rate_before": data.get("pass_rate_before") or 0.0,
        "pass_rate_after": data.get("pass_rate_after") or 0.0,
        "pass_rate_delta": data.get("pass_rate_delta") or 0.0,
        "history_line": data.get("history_line") or "history: the baseline run alone",
        "method": data.get("method") or "",
        "counts": counts,
        "counts_line": " · ".join(f"{LABEL_NAMES[label]} {counts.get(label, 0)}" for label in LABELS),
        "groups": [group for group in groups if group["cases"]],
        "metrics": data.get("metrics") or [],
        "significant": len(data.get("significant_cases") or []),
    }


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("proctor", "reporting/templates"),
        autoescape=select_autoescape(enabled_extensions=("html", "html.j2", "xml"), default=False),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,  # templates ship with the package: no stat() per case rendered
    )
    env.filters.update(
        md=md_inline,
        code=md_code,
        json=to_json,
        seconds=seconds,
        title=title,
        measured=measured,
        verdict=verdict_view,
    )
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def stream(template: str, **context: Any) -> Iterator[str]:
    """Render piece by piece, so a report of many cases never sits whole in memory."""
    return environment().get_template(template).generate(**context)


def metric_table(results: Iterable[TestResult]) -> list[dict[str, Any]]:
    """Per metric: average score and pass rate, as the Markdown summary shows them (no pass rate
    for an informational metric, a value without a verdict)."""
    scores: dict[str, list[float]] = {}
    passes: dict[str, list[bool]] = {}
    informational: set[str] = set()
    for result in results:
        for metric in result.metric_results:
            passes.setdefault(metric.metric_name, []).append(metric.passed)
            if metric.informational:
                informational.add(metric.metric_name)
            if metric.score is not None:
                scores.setdefault(metric.metric_name, []).append(metric.score)
    return [
        {
            "name": name,
            "avg_score": (sum(scores[name]) / len(scores[name])) if scores.get(name) else None,
            "pass_rate": None if name in informational else 100.0 * sum(flags) / len(flags),
        }
        for name, flags in passes.items()
    ]


def markdown_pieces(
    header: Any,
    summary: ReportSummary,
    metrics: list[dict[str, Any]],
    items: Iterator[Any],
    run: Any = None,
) -> Iterator[str]:
    """HoloDeck's Markdown layout, a case at a time."""
    yield render(
        "report_head.md.j2",
        report=header,
        summary=summary,
        metrics=metrics,
        run=run,
        judge_calls=0,
        cached_calls=0,
    )
    for number, item in enumerate(items, start=1):
        yield render("report_case.md.j2", item=item, number=number)


def holodeck_report_markdown(report: TestReport) -> str:
    """HoloDeck's Markdown layout for an in-memory `TestReport` (its `to_markdown`)."""
    return "".join(
        markdown_pieces(report, report.summary, metric_table(report.results), iter(report.results))
    )
