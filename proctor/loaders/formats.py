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


VANNA_DEFAULT_EVALUATORS = ("TrajectoryEvaluator", "OutputEvaluator", "EfficiencyEvaluator")


def case_from_vanna(test_case: TestCase, evaluators: list[MetricSpec]) -> Case:
    """A Vanna test case, scored by Vanna's evaluators, which read its `ExpectedOutcome`."""
    return Case(
        case_id=test_case.id,
        turns=[Turn(turn_id="turn_1", input=test_case.message)],
        metrics=evaluators,
        metadata={
            **test_case.metadata,
            "user": test_case.user.model_dump(),
            "expected_outcome": test_case.expected_outcome.model_dump(exclude_none=True)
            if test_case.expected_outcome
            else {},
        },
        session=SessionInput(thread_id=test_case.conversation_id),
        source_format="vanna",
    )
