"""Which metrics score a HoloDeck case or turn: HoloDeck's precedence, Proctor's names.

HoloDeck takes the most specific non-empty list: a turn's `evaluations`, else the case's, else
the `evaluations.metrics` block. Besides HoloDeck's inline metric objects, Proctor lets a case
name block metrics; a name resolves exactly: first to the metric's display name (a geval's or
code grader's `name`, else the metric), then to a registry metric name used by one block metric
only. A name that fits two block metrics is an error, never a guess.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from proctor.loaders.checks import check_specs
from proctor.loaders.errors import Problem, found, problems_from_validation
from proctor.loaders.holodeck import cases as holodeck
from proctor.loaders.metric_specs import spec_from_evaluation_metric
from proctor.models.case import MetricSpec
from proctor.models.holodeck import LLMProvider

METRIC_ENTRY = "expected a metric mapping ({metric: name, ...} or {type: standard|geval|rag|code, ...})"


def resolve_name(name: str, block_specs: list[MetricSpec]) -> tuple[MetricSpec | None, str | None]:
    """The block metric a case names, or why there is none."""
    for candidates in (
        [spec for spec in block_specs if (spec.label or spec.name) == name],
        [spec for spec in block_specs if spec.name == name],
    ):
        if len(candidates) == 1:
            return candidates[0], None
        if len(candidates) > 1:
            shown = ", ".join(spec.label or spec.name for spec in candidates)
            return (
                None,
                f"metric name {name!r} is ambiguous: it fits {len(candidates)} block metrics ({shown})",
            )
    defined = ", ".join(sorted({spec.label or spec.name for spec in block_specs})) or "none"
    return None, f"metric {name!r} is not defined in the evaluations block (defined: {defined})"


def case_metrics(
    entries: Any,
    block_specs: list[MetricSpec],
    default_model: LLMProvider | None,
    judge_model: LLMProvider | None,
    file: str,
    location: str,
    warnings: list[str],
    base_dir: Path,
    *,
    empty_is_none: bool = False,
) -> tuple[list[MetricSpec] | None, list[Problem]]:
    """The specs an `evaluations` list gives; with none (absent or empty), the block's — or,
    for a turn (`empty_is_none`), None: the case's metrics apply. `judge_model` is
    `evaluations.model`, the judge of G-Eval and RAG metrics naming none of their own."""
    where = f"{location}.evaluations"
    if entries is None or entries == []:
        return (None if empty_is_none else list(block_specs)), []
    if not isinstance(entries, list):
        return None, [
            Problem(file, where, f"expected a list of metric names or metrics; found {found(entries)}")
        ]
    specs: list[MetricSpec] = []
    problems: list[Problem] = []
    for metric_index, entry in enumerate(entries):
        at = f"{where}[{metric_index}]"
        if isinstance(entry, str):
            spec, problem = resolve_name(entry, block_specs)
            if spec is None:
                problems.append(Problem(file, at, problem or ""))
            else:
                specs.append(spec)
            continue
        if not isinstance(entry, dict):
            problems.append(Problem(file, at, f"{METRIC_ENTRY}; found {found(entry)}"))
            continue
        try:
            metric = holodeck.metric_from_typed(entry, file, at, warnings, base_dir)
        except ValidationError as error:
            problems += problems_from_validation(file, error, at)
            continue
        except ValueError as error:
            problems.append(Problem(file, at, str(error)))
            continue
        if metric is not None:
            spec = holodeck.deepeval_judge(
                spec_from_evaluation_metric(metric, default_model), metric.model or judge_model
            )
            problems += check_specs([(file, at, spec)])
            specs.append(spec)
    return specs, problems
