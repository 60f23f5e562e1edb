"""Agent variants over the same suite, compared side by side."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from proctor.cli import EXIT_FAILED, main
from tests.conftest import EXAMPLE_SUITE, ROOT

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

SHY_AGENT = "def agent(request):\n    return 'I would rather not say <b>anything</b>.'\n"


def test_variants_run_the_suite_and_the_best_is_named(tmp_path: Path, sqlite_url: str, capsys) -> None:
    (tmp_path / "shy.py").write_text(SHY_AGENT)
    weather = f"{ROOT / 'examples' / 'weather' / 'agent.py'}:weather_agent"
    code = main(
        [
            "run",
            str(EXAMPLE_SUITE),
            "--db",
            sqlite_url,
            "--output",
            str(tmp_path / "out"),
            "--no-progress",
            "--variant",
            f"weather={weather}",
            "--variant",
            f"shy<script>={tmp_path / 'shy.py'}:agent",
        ]
    )
    assert code == EXIT_FAILED
    out = capsys.readouterr().out
    assert "best variant: weather" in out
    rows = list(csv.DictReader((tmp_path / "out" / "comparison.csv").open()))
    assert [(r["variant"], r["passed"], r["best"]) for r in rows] == [
        ("weather", "4", "True"),
        ("shy<script>", "0", "False"),
    ]
    assert float(rows[0]["pass_rate"]) == 80.0 and float(rows[0]["mean_agent_ms"]) >= 0
    html = (tmp_path / "out" / "comparison.html").read_text()
    assert "shy&lt;script&gt;" in html and "<script>" not in html
    assert "**weather**" in (tmp_path / "out" / "comparison.md").read_text()
    assert (tmp_path / "out" / "weather" / "report.md").exists()


def test_variants_whose_names_make_the_same_folder_keep_their_own_reports(
    tmp_path: Path, sqlite_url: str
) -> None:
    """'a/b' and 'a-b' both make the folder a-b, and two names with no ASCII letter both make
    'suite': before, each overwrote the other's reports without a word."""
    (tmp_path / "shy.py").write_text(SHY_AGENT)
    names = ["a/b", "a-b", "日本", "中文"]
    command = ["run", str(EXAMPLE_SUITE), "--db", sqlite_url, "--output", str(tmp_path / "out")]
    command += ["--no-progress", "--no-prefect"]
    for name in names:
        command += ["--variant", f"{name}={tmp_path / 'shy.py'}:agent"]
    assert main(command) == EXIT_FAILED
    runs = {}
    for report in (tmp_path / "out").glob("*/report.json"):
        runs[report.parent.name] = json.loads(report.read_text())
    assert len(runs) == len(names), sorted(runs)  # before: 2 folders for 4 variants
    stored = {row["variant"] for row in csv.DictReader((tmp_path / "out" / "comparison.csv").open())}
    assert stored == set(names)
