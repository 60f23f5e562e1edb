"""Writing a run's reports from the database: HoloDeck JSON and Markdown, agentflow JSON.

One pass over the stored results writes all three files, a case at a time: summaries come
from SQL aggregates, so nothing needs the whole suite in memory and each row is read once.
"""

from __future__ import annotations

import dataclasses
import platform
import sys
from collections.abc import Iterator
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, select

from proctor import __version__
from proctor.costs import RunTotals, run_totals
from proctor.models.agentflow import CriterionStats, EvalCaseResult, EvalSummary
from proctor.models.holodeck import ReportSummary, TestResult
from proctor.models.outcome import AgentTurn
from proctor.models.tables import CaseResultRow, EvalRun
from proctor.rendering import render, to_json
from proctor.reporting.convert import eval_case_result, iso, test_result
from proctor.reporting.html import HtmlBuilder
from proctor.reporting.junit import JUnitBuilder
from proctor.reporting.tool_diff import case_tool_diffs
from proctor.storage.history import no_history_line
from proctor.storage.runs import iter_results, metric_stats, tally, unsteady_cases


@dataclass(frozen=True)
class ReportFiles:
    directory: Path
    json: Path
    markdown: Path
    eval_report: Path
    html: Path
    junit: Path
    verdict: Path | None = None


@dataclass(frozen=True)
class ReportItem:
    """A case as the Markdown report shows it: the seed's `TestResult`, its turns and reasons."""

    result: TestResult
    turns: list[AgentTurn]
    reasons: list[str | None]
    tool_diffs: list[dict[str, Any]]
    # a reason shown even on a pass: a Vanna case passed by default, without an expected outcome
    passed_by_default: list[bool] = field(default_factory=list)


def environment_info() -> dict[str, str]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "executable": Path(sys.executable).name,
    }


def report_summary(*, session: Session, run: EvalRun) -> ReportSummary:
    """HoloDeck's summary, computed in SQL."""
    counts = tally(session=session, run_id=run.id)
    duration = session.exec(
        # the sum of the cases' whole milliseconds as each case shows them (`whole_ms`)
        select(func.coalesce(func.sum(func.round(CaseResultRow.execution_ms)), 0)).where(
            CaseResultRow.run_id == run.id
        )
    ).one()
    stats = metric_stats(session=session, run_id=run.id)
    return ReportSummary(
        total_tests=counts["total"],
        passed=counts["passed"],
        failed=counts["failed"],
        pass_rate=(100.0 * counts["passed"] / counts["total"]) if counts["total"] else 0.0,
        total_duration_ms=int(duration),
        metrics_evaluated={name: s["evaluated"] for name, s in stats.items()},
        average_scores={name: s["avg_score"] for name, s in stats.items() if s["avg_score"] is not None},
    )


def _header(run: EvalRun) -> dict[str, Any]:
    return {
        "agent_name": run.agent,
        "agent_config_path": run.suite_path,
        "timestamp": iso(run.finished_at or run.started_at),
        "holodeck_version": f"proctor {__version__}",
        "environment": environment_info(),
    }


def pass_rate(stats: dict[str, Any]) -> float | None:
    """A metric's pass rate in percent; None for an informational metric, which has none."""
    if stats["informational"]:
        return None
    return 100.0 * stats["passed"] / stats["evaluated"] if stats["evaluated"] else 0.0


def _markdown_head(
    session: Session, run: EvalRun, header: dict[str, Any], summary: ReportSummary, stats: dict[str, Any]
) -> str:
    return render(
        "report_head.md.j2",
        report=header,
        summary=summary,
        metrics=[
            {"name": name, "avg_score": s["avg_score"], "pass_rate": pass_rate(s)}
            for name, s in stats.items()
        ],
        run=run,
        no_history=None if run.comparison else no_history_line(session=session, run=run),
        unsteady=unsteady_cases(session=session, run=run),
        judge_calls=sum(s["judge_calls"] for s in stats.values()),
        cached_calls=sum(s["cached_calls"] for s in stats.values()),
        totals=run_totals(session=session, run_id=run.id),
    )


def _markdown_case(row: Any, metric_rows: list[Any], result: TestResult, number: int) -> str:
    turns = [AgentTurn.model_validate(turn) for turn in row.turns]
    item = ReportItem(
        result=result,
        turns=turns,
        reasons=[metric.reason for metric in metric_rows],
        tool_diffs=[] if row.passed else case_tool_diffs(turns, metric_rows),
        passed_by_default=[bool((metric.details or {}).get("no_expected_outcome")) for metric in metric_rows],
    )
    return render("report_case.md.j2", item=item, number=number)


def markdown_report(*, session: Session, run: EvalRun) -> Iterator[str]:
    """The Markdown report alone, a case at a time (what `proctor report --format md` prints)."""
    stats = metric_stats(session=session, run_id=run.id)
    yield _markdown_head(session, run, _header(run), report_summary(session=session, run=run), stats)
    for number, (row, metric_rows) in enumerate(iter_results(session=session, run_id=run.id), start=1):
        yield _markdown_case(row, metric_rows, test_result(row, metric_rows, holodeck=_holodeck(run)), number)


def _holodeck(run: EvalRun) -> bool:
    """A HoloDeck suite's report.json is written as HoloDeck 0.7.1's code writes its own."""
    return run.source_format == "holodeck"


