"""The summary `proctor run` prints: failing cases counted as cases, and none left out silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from proctor.cli import EXIT_FAILED, main

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]


def test_failing_cases_are_listed_once_each_and_the_rest_counted(
    tmp_path: Path, sqlite_url: str, capsys, monkeypatch
) -> None:
    (tmp_path / "agent.py").write_text(  # right on a case's repeat only: each passes 1 of 2
        "def agent(request):\n    return 'sure' if '#' in request.thread_id else 'no'\n"
    )
    cases = "\n".join(
        f"    - {{id: case_{i:02d}, message: hi, expected_outcome: {{final_answer_contains: [sure]}}}}"
        for i in range(25)
    )
    (tmp_path / "suite.yaml").write_text(f"dataset:\n  name: many\n  test_cases:\n{cases}\n")
    monkeypatch.setenv("COLUMNS", "200")
    args = [
        "run",
        str(tmp_path / "suite.yaml"),
        "--agent",
        f"{tmp_path / 'agent.py'}:agent",
        "--db",
        sqlite_url,
    ]
    assert main([*args, "--no-progress", "--repeat", "2", "--output", str(tmp_path / "r")]) == EXIT_FAILED
    out = capsys.readouterr().out
    listed = [line for line in out.splitlines() if "case_" in line]
    # the console says it as the reports and Slack do: passed k of n
    assert len(listed) == 20 and all("1/2" in line for line in listed)
    header = next(line for line in out.splitlines() if "state" in line and "why" in line)
    assert header.index("case") < header.index("passed") < header.index("state")
    assert "repeat 2" not in out
    assert "… and 5 more failing cases" in out
