"""What the command line prints: exit codes, problems, regressions; names never read as markup."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_ERROR = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill`, a scheduler, a container stopping): handled as a Ctrl-C is, so the run
    stops the same way and says how to finish it. A KeyboardInterrupt, so that asyncio cancels
    the run's tasks for it as it does for Ctrl-C."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While a run is in this process's main thread, SIGTERM raises `Terminated`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        from proctor.run.stopping import SIGTERM_RECEIVED

        SIGTERM_RECEIVED.set()
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stopped_by_signal(error: BaseException) -> int | None:
    """The exit status for a run stopped by Ctrl-C or SIGTERM (Prefect's flow engine turns
    SIGTERM into its own `TerminationSignal`, and may raise an error of its own while it
    handles it), or None for anything else."""
    from proctor.run.stopping import SIGTERM_RECEIVED, stop_signal_in

    stop = stop_signal_in(error)
    if stop is None:
        return EXIT_TERMINATED if SIGTERM_RECEIVED.is_set() else None
    return EXIT_INTERRUPTED if type(stop) is KeyboardInterrupt else EXIT_TERMINATED


# True in a warm process's child (proctor.warm), where Prefect was imported, its settings and
# logging set up, before the command's environment arrived. Never in a process of its own, nor
# for an in-process caller of `main`, whose logging is theirs.
prefect_imported_before_command = False


def quiet_prefect(verbose: bool) -> None:
    """Prefect's defaults suit a server; on a terminal they drown the progress bar."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "INFO" if verbose else "WARNING")
    if prefect_imported_before_command:
        # Prefect was imported before this command's settings were known (a warm process's
        # child, proctor.warm): read them again, as a first import would have.
        import prefect.context
        from prefect.logging.configuration import setup_logging

        prefect.context.refresh_global_settings_context()
        setup_logging(incremental=False)


# Control characters shown as symbols (ESC as ␛), newlines kept: an agent's error or a name
# must not clear the screen, recolour it or move the cursor.
_TERMINAL_CONTROLS = (
    {code: chr(0x2400 + code) for code in range(0x20) if code != 0x0A}
    | {0x7F: "\u2421"}
    | {code: "\ufffd" for code in range(0x80, 0xA0)}
)


def terminal_text(text: object) -> str:
    """Text safe to write to a terminal: no escape sequences or other control characters."""
    from proctor.secrets import scrub

    return scrub(str(text)).translate(_TERMINAL_CONTROLS)


def escape(text: str) -> str:
    """Text shown as it is by Rich: suite, case and agent names are not markup, and their
    control characters are not sent to the terminal."""
    from rich.markup import escape as rich_escape

    return rich_escape(terminal_text(text))


def with_path_hint(error: Exception, given: str) -> Exception:
    """The suite path given on the command line, when it is not found, said with the folder
    a relative path is read from and what a suite path may name."""
    from dataclasses import replace
    from pathlib import Path

    from proctor.loaders import SuiteError

    problems = getattr(error, "problems", None)
    if not problems or Path(given).is_absolute():
        return error
    hint = (
        f"file not found in {Path.cwd()} (where a relative path is read from); give the path of a "
        "suite file (.evalset.json, .test.json, agent.yaml, a Vanna dataset) or of a folder of them"
    )
    return SuiteError(
        [
            replace(problem, message=hint)
            if problem.file in (given, str(Path(given))) and problem.message == "file not found"
            else problem
            for problem in problems
        ]
    )


def print_problems(error: Exception) -> None:
    from rich.console import Console

    console = Console(stderr=True)
    problems = getattr(error, "problems", None)
    lines = [str(problem) for problem in problems] if problems else [str(error)]
    console.print(f"[bold red]error:[/] {len(lines)} problem(s), nothing was run", highlight=False)
    for line in lines:
        console.print(f"  {terminal_text(line)}", highlight=False, markup=False, soft_wrap=True)


def print_regression(change: Any) -> None:
    """The verdict as the terminal shows it: the same labels, counts and evidence as the
    reports and Slack (`proctor.models.comparison.LABELS`)."""
    from rich.console import Console

    from proctor.models.comparison import LABEL_NAMES, LABELS

    console = Console(highlight=False)
    console.print(
        f"against baseline {str(change.baseline_id)[:8]}: pass rate {change.pass_rate_before:.1f}% -> "
        f"{change.pass_rate_after:.1f}% ({change.pass_rate_delta:+.1f} points); {escape(change.history_line)}"
    )
    counts = change.counts
    console.print(" · ".join(f"{LABEL_NAMES[label]} {counts[label]}" for label in LABELS))
    for label in LABELS:
        listed = [case for case in change.cases if case.label == label]
        for case in listed[:20]:
            mark = " [bold red](significant)[/]" if case.significant else ""
            console.print(f"  {LABEL_NAMES[label]}: {escape(case.case_id)} — {escape(case.evidence)}{mark}")
        if len(listed) > 20:
            console.print(f"  … and {len(listed) - 20} more {LABEL_NAMES[label]}")
    for metric in change.metrics:
        if metric.delta is not None:
            console.print(
                f"  {escape(metric.name)}: {metric.before:.3f} -> {metric.after:.3f} ({metric.delta:+.3f})"
            )
    verdict = "[bold red]regressed[/]" if change.regressed else "[green]no regression[/]"
    console.print(f"{verdict} ({escape(change.method)})")