def write_reports(*, session: Session, run: EvalRun, directory: Path) -> ReportFiles:
    """Render every report format for `run` into `directory` (created if missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    files = ReportFiles(
        directory=directory,
        json=directory / "report.json",
        markdown=directory / "report.md",
        eval_report=directory / "eval_report.json",
        html=directory / "report.html",
        junit=directory / "junit.xml",
        verdict=directory / "verdict.json",
    )
    temporary = [
        path.with_suffix(path.suffix + ".tmp") for path in (files.json, files.markdown, files.eval_report)
    ]
    try:
        _write_files(session=session, run=run, files=files, temporary=temporary)
    except BaseException:
        for path in temporary:  # no half-written report is left behind
            with suppress(OSError):
                path.unlink(missing_ok=True)
        raise
    return files


def _seed_shaped(result: EvalCaseResult) -> dict[str, Any]:
    """A case as agentflow's `EvalCaseResult` must read it: `name` and `error` are required
    there (`str | None` with no default), so they are written as null, never left out."""
    return result.model_dump(mode="json", exclude_none=True) | {"name": result.name, "error": result.error}


def _write_files(*, session: Session, run: EvalRun, files: ReportFiles, temporary: list[Path]) -> None:
    header = _header(run)
    summary = report_summary(session=session, run=run)
    stats = metric_stats(session=session, run_id=run.id)
    case_scores: list[float] = []
    with ExitStack() as stack:
        out_json, out_md, out_eval = (stack.enter_context(open(p, "w", encoding="utf-8")) for p in temporary)
        out_json.write(render("test_report_head.json.j2", report=header))
        out_md.write(_markdown_head(session, run, header, summary, stats))
        out_eval.write(
            f'{{\n  "report_id": {to_json(str(run.id))},\n  "eval_set_id": {to_json(run.suite_id)},\n'
            f'  "eval_set_name": {to_json(run.suite_name)},\n  "results": [\n'
        )
        html, junit = HtmlBuilder(run), JUnitBuilder(run)
        for number, (row, metric_rows) in enumerate(iter_results(session=session, run_id=run.id), start=1):
            html.add(row, metric_rows)
            junit.add(row, metric_rows)
            result = test_result(row, metric_rows, holodeck=_holodeck(run))
            separator = ",\n" if number > 1 else ""
            out_json.write(f"{separator}    {to_json(result)}")
            out_md.write(_markdown_case(row, metric_rows, result, number))
            out_eval.write(f"{separator}    {to_json(_seed_shaped(eval_case_result(row, metric_rows)))}")
            scores = [m.score for m in metric_rows if m.score is not None and not m.informational]
            case_scores.append(sum(scores) / len(scores) if scores else float(bool(row.passed)))
        out_json.write(render("test_report_tail.json.j2", report=header, summary=summary))
        eval_summary = EvalSummary(
            total_cases=summary.total_tests,
            passed_cases=summary.passed,
            failed_cases=summary.failed,
            pass_rate=summary.pass_rate / 100,
            avg_score=sum(case_scores) / len(case_scores) if case_scores else 0.0,
            criterion_stats={
                name: CriterionStats(
                    evaluated=s["evaluated"],
                    passed=s["passed"] or 0,
                    informational=s["informational"] or None,  # Proctor's: a value, no verdict
                    avg_score=s["avg_score"] or 0.0,
                    min_score=s["min_score"] or 0.0,
                    max_score=s["max_score"] or 0.0,
                )
                for name, s in stats.items()
            },
        )
        out_eval.write(
            f'\n  ],\n  "summary": {to_json(eval_summary)},\n  "config_used": {to_json(run.config)},\n'
            f'  "created_at": {to_json(iso(run.finished_at or run.started_at))},\n'
            f'  "duration_seconds": {(run.duration_ms or 0) / 1000}\n}}\n'
        )
    for tmp, final in zip(temporary, (files.json, files.markdown, files.eval_report), strict=True):
        tmp.replace(final)
    files.html.write_text(html.html(session), encoding="utf-8")
    files.junit.write_text(junit.xml(), encoding="utf-8")
    if files.verdict is not None:
        totals = run_totals(session=session, run_id=run.id)
        files.verdict.write_text(verdict_json(run, totals), encoding="utf-8")


def verdict_json(run: EvalRun, totals: RunTotals) -> str:
    """The run's verdict against its history as JSON, beside report.json: the labels, their
    counts and evidence, the run-level test, and the run's spend (tokens, calls, retries, cost
    priced as the run stored its prices). report.json is HoloDeck's `TestReport` and
    eval_report.json agentflow's `EvalReport`, whose readers refuse a key they do not know, so
    these have a file of their own rather than a key there."""
    spend = dataclasses.asdict(totals) | {
        "agent_tokens": totals.agent_tokens,
        "judge_tokens": totals.judge_tokens,
        "cost": totals.cost_text,
    }
    return to_json(
        {
            "run_id": str(run.id),
            "suite_id": run.suite_id,
            "agent": run.agent,
            "variant": run.variant,
            "baseline_run_id": str(run.baseline_run_id) if run.baseline_run_id else None,
            "comparison": run.comparison,
            "totals": spend,
        },
        indent=2,
    )
