"""The `proctor` command line.

Exit codes: 0 every case passed, 1 some case failed, 2 bad input or configuration,
3 the run itself could not complete (database, crash).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from proctor.cli.console import EXIT_BAD_INPUT, EXIT_PASSED
from proctor.cli.parser import build_parser
from proctor.cli.run import resume_command, run_command
from proctor.cli.stored import (
    compare_command,
    history_command,
    report_command,
    schema_command,
    validate_command,
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from proctor import __version__

        print(f"proctor {__version__}")
        return EXIT_PASSED
    if args.command in ("run", "resume"):
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
    parser.print_help()
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
