"""Outcomes as table rows: what is written when a case's agent finishes and when it ends."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from proctor.models.case import Case
from proctor.models.outcome import CaseOutcome
from proctor.settings import setting
from proctor.storage.text import safe_repr

# How much of each processed file's markdown a case row keeps (what the agent saw, shown in
# report.json); the full size is stored beside it.
STORED_FILE_CHARS_VARIABLE = "PROCTOR_STORED_FILE_CHARS"
DEFAULT_STORED_FILE_CHARS = int(setting(STORED_FILE_CHARS_VARIABLE).default)


def stored_file_chars() -> int:
    """The bound from `PROCTOR_STORED_FILE_CHARS` (0 keeps no text), read per run so a test
    or a deployment can change it without a restart."""
    raw = os.environ.get(STORED_FILE_CHARS_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_STORED_FILE_CHARS
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"expected a whole number of characters, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"expected 0 or more characters, got {value}")
    return value


def _file_chars_for_storage() -> int:
    """The bound, or the default when the variable is malformed: `proctor run` refuses such a
    value before it starts (preparation.py), and a result is never lost over it."""
    try:
        return stored_file_chars()
    except ValueError:
        return DEFAULT_STORED_FILE_CHARS


def stored_markdown(text: str, limit: int) -> dict[str, Any]:
    """A processed file's markdown as stored: at most `limit` characters, its full size, and
    whether it was cut."""
    return {"markdown": text[:limit], "markdown_chars": len(text), "markdown_truncated": len(text) > limit}


@lru_cache(maxsize=65_536)
def case_row_id(run_id: uuid.UUID, case_id: str, attempt: int = 0) -> uuid.UUID:
    """Deterministic, so a case's checkpoint and final write name the same row (and a
    resumed run finds it); cached, since uuid5 costs a SHA-1 per call.

    Ids without `#` keep the form rows were always stored under (`x`, and `x#1` for its
    second repeat), so runs stored before still resume; an id holding `#` is hashed in a
    namespace of its own, so a case named `x#1` never shares the row of `x`'s repeat."""
    if "#" in case_id:
        return uuid.uuid5(uuid.uuid5(run_id, "case ids holding #"), f"{attempt}:{case_id}")
    return uuid.uuid5(run_id, case_id if attempt == 0 else f"{case_id}#{attempt}")


def vanna_case(case: Case) -> dict[str, Any]:
    """The Vanna test case's own fields, kept for `proctor report --format vanna`."""
    if case.source_format != "vanna":
        return {}
    metadata = {k: v for k, v in case.metadata.items() if k not in ("user", "expected_outcome")}
    return {
        "user": case.metadata.get("user") or {},
        "expected_outcome": case.metadata.get("expected_outcome"),  # {} (stated, empty) is not None
        "conversation_id": case.session.thread_id,
        "metadata": metadata,
        # the evaluators in the dataset's order, the order Vanna lists (and sums) their results in
        "evaluators": [spec.label or spec.name for spec in case.metrics if spec.enabled],
    }


def _dumped(model: Any, *, safe: list[str] | None, where: str, **options: Any) -> Any:
    """A model as JSON data. With `safe` (a list of notes), any value JSON has no form for
    (an agent's tool arguments may hold anything) is kept as its repr, with a note naming
    where (`tool_calls[0]`), where the plain dump raises."""
    if safe is None:
        return model.model_dump(mode="json", **options)

    def described(value: Any) -> str:
        kind = type(value).__name__
        safe.append(f"{where}: a value of type {kind} no database can store, kept as its repr")
        return safe_repr(value)

    return model.model_dump(mode="json", fallback=described, **options)


