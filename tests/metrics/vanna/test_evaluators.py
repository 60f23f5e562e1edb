"""Vanna's evaluators as Vanna 2.0.2's code scores them (the figures below follow its arithmetic;
`test_vanna_parity.py` checks them against Vanna's own classes when the `vanna` extra is in)."""

from __future__ import annotations

import dataclasses

import pytest

from proctor.metrics import REGISTRY
from proctor.models.case import MetricSpec
from proctor.models.outcome import TokenUsage
from tests.factories import agent_turn, call, make_case, make_ctx


def _metric(name: str, **args):
    return REGISTRY.build(MetricSpec(name=name, args=args))


def _vanna_case(outcome: dict | None = None, **fields):
    return make_case(metadata={"expected_outcome": outcome}, source_format="vanna", **fields)


def test_one_of_two_expected_tools_called_scores_075_and_passes() -> None:
    """Vanna takes 0.5/len(tools_called) off per tool missing: 0.75, over its 0.7 pass mark."""
    case = _vanna_case({"tools_called": ["run_sql", "visualize_data"]})
    result = _metric("TrajectoryEvaluator").evaluate(make_ctx(case, agent_turn("x", call("run_sql"))))
    assert (result.value, result.passed) == (0.75, True)
    assert result.reason == "Trajectory evaluation: Expected tool 'visualize_data' was not called"
    assert result.details["tools_called"] == ["run_sql"] and result.details["num_tools_called"] == 1


def test_a_forbidden_tool_called_costs_half_over_the_forbidden_list() -> None:
    case = _vanna_case({"tools_called": ["run_sql"], "tools_not_called": ["drop_table", "truncate"]})
    result = _metric("TrajectoryEvaluator").evaluate(
        make_ctx(case, agent_turn("x", call("run_sql"), call("drop_table")))
    )
    assert (result.value, result.passed) == (0.75, True)
    assert result.reason == "Trajectory evaluation: Unexpected tool 'drop_table' was called"
    worse = _metric("TrajectoryEvaluator").evaluate(make_ctx(case, agent_turn("x", call("drop_table"))))
    assert (worse.value, worse.passed) == (0.25, False)
    assert worse.reason == (
        "Trajectory evaluation: Expected tool 'run_sql' was not called; Unexpected tool 'drop_table' was called"
    )


def test_every_check_met_scores_one_with_vannas_reason() -> None:
    case = _vanna_case({"tools_called": ["run_sql"], "final_answer_contains": ["Revenue"]})
    ctx = make_ctx(case, agent_turn("revenue was 5", call("run_sql")))
    trajectory, output = (
        _metric("TrajectoryEvaluator").evaluate(ctx),
        _metric("OutputEvaluator").evaluate(ctx),
    )
    assert (trajectory.value, trajectory.passed) == (1.0, True)
    assert trajectory.reason == "Trajectory evaluation: All expected tools called, no unexpected tools"
    assert output.reason == "Output evaluation: All expected content present, no forbidden content"


def test_output_keywords_are_matched_lowercased_and_scored_per_list() -> None:
    case = _vanna_case(
        {"final_answer_contains": ["revenue", "SELECT", "region"], "final_answer_not_contains": ["error"]}
    )
    good = _metric("OutputEvaluator").evaluate(make_ctx(case, agent_turn("Revenue: select sum(x) by REGION")))
    assert (good.value, good.passed) == (1.0, True)
    bad = _metric("OutputEvaluator").evaluate(make_ctx(case, agent_turn("Revenue query hit an error")))
    # two of three expected missing (2 x 0.5/3) and the forbidden one present (0.5/1)
    assert (bad.value, bad.passed) == (pytest.approx(1 / 6), False)
    assert "Forbidden content 'error' found in output" in bad.reason


def test_output_reads_the_text_components_the_agent_showed() -> None:
    """Vanna's `get_final_answer`: the text components, one per line, not the other components."""
    turn = agent_turn("ignored when components are reported")
    turn.metadata["components"] = [
        {"type": "rich_text", "content": "Sales by month"},
        {"type": "chart", "content": "secret"},
        {"type": "text", "content": "Done"},
    ]
    case = _vanna_case(
        {"final_answer_contains": ["sales by month\ndone"], "final_answer_not_contains": ["secret"]}
    )
    result = _metric("OutputEvaluator").evaluate(make_ctx(case, turn))
    assert (result.value, result.passed) == (1.0, True)


