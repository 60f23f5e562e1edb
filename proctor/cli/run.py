"""`proctor run` and `proctor resume`: plan every suite, run the flow, print the summary."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from proctor.cli.console import (
    EXIT_BAD_INPUT,
    EXIT_ERROR,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_PASSED,
    escape,
    print_problems,
    print_regression,
    sigterm_as_interrupt,
    stopped_by_signal,
    terminal_text,
    with_path_hint,
)
from proctor.cli.stored import find_run, resolve_run_id
from proctor.cli.temporary_server import with_prefect_api

FAILING_SHOWN = 20


def summary_table(summary: Any, database_url: str) -> None:
    from rich.console import Console
    from rich.table import Table
    from sqlmodel import Session

    from proctor.costs import run_totals
    from proctor.models.tables import EvalRun, RunStatus
    from proctor.reporting.summary import failing_cases
    from proctor.storage import get_engine
    from proctor.storage.history import no_history_line
    from proctor.storage.runs import metric_stats

    console = Console()
    engine = get_engine(database_url)
    with Session(engine) as session:
        run = session.get(EvalRun, summary.run_id)
        stats = metric_stats(session=session, run_id=summary.run_id)
        failing, failing_total = failing_cases(session=session, run=run, limit=FAILING_SHOWN)
        totals = run_totals(session=session, run_id=summary.run_id)
        compared = run.comparison is not None or run.status is not RunStatus.COMPLETED
        no_history = None if compared else no_history_line(session=session, run=run)
    label = f"{summary.suite_name} [{summary.variant}]" if summary.variant else summary.suite_name
    metrics = Table(title=f"{escape(label)}: metrics", title_justify="left")
    for column in ("metric", "scored", "passed", "errors", "avg score", "judge calls (cached)"):
        metrics.add_column(column, justify="left" if column == "metric" else "right")
    for name, stat in stats.items():
        avg = f"{stat['avg_score']:.3f}" if stat["avg_score"] is not None else "n/a"
        calls = f"{stat['judge_calls']} ({stat['cached_calls']})" if stat["judge_calls"] else "-"
        passed = "–" if stat["informational"] else str(stat["passed"])
        metrics.add_row(escape(name), str(stat["evaluated"]), passed, str(stat["errors"]), avg, calls)
    if any(stat["informational"] for stat in stats.values()):
        metrics.caption = "passed –: informational, a value (its mean per case) that never passes or fails"
        metrics.caption_justify = "left"
    console.print(metrics)
    if failing:
        table = Table(title="failing cases", title_justify="left")
        for column in ("case", "state", "why") if run.repeat <= 1 else ("case", "passed", "state", "why"):
            table.add_column(column)
        for case in failing:  # with repeats, passed k of n, as the reports and Slack say it
            counts = [] if run.repeat <= 1 else [f"{case['runs'] - case['failed']}/{case['runs']}"]
            table.add_row(escape(case["case"]), *counts, escape(case["state"]), escape(case["why"]))
        console.print(table)
        if failing_total > len(failing):
            console.print(
                f"… and {failing_total - len(failing)} more failing cases (see the report)", highlight=False
            )
    colour = "green" if summary.failed == 0 else "red"
    rate = f"{summary.pass_rate:.1f}%" if summary.pass_rate is not None else "n/a"
    console.print(
        f"[bold {colour}]{summary.passed}/{summary.total} passed[/] ({rate}), "
        f"{summary.errored} errored · run {summary.run_id} · {(summary.duration_ms or 0) / 1000:.1f}s",
        highlight=False,
    )
    console.print(totals.line(), highlight=False, markup=False)
    if summary.quota:
        console.print(quota_line(summary.quota), highlight=False, markup=False)
    console.print(
        f"reports: {summary.report_dir}/report.md · results: {summary.database}",
        highlight=False,
        markup=False,
    )
    if no_history:  # where a verdict would be: why there is none
        console.print(terminal_text(no_history), highlight=False, markup=False)


def quota_line(figures: dict[str, Any]) -> str:
    """The provider's quota as the run met it: its model requests, their rate against the
    quota, the 429s seen and the time calls waited for their turn."""
    limit = f" of {figures['limit_rpm']:g} allowed" if figures.get("limit_rpm") else ""
    rate = f", {figures['rpm']:.0f} a minute{limit}" if figures.get("rpm") is not None else ""
    line = (
        f"model requests: {figures['requests']}{rate} · {figures['rate_limited']} answered 429 · "
        f"{figures['waited_s']:.1f} s waited for quota (all calls)"
    )
    return f"{line}\nnote: {figures['note']}" if figures.get("note") else line


@with_prefect_api
def run_command(args: argparse.Namespace) -> int:
    """Validate every suite at the path first; then run them one after another."""
    from proctor.loaders import Problem, SuiteError, discover, slug
    from proctor.loaders.discover import split_case_selector
    from proctor.models.request import EvaluationRequest
    from proctor.storage import default_database_url
    from proctor.storage.db import normalize_url
    from proctor.storage.opening import check_writable

    check_writable(
        normalize_url(args.database_url or default_database_url())
    )  # a URL that can never work: exit 2 now
    args.suite, selected = split_case_selector(args.suite)  # adk eval's FILE:case_id,case_id
    args.cases = [*args.cases, *selected]
    fields = {k: v for k, v in vars(args).items() if k in EvaluationRequest.model_fields}
    if fields.get("concurrency") is None:  # not given: the run's own, grown with the quota
        fields.pop("concurrency", None)
    bad_meta = [item for item in args.metadata if "=" not in item]
    if bad_meta:
        print_problems(ValueError(f"--meta expects KEY=VALUE; got {', '.join(bad_meta)}"))
        return EXIT_BAD_INPUT
    fields["metadata"] = dict(item.split("=", 1) for item in args.metadata)
    bad_variants = [item for item in args.variant_args if "=" not in item]
    if bad_variants:
        print_problems(ValueError(f"--variant expects NAME=TARGET; got {', '.join(bad_variants)}"))
        return EXIT_BAD_INPUT
    if args.baseline_run_id:
        try:
            fields["baseline_run_id"] = resolve_run_id(args.database_url, args.baseline_run_id)
        except LookupError as error:
            print_problems(ValueError(f"--baseline: {error}"))
            return EXIT_BAD_INPUT
    if args.slack_channel or args.slack_webhook:
        fields["slack"] = {
            "channel": args.slack_channel,
            "webhook_url": args.slack_webhook,
            "notify": args.notify,
        }
    try:
        from proctor.calls.quota import parse_limit

        fields["rate_limits"] = [parse_limit(item) for item in args.rate_limit_args]
    except ValueError as error:
        print_problems(ValueError(f"--rate-limit: {error}"))
        return EXIT_BAD_INPUT
    fields["variants"] = [
        {"name": name, "agent": target} for name, target in (item.split("=", 1) for item in args.variant_args)
    ]
    planned, problems = [], []
    agent_field = "--agent" if args.agent else "metadata.agent"
    for path in discover(args.suite):
        try:
            planned.append(plan_request({**fields, "suite": str(path)}, str(path), agent_field))
        except SuiteError as error:
            problems += error.problems
    if problems or not planned:
        found = SuiteError(problems or [Problem(args.suite, "", "no suite files found")])
        print_problems(with_path_hint(found, args.suite))
        return EXIT_BAD_INPUT
    if args.report_dir and len(planned) > 1:  # one report folder per suite, named by its path
        root = Path(args.suite)
        for request, _ in planned:
            request.report_dir = str(Path(args.report_dir) / slug(str(Path(request.suite).relative_to(root))))
    return max(run_one(request, total, args) for request, total in planned)


def plan_request(fields: dict[str, Any], file: str, agent_field: str) -> tuple[Any, int]:
    """A checked request and how many case runs it plans, or a `SuiteError` naming every
    problem (request fields, suite, agent). Only the count is kept: the flow loads the suite
    itself, and holding its cases here too would double the memory of a large suite."""
    from pydantic import ValidationError

    from proctor.agents import AgentLoadError
    from proctor.loaders import Problem, SuiteError
    from proctor.models.request import EvaluationRequest
    from proctor.run.preparation import prepare

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


def run_one(request: Any, total: int, args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from proctor.calls import quota
    from proctor.execution import progress as events
    from proctor.loaders import SuiteError
    from proctor.storage import default_database_url
    from proctor.storage.lease import RunBusy

    orchestrated = uses_prefect(args, request)
    from proctor.run.stopping import SIGTERM_RECEIVED

    SIGTERM_RECEIVED.clear()  # a stop is this run's only

    bar = Progress(
        TextColumn(f"[bold]{Path(request.suite).name}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("[green]{task.fields[passed]} passed [red]{task.fields[failed]} failed"),
        TimeElapsedColumn(),
        TextColumn("[dim]{task.fields[quota]}"),  # the provider's quota: rate, 429s, waiting
        disable=args.no_progress or not sys.stderr.isatty(),
        transient=True,
    )
    task_id = bar.add_task("cases", total=total, passed=0, failed=0, quota="")
    tallies = {"passed": 0, "failed": 0}
    started: list[Any] = []  # the runs this request started or resumed

    def on_event(event: str, data: dict[str, Any]) -> None:
        if event == "run_started":
            started.append(data["run_id"])
        elif event == "case_finished":
            tallies["passed" if data["passed"] else "failed"] += 1
            bar.update(task_id, advance=1, quota=quota.describe(quota.snapshot()), **tallies)
        elif event == "cases_stored":  # chunks on Dask workers: counted in the database
            tallies.update(passed=data["passed"], failed=data["failed"])
            bar.update(task_id, completed=data["done"], **tallies)

    unsubscribe = events.subscribe(on_event)
    try:
        with bar, sigterm_as_interrupt():
            summary = asyncio.run(start_run(request, orchestrated, args.verbose))
    except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM: what is stored stays, and the user is
        return interrupted(stop, started)  # told how to finish
    except RunBusy as busy:
        print_problems(ValueError(f"resume: {busy}"))
        return EXIT_BAD_INPUT
    except SuiteError as error:  # found once the run started (a resumed run's suite changed): refused
        print_problems(error)
        return EXIT_BAD_INPUT
    except Exception as error:
        if stopped_by_signal(error) is not None:  # raised by Prefect while it handled a SIGTERM
            return interrupted(error, started)
        print(
            terminal_text(f"error: the run of {request.suite} could not complete: {error}{_hint(error)}"),
            file=sys.stderr,
        )
        return EXIT_ERROR
    except BaseException as stop:  # SIGTERM during a flow run: Prefect's `TerminationSignal`
        if stopped_by_signal(stop) is None:
            raise
        return interrupted(stop, started)
    finally:
        unsubscribe()
    for run in summary.variants or [summary]:
        summary_table(run, request.database_url or default_database_url())
        if run.regression:
            from proctor.stats.regression import Regression

            print_regression(Regression.from_dict(run.regression))
        if run.notification:
            status = run.notification.get("status")
            detail = run.notification.get("error") or run.notification.get("channel") or ""
            print(f"slack: {status}{f' ({detail})' if detail else ''}", file=sys.stderr)
    if summary.variants:
        from rich.console import Console

        where = f"{summary.comparison_dir}/comparison.md"
        best = f"[bold]best variant: {summary.best_variant}[/]"
        Console().print(f"{best} · comparison: {where}", highlight=False)
    if not orchestrated:
        print(NOT_ASKED if getattr(args, "prefect", None) is False else NOT_IN_PREFECT, file=sys.stderr)
    return EXIT_PASSED if summary.all_passed else EXIT_FAILED


NOT_IN_PREFECT = (
    "prefect: not a Prefect flow run (no Prefect API configured), so the Prefect UI will not show "
    "this run; everything above is stored in the results database. To see runs in the UI: "
    "`prefect server start`, then `prefect config set PREFECT_API_URL=http://127.0.0.1:4200/api` "
    "(or pass --prefect to use a temporary server)"
)


NOT_ASKED = (
    "prefect: not a Prefect flow run (--no-prefect), so the Prefect UI will not show this run; "
    "everything above is stored in the results database. Leave out --no-prefect to run it as a "
    "flow run of the Prefect API you configured"
)


def interrupted(stop: BaseException, started: list[Any]) -> int:
    run = f"run {started[-1]}" if started else "the run"
    finish = f"`proctor resume {str(started[-1])[:8]}` finishes it" if started else "nothing was started"
    print(f"interrupted: {run} stopped; its finished cases are stored; {finish}", file=sys.stderr)
    return stopped_by_signal(stop) or EXIT_INTERRUPTED


def uses_prefect(args: argparse.Namespace, request: Any) -> bool:
    """A Prefect flow run when asked for, or when a Prefect API is configured, or when the run
    needs Prefect's API anyway (a global concurrency limit); else a run without Prefect, which
    never waits for a temporary Prefect server to start."""
    choice = getattr(args, "prefect", None)
    if choice is not None:
        return bool(choice)
    from proctor.cli.prefect_api import configured_api_url

    return bool(configured_api_url()) or bool(request.model_call_limit)


def _hint(error: Exception) -> str:
    """What to do about Prefect's temporary API server not starting in time (a busy machine)."""
    if "ephemeral Prefect API server" not in str(error):
        return ""
    from proctor.cli.temporary_server import DEFAULT_STARTUP_TIMEOUT_S, STARTUP_TIMEOUT_VARIABLE

    return (
        ". Point PREFECT_API_URL at a running Prefect server (prefect server start), or give the "
        f"temporary one longer with {STARTUP_TIMEOUT_VARIABLE} (Proctor's default "
        f"{DEFAULT_STARTUP_TIMEOUT_S:g} s, as docs/configuration.md says)"
    )


