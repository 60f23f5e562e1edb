"""comparison.csv never hands a spreadsheet a formula (issue 26, item 11): variant names,
agents and metric names starting with `=`, `+`, `-`, `@` are written as text. A real run of
two variants without Prefect; the CSV read back with the csv module, as a spreadsheet would."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

from tests.factories import echo_suite

AGENT = "def agent(request):\n    return 'answer ' + request.input\n"


def test_variant_and_metric_names_that_look_like_formulas_are_written_as_text(tmp_path: Path) -> None:
    suite = echo_suite(tmp_path, name="formulas", cases=2, agent=AGENT, fails=lambda i: False)
    proctor = str(Path(sys.executable).with_name("proctor"))
    environment = {key: value for key, value in os.environ.items() if key != "PREFECT_API_URL"}
    variants = ["@SUM(1+1)", "-2+3", '+HYPERLINK("http://x")']
    command = [proctor, "run", str(suite), "--db", f"sqlite:///{tmp_path / 'r.db'}", "--no-prefect"]
    command += ["--no-progress", "--output", str(tmp_path / "out")]
    for name in variants:
        command.append(f"--variant={name}={tmp_path / 'agent.py'}:agent")
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=environment)
    assert done.returncode == 0, done.stdout + done.stderr
    with (tmp_path / "out" / "comparison.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    cells = [cell for row in rows for cell in row]
    assert not [cell for cell in cells if cell[:1] in ("=", "+", "-", "@")], rows  # before: 3 formulas
    assert sorted(row[0] for row in rows[1:]) == sorted(f"'{name}" for name in variants)
    assert any(cell.endswith("agent.py:agent") for cell in cells)


def test_a_metric_name_like_a_formula_is_text_in_the_header() -> None:
    from proctor.reporting.comparison import csv_text

    assert csv_text("=cmd|' /C calc'!A0") == "'=cmd|' /C calc'!A0"
    assert csv_text("\tsomething") == "'\tsomething"
    assert csv_text("response_match_score") == "response_match_score"