def test_efficiency_takes_034_off_over_the_cases_time_limit_and_ignores_component_bounds() -> None:
    case = _vanna_case({"max_execution_time_ms": 100, "min_components": 5, "max_components": 9})
    fast = _metric("EfficiencyEvaluator").evaluate(make_ctx(case, agent_turn("x"), agent_ms=50))
    slow = _metric("EfficiencyEvaluator").evaluate(make_ctx(case, agent_turn("x"), agent_ms=150))
    assert (fast.value, fast.passed, fast.reason) == (
        1.0,
        True,
        "Efficiency evaluation: Within resource limits",
    )
    assert (slow.value, slow.passed) == (pytest.approx(0.66), False)
    assert slow.reason == "Efficiency evaluation: Execution time 150ms exceeded test case limit 100ms"


def test_efficiency_takes_033_off_per_limit_of_its_own() -> None:
    turn = agent_turn("x")
    turn.usage = TokenUsage(prompt_tokens=400, completion_tokens=200, total_tokens=600)
    metric = _metric("EfficiencyEvaluator", max_execution_time_ms=10, max_tokens=500)
    result = metric.evaluate(make_ctx(_vanna_case({}), turn, agent_ms=20))
    assert (result.value, result.passed) == (pytest.approx(0.34), False)
    assert result.reason == (
        "Efficiency evaluation: Execution time 20ms exceeded limit 10ms; Token usage 600 exceeded limit 500"
    )


def test_a_vanna_case_without_outcome_passes_every_evaluator_by_default_and_says_why() -> None:
    ctx = make_ctx(_vanna_case(None), agent_turn("anything"))
    for name in ("TrajectoryEvaluator", "OutputEvaluator"):
        result = _metric(name).evaluate(ctx)
        assert (result.value, result.passed) == (1.0, True)
        assert result.reason == "No expected outcome specified, passing by default"
    efficiency = _metric("EfficiencyEvaluator").evaluate(ctx)
    assert (efficiency.value, efficiency.passed) == (1.0, True)


def test_an_empty_outcome_is_not_a_missing_one() -> None:
    result = _metric("TrajectoryEvaluator").evaluate(make_ctx(_vanna_case({}), agent_turn("x")))
    assert result.reason == "Trajectory evaluation: All expected tools called, no unexpected tools"


def test_outside_vanna_datasets_the_evaluators_need_an_outcome() -> None:
    """A case of another format without an outcome is not passed by default: nothing scores it."""
    ctx = make_ctx(make_case(), agent_turn("x"))
    for name in ("TrajectoryEvaluator", "OutputEvaluator", "EfficiencyEvaluator"):
        assert not _metric(name).applies_to(ctx)
    assert _metric("EfficiencyEvaluator", max_tokens=10).applies_to(ctx)


def test_an_agent_that_failed_scores_zero_except_on_efficiency() -> None:
    case = _vanna_case({"tools_called": ["run_sql"], "max_execution_time_ms": 1000})
    ctx = dataclasses.replace(make_ctx(case, agent_turn(None), agent_ms=10), agent_error="boom")
    for name in ("TrajectoryEvaluator", "OutputEvaluator"):
        result = _metric(name).evaluate(ctx)
        assert (result.value, result.passed, result.reason) == (0.0, False, "Agent execution failed: boom")
    assert _metric("EfficiencyEvaluator").evaluate(ctx).value == 1.0  # Vanna's ignores the error


def test_component_bounds_are_proctors_own_check_without_a_verdict() -> None:
    turn = agent_turn("Here is the chart.")
    turn.metadata["components"] = [
        {"type": "rich_text", "content": "Here"},
        {"type": "chart"},
        {"type": "table"},
    ]
    bounds = _metric("proctor_component_bounds")
    assert bounds.informational
    inside = bounds.evaluate(make_ctx(_vanna_case({"min_components": 2, "max_components": 3}), turn))
    outside = bounds.evaluate(make_ctx(_vanna_case({"max_components": 2}), turn))
    assert (inside.value, inside.details["within_bounds"]) == (3, True)
    assert (outside.value, outside.details["within_bounds"]) == (3, False)
    assert "outside the expected ..2" in outside.reason and "Vanna 2.0.2 does not check" in outside.reason
    answered_only = bounds.evaluate(make_ctx(_vanna_case({"min_components": 1}), agent_turn("hi")))
    assert answered_only.value == 1  # an answer without reported components is one text component
    assert not bounds.applies_to(make_ctx(_vanna_case({"tools_called": ["x"]}), turn))
