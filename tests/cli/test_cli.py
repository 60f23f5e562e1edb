"""The `proctor` command: exit codes, messages, and the README's run command for real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from proctor.cli import EXIT_BAD_INPUT, EXIT_ERROR, EXIT_FAILED, EXIT_PASSED, main
from tests.conftest import EXAMPLE_SUITE


@pytest.mark.flow
def test_readme_command_runs_the_example_and_exits_1(tmp_path: Path) -> None:
    """`proctor run examples/weather/weather.evalset.json` in a fresh folder, as a user would."""
    proctor = shutil.which("proctor", path=str(Path(sys.executable).parent))
    assert proctor, "the console script 'proctor' is not installed"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "PROCTOR_"))}
    done = subprocess.run(
        [proctor, "run", str(EXAMPLE_SUITE)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == EXIT_FAILED, done.stderr
    assert "4/5 passed" in done.stdout
    assert "trajectory_match" in done.stdout and "fahrenheit" in done.stdout.lower()
    assert (tmp_path / ".proctor" / "proctor.db").exists()
    assert list((tmp_path / ".proctor" / "reports").rglob("report.md"))
    assert "Traceback" not in done.stderr


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness")
def test_all_passing_selection_exits_0(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    code = main(
        [
            "run",
            str(EXAMPLE_SUITE),
            "--db",
            sqlite_url,
            "--output",
            str(tmp_path),
            "--case",
            "basic_weather",
            "--case",
            "greeting",
            "--no-progress",
        ]
    )
    assert code == EXIT_PASSED
    assert "2/2 passed" in capsys.readouterr().out


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness")
def test_tag_selection_runs_only_tagged_cases(sqlite_url: str, tmp_path: Path, capsys) -> None:
    code = main(
        [
            "run",
            str(EXAMPLE_SUITE),
            "--db",
            sqlite_url,
            "--output",
            str(tmp_path),
            "--tag",
            "known-failure",
            "--no-progress",
        ]
    )
    assert code == EXIT_FAILED
    assert "0/1 passed" in capsys.readouterr().out


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness")
def test_an_unreachable_database_is_an_execution_error(tmp_path: Path, capsys) -> None:
    code = main(
        [
            "run",
            str(EXAMPLE_SUITE),
            "--db",
            "postgresql://postgres@127.0.0.1:9/none",
            "--output",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert code == EXIT_ERROR
    assert "could not complete" in capsys.readouterr().err


def test_a_bad_suite_exits_2_with_the_file_and_field(tmp_path: Path, capsys) -> None:
    suite = tmp_path / "bad.evalset.json"
    suite.write_text('{"eval_set_id": "x", "eval_cases": [{"eval_id": "a", "conversation": [{}]}]}')
    assert main(["run", str(suite), "--agent", "json:dumps"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "bad.evalset.json: eval_cases[0].conversation[0].invocation_id: required field is missing" in err
    assert "Traceback" not in err


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness")
def test_adk_evals_file_colon_case_ids_selects_cases(sqlite_url: str, tmp_path: Path, capsys) -> None:
    selector = f"{EXAMPLE_SUITE}:basic_weather,greeting"
    code = main(["run", selector, "--db", sqlite_url, "--output", str(tmp_path), "--no-progress"])
    assert code == EXIT_PASSED
    assert "2/2 passed" in capsys.readouterr().out


def test_an_unknown_case_id_after_the_colon_exits_2(capsys) -> None:
    assert main(["run", f"{EXAMPLE_SUITE}:greeting,nope"]) == EXIT_BAD_INPUT
    assert "no case with id 'nope'" in capsys.readouterr().err


def test_an_unknown_case_id_exits_2(capsys) -> None:
    assert main(["run", str(EXAMPLE_SUITE), "--case", "nope"]) == EXIT_BAD_INPUT
    assert "no case with id 'nope'" in capsys.readouterr().err


def test_a_missing_agent_exits_2(capsys) -> None:
    assert main(["run", str(EXAMPLE_SUITE), "--agent", "nowhere.py:agent"]) == EXIT_BAD_INPUT
    assert "nowhere.py not found" in capsys.readouterr().err


def test_validate_checks_without_running(capsys) -> None:
    assert main(["validate", str(EXAMPLE_SUITE)]) == EXIT_PASSED
    assert "valid agentflow suite, 5 cases" in capsys.readouterr().out


def test_version_is_printed(capsys) -> None:
    assert main(["--version"]) == EXIT_PASSED
    assert capsys.readouterr().out.startswith("proctor ")


def test_validate_checks_a_whole_folder(capsys) -> None:
    from tests.conftest import ADK_DATA

    assert main(["validate", str(ADK_DATA)]) == EXIT_PASSED
    out = capsys.readouterr().out
    assert out.count("dice.test.json: valid adk suite") == 2 and "lamp.test.json: valid adk suite" in out


def test_one_bad_file_in_a_folder_stops_everything(tmp_path: Path, capsys) -> None:
    good = tmp_path / "a" / "good.evalset.json"
    good.parent.mkdir()
    good.write_text(EXAMPLE_SUITE.read_text())
    (tmp_path / "b.evalset.json").write_text('{"eval_set_id": "b", "eval_cases": []}')
    database = tmp_path / "results.db"
    code = main(["run", str(tmp_path), "--agent", "json:dumps", "--db", f"sqlite:///{database}"])
    assert code == EXIT_BAD_INPUT and not database.exists()
    assert "b.evalset.json: eval_cases: the set has no cases" in capsys.readouterr().err


def test_schema_is_json_schema_of_the_evalset(capsys) -> None:
    import json

    assert main(["schema"]) == EXIT_PASSED
    schema = json.loads(capsys.readouterr().out)
    assert "eval_cases" in schema["properties"] and schema["$schema"].endswith("2020-12/schema")
    assert main(["schema", "config"]) == EXIT_PASSED
    assert "criteria" in json.loads(capsys.readouterr().out)["properties"]


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness")
def test_a_folder_runs_every_suite(tmp_path: Path, sqlite_url: str, capsys) -> None:
    from tests.conftest import ADK_DATA

    agent = tmp_path / "agent.py"
    agent.write_text("def agent(request):\n    return 'I have switched lamp_2 off.'\n")
    code = main(
        [
            "run",
            str(ADK_DATA),
            "--agent",
            f"{agent}:agent",
            "--db",
            sqlite_url,
            "--output",
            str(tmp_path / "reports"),
            "--no-progress",
        ]
    )
    assert code == EXIT_FAILED  # the agent calls no tools
    assert len(list((tmp_path / "reports").glob("*/report.md"))) == 3


def test_cases_can_be_selected_by_metadata(tmp_path: Path) -> None:
    from proctor.flows.evaluate import select_cases
    from proctor.loaders import load_suite

    suite = load_suite(EXAMPLE_SUITE)
    tagged = suite.model_copy(
        update={
            "cases": [
                case.model_copy(update={"metadata": {"team": "geo" if i % 2 else "core"}})
                for i, case in enumerate(suite.cases)
            ]
        }
    )
    assert [c.case_id for c in select_cases(tagged, [], [], {"team": "geo"})] == [
        "paris_conversation",
        "greeting",
    ]
    assert main(["run", str(EXAMPLE_SUITE), "--meta", "team"]) == EXIT_BAD_INPUT


def test_the_command_skips_the_exit_collection_and_main_in_process_does_not() -> None:
    """The console script freezes the heap before exiting (the interpreter's last collection
    over Prefect, SQLAlchemy and Pydantic cost 0.55-0.75 s of a 3 s command); a program calling
    `main` in its own process keeps its garbage collector untouched."""
    import gc

    probe = (
        "import atexit, gc, sys\n"
        "from proctor.cli.main import console_main\n"
        "sys.argv = ['proctor', '--version']\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
        "sys.exit(console_main())\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_PASSED and "frozen True" in done.stdout, done.stdout + done.stderr
    before = gc.get_freeze_count()
    assert main(["--version"]) == EXIT_PASSED
    assert gc.get_freeze_count() == before
