"""The `proctor` command line.

Exit codes: 0 every case passed, 1 some case failed, 2 bad input or configuration,
3 the run itself could not complete (database, crash).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_ERROR = 0, 1, 2, 3


def _quiet_prefect(verbose: bool) -> None:
    """Prefect's defaults suit a server; on a terminal they drown the progress bar."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "INFO" if verbose else "WARNING")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="proctor", description="Evaluate LLM agents against suites.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command")

    run = commands.add_parser("run", help="evaluate a suite with an agent")
    run.add_argument(
        "suite",
        help="a suite file (.evalset.json, .test.json, agent.yaml, Vanna dataset) or a folder of them",
    )
    run.add_argument("--agent", help="agent target 'module:attr' or 'file.py:attr' (default: the suite's)")
    run.add_argument("--config", help="EvalConfig JSON with criteria (agentflow evalsets)")
    run.add_argument("--db", dest="database_url", help="results database URL (default .proctor/proctor.db)")
    run.add_argument("--output", dest="report_dir", help="report folder (default .proctor/reports/…)")
    run.add_argument("--concurrency", type=int, default=8, help="agents running at once (default 8)")
    run.add_argument("--chunk-size", type=int, help="cases per Prefect task run (default: automatic)")
    run.add_argument("--timeout", dest="agent_timeout_s", type=float, default=300.0, help="per-turn seconds")
    run.add_argument("--case-timeout", dest="case_timeout_s", type=float, help="seconds for a whole case")
    run.add_argument(
        "--model-call-limit",
        metavar="NAME",
        help="Prefect global concurrency limit capping model calls across workers",
    )
    run.add_argument("--tag", dest="tags", action="append", default=[], help="only cases with this tag")
    run.add_argument("--case", dest="cases", action="append", default=[], help="only this case id")
    run.add_argument(
        "--variant",
        dest="variant_args",
        action="append",
        default=[],
        metavar="NAME=TARGET",
        help="an agent variant to compare (repeat); each runs the whole suite",
    )
    run.add_argument(
        "--meta",
        dest="metadata",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only cases whose metadata KEY equals VALUE",
    )
    run.add_argument(
        "--no-cache",
        dest="judge_cache",
        action="store_false",
        help="call judges again even for identical calls",
    )
    run.add_argument(
        "--repeat", type=int, default=1, help="run every case N times; report passes k of n (default 1)"
    )
    run.add_argument(
        "--baseline",
        dest="baseline_run_id",
        metavar="RUN_ID",
        help="compare with this run (default: the last completed run of the same suite and agent)",
    )
    run.add_argument(
        "--significance",
        type=float,
        default=0.05,
        help="significance level of the regression test with --repeat (default 0.05)",
    )
    run.add_argument(
        "--min-pass-rate",
        type=float,
        metavar="PERCENT",
        help="exit 0 when the pass rate reaches this (default: every case must pass)",
    )
    run.add_argument(
        "--slack-channel", help="post the summary to this Slack channel (token: SLACK_BOT_TOKEN)"
    )
    run.add_argument(
        "--slack-webhook",
        metavar="REF",
        help="post through an incoming webhook: '${ENV_VAR}' or 'secret:<prefect-secret-block>'",
    )
    run.add_argument(
        "--notify",
        choices=("always", "failure", "regression", "never"),
        default="failure",
        help="when to post to Slack (default: failure)",
    )
    run.add_argument(
        "--dask-address",
        metavar="ADDRESS",
        help="run case chunks on a Dask cluster: tcp://scheduler:8786, or 'local:N' (N worker processes)",
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("-v", "--verbose", action="store_true", help="show Prefect's logs")

    resume = commands.add_parser(
        "resume", help="finish a run that stopped (killed, crashed, database lost): finished cases are kept"
    )
    resume.add_argument("run_id", help="the run's id, or its first characters as `history` shows them")
    resume.add_argument("--db", dest="database_url", help="results database URL (the run's)")
    resume.add_argument("--output", dest="report_dir", help="report folder (default: as the run asked)")
    resume.add_argument("--concurrency", type=int, help="cases whose agent runs at once (default: as before)")
    resume.add_argument("--no-progress", action="store_true", help="no progress bar")
    resume.add_argument("-v", "--verbose", action="store_true", help="show Prefect's logs")

    validate = commands.add_parser(
        "validate", help="check suites (a file or a folder) without running anything"
    )
    validate.add_argument("suite")
    validate.add_argument("--config", help="EvalConfig JSON with criteria (agentflow evalsets)")
    history = commands.add_parser("history", help="recent runs, newest first")
    history.add_argument("--suite", help="only runs of this suite id")
    history.add_argument("--limit", type=int, default=20)
    history.add_argument("--db", dest="database_url", help="results database URL")

    report = commands.add_parser("report", help="render a stored run's report")
    report.add_argument("run_id")
    report.add_argument("--format", choices=("md", "json", "html", "junit"), default="md")
    report.add_argument("--db", dest="database_url", help="results database URL")

    compare = commands.add_parser("compare", help="what changed between two runs (RUN_A is the baseline)")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--db", dest="database_url", help="results database URL")
    compare.add_argument("--significance", type=float, default=0.05, help="of the test with repeats")

    schema = commands.add_parser("schema", help="print the JSON Schema of the native suite format")
    schema.add_argument("kind", nargs="?", choices=("evalset", "config"), default="evalset")
    return parser


def escape(text: str) -> str:
    """Text shown as it is by Rich: suite, case and agent names are not markup."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def _print_problems(error: Exception) -> None:
    from rich.console import Console

    console = Console(stderr=True)
    problems = getattr(error, "problems", None)
    lines = [str(problem) for problem in problems] if problems else [str(error)]
    console.print(f"[bold red]error:[/] {len(lines)} problem(s), nothing was run", highlight=False)
    for line in lines:
        console.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)


def _validate(args: argparse.Namespace) -> int:
    from proctor.loaders import SuiteError, load_suites

    try:
        suites = load_suites(args.suite, config_path=args.config)
    except SuiteError as error:
        _print_problems(error)
        return EXIT_BAD_INPUT
    for suite in suites:
        for warning in suite.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        metrics = sorted({spec.name for case in suite.cases for spec in case.metrics})
        shape = f"valid {suite.source_format} suite, {len(suite.cases)} cases"
        print(f"{suite.path}: {shape}, metrics: {', '.join(metrics) or 'none'}")
    return EXIT_PASSED


def _find_run(session: Any, text: str) -> Any:
    """A run by its id or a unique prefix of it (as `proctor history` shows them)."""
    from sqlmodel import col, select

    from models.tables import EvalRun

    matches = [
        run
        for run in session.exec(select(EvalRun).order_by(col(EvalRun.started_at).desc()))
        if str(run.id).startswith(text.lower())
    ]
    if len(matches) != 1:
        raise LookupError(f"{'no run' if not matches else 'more than one run'} matches {text!r}")
    return matches[0]


def _resolve_run_id(database_url: str | None, text: str) -> Any:
    """A run id from a full id or a unique prefix, looked up in the results database."""
    from sqlmodel import Session

    from proctor.storage import default_database_url, get_engine

    with Session(get_engine(database_url or default_database_url())) as session:
        return _find_run(session, text).id


def _history(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table
    from sqlmodel import Session, col, select

    from models.tables import EvalRun
    from proctor.storage import default_database_url, get_engine

    with Session(get_engine(args.database_url or default_database_url())) as session:
        query = select(EvalRun).order_by(col(EvalRun.started_at).desc()).limit(args.limit)
        if args.suite:
            query = query.where(EvalRun.suite_id == args.suite)
        runs = session.exec(query).all()
    table = Table(title="runs, newest first", title_justify="left")
    for column in ("run", "started", "suite", "agent", "status", "passed", "pass rate"):
        table.add_column(column)
    for run in runs:
        rate = f"{run.pass_rate:.1f}%" if run.pass_rate is not None else "-"
        agent = f"{run.agent} [{run.variant}]" if run.variant else run.agent
        table.add_row(
            str(run.id)[:8],
            f"{run.started_at:%Y-%m-%d %H:%M}",
            escape(run.suite_id),
            escape(agent),
            run.status.value,
            f"{run.passed_cases}/{run.total_cases}",
            rate,
        )
    Console().print(table)
    return EXIT_PASSED


def _report(args: argparse.Namespace) -> int:
    import tempfile

    from sqlmodel import Session

    from proctor.reporting import write_reports
    from proctor.reporting.html import html_report
    from proctor.reporting.junit import junit_xml
    from proctor.reporting.reports import markdown_report
    from proctor.storage import default_database_url, get_engine

    with Session(get_engine(args.database_url or default_database_url())) as session:
        try:
            run = _find_run(session, args.run_id)
        except LookupError as error:
            _print_problems(error)
            return EXIT_BAD_INPUT
        if args.format == "html":
            sys.stdout.write(html_report(session=session, run=run))
        elif args.format == "junit":
            sys.stdout.write(junit_xml(session=session, run=run))
        elif args.format == "md":
            sys.stdout.writelines(markdown_report(session=session, run=run))
        else:
            with tempfile.TemporaryDirectory() as folder:
                files = write_reports(session=session, run=run, directory=Path(folder))
                sys.stdout.write(files.json.read_text())
    return EXIT_PASSED


def _compare(args: argparse.Namespace) -> int:
    from sqlmodel import Session

    from proctor.regression import compare_runs
    from proctor.storage import default_database_url, get_engine

    with Session(get_engine(args.database_url or default_database_url())) as session:
        try:
            baseline, run = _find_run(session, args.run_a), _find_run(session, args.run_b)
        except LookupError as error:
            _print_problems(error)
            return EXIT_BAD_INPUT
        change = compare_runs(
            session=session, baseline_id=baseline.id, run_id=run.id, significance=args.significance
        )
    _print_regression(change)
    return EXIT_FAILED if change.regressed else EXIT_PASSED


def _print_regression(change: Any) -> None:
    from rich.console import Console

    console = Console(highlight=False)
    console.print(
        f"against baseline {str(change.baseline_id)[:8]}: pass rate {change.pass_rate_before:.1f}% -> "
        f"{change.pass_rate_after:.1f}% ({change.pass_rate_delta:+.1f} points)"
    )
    for label, cases in (
        ("newly failing", change.newly_failing),
        ("newly passing", change.newly_passing),
        ("only in the baseline", change.removed),
        ("new cases", change.added),
    ):
        if cases:
            console.print(f"{label}: {escape(', '.join(cases))}")
    if change.repeated:
        for case in change.changed_cases:
            console.print(
                f"  {escape(case.case_id)}: passed {case.passed_before}/{case.runs_before} -> "
                f"{case.passed_after}/{case.runs_after} (p = {case.p_value:.3g})"
            )
        console.print(f"pooled pass counts: p = {change.pooled_p_value:.3g}")
    for metric in change.metrics:
        if metric.delta is not None:
            console.print(
                f"  {escape(metric.name)}: {metric.before:.3f} -> {metric.after:.3f} ({metric.delta:+.3f})"
            )
    verdict = "[bold red]regression[/]" if change.regressed else "[green]no regression[/]"
    console.print(f"{verdict} ({escape(change.method)})")


def _schema(args: argparse.Namespace) -> int:
    """JSON Schema of the native formats, for editors (`$schema` / yaml-language-server)."""
    import json

    from models.agentflow import EvalConfig, EvalSet

    schema = (EvalConfig if args.kind == "config" else EvalSet).model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    print(json.dumps(schema, indent=2))
    return EXIT_PASSED


def _summary_table(summary: Any, database_url: str) -> None:
    from rich.console import Console
    from rich.table import Table
    from sqlmodel import Session

    from models.tables import EvalRun
    from proctor.reporting import case_rows
    from proctor.storage import get_engine
    from proctor.storage.runs import metric_stats

    console = Console()
    engine = get_engine(database_url)
    with Session(engine) as session:
        run = session.get(EvalRun, summary.run_id)
        stats = metric_stats(session=session, run_id=summary.run_id)
        rows = case_rows(session=session, run=run, limit=20)
    label = f"{summary.suite_name} [{summary.variant}]" if summary.variant else summary.suite_name
    metrics = Table(title=f"{escape(label)}: metrics", title_justify="left")
    for column in ("metric", "scored", "passed", "errors", "avg score", "judge calls (cached)"):
        metrics.add_column(column, justify="left" if column == "metric" else "right")
    for name, stat in stats.items():
        avg = f"{stat['avg_score']:.3f}" if stat["avg_score"] is not None else "n/a"
        calls = f"{stat['judge_calls']} ({stat['cached_calls']})" if stat["judge_calls"] else "-"
        metrics.add_row(
            escape(name), str(stat["evaluated"]), str(stat["passed"]), str(stat["errors"]), avg, calls
        )
    console.print(metrics)
    failing = [row for row in rows if not row["passed"]]
    if failing:
        table = Table(title="failing cases", title_justify="left")
        for column in ("case", "state", "why"):
            table.add_column(column)
        for row in failing:
            table.add_row(escape(str(row["case"])), escape(str(row["state"])), escape(str(row["why"])))
        console.print(table)
    colour = "green" if summary.failed == 0 else "red"
    rate = f"{summary.pass_rate:.1f}%" if summary.pass_rate is not None else "n/a"
    console.print(
        f"[bold {colour}]{summary.passed}/{summary.total} passed[/] ({rate}), "
        f"{summary.errored} errored · run {summary.run_id} · {(summary.duration_ms or 0) / 1000:.1f}s",
        highlight=False,
    )
    console.print(
        f"reports: {summary.report_dir}/report.md · results: {summary.database}",
        highlight=False,
        markup=False,
    )


def _run(args: argparse.Namespace) -> int:
    """Validate every suite at the path first; then run them one after another."""
    _quiet_prefect(args.verbose)
    from flows.evaluate import EvaluationRequest
    from proctor.loaders import Problem, SuiteError, discover, slug

    fields = {k: v for k, v in vars(args).items() if k in EvaluationRequest.model_fields}
    bad_meta = [item for item in args.metadata if "=" not in item]
    if bad_meta:
        _print_problems(ValueError(f"--meta expects KEY=VALUE; got {', '.join(bad_meta)}"))
        return EXIT_BAD_INPUT
    fields["metadata"] = dict(item.split("=", 1) for item in args.metadata)
    bad_variants = [item for item in args.variant_args if "=" not in item]
    if bad_variants:
        _print_problems(ValueError(f"--variant expects NAME=TARGET; got {', '.join(bad_variants)}"))
        return EXIT_BAD_INPUT
    if args.baseline_run_id:
        try:
            fields["baseline_run_id"] = _resolve_run_id(args.database_url, args.baseline_run_id)
        except LookupError as error:
            _print_problems(ValueError(f"--baseline: {error}"))
            return EXIT_BAD_INPUT
    if args.slack_channel or args.slack_webhook:
        fields["slack"] = {
            "channel": args.slack_channel,
            "webhook_url": args.slack_webhook,
            "notify": args.notify,
        }
    fields["variants"] = [
        {"name": name, "agent": target} for name, target in (item.split("=", 1) for item in args.variant_args)
    ]
    planned, problems = [], []
    agent_field = "--agent" if args.agent else "metadata.agent"
    for path in discover(args.suite):
        try:
            planned.append(_plan({**fields, "suite": str(path)}, str(path), agent_field))
        except SuiteError as error:
            problems += error.problems
    if problems or not planned:
        _print_problems(SuiteError(problems or [Problem(args.suite, "", "no suite files found")]))
        return EXIT_BAD_INPUT
    if args.report_dir and len(planned) > 1:  # one report folder per suite, named by its path
        root = Path(args.suite)
        for request, _ in planned:
            request.report_dir = str(Path(args.report_dir) / slug(str(Path(request.suite).relative_to(root))))
    return max(_run_one(request, total, args) for request, total in planned)


def _plan(fields: dict[str, Any], file: str, agent_field: str) -> tuple[Any, int]:
    """A checked request and how many case runs it plans, or a `SuiteError` naming every
    problem (request fields, suite, agent). Only the count is kept: the flow loads the suite
    itself, and holding its cases here too would double the memory of a large suite."""
    from pydantic import ValidationError

    from flows.evaluate import EvaluationRequest, prepare
    from proctor.agents import AgentLoadError
    from proctor.loaders import Problem, SuiteError

    try:
        request = EvaluationRequest(**fields)
        return request, len(prepare(request)[1]) * request.repeat
    except ValidationError as error:
        problems = [Problem(file, ".".join(map(str, i["loc"])), i["msg"]) for i in error.errors()]
        raise SuiteError(problems) from None
    except AgentLoadError as error:
        raise SuiteError([Problem(file, agent_field, str(error))]) from None
    except ValueError as error:
        raise SuiteError([Problem(file, "", str(error))]) from None


def _run_one(request: Any, total: int, args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from flows.evaluate import evaluate
    from proctor import progress as events
    from proctor.storage import default_database_url

    bar = Progress(
        TextColumn(f"[bold]{Path(request.suite).name}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("[green]{task.fields[passed]} passed [red]{task.fields[failed]} failed"),
        TimeElapsedColumn(),
        disable=args.no_progress or not sys.stderr.isatty(),
        transient=True,
    )
    task_id = bar.add_task("cases", total=total, passed=0, failed=0)
    tallies = {"passed": 0, "failed": 0}

    def on_event(event: str, data: dict[str, Any]) -> None:
        if event == "case_finished":
            tallies["passed" if data["passed"] else "failed"] += 1
            bar.update(task_id, advance=1, **tallies)

    unsubscribe = events.subscribe(on_event)
    try:
        with bar:
            summary = asyncio.run(evaluate(request))
    except Exception as error:
        print(f"error: the run of {request.suite} could not complete: {error}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        unsubscribe()
    for run in summary.variants or [summary]:
        _summary_table(run, request.database_url or default_database_url())
        if run.regression:
            from proctor.regression import Regression

            _print_regression(Regression.from_dict(run.regression))
        if run.notification:
            status = run.notification.get("status")
            detail = run.notification.get("error") or run.notification.get("channel") or ""
            print(f"slack: {status}{f' ({detail})' if detail else ''}", file=sys.stderr)
    if summary.variants:
        from rich.console import Console

        where = f"{summary.comparison_dir}/comparison.md"
        best = f"[bold]best variant: {summary.best_variant}[/]"
        Console().print(f"{best} · comparison: {where}", highlight=False)
    return EXIT_PASSED if summary.all_passed else EXIT_FAILED


def _resume(args: argparse.Namespace) -> int:
    """Run again what a stopped run did not finish, with the request it was started with."""
    _quiet_prefect(args.verbose)
    from sqlmodel import Session

    from flows.evaluate import EvaluationRequest
    from models.tables import RunStatus
    from proctor.loaders import SuiteError
    from proctor.storage import default_database_url, get_engine
    from proctor.storage.runs import resume_point

    database_url = args.database_url or default_database_url()
    try:
        with Session(get_engine(database_url)) as session:
            run = _find_run(session, args.run_id)
            finished = len(resume_point(session=session, run_id=run.id).finished)
    except LookupError as error:
        _print_problems(ValueError(f"resume: {error}"))
        return EXIT_BAD_INPUT
    if run.status is RunStatus.COMPLETED:
        _print_problems(ValueError(f"resume: run {run.id} already completed; nothing to resume"))
        return EXIT_BAD_INPUT
    fields = {
        key: value for key, value in (run.config or {}).items() if key in EvaluationRequest.model_fields
    }
    fields.update(database_url=database_url, resume_run_id=str(run.id))
    if args.report_dir:
        fields["report_dir"] = args.report_dir
    if args.concurrency:
        fields["concurrency"] = args.concurrency
    try:
        request, planned = _plan(fields, run.suite_path, "agent")
    except SuiteError as error:
        _print_problems(error)
        return EXIT_BAD_INPUT
    remaining = max(0, planned - finished)
    print(
        f"resuming run {run.id}: {finished} case runs already finished, {remaining} to run", file=sys.stderr
    )
    return _run_one(request, remaining, args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.version:
        from proctor import __version__

        print(f"proctor {__version__}")
        return EXIT_PASSED
    if args.command in ("run", "resume"):
        try:
            return _run(args) if args.command == "run" else _resume(args)
        finally:  # commit what is queued and close connections now, not in finalizers at exit
            from proctor.storage.db import dispose_engines
            from proctor.storage.writer import close_writers

            close_writers()
            dispose_engines()
    if args.command == "validate":
        return _validate(args)
    if args.command == "schema":
        return _schema(args)
    if args.command == "history":
        return _history(args)
    if args.command == "report":
        return _report(args)
    if args.command == "compare":
        return _compare(args)
    parser.print_help()
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
