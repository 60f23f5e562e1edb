"""The README is run, not just read: its opening commands are the ones CI runs, and every YAML
and JSON example in it parses (and, where it is a whole suite or config, validates)."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from tests.conftest import ROOT
from tests.readme_commands import readme_commands

README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = [
    (match.group(1), match.group(2), README[: match.start()].count("\n") + 1)
    for match in re.finditer(r"```(yaml|json)\n(.*?)```", README, re.S)
]


def test_readme_opens_with_the_run_and_test_commands() -> None:
    commands = readme_commands()
    assert commands["run"].endswith("proctor run examples/weather/weather.evalset.json")
    assert "pip install -e ." in commands["run"]
    assert commands["test"].endswith("python -m pytest")
    # The test command works in a bare clone: no torch, no extra that needs one, no ../shared.
    assert "torch" not in commands["test"] and "embeddings" not in commands["test"]
    assert "../shared" not in commands["test"]


def test_ci_runs_the_readmes_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "tests/readme_commands.py test" in ci and 'bash -c "$test_command"' in ci


def test_the_readme_has_examples() -> None:
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize(("kind", "text", "line"), BLOCKS, ids=[f"line-{b[2]}" for b in BLOCKS])
def test_every_example_parses(kind: str, text: str, line: int) -> None:
    try:
        document = yaml.safe_load(text) if kind == "yaml" else json.loads(text)
    except (yaml.YAMLError, json.JSONDecodeError) as error:
        pytest.fail(f"README.md line {line}: the {kind} example does not parse: {error}")
    assert document is not None, f"README.md line {line}: empty {kind} example"


def test_every_bundled_example_suite_validates(capsys: pytest.CaptureFixture[str]) -> None:
    from proctor.cli import EXIT_PASSED, main

    assert main(["validate", str(ROOT / "examples")]) == EXIT_PASSED
    out = capsys.readouterr().out
    assert "weather.evalset.json: valid agentflow suite" in out
    assert "orders.dataset.yaml: valid" in out
