"""HoloDeck's deterministic evaluators and code graders: `equality`, `numeric`, `code`."""

from __future__ import annotations

import math
import statistics
import string
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field, field_validator

from proctor.metrics.base import Metric, MetricContext, Score
from proctor.models.case import Case


class Equality(Metric):
    """1 if the final answer equals the expected answer after the chosen normalisations, made as
    HoloDeck's `_normalize_text` makes them: case folded (`casefold`: "STRASSE" equals "straße"),
    then ASCII punctuation removed, then whitespace collapsed."""

    name = "equality"
    summary = "The answer equals the expected answer (optionally ignoring case, whitespace, punctuation)."
    how_it_scores = (
        "HoloDeck: 1 if the answer equals the expected answer after those normalisations (case folded"
        " with `casefold`, ASCII punctuation, whitespace collapsed)"
    )

    case_insensitive: bool = False
    strip_whitespace: bool = False
    strip_punctuation: bool = False

    def applies_to_case(self, case: Case) -> bool:
        return case.ground_truth is not None

    def _normal(self, text: str) -> str:
        if self.case_insensitive:
            text = text.casefold()
        if self.strip_punctuation:
            text = text.translate(str.maketrans("", "", string.punctuation))
        if self.strip_whitespace:
            text = " ".join(text.split())
        return text

    def evaluate(self, ctx: MetricContext) -> Score:
        equal = self._normal(ctx.final_response) == self._normal(ctx.expected_response or "")
        return Score(value=float(equal), reason="equal" if equal else "differs from the expected answer")


# Narrow NBSP, NBSP, underscore and comma: HoloDeck's thousands separators.
_THOUSANDS = ",_\u00a0\u202f"


def parse_number(value: str, *, percent: bool, thousands: bool) -> tuple[float | None, str | None]:
    """HoloDeck's `_try_parse_number`: the whole (stripped) text is one number, else why not.

    A trailing `%` needs `accept_percent`; a separator needs `accept_thousands_separators`.
    """
    raw = value.strip()
    if not raw:
        return None, "value is empty"
    is_percent = raw.endswith("%")
    if is_percent and not percent:
        return None, f"percent sign in {raw!r} but accept_percent is off"
    if is_percent:
        raw = raw[:-1].strip()
    if thousands:
        for separator in _THOUSANDS:
            raw = raw.replace(separator, "")
    elif any(separator in raw for separator in _THOUSANDS):
        return None, f"thousands separator in {raw!r} but accept_thousands_separators is off"
    try:
        number = float(raw)
    except ValueError:
        return None, f"could not parse {value!r} as a number"
    return (number / 100 if is_percent else number), None


class Numeric(Metric):
    """1 if the answer, as a whole, is a number within tolerance of the expected one (HoloDeck
    `numeric`): "1557" passes for 1557, "12, 1557 or 99999" and "The answer is 1557" do not.
    Use `response_path` to grade one field of a JSON answer."""

    name = "numeric"
    summary = "The answer is a number within absolute or relative tolerance of the expected number."
    how_it_scores = (
        'HoloDeck: 1 if the whole answer is a number within tolerance of the expected one ("12, 1557 '
        'or 99999" is not 1557; use `response_path` for a field of a JSON answer); 0 when either is '
        "not a number"
    )

    absolute_tolerance: float = Field(default=1e-6, ge=0)
    relative_tolerance: float = Field(default=0.0, ge=0)
    accept_percent: bool = False
    accept_thousands_separators: bool = False

    def applies_to_case(self, case: Case) -> bool:
        return case.ground_truth is not None

    def evaluate(self, ctx: MetricContext) -> Score:
        options = {"percent": self.accept_percent, "thousands": self.accept_thousands_separators}
        actual, problem = parse_number(ctx.final_response, **options)
        if actual is None:
            return Score(value=0.0, reason=f"the answer is not a number: {problem}")
        # HoloDeck's NumericEvaluator scores 0 (a failed metric, not an error) when the ground
        # truth is no number either ("yes"), so a case whose truth is a word fails, as there.
        target, problem = parse_number(ctx.expected_response or "", **options)
        if target is None:
            return Score(value=0.0, reason=f"the expected answer is not a number: {problem}")
        difference = abs(actual - target)
        close = difference <= self.absolute_tolerance or (
            self.relative_tolerance > 0 and difference <= self.relative_tolerance * abs(target)
        )
        reason = f"{actual:g} {'≈' if close else '≠'} {target:g}"
        return Score(value=float(close), reason=reason, details={"expected": target, "actual": actual})


