"""The `proctor` command line: `main` is the console script's entry point."""

from proctor.cli.console import EXIT_BAD_INPUT, EXIT_ERROR, EXIT_FAILED, EXIT_PASSED
from proctor.cli.main import main

__all__ = ["EXIT_BAD_INPUT", "EXIT_ERROR", "EXIT_FAILED", "EXIT_PASSED", "main"]