def case_row(
    run_id: uuid.UUID, case: Case, outcome: CaseOutcome, position: int, *, safe: list[str] | None = None
) -> dict[str, Any]:
    usage = outcome.usage
    final = outcome.state.is_final
    file_chars = _file_chars_for_storage() if outcome.processed_files else 0
    return {
        "id": case_row_id(run_id, case.case_id, outcome.attempt),
        "run_id": run_id,
        "case_id": case.case_id,
        "attempt": outcome.attempt,
        "position": position,
        "case_name": case.name,
        "state": outcome.state.value,
        "passed": outcome.passed if final else None,
        "input": case.first_input,
        "response": outcome.final_response,
        "ground_truth": case.ground_truth,
        "turns": [_dumped(turn, safe=safe, where=f"turns[{n}]") for n, turn in enumerate(outcome.turns)],
        "tool_calls": [
            _dumped(call, safe=safe, where=f"tool_calls[{n}]", exclude_none=True)
            for n, call in enumerate(outcome.tool_calls)
        ],
        "expected_tools": case.expected_tools,
        "tools_matched": outcome.tools_matched,
        "errors": list(outcome.errors),
        "notes": list(outcome.storage_notes) or None,
        "files": [
            {
                **processed.original.model_dump(exclude_none=True),
                "metadata": processed.metadata,
                "processing_time_ms": processed.processing_time_ms,
                "error": processed.error,
                **stored_markdown(processed.markdown_content, file_chars),
            }
            for processed in outcome.processed_files
        ],
        "tags": list(case.tags),
        "vanna_case": vanna_case(case),
        "files_ms": outcome.files_ms,
        "agent_ms": outcome.agent_ms,
        "evaluation_ms": outcome.evaluation_ms,
        "execution_ms": outcome.execution_ms,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "agent_retries": sum(int(turn.metadata.get("retries", 0)) for turn in outcome.turns),
        "started_at": outcome.started_at,
        "finished_at": outcome.finished_at or (datetime.now(UTC) if final else None),
    }


def final_columns(outcome: CaseOutcome, *, safe: list[str] | None = None) -> dict[str, Any]:
    """The columns a case's final write sets on its checkpointed row."""
    return {
        "state": outcome.state.value,
        "passed": outcome.passed,
        "errors": list(outcome.errors),
        "notes": list(outcome.storage_notes) or None,
        "tools_matched": outcome.tools_matched,
        "turns": [_dumped(turn, safe=safe, where=f"turns[{n}]") for n, turn in enumerate(outcome.turns)],
        "evaluation_ms": outcome.evaluation_ms,
        "execution_ms": outcome.execution_ms,
        "finished_at": outcome.finished_at or datetime.now(UTC),
    }


def bare_row(row: dict[str, Any]) -> dict[str, Any]:
    """A case row without what the agent and files produced: what is stored, with the reason,
    when the database refuses the whole row, so the case is still accounted for."""
    keep = {"turns": [], "tool_calls": [], "files": [], "response": None}
    return {key: keep.get(key, value) for key, value in row.items()}


def metric_rows(run_id: uuid.UUID, case: Case, outcome: CaseOutcome) -> list[dict[str, Any]]:
    row_id = case_row_id(run_id, case.case_id, outcome.attempt)
    return [
        {
            # Deterministic, like the case row's: a final write repeated after a lost commit
            # is refused by the primary key instead of storing the metric twice.
            "id": uuid.uuid5(row_id, f"{index}:{metric.metric_name}"),
            "run_id": run_id,
            "case_result_id": row_id,
            "case_id": case.case_id,
            "metric_name": metric.metric_name,
            "metric_version": metric.metric_version,
            "score": metric.score,
            "threshold": metric.threshold,
            "passed": metric.passed,
            "informational": bool(metric.informational),
            "scale": metric.scale,
            "error": metric.error,
            "retry_count": metric.retry_count,
            "evaluation_time_ms": metric.evaluation_time_ms,
            "model_used": metric.model_used,
            "judge_calls": metric.judge_calls,
            "cached_calls": metric.cached_calls,
            "prompt_tokens": metric.prompt_tokens,
            "completion_tokens": metric.completion_tokens,
            "saved_prompt_tokens": metric.saved_prompt_tokens,
            "saved_completion_tokens": metric.saved_completion_tokens,
            "args": metric.args,
            "details": metric.details,
            "reason": metric.reason,
        }
        for index, metric in enumerate(outcome.metrics)
    ]
