"""Each seed format becomes the pipeline's `Case`: what a suite states is what the case expects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.loaders import SuiteError, load_suite
from proctor.loaders.agentflow import cases_from_evalset
from proctor.loaders.holodeck.loader import case_from_test_case_model
from proctor.loaders.vanna import VANNA_DEFAULT_EVALUATORS, case_from_vanna
from proctor.models.agentflow import EvalCase, EvalSet, Invocation, MessageContent, SessionInput, ToolCall
from proctor.models.case import MetricSpec
from proctor.models.holodeck import EvaluationConfig, EvaluationMetric, FileInput, TestCaseModel
from proctor.models.vanna import ExpectedOutcome, TestCase, User

CONTAINS = MetricSpec(name="contains", args={"values": ["Tokyo"]})


def write(folder: Path, name: str, content: str | dict | list) -> Path:
    path = folder / name
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def invocation(invocation_id: str = "turn_1", text: str = "Weather in Tokyo?", **fields) -> Invocation:
    return Invocation(invocation_id=invocation_id, user_content=MessageContent.user(text), **fields)


def evalset(*invocations: Invocation, **case_fields) -> EvalSet:
    case = EvalCase(eval_id="tokyo", conversation=list(invocations) or [invocation()], **case_fields)
    return EvalSet(eval_set_id="s", eval_cases=[case])


# -- agentflow ----------------------------------------------------------------------------


def test_an_empty_expected_trajectory_means_no_expectation() -> None:
    [case] = cases_from_evalset(evalset(invocation(expected_tool_trajectory=[])), [])
    assert case.turns[0].expected_tool_calls is None


def test_an_expected_trajectory_becomes_the_turns_expected_calls() -> None:
    calls = [ToolCall(name="get_weather", args={"city": "Tokyo"}), ToolCall(name="get_forecast")]
    [case] = cases_from_evalset(evalset(invocation(expected_tool_trajectory=calls)), [])
    assert case.turns[0].expected_tool_calls == calls


def test_each_invocation_becomes_a_turn_with_its_text() -> None:
    structured = Invocation(
        invocation_id="turn_2",
        user_content=MessageContent(role="user", content=[{"type": "text", "text": "And tomorrow?"}]),
        expected_final_response=MessageContent.assistant("Rain."),
        expected_intermediate_responses=[MessageContent.assistant("Checking")],
        metadata={"step": 2},
    )
    [case] = cases_from_evalset(evalset(invocation(), structured), [])
    first, second = case.turns
    assert (first.turn_id, first.input, first.expected_response) == ("turn_1", "Weather in Tokyo?", None)
    assert (second.turn_id, second.input, second.expected_response) == ("turn_2", "And tomorrow?", "Rain.")
    assert (second.expected_intermediate_responses, second.metadata) == (["Checking"], {"step": 2})


def test_every_agentflow_case_is_scored_with_the_sets_criteria() -> None:
    two = EvalSet(
        eval_set_id="s",
        eval_cases=[EvalCase(eval_id=i, conversation=[invocation()]) for i in ("a", "b")],
    )
    assert [case.metrics for case in cases_from_evalset(two, [CONTAINS])] == [[CONTAINS], [CONTAINS]]


def test_agentflow_case_keeps_name_tags_metadata_and_session() -> None:
    session = SessionInput(thread_id="t-1", initial_state={"user": "John"})
    [case] = cases_from_evalset(
        evalset(name="Tokyo", tags=["weather"], metadata={"p": 1}, session_input=session), []
    )
    assert (case.case_id, case.name, case.tags, case.metadata) == ("tokyo", "Tokyo", ["weather"], {"p": 1})
    assert (case.session, case.source_format) == (session, "agentflow")


def test_agentflow_case_without_name_or_session_gets_defaults() -> None:
    [case] = cases_from_evalset(evalset(), [])
    assert (case.name, case.display_name, case.session) == (None, "tokyo", SessionInput())


# -- HoloDeck: converter ------------------------------------------------------------------

EVALUATION = EvaluationConfig(
    model="gpt-4o-mini",
    metrics=[
        EvaluationMetric(metric="contains", values=["9"], threshold=1.0),
        EvaluationMetric(metric="response_match", threshold=0.5),
    ],
)


def test_a_test_case_is_a_single_turn_case() -> None:
    test_case = TestCaseModel(
        name="hours",
        input="What are your business hours?",
        expected_tools=["get_hours"],
        ground_truth="9 to 5",
        files=[FileInput(path="hours.pdf", type="pdf")],
    )
    case = case_from_test_case_model(test_case, 0, None)
    assert (case.case_id, case.name, case.expected_tools, case.source_format) == (
        "hours",
        "hours",
        ["get_hours"],
        "holodeck",
    )
    [turn] = case.turns
    assert (turn.input, turn.expected_response) == ("What are your business hours?", "9 to 5")
    assert case.files == test_case.files


def test_an_unnamed_test_case_is_numbered_from_one() -> None:
    assert case_from_test_case_model(TestCaseModel(input="q"), 2, None).case_id == "test_3"


def test_a_test_case_without_evaluations_gets_every_metric() -> None:
    case = case_from_test_case_model(TestCaseModel(input="q"), 0, EVALUATION)
    assert [(spec.name, spec.threshold) for spec in case.metrics] == [
        ("contains", 1.0),
        ("response_match", 0.5),
    ]


def test_a_test_case_naming_evaluations_gets_only_those() -> None:
    case = case_from_test_case_model(TestCaseModel(input="q", evaluations=["response_match"]), 0, EVALUATION)
    assert [spec.name for spec in case.metrics] == ["response_match"]


def test_metric_extra_fields_become_args_and_the_default_model_is_the_judge() -> None:
    [contains, _] = case_from_test_case_model(TestCaseModel(input="q"), 0, EVALUATION).metrics
    assert contains.args == {"values": ["9"]}
    assert contains.model.name == "gpt-4o-mini"


# -- HoloDeck: agent.yaml -----------------------------------------------------------------

AGENT_YAML = """\
name: support-agent
test_cases:
  - name: hours
    input: What are your business hours?
    expected_tools: [get_hours]
    ground_truth: We're open 9 to 5
    evaluations: [contains]
  - name: refunds
    input: How do I get a refund?
    expected_tools:
      - name: lookup_policy
        args: {topic: refunds}
  - input: Thanks!
