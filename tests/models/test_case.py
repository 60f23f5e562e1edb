"""The pipeline's own case shape: turns, metric specs, cases and suites."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from proctor.models.agentflow import SessionInput, ToolCall
from proctor.models.case import Case, MetricSpec, Suite, Turn
from proctor.models.holodeck import FileInput
from tests.factories import make_case


def error_locations(error: pytest.ExceptionInfo[ValidationError]) -> list[str]:
    return [".".join(str(part) for part in issue["loc"]) for issue in error.value.errors()]


def turn(turn_id: str = "turn_1", text: str = "hi", **fields) -> Turn:
    return Turn(turn_id=turn_id, input=text, **fields)


# -- Turn ---------------------------------------------------------------------------------


def test_turn_without_expectations() -> None:
    plain = turn()
    assert (plain.expected_tool_calls, plain.expected_response) == (None, None)
    assert (plain.expected_intermediate_responses, plain.metadata) == ([], {})


def test_turn_distinguishes_no_expectation_from_expecting_no_tools() -> None:
    assert turn().expected_tool_calls is None
    assert turn(expected_tool_calls=[]).expected_tool_calls == []


def test_turn_keeps_expected_calls() -> None:
    calls = [ToolCall(name="get_weather", args={"city": "Tokyo"})]
    assert turn(expected_tool_calls=calls).expected_tool_calls == calls


def test_turn_rejects_unknown_fields() -> None:
    with pytest.raises(ValidationError) as error:
        Turn.model_validate({"turn_id": "t", "input": "hi", "expected_tool": []})
    assert error_locations(error) == ["expected_tool"]


# -- MetricSpec ---------------------------------------------------------------------------


def test_metric_spec_defaults() -> None:
    spec = MetricSpec(name="contains")
    assert (spec.label, spec.threshold, spec.enabled, spec.args) == (None, None, True, {})
    assert (spec.scale, spec.model, spec.fail_on_error, spec.retry_on_failure) == (None, None, False, None)
    assert (spec.timeout_ms, spec.custom_prompt) == (None, None)


@pytest.mark.parametrize(
    ("field", "value"),
    [("retry_on_failure", 0), ("retry_on_failure", 4), ("timeout_ms", 0), ("scale", 0)],
)
def test_metric_spec_follows_holodecks_bounds(field: str, value: int) -> None:
    with pytest.raises(ValidationError) as error:
        MetricSpec(name="contains", **{field: value})
    assert error_locations(error) == [field]


def test_metric_spec_model_may_be_a_bare_name() -> None:
    assert MetricSpec(name="llm_judge", model="gpt-4o-mini").model.name == "gpt-4o-mini"


def test_metric_spec_rejects_unknown_fields() -> None:
    with pytest.raises(ValidationError) as error:
        MetricSpec.model_validate({"name": "contains", "values": ["x"]})
    assert error_locations(error) == ["values"]


# -- Case ---------------------------------------------------------------------------------


def test_case_needs_at_least_one_turn() -> None:
    with pytest.raises(ValidationError) as error:
        Case(case_id="c", turns=[])
    assert error_locations(error) == ["turns"]


def test_case_defaults() -> None:
    case = Case(case_id="c", turns=[turn()])
    assert (case.name, case.files, case.metrics, case.expected_tools) == (None, [], [], None)
    assert (case.tags, case.metadata, case.session, case.source_format) == ([], {}, SessionInput(), "native")


def test_case_allows_ten_files_but_not_eleven() -> None:
    files = [FileInput(path=f"{n}.pdf", type="pdf") for n in range(11)]
    assert len(Case(case_id="c", turns=[turn()], files=files[:10]).files) == 10
    with pytest.raises(ValidationError, match="at most 10 files per case; got 11") as error:
        Case(case_id="c", turns=[turn()], files=files)
    assert error_locations(error) == ["files"]


def test_display_name_falls_back_to_the_id() -> None:
    assert make_case(case_id="tokyo").display_name == "tokyo"
    assert make_case(case_id="tokyo", name="Tokyo weather").display_name == "Tokyo weather"


def test_first_input_and_ground_truth_come_from_first_and_last_turns() -> None:
    case = make_case(turn("t1", "first question"), turn("t2", "second", expected_response="final answer"))
    assert (case.first_input, case.ground_truth) == ("first question", "final answer")


def test_ground_truth_ignores_earlier_turns() -> None:
    case = make_case(turn("t1", "a", expected_response="early"), turn("t2", "b"))
    assert case.ground_truth is None


def test_case_rejects_unknown_fields() -> None:
    with pytest.raises(ValidationError) as error:
        Case.model_validate({"case_id": "c", "turns": [{"turn_id": "t", "input": "hi"}], "tag": "x"})
    assert error_locations(error) == ["tag"]


# -- Suite --------------------------------------------------------------------------------


def test_suite_defaults() -> None:
    suite = Suite(suite_id="s", name="S", path="s.json", source_format="vanna", cases=[make_case()])
    assert (suite.agent, suite.description, suite.metadata, suite.warnings) == (None, "", {}, [])


def test_suite_requires_its_provenance() -> None:
    with pytest.raises(ValidationError) as error:
        Suite.model_validate({"cases": []})
    assert sorted(error_locations(error)) == ["name", "path", "source_format", "suite_id"]
