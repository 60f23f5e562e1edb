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


def split_case_selector(target: str) -> tuple[str, list[str]]:
    """`FILE:case_id,case_id` as `adk eval` reads it: the file, and the case ids to run.

    A path that exists is taken whole (so a file name with a colon still works); otherwise the
    first colon after a Windows drive prefix (`C:/`) splits it, anything after a second colon
    is ignored and empty ids are dropped, as in ADK's `parse_and_get_evals_to_run`.
    """
    if Path(target).exists():
        return target, []
    drive = len(target) >= 3 and target[0].isascii() and target[0].isalpha() and target[1:2] == ":"
    cut = target.find(":", 3 if drive and target[2] in "\\/" else 0)
    if cut == -1:
        return target, []
    ids = target[cut + 1 :].split(":")[0].split(",")
    return target[:cut], [case_id for case_id in ids if case_id.strip()]


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