async def start_run(request: Any, orchestrated: bool, verbose: bool) -> Any:
    if orchestrated:
        from proctor.flows.evaluate import run_evaluation

        return await run_evaluation(request)
    import logging

    from proctor.run.local_run import evaluate_in_process

    logger = logging.getLogger("proctor")
    if not logger.handlers:  # what Prefect's console handler shows for a flow run
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s | %(levelname)-7s | %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbose else logging.WARNING)
    return await evaluate_in_process(request)


@with_prefect_api
def resume_command(args: argparse.Namespace) -> int:
    """Run again what a stopped run did not finish, with the request it was started with."""
    from sqlmodel import Session

    from proctor.loaders import SuiteError
    from proctor.models.request import EvaluationRequest
    from proctor.models.tables import RunStatus
    from proctor.storage import default_database_url, get_engine
    from proctor.storage.lease import describe_holder, holder_alive
    from proctor.storage.runs import refused_by_quota, resume_point

    database_url = args.database_url or default_database_url()
    try:
        with Session(get_engine(database_url)) as session:
            run = find_run(session, args.run_id)
            finished = len(resume_point(session=session, run_id=run.id).finished)
            redo = refused_by_quota(session=session, run_id=run.id)  # the provider's refusals
    except LookupError as error:
        print_problems(ValueError(f"resume: {error}"))
        return EXIT_BAD_INPUT
    if run.status is RunStatus.COMPLETED and not redo:
        print_problems(ValueError(f"resume: run {run.id} already completed; nothing to resume"))
        return EXIT_BAD_INPUT
    if holder_alive(run.owner, run.heartbeat_at):
        holder = describe_holder(run.owner or "", run.heartbeat_at)
        print_problems(
            ValueError(f"resume: run {run.id} is still running ({holder}); resume it once that process stops")
        )
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
        request, planned = plan_request(fields, run.suite_path, "agent")
    except SuiteError as error:
        print_problems(error)
        return EXIT_BAD_INPUT
    remaining = max(0, planned - finished)
    print(
        f"resuming run {run.id}: {finished} case runs already finished, {remaining} to run", file=sys.stderr
    )
    return run_one(request, remaining, args)
