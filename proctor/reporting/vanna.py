"""A run as Vanna's evaluation framework reports it: one `TestCaseResult` per case (the test
case as written, the agent's result with its UI components, every evaluator's
`EvaluationResult`), streamed as JSON a case at a time (`proctor report RUN --format vanna`).

`overall_passed` is the run's own verdict on the case, never recomputed from the evaluations
shown: a case the run failed for a reason no evaluator records (nothing scored it, the agent
failed, a metric could not be built) is reported failed, with the run's `errors` beside it.
`overall_score` is Vanna's `TestCaseResult.overall_score()`: the mean of the evaluator scores."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel
from sqlmodel import Session

from proctor.models.tables import EvalRun
from proctor.reporting.convert import iso, vanna_result
from proctor.storage.runs import iter_results


def _plain(value: Any) -> Any:
    """Vanna's mix of dataclasses and Pydantic models as JSON-ready data."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def vanna_report(*, session: Session, run: EvalRun) -> Iterator[str]:
    head = {
        "run_id": str(run.id),
        "dataset": run.suite_name,
        "agent": run.variant or run.agent,
        "created_at": iso(run.started_at),
    }
    yield json.dumps(head, ensure_ascii=False, indent=2)[:-2] + ',\n  "results": [\n'

    for number, (row, metrics) in enumerate(iter_results(session=session, run_id=run.id)):
        result = vanna_result(row, metrics, run)
        entry = {
            **_plain(result),
            "overall_passed": bool(row.passed),  # the run's verdict, as stored
            "overall_score": result.overall_score(),
            **({"errors": list(row.errors)} if row.errors else {}),
        }
        yield ("    " if number == 0 else ",\n    ") + json.dumps(entry, ensure_ascii=False, default=str)
    yield "\n  ]\n}\n"
