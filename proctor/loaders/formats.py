"""Converters from each seed format into the pipeline's one `Case` shape."""

from __future__ import annotations

from models.agentflow import EvalSet, SessionInput
from models.case import Case, MetricSpec, Turn
from models.holodeck import EvaluationConfig, TestCaseModel
from models.vanna import TestCase
from proctor.loaders.metric_specs import spec_from_evaluation_metric


def cases_from_evalset(evalset: EvalSet, specs: list[MetricSpec]) -> list[Case]:
    """agentflow cases; every case is scored with the set's criteria.

    An empty `expected_tool_trajectory` is agentflow's default and so means "no
    expectation", not "no tool may be called" (use `tools_not_called` for that).
    """
    cases = []
    for eval_case in evalset.eval_cases:
        turns = [
            Turn(
                turn_id=invocation.invocation_id,
                input=invocation.user_content.get_text(),
                expected_tool_calls=list(invocation.expected_tool_trajectory) or None,
                expected_response=(
                    invocation.expected_final_response.get_text()
                    if invocation.expected_final_response
                    else None
                ),
                expected_intermediate_responses=[
                    message.get_text() for message in invocation.expected_intermediate_responses
                ],
                metadata=invocation.metadata,
            )
            for invocation in eval_case.conversation
        ]
        cases.append(
            Case(
                case_id=eval_case.eval_id,
                name=eval_case.name or None,
                turns=turns,
                metrics=specs,
                tags=eval_case.tags,
                metadata=eval_case.metadata,
                session=eval_case.session_input or SessionInput(),
                source_format="agentflow",
            )
        )
    return cases


def case_from_test_case_model(
    test_case: TestCaseModel, index: int, evaluation: EvaluationConfig | None
) -> Case:
    """A HoloDeck test case, scored with the metrics it names (all of them if it names none)."""
    metrics = evaluation.metrics if evaluation else []
    if test_case.evaluations is not None:
        wanted = set(test_case.evaluations)
        metrics = [metric for metric in metrics if metric.metric in wanted]
    default_model = evaluation.model if evaluation else None
    return Case(
        case_id=test_case.name or f"test_{index + 1}",
        name=test_case.name,
        turns=[Turn(turn_id="turn_1", input=test_case.input, expected_response=test_case.ground_truth)],
        files=test_case.files or [],
        metrics=[spec_from_evaluation_metric(metric, default_model) for metric in metrics],
        expected_tools=test_case.expected_tools,
        source_format="holodeck",
    )


def specs_from_expected_outcome(test_case: TestCase) -> tuple[list[MetricSpec], list[str]]:
    """Vanna's `ExpectedOutcome` as metric specs, and warnings for what cannot be checked."""
    outcome = test_case.expected_outcome
    if outcome is None:
        return [], []
    specs = []
    if outcome.tools_called:
        specs.append(MetricSpec(name="tools_called", args={"tools": outcome.tools_called}))
    if outcome.tools_not_called:
        specs.append(MetricSpec(name="tools_not_called", args={"tools": outcome.tools_not_called}))
    if outcome.final_answer_contains:
        specs.append(MetricSpec(name="contains", args={"values": outcome.final_answer_contains}))
    if outcome.final_answer_not_contains:
        specs.append(MetricSpec(name="not_contains", args={"values": outcome.final_answer_not_contains}))
    if outcome.max_execution_time_ms is not None:
        specs.append(MetricSpec(name="max_execution_time", args={"max_ms": outcome.max_execution_time_ms}))
    warnings = [
        f"case {test_case.id!r}: {field} is not checked (Proctor's agents yield text, not UI components)"
        for field in ("min_components", "max_components")
        if getattr(outcome, field) is not None
    ]
    return specs, warnings


def case_from_vanna(test_case: TestCase) -> tuple[Case, list[str]]:
    specs, warnings = specs_from_expected_outcome(test_case)
    case = Case(
        case_id=test_case.id,
        turns=[Turn(turn_id="turn_1", input=test_case.message)],
        metrics=specs,
        metadata={**test_case.metadata, "user": test_case.user.model_dump()},
        session=SessionInput(thread_id=test_case.conversation_id),
        source_format="vanna",
    )
    return case, warnings
