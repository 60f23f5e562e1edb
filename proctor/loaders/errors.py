"""Errors a suite file can have, each naming the file, where in it, and what was expected."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError


@dataclass(frozen=True)
class Problem:
    file: str
    location: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.location}" if self.location else self.file
        return f"{where}: {self.message}"


class SuiteError(Exception):
    """One or more problems found in suite or config files; nothing has run."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(problem) for problem in problems))


def json_path(location: tuple[int | str, ...], prefix: str = "") -> str:
    """`('eval_cases', 0, 'eval_id')` -> `eval_cases[0].eval_id`."""
    text = prefix
    for part in location:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def found(value: object) -> str:
    """A value as a problem quotes it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def problems_from_validation(
    file: str, error: ValidationError, prefix: str = "", echo: bool = True
) -> list[Problem]:
    """One problem per Pydantic error, with the JSON path and the value that was found
    (unless `echo` is False: a file named by reference may not be the file meant, and its
    contents must not be printed)."""
    problems = []
    issues = error.errors()
    for issue in issues:
        message = issue["msg"]
        if not echo and "input" in issue and issue["type"] not in {"missing"}:
            message = f"{message}; found a {type(issue['input']).__name__}"
        elif issue["type"] not in {"missing", "value_error", "assertion_error"} and "input" in issue:
            message = f"{message}; found {found(issue['input'])}"
        elif issue["type"] == "missing":
            message = "required field is missing"
        if issue["type"] == "extra_forbidden":
            message += _meant(issue, issues)
        problems.append(Problem(file, json_path(tuple(issue["loc"]), prefix), message))
    return problems


def _meant(extra: Any, issues: list[Any]) -> str:
    """For a field the model does not know: the required field missing beside it whose name
    is close ('conversaton' beside a missing 'conversation'), else what to do."""
    parent, name = tuple(extra["loc"][:-1]), str(extra["loc"][-1])
    missing = [
        str(issue["loc"][-1])
        for issue in issues
        if issue["type"] == "missing" and tuple(issue["loc"][:-1]) == parent
    ]
    close = difflib.get_close_matches(name, missing, n=1, cutoff=0.75)
    if close:
        return f"; did you mean {close[0]!r} (required, missing)?"
    return "; remove it, or correct its spelling"
