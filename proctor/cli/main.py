"""The `proctor` command line.

Exit codes: 0 every case passed, 1 some case failed, 2 bad input or configuration,
3 the run itself could not complete (database, crash).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from proctor.cli.console import EXIT_BAD_INPUT, EXIT_PASSED, quiet_prefect
from proctor.cli.parser import build_parser
from proctor.cli.run import resume_command, run_command
from proctor.cli.stored import (
    compare_command,
    history_command,
    report_command,
    reset_history_command,
    schema_command,
    validate_command,
)


def console_main() -> int:
    """The `proctor` command: `main`, then a quick exit.

    At exit the interpreter collects garbage over everything still alive: with Prefect,
    SQLAlchemy and Pydantic loaded that took 0.55-0.75 s of a 3 s command here (the bundled
    example against a Prefect server). Freezing the heap first skips that walk; exit handlers
    (Prefect's log and event flushes) and threads still finish as usual. Only for the
    command: an in-process caller of `main` keeps its garbage collector as it was."""
    import gc

    try:
        code = main()
    except KeyboardInterrupt:  # Ctrl-C before a run started (a run's own is answered in run_one)
        from proctor.cli.console import EXIT_INTERRUPTED

        print("interrupted before any run started: nothing was run or stored", file=sys.stderr)
        code = EXIT_INTERRUPTED
    except BaseException as error:
        # Whatever ended the command, a thread an agent left running must not keep the process
        # alive for ever after it (the interpreter waits for such threads before exiting).
        if not isinstance(error, SystemExit):
            import traceback

            traceback.print_exc()
        code = error.code if isinstance(error, SystemExit) and isinstance(error.code, int) else 1
        leave_without_agent_threads(code)
        raise
    gc.freeze()
    leave_without_agent_threads(code)
    return code


def leave_without_agent_threads(code: int) -> None:
    """Exit now, with `code`, when threads an agent started (not daemons) are still running:
    the interpreter would wait for them before exiting, for ever if they never end. Exit
    handlers run first (Prefect's log and event flushes), then the process ends."""
    import atexit

    from proctor.user_code import agent_threads_left, describe_thread

    left = agent_threads_left()
    if not left:
        return
    names = ", ".join(describe_thread(thread) for thread in left[:5])
    more = f" and {len(left) - 5} more" if len(left) > 5 else ""
    print(
        f"warning: {len(left)} thread(s) started by user code are still running ({names}{more}); "
        "Proctor exits without waiting for them",
        file=sys.stderr,
    )
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and not stream.closed:
            stream.flush()
    from proctor.user_code import _real_exit

    _real_exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from proctor import __version__

        print(f"proctor {__version__}")
        return EXIT_PASSED
    from proctor.storage.opening import database_errors

    quiet_prefect(getattr(args, "verbose", False))  # any command may start Prefect (a Secret block)
    try:
        return dispatch(parser, args)
    except database_errors() as error:  # a bad or unreachable results database: one line, no traceback
        return database_problem(error, args)


def database_problem(error: Exception, args: argparse.Namespace) -> int:
    from proctor.cli.console import EXIT_ERROR, terminal_text
    from proctor.storage import default_database_url
    from proctor.storage.db import DatabaseUnavailable
    from proctor.storage.opening import DatabaseProblem, explain

    if isinstance(error, DatabaseUnavailable):  # unreachable or missing: its own line and fix
        print(terminal_text(f"error: {error}"), file=sys.stderr)
        return EXIT_ERROR
    if not isinstance(error, DatabaseProblem):
        error = explain(getattr(args, "database_url", None) or default_database_url(), error)
    print(terminal_text(f"error: {error}"), file=sys.stderr)
    return EXIT_BAD_INPUT if error.bad_input else EXIT_ERROR


def absolute_paths(args: argparse.Namespace) -> None:
    """Paths on the command line made absolute before any user code runs: an agent calling
    `os.chdir` must not move the results database or the reports somewhere else."""
    from pathlib import Path

    url = getattr(args, "database_url", None)
    if url and url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
        path, _, query = url.removeprefix("sqlite:///").partition("?")
        if path and path != ":memory:":
            args.database_url = f"sqlite:///{Path(path).resolve().as_posix()}" + (
                f"?{query}" if query else ""
            )
    if getattr(args, "report_dir", None):
        args.report_dir = str(Path(args.report_dir).resolve())


def dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command in ("run", "resume"):
        absolute_paths(args)
        try:
            return run_command(args) if args.command == "run" else resume_command(args)
        finally:  # commit what is queued and close connections now, not in finalizers at exit
            from proctor.storage.db import dispose_engines
            from proctor.storage.writer import close_writers

            close_writers()
            dispose_engines()
    if args.command == "validate":
        return validate_command(args)
    if args.command == "schema":
        return schema_command(args)
    if args.command == "history":
        return history_command(args)
    if args.command == "report":
        return report_command(args)
    if args.command == "compare":
        return compare_command(args)
    if args.command == "reset-history":
        return reset_history_command(args)
    if args.command == "warm":  # the `proctor` command's entry point (proctor.warm) answers it first
        print(
            f"error: run this as `proctor warm {args.action}` or `python -m proctor warm {args.action}`",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    parser.print_help()
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
