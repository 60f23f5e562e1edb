"""Commands that read files or stored runs and run nothing: validate, schema, history, report,
compare; and reset-history, which marks where a suite's history starts again."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from proctor.cli.console import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_PASSED,
    escape,
    print_problems,
    print_regression,
    with_path_hint,
)


def validate_command(args: argparse.Namespace) -> int:
    from proctor.loaders import SuiteError, load_suites

    try:
        suites = load_suites(args.suite, config_path=args.config)
    except SuiteError as error:
        print_problems(with_path_hint(error, args.suite))
        return EXIT_BAD_INPUT
    from proctor.run.preparation import preflight_problems

    problems = [problem for suite in suites for problem in preflight_problems(suite)]
    if problems:  # what `run` would refuse before calling anything
        print_problems(SuiteError(problems))
        return EXIT_BAD_INPUT
    for suite in suites:
        for warning in suite.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        metrics = sorted(
            {
                spec.name + ("" if spec.enabled else " (disabled)")
                for case in suite.cases
                for spec in case.metrics
            }
        )
        shape = f"valid {suite.source_format} suite, {len(suite.cases)} cases"
        print(f"{suite.path}: {shape}, metrics: {', '.join(metrics) or 'none'}")
    return EXIT_PASSED


def find_run(session: Any, text: str) -> Any:
    """A run by its id or a unique prefix of it (as `proctor history` shows them)."""
    from sqlmodel import col, select

    from proctor.models.tables import EvalRun

    matches = [
        run
        for run in session.exec(select(EvalRun).order_by(col(EvalRun.started_at).desc()))
        if str(run.id).startswith(text.lower())
    ]
    if len(matches) != 1:
        raise LookupError(f"{'no run' if not matches else 'more than one run'} matches {text!r}")
    return matches[0]


def resolve_run_id(database_url: str | None, text: str) -> Any:
    """A run id from a full id or a unique prefix, looked up in the results database."""
    from sqlmodel import Session

    from proctor.storage import default_database_url, get_engine

    with Session(get_engine(database_url or default_database_url())) as session:
        return find_run(session, text).id


def history_command(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table
    from sqlmodel import Session, col, select

    from proctor.costs import run_totals
    from proctor.models.tables import EvalRun
    from proctor.storage import default_database_url, get_engine

    with Session(get_engine(args.database_url or default_database_url())) as session:
        query = select(EvalRun).order_by(col(EvalRun.started_at).desc()).limit(args.limit)
        if args.suite:
            query = query.where(EvalRun.suite_id == args.suite)
        runs = session.exec(query).all()
        totals = {run.id: run_totals(session=session, run_id=run.id) for run in runs}
    table = Table(title="runs, newest first", title_justify="left")
    for column in ("run", "started", "suite", "agent", "status", "passed", "pass rate"):
        table.add_column(column)
    # What each run spent, in a table of its own: one table with both would wrap every name.
    spending = Table(title="what each run spent", title_justify="left")
    for column in ("run", "agent tokens", "judge tokens", "judge calls (cached)", "est. cost"):
        spending.add_column(column, justify="left" if column == "run" else "right")
    for run in runs:
        spent = totals[run.id]
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
        spending.add_row(
            str(run.id)[:8],
            f"{spent.agent_tokens:,}",
            f"{spent.judge_tokens:,}",
            f"{spent.judge_calls:,} ({spent.cached_judge_calls:,})",
            escape(spent.cost_text if spent.cost_usd is not None else "unknown"),
        )
    Console().print(table)
    Console().print(spending)
    return EXIT_PASSED


def report_command(args: argparse.Namespace) -> int:
    from sqlmodel import Session

    from proctor.storage import default_database_url, get_engine

    with Session(get_engine(args.database_url or default_database_url())) as session:
        try:
            run = find_run(session, args.run_id)
        except LookupError as error:
            print_problems(error)
            return EXIT_BAD_INPUT
        try:
            _print_report(session, run, args.format)
        except BrokenPipeError:  # `proctor report RUN | head`: the reader has what it wanted
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush is quiet too
    return EXIT_PASSED


def _print_report(session: Any, run: Any, kind: str) -> None:
    import tempfile

    from proctor.reporting import write_reports
    from proctor.reporting.html import html_report
    from proctor.reporting.junit import junit_xml
    from proctor.reporting.reports import markdown_report
    from proctor.reporting.vanna import vanna_report

    if kind == "html":
        sys.stdout.write(html_report(session=session, run=run))
    elif kind == "junit":
        sys.stdout.write(junit_xml(session=session, run=run))
    elif kind == "md":
        sys.stdout.writelines(markdown_report(session=session, run=run))
    elif kind == "vanna":
        sys.stdout.writelines(vanna_report(session=session, run=run))
    else:
        with tempfile.TemporaryDirectory() as folder:
            files = write_reports(session=session, run=run, directory=Path(folder))
            sys.stdout.write(files.json.read_text())
    sys.stdout.flush()


def compare_command(args: argparse.Namespace) -> int:
    """RUN_B judged as the nightly verdict judges a run: against RUN_A and the runs of RUN_A's
    suite, agent and variant before it (`--history-window`; 1 compares with RUN_A alone)."""
    from sqlmodel import Session

    from proctor.stats.regression import compare_with_history
    from proctor.storage import default_database_url, get_engine

    if args.history_window < 1:
        print_problems(ValueError(f"--history-window expects 1 or more runs, got {args.history_window}"))
        return EXIT_BAD_INPUT
    with Session(get_engine(args.database_url or default_database_url())) as session:
        try:
            baseline, run = find_run(session, args.run_a), find_run(session, args.run_b)
        except LookupError as error:
            print_problems(error)
            return EXIT_BAD_INPUT
        change = compare_with_history(
            session=session,
            run=run,
            last=baseline,
            window=args.history_window,
            significance=args.significance,
        )
        different = baseline.suite_id != run.suite_id
        suites = f"{baseline.suite_id!r} and {run.suite_id!r}"
    if change is None or not change.compared:
        print_problems(
            ValueError(
                f"runs {args.run_a} and {args.run_b} share no case (suites {suites}): nothing to compare"
            )
        )
        return EXIT_BAD_INPUT
    if different:
        print(f"different suites ({suites}): comparing the {change.compared} case(s) both ran")
    print_regression(change)
    return EXIT_FAILED if change.regressed else EXIT_PASSED


def reset_history_command(args: argparse.Namespace) -> int:
    """Later verdicts of the suite (and agent, and variant) read only runs started from now on."""
    from sqlmodel import Session, select

    from proctor.models.tables import EvalRun
    from proctor.storage import default_database_url, get_engine
    from proctor.storage.history import record_reset

    with Session(get_engine(args.database_url or default_database_url())) as session:
        if session.exec(select(EvalRun.id).where(EvalRun.suite_id == args.suite_id).limit(1)).first() is None:
            print_problems(LookupError(f"no stored run of suite {args.suite_id!r} (see `proctor history`)"))
            return EXIT_BAD_INPUT
        reset = record_reset(
            session=session,
            suite_id=args.suite_id,
            agent=args.agent,
            variant=args.variant,
            reason=args.reason,
        )
        session.commit()
        whose = " · ".join(
            part
            for part in (
                f"suite {args.suite_id}",
                f"agent {args.agent}" if args.agent else "every agent",
                f"variant {args.variant}" if args.variant else "",
            )
            if part
        )
        print(f"history reset at {reset.reset_at.isoformat()} for {whose}: later runs start a new history")
    return EXIT_PASSED


def schema_command(args: argparse.Namespace) -> int:
    """JSON Schema of the native formats, for editors (`$schema` / yaml-language-server)."""
    import json

    from proctor.models.agentflow import EvalConfig, EvalSet

    schema = (EvalConfig if args.kind == "config" else EvalSet).model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    print(json.dumps(schema, indent=2))
    return EXIT_PASSED