@dataclass(frozen=True)
class GraderContext:
    """What a code grader sees for one turn (HoloDeck's `GraderContext`)."""

    turn_input: str
    agent_response: str
    ground_truth: str | None
    tool_invocations: tuple[Any, ...]
    turn_index: int
    test_case_name: str | None
    turn_config: dict[str, Any] = field(default_factory=dict)
    retrieval_context: tuple[str, ...] | None = None


class CodeGrader(Metric):
    """A user's Python callable scores each turn (HoloDeck `type: code`); turn scores are averaged.

    The grader returns a bool, a number in 0..1, or an object/dict with `score` and optionally
    `passed`, `reason`, `details`.
    """

    name = "code"
    slow_scoring = True  # user code / an embedding model to load
    summary = "Your Python grader ('module:attr' or 'file.py:attr') scores every turn."
    how_it_scores = (
        "HoloDeck code grader (`grader`: `module:attr` or `file.py:attr`): called per turn with a "
        "`GraderContext` (turn input, response, ground truth, tool calls, `turn_config`); returns a "
        "bool, a 0..1 number or `{score, passed, reason}`; turns averaged"
    )

    grader: str

    @field_validator("grader")
    @classmethod
    def _importable(cls, grader: str) -> str:
        from proctor.user_code import AgentLoadError, load_python_target

        try:
            load_python_target(grader)
        except AgentLoadError as error:
            raise ValueError(str(error).replace("agent target", "grader")) from None
        return grader

    def evaluate(self, ctx: MetricContext) -> Score:
        from proctor.user_code import load_python_target

        grade = load_python_target(self.grader)
        verdicts, reasons = [], []
        for index, (expected, actual) in enumerate(ctx.paired_turns()):
            context = GraderContext(
                turn_input=expected.input,
                agent_response=(actual.response if actual else None) or "",
                ground_truth=expected.expected_response,
                tool_invocations=tuple(actual.tool_calls if actual else ()),
                turn_index=ctx.turn_offset + index,
                test_case_name=ctx.case.name,
                turn_config=dict(expected.metadata.get("turn_config") or {}),
                retrieval_context=tuple(expected.retrieval_context or ()) or None,
            )
            try:
                graded = grade(context)
            except SystemExit as error:  # a grader's sys.exit() fails its metric, never the run
                raise RuntimeError(f"the grader called sys.exit({error.code!r})") from None
            score, passed, reason = _grade(graded)
            verdicts.append((score, passed))
            if reason:
                reasons.append(f"turn {index + 1}: {reason}")
        value = statistics.fmean(score for score, _ in verdicts)
        labels = [passed for _, passed in verdicts if passed is not None]
        passed = all(labels) if len(labels) == len(verdicts) else None
        return Score(value=value, passed=passed, reason="; ".join(reasons), details={"turns": verdicts})


def _grade(result: Any) -> tuple[float, bool | None, str]:
    if isinstance(result, bool):
        return float(result), result, ""
    if isinstance(result, int | float):
        value = float(result)
        passed, reason = None, ""
    else:
        data = result if isinstance(result, dict) else vars(result)
        value = float(data["score"])
        passed, reason = data.get("passed"), str(data.get("reason") or "")
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"the grader's score {value} is not in 0..1")
    return value, passed, reason


DETERMINISTIC_METRICS: tuple[type[Metric], ...] = (Equality, Numeric, CodeGrader)
