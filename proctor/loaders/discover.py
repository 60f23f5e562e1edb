"""Finding suite files in a folder, recursively, and loading them all before anything runs."""

from __future__ import annotations

from pathlib import Path

from proctor.loaders.errors import Problem, SuiteError
from proctor.loaders.suite import load_suite
from proctor.models.case import Suite

SUITE_PATTERNS = (
    "*.evalset.json",
    "*.test.json",
    "agent.yaml",
    "agent.yml",
    "*.dataset.json",
    "*.dataset.yaml",
    "*.dataset.yml",
)


def discover(path: str | Path) -> list[Path]:
    """The suite files at `path`: the file itself, or every suite file below a folder, sorted."""
    path = Path(path)
    if not path.is_dir():
        return [path]
    found = {file for pattern in SUITE_PATTERNS for file in path.rglob(pattern) if file.is_file()}
    return sorted(found)


def load_suites(path: str | Path, *, config_path: str | Path | None = None) -> list[Suite]:
    """Every suite at `path`, all validated: one problem list for all files, or the suites."""
    files = discover(path)
    if not files:
        raise SuiteError(
            [Problem(str(path), "", f"no suite files found (looked for {', '.join(SUITE_PATTERNS)})")]
        )
    suites, problems = [], []
    for file in files:
        try:
            suites.append(load_suite(file, config_path=config_path))
        except SuiteError as error:
            problems += error.problems
    if problems:
        raise SuiteError(problems)
    return suites
