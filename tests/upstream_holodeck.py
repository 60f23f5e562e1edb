"""holodeck-ai's own code, run in a process of its own for the parity tests.

Importing `holodeck` configures logging for its CLI (`holodeck/__init__.py` calls
`setup_logging`: the root logger's handlers replaced by one bound to the sys.stderr of the
moment, every logger's level reset), and deepeval and sentry-sdk add handlers and a `.deepeval`
folder of their own: in the test process that breaks the tests after (their captured output,
Prefect's log handlers). So a test hands its inputs to `run_holodeck`, which runs a script in a
fresh interpreter, from a temporary folder, with telemetry off, and returns what it printed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import pytest


def skip_without_holodeck() -> None:
    """Skip (the module, at its top) when holodeck-ai is absent, without importing it."""
    if importlib.util.find_spec("holodeck") is None:
        pytest.skip("holodeck-ai is not installed (see .ci/run, half 2)", allow_module_level=True)


def run_holodeck(script: str, payload: Any) -> Any:
    """`script` run with `payload` (JSON) on its standard input; what it prints, as JSON."""
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            [sys.executable, "-c", script],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            cwd=folder,
            timeout=300,
            env={**os.environ, "DEEPEVAL_TELEMETRY_OPT_OUT": "YES"},
        )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
