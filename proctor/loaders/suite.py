"""One entry for every format: recognise a suite file by content and name, then load it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from proctor.loaders.adk import parse as adk
from proctor.loaders.adk.loader import load_adk
from proctor.loaders.agentflow import load_agentflow
from proctor.loaders.checks import text_problems, unread_intermediate_warnings, unscored_warnings
from proctor.loaders.documents import read_document
from proctor.loaders.errors import Problem, SuiteError
from proctor.loaders.holodeck.loader import HOLODECK_NAMES, load_holodeck
from proctor.loaders.vanna import VANNA_NAME, load_vanna
from proctor.models.case import Suite


def detect_format(path: Path, document: Any) -> str:
    if adk.is_adk_evalset(document):
        return "adk"
    if adk.is_adk_legacy(document):
        return "adk-legacy"
    if path.name.endswith(".evalset.json") or (isinstance(document, dict) and "eval_set_id" in document):
        return "agentflow"
    if path.name in HOLODECK_NAMES:
        return "holodeck"
    if VANNA_NAME.search(path.name):
        return "vanna"
    if isinstance(document, dict) and "dataset" in document:
        return "vanna"
    if isinstance(document, dict) and "test_cases_file" in document:
        return "holodeck"
    cases = document.get("test_cases") if isinstance(document, dict) else document
    if isinstance(cases, list) and cases and isinstance(cases[0], dict):
        if "message" in cases[0]:
            return "vanna"
        if "input" in cases[0] or "turns" in cases[0]:
            return "holodeck"
    raise SuiteError(
        [
            Problem(
                str(path),
                "",
                "unrecognised suite format: expected an agentflow evalset (eval_set_id, eval_cases), "
                "a Google ADK eval set (an EvalSet, or the legacy .test.json list of entries with "
                "query), a HoloDeck agent.yaml (test_cases with input) or a Vanna dataset (test "
                "cases with id and message)",
            )
        ]
    )


def load_suite(path: str | Path, *, config_path: str | Path | None = None) -> Suite:
    """Load and validate one suite file, whatever its format; then the checks every format
    shares (text a run could not carry; cases nothing passes or fails, warned about)."""
    suite = _load_format(Path(path), config_path)
    problems = text_problems(str(path), suite.cases)
    if problems:
        raise SuiteError(problems)
    suite.warnings += unscored_warnings(str(path), suite.cases)
    suite.warnings += unread_intermediate_warnings(str(path), suite.cases)
    return suite


def _load_format(path: Path, config_path: str | Path | None) -> Suite:
    document = read_document(path)
    suite_format = detect_format(path, document)
    if suite_format == "agentflow":
        return load_agentflow(path, document, Path(config_path) if config_path else None)
    if suite_format in {"adk", "adk-legacy"}:
        return load_adk(
            path, document, Path(config_path) if config_path else None, suite_format == "adk-legacy"
        )
    if config_path is not None:
        raise SuiteError([Problem(str(config_path), "", "--config applies to agentflow evalsets only")])
    if suite_format == "holodeck":
        return load_holodeck(path, document)
    return load_vanna(path, document)


def slug(text: str) -> str:
    """A lowercase identifier for file names and artifact keys."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "suite"
