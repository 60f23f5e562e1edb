"""The README is run, not just read: its opening commands are the ones CI runs, and the bundled
example suites validate. (Every YAML, JSON and shell example of the README and of docs/ is
checked by tests/test_docs.py.)"""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.readme_commands import readme_commands


def test_readme_opens_with_the_run_and_test_commands() -> None:
    commands = readme_commands()
    assert commands["run"].endswith("proctor run examples/weather/weather.evalset.json")
    assert "pip install -e ." in commands["run"]
    assert commands["test"].endswith("python -m pytest -n 2")
    # The test command works in a bare clone: no torch, no extra that needs one, no ../shared.
    assert "torch" not in commands["test"] and "embeddings" not in commands["test"]
    assert "../shared" not in commands["test"]


def test_ci_runs_the_readmes_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "tests/readme_commands.py test" in ci and 'bash -c "$test_command"' in ci


def test_every_bundled_example_suite_validates(capsys: pytest.CaptureFixture[str]) -> None:
    from proctor.cli import EXIT_PASSED, main

    assert main(["validate", str(ROOT / "examples")]) == EXIT_PASSED
    out = capsys.readouterr().out
    assert "weather.evalset.json: valid agentflow suite" in out
    assert "orders.dataset.yaml: valid" in out
