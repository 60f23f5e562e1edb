"""Installed, Proctor claims the one import name `proctor`: a user's agent runs in Proctor's
process, so its own `models`, `tasks` or `flows` packages must still be the ones it imports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAPPED = {"models": "proctor.models", "tasks": "proctor.tasks", "flows": "proctor.flows"}
MAPPED["deployments"] = "proctor.deployments"


def _setuptools_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _clean_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PREFECT_LOGGING_LEVEL"] = "WARNING"
    # What these tests assert is imports, not start-up speed: a busy machine may be slow to start.
    env["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] = "600"
    return env


def test_every_package_folder_is_installed_under_proctor() -> None:
    """A new sub-package that the explicit list forgets would be missing from a wheel."""
    config = _setuptools_config()
    on_disk = {
        "proctor." + ".".join(init.parent.relative_to(ROOT / "proctor").parts)
        for init in (ROOT / "proctor").rglob("__init__.py")
        if init.parent != ROOT / "proctor"
    } | {"proctor"}
    for folder, name in MAPPED.items():
        assert config["package-dir"][name] == folder
        on_disk |= {
            name + "".join("." + part for part in init.parent.relative_to(ROOT / folder).parts)
            for init in (ROOT / folder).rglob("__init__.py")
        }
    assert set(config["packages"]) == on_disk
    assert all(name == "proctor" or name.startswith("proctor.") for name in config["packages"])


def test_top_level_folders_do_not_import_outside_the_checkout(tmp_path: Path) -> None:
    for name in MAPPED:
        result = subprocess.run(
            [sys.executable, "-c", f"import {name}"], cwd=tmp_path, env=_clean_env(), capture_output=True
        )
        assert result.returncode != 0, f"`import {name}` works outside the checkout"
        assert b"ModuleNotFoundError" in result.stderr
    result = subprocess.run(
        [sys.executable, "-c", "import proctor.models, proctor.flows.evaluate, proctor.cli; print('ok')"],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
    )
    assert result.stdout.strip() == "ok", result.stderr


def test_wheel_holds_only_proctor_and_its_templates(tmp_path: Path) -> None:
    had_build = (ROOT / "build").exists()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(tmp_path),
            ".",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    if not had_build:  # setuptools leaves its build folder in the checkout
        shutil.rmtree(ROOT / "build", ignore_errors=True)
    [wheel] = tmp_path.glob("proctor-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"proctor"}
    for expected in (
        "proctor/models/case.py",
        "proctor/tasks/stages.py",
        "proctor/flows/evaluate.py",
        "proctor/deployments/serve.py",
        "proctor/cli/main.py",
        "proctor/reporting/templates/report.html.j2",
        "proctor/judges/templates/llm_judge.j2",
        "proctor/metrics/lexical/data/wordnet-synonyms.json.gz",
    ):
        assert expected in names


def test_user_packages_named_like_proctors_folders_import_in_an_agent(tmp_path: Path) -> None:
    """The agent of the issue: `from models import GREETING` must find the user's `models`."""
    project = tmp_path / "myagent"
    for package, value in (("models", "GREETING = 'hello from my models'"), ("tasks", "STEP = 'tasks'")):
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text(value + "\n")
    (project / "flows").mkdir()
    (project / "flows" / "__init__.py").write_text("")
    (project / "flows" / "steps.py").write_text("NAME = 'flows'\n")
    (project / "agent.py").write_text(
        "from models import GREETING\nfrom tasks import STEP\nfrom flows.steps import NAME\n\n"
        "def agent(request):\n    return f'{GREETING} / {STEP} / {NAME}'\n"
    )
    suite = {
        "eval_set_id": "own_packages",
        "eval_cases": [
            {
                "eval_id": "greets",
                "conversation": [
                    {
                        "user_content": {"parts": [{"text": "hi"}]},
                        "final_response": {"parts": [{"text": "hello from my models / tasks / flows"}]},
                    }
                ],
            }
        ],
        "metadata": {"agent": "agent.py:agent", "eval_config": {"criteria": {"response_match": 0.99}}},
    }
    (project / "suite.evalset.json").write_text(json.dumps(suite))
    proctor = Path(sys.executable).with_name("proctor")
    result = subprocess.run(
        [
            str(proctor),
            "run",
            str(project / "suite.evalset.json"),
            "--no-progress",
            "--db",
            f"sqlite:///{tmp_path / 'results.db'}",
            "--output",
            str(tmp_path / "reports"),
        ],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1/1 passed" in result.stdout