evaluations:
  model: gpt-4o-mini
  metrics:
    - metric: contains
      values: ["9"]
      threshold: 1.0
    - metric: response_match
      threshold: 0.5
      retry_on_failure: 2
"""


@pytest.fixture
def agent_suite(tmp_path: Path):
    return load_suite(write(tmp_path, "agent.yaml", AGENT_YAML))


def test_agent_yaml_test_cases_become_cases(agent_suite) -> None:
    assert (agent_suite.source_format, agent_suite.name) == ("holodeck", "support-agent")
    assert [case.case_id for case in agent_suite.cases] == ["hours", "refunds", "test_3"]


def test_agent_yaml_case_keeps_input_tools_and_ground_truth(agent_suite) -> None:
    hours = agent_suite.cases[0]
    assert hours.first_input == "What are your business hours?"
    assert hours.expected_tools == ["get_hours"]
    assert hours.ground_truth == "We're open 9 to 5"


def test_agent_yaml_expected_tools_with_args_become_expected_calls(agent_suite) -> None:
    refunds = agent_suite.cases[1]
    assert refunds.expected_tools == ["lookup_policy"]
    assert refunds.turns[0].expected_tool_calls == [ToolCall(name="lookup_policy", args={"topic": "refunds"})]


def test_agent_yaml_per_case_evaluations_pick_block_metrics(agent_suite) -> None:
    [contains] = agent_suite.cases[0].metrics
    assert (contains.name, contains.threshold, contains.args) == ("contains", 1.0, {"values": ["9"]})
    assert contains.model.name == "gpt-4o-mini"


def test_agent_yaml_cases_without_evaluations_get_every_block_metric(agent_suite) -> None:
    specs = agent_suite.cases[2].metrics
    assert [(spec.name, spec.retry_on_failure) for spec in specs] == [
        ("contains", None),
        ("response_match", 2),
    ]


def test_agent_yaml_without_evaluations_block_has_no_metrics(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, "agent.yaml", "test_cases:\n  - input: hello\n"))
    assert suite.cases[0].metrics == []


def test_agent_yaml_files_are_attached(tmp_path: Path) -> None:
    text = "test_cases:\n  - input: Summarise\n    files:\n"
    text += "      - {url: 'https://x.test/a.pdf', type: pdf, pages: [1, 2]}\n"
    [attached] = load_suite(write(tmp_path, "agent.yaml", text)).cases[0].files
    assert (attached.url, attached.pages, attached.cache) == ("https://x.test/a.pdf", [1, 2], True)


# -- Vanna --------------------------------------------------------------------------------


def test_a_vanna_test_case_is_a_single_turn_case() -> None:
    test_case = TestCase(
        id="revenue",
        user=User(id="analyst", group_memberships=["admin"]),
        message="What was revenue last month?",
        conversation_id="conv-1",
        expected_outcome=ExpectedOutcome(tools_called=["run_sql"], final_answer_contains=["revenue"]),
        metadata={"category": "sql"},
    )
    case = case_from_vanna(test_case, [CONTAINS])
    assert (case.case_id, case.first_input, case.session.thread_id) == (
        "revenue",
        "What was revenue last month?",
        "conv-1",
    )
    assert case.metrics == [CONTAINS] and case.source_format == "vanna"
    assert case.metadata["category"] == "sql"
    assert case.metadata["user"]["group_memberships"] == ["admin"]
    assert case.metadata["expected_outcome"] == {
        "tools_called": ["run_sql"],
        "final_answer_contains": ["revenue"],
        "metadata": {},
    }


def test_a_vanna_case_keeps_whether_it_states_an_outcome() -> None:
    """No outcome (Vanna's evaluators pass it by default) is not an empty one (they check nothing)."""
    assert case_from_vanna(TestCase(id="a", message="hi"), []).metadata["expected_outcome"] is None
    stated = TestCase(id="a", message="hi", expected_outcome=ExpectedOutcome())
    assert case_from_vanna(stated, []).metadata["expected_outcome"] == {"metadata": {}}


VANNA_CASES = [
    {
        "id": "revenue",
        "message": "Revenue last month?",
        "expected_outcome": {
            "tools_called": ["run_sql"],
            "tools_not_called": ["drop_table"],
            "final_answer_contains": ["revenue"],
            "final_answer_not_contains": ["error"],
            "max_execution_time_ms": 10000,
            "min_components": 1,
            "max_components": 3,
        },
    },
    {"id": "greeting", "message": "Hello"},
]
VANNA_DOCUMENTS = {
    "list.json": json.dumps(VANNA_CASES),
    "wrapped.json": json.dumps({"dataset": {"name": "sql", "test_cases": VANNA_CASES}}),
    "plain.yaml": "test_cases:\n" + "".join(f"  - {json.dumps(case)}\n" for case in VANNA_CASES),
    "wrapped.yaml": "dataset:\n  name: sql\n  test_cases:\n"
    + "".join(f"    - {json.dumps(c)}\n" for c in VANNA_CASES),
}


@pytest.mark.parametrize("name", sorted(VANNA_DOCUMENTS))
def test_vanna_datasets_load_in_every_shape(tmp_path: Path, name: str) -> None:
    suite = load_suite(write(tmp_path, name, VANNA_DOCUMENTS[name]))
    assert suite.source_format == "vanna"
    assert [(case.case_id, case.first_input) for case in suite.cases] == [
        ("revenue", "Revenue last month?"),
        ("greeting", "Hello"),
    ]


@pytest.mark.parametrize("name", sorted(VANNA_DOCUMENTS))
def test_vanna_cases_are_scored_by_vannas_evaluators_on_their_outcome(tmp_path: Path, name: str) -> None:
    revenue = load_suite(write(tmp_path, name, VANNA_DOCUMENTS[name])).cases[0]
    # with component bounds, Proctor's own check of them is added, reported apart without a verdict
    assert tuple(spec.name for spec in revenue.metrics) == (
        *VANNA_DEFAULT_EVALUATORS,
        "proctor_component_bounds",
    )
    assert revenue.metadata["expected_outcome"] == {**VANNA_CASES[0]["expected_outcome"], "metadata": {}}


def test_a_wrapped_dataset_names_the_suite_and_agent(tmp_path: Path) -> None:
    document = {"dataset": {"name": "sql", "metadata": {"agent": "agent.py:sql"}, "test_cases": VANNA_CASES}}
    suite = load_suite(write(tmp_path, "d.json", document))
    assert (suite.suite_id, suite.name, suite.agent) == ("sql", "sql", "agent.py:sql")


def test_an_unwrapped_dataset_is_named_after_its_file(tmp_path: Path) -> None:
    assert load_suite(write(tmp_path, "billing.json", VANNA_CASES)).name == "billing"


def test_a_dataset_may_score_with_registry_metrics(tmp_path: Path) -> None:
    text = """\
dataset:
  evaluators:
    - {name: tools_called, tools: [run_sql]}
    - {name: tools_not_called, tools: [drop_table]}
    - {name: contains, values: [revenue]}
    - {name: not_contains, values: [error]}
    - {name: max_execution_time, max_ms: 10000}
  test_cases: [{id: revenue, message: "Revenue last month?"}]
"""
    specs = load_suite(write(tmp_path, "d.yaml", text)).cases[0].metrics
    assert [(spec.name, spec.args) for spec in specs] == [
        ("tools_called", {"tools": ["run_sql"]}),
        ("tools_not_called", {"tools": ["drop_table"]}),
        ("contains", {"values": ["revenue"]}),
        ("not_contains", {"values": ["error"]}),
        ("max_execution_time", {"max_ms": 10000}),
    ]


def test_vanna_conversation_id_becomes_the_session_thread(tmp_path: Path) -> None:
    path = write(tmp_path, "d.json", [{"id": "a", "message": "hi", "conversation_id": "conv-7"}])
    assert load_suite(path).cases[0].session.thread_id == "conv-7"


# Written as Vanna's own `EvaluationDataset.save_json` writes it (vanna-ai/vanna,
# src/vanna/core/evaluation/dataset.py `_to_dict`): the user as flat fields of the case.
VANNA_SAVED = {
    "dataset": {
        "name": "sql",
        "description": "saved by Vanna",
        "test_cases": [
            {
                "id": "revenue",
                "user_id": "alice",
                "username": "alice.w",
                "email": "alice@corp.example",
                "user_groups": ["analysts"],
                "message": "Revenue last month?",
                "conversation_id": "c-1",
                "expected_outcome": {"tools_called": ["run_sql"]},
                "metadata": {"area": "finance"},
            },
            {"id": "bare", "user_id": "bob", "message": "Hello"},
        ],
    }
}


def test_a_dataset_saved_by_vanna_keeps_each_cases_user(tmp_path: Path) -> None:
    revenue, bare = load_suite(write(tmp_path, "sql.dataset.json", VANNA_SAVED)).cases
    assert revenue.metadata["user"] == {
        "id": "alice",
        "username": "alice.w",
        "email": "alice@corp.example",
        "group_memberships": ["analysts"],
        "metadata": {},
    }
    # Vanna's loader defaults: the username is the id, the email <id>@example.com
    assert bare.metadata["user"] == {
        "id": "bob",
        "username": "bob",
        "email": "bob@example.com",
        "group_memberships": [],
        "metadata": {},
    }


def test_a_case_without_a_user_is_vannas_test_user(tmp_path: Path) -> None:
    """Vanna's `EvaluationDataset._parse_test_case` gives a case without user fields its whole
    default user, username and email included (they were left empty), and the agent sees it."""
    case = load_suite(write(tmp_path, "d.json", [{"id": "a", "message": "hi"}])).cases[0]
    assert case.metadata["user"] == {
        "id": "test_user",
        "username": "test_user",
        "email": "test_user@example.com",
        "group_memberships": [],
        "metadata": {},
    }
    assert case.agent_metadata["user"] == case.metadata["user"]


@pytest.mark.parametrize(
    ("document", "field", "says"),
    [
        (
            [{"id": "a", "message": "hi", "user_id": "x", "user": {"id": "y"}}],
            "test_cases[0]",
            "not both",
        ),
        ([{"id": "a", "message": "hi", "user": {"id": "y", "groups": ["x"]}}], "groups", "Extra inputs"),
        (
            [{"id": "a", "message": "hi", "user_id": 5, "user_groups": "admin"}],
            "test_cases[0]",
            "user_id: expected text; found 5; user_groups: expected a list of group names",
        ),
        ([{"id": "a", "message": "hi", "expected_outcme": {}}], "expected_outcme", "Extra inputs"),
        (
            [{"id": "a", "message": "hi", "expected_outcome": {"tool_called": ["x"]}}],
            "tool_called",
            "Extra inputs",
        ),
        (
            {"dataset": {"test_cases": [{"id": "a", "message": "hi"}]}, "evaluators": []},
            "evaluators",
            "beside",
        ),
        ({"name": "d", "cases": [{"id": "a", "message": "hi"}]}, "cases", "unknown field"),
    ],
)
def test_an_unknown_or_doubled_vanna_field_is_an_error(
    tmp_path: Path, document: object, field: str, says: str
) -> None:
    with pytest.raises(SuiteError) as raised:
        load_suite(write(tmp_path, "d.dataset.json", document))
    assert any(field in problem.location and says in problem.message for problem in raised.value.problems), (
        raised.value.problems
    )


@pytest.mark.parametrize(
    "key", ["conversation_scenario", "user_simulator", "adk_user_simulator", "adk_rubrics"]
)
def test_proctors_own_keys_in_an_agentflow_cases_metadata_are_refused(tmp_path: Path, key: str) -> None:
    """Proctor reads these from a case's metadata: one written by hand would change how the case
    runs (an ADK scenario that then fails in the middle of the run) or be silently replaced."""
    document = {
        "eval_set_id": "s",
        "metadata": {"agent": "agent.py:agent"},
        "eval_cases": [
            {
                "eval_id": "c",
                "metadata": {key: {"starting_prompt": "hi"}},
                "conversation": [{"invocation_id": "t", "user_content": {"role": "user", "content": "hi"}}],
            }
        ],
    }
    with pytest.raises(SuiteError) as raised:
        load_suite(write(tmp_path, "s.evalset.json", document))
    assert [problem.location for problem in raised.value.problems] == [f"eval_cases[0].metadata.{key}"]


@pytest.mark.parametrize("key", ["user", "expected_outcome"])
def test_a_vanna_case_cannot_hide_its_user_or_outcome_in_metadata(tmp_path: Path, key: str) -> None:
    document = [{"id": "a", "message": "hi", "metadata": {key: {"id": "someone-else"}}}]
    with pytest.raises(SuiteError) as raised:
        load_suite(write(tmp_path, "d.dataset.json", document))
    assert [problem.location for problem in raised.value.problems] == [f"test_cases[0].metadata.{key}"]


# Written by Vanna 2.0.2's own `EvaluationDataset.save_yaml` / `save_json` (tests/data/vanna), and
# what Vanna's own `EvaluationDataset.from_yaml` read back from them.
VANNA_DATA = Path(__file__).resolve().parents[1] / "data" / "vanna"
READ_BY_VANNA = {
    "a": (
        {"id": "alice", "username": "al", "email": "a@x", "metadata": {}, "group_memberships": ["g"]},
        None,
        {"tools_called": ["run_sql"], "final_answer_contains": ["x"], "max_components": 2, "metadata": {}},
    ),
    "b": (
        {"id": "bob", "username": None, "email": None, "metadata": {}, "group_memberships": []},
        "c1",
        None,
    ),
}


@pytest.mark.parametrize("name", ["saved_by_vanna_2_0_2.dataset.yaml", "saved_by_vanna_2_0_2.dataset.json"])
def test_files_vanna_itself_saved_load_as_vanna_reads_them(name: str) -> None:
    suite = load_suite(VANNA_DATA / name)
    assert (suite.name, suite.description) == ("sql", "saved by vanna")
    read = {
        case.case_id: (case.metadata["user"], case.session.thread_id, case.metadata["expected_outcome"])
        for case in suite.cases
    }
    assert read == READ_BY_VANNA
    assert suite.cases[1].metadata["area"] == "f"
