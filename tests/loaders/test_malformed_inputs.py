"""Bad input: a corpus of malformed suites and configs in every format, each refused with
exit code 2 and one clear line naming the file, the field and what was expected; never a
traceback, a hang, or a run that starts."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from proctor.cli import EXIT_BAD_INPUT, main

AGENT = "def agent(request):\n    return 'hello'\n\n\nNOT_CALLABLE = 3\n"
TURN = {
    "invocation_id": "t1",
    "user_content": {"role": "user", "content": "hi"},
    "expected_final_response": {"role": "assistant", "content": "hello"},
}
CASE = {"eval_id": "c1", "conversation": [TURN]}
INLINE_CONFIG = {"criteria": {"response_match": 0.5}}
ADK_TURN = {
    "invocation_id": "i1",
    "user_content": {"role": "user", "parts": [{"text": "Roll a die"}]},
    "final_response": {"role": "model", "parts": [{"text": "4"}]},
    "intermediate_data": {"tool_uses": [{"name": "roll_die", "args": {"sides": 6}}]},
}
FOLDER = object()  # a directory where a file is expected


def evalset(**changes: object) -> str:
    suite = {
        "eval_set_id": "s",
        "metadata": {"agent": "agent.py:agent", "eval_config": INLINE_CONFIG},
        "eval_cases": [CASE],
    }
    return json.dumps({**suite, **changes})


def case(**changes: object) -> str:
    return evalset(eval_cases=[{**CASE, **changes}])


def turn(**changes: object) -> str:
    return case(conversation=[{**TURN, **changes}])


def metadata(**changes: object) -> str:
    return evalset(metadata={"agent": "agent.py:agent", **changes})


def criteria(value: object) -> str:
    return metadata(eval_config={"criteria": value})


def adk(**changes: object) -> str:
    return json.dumps(
        {"eval_set_id": "a", "eval_cases": [{"eval_id": "c1", "conversation": [ADK_TURN]}]} | changes
    )


def adk_case(**changes: object) -> str:
    return adk(eval_cases=[{"eval_id": "c1", "conversation": [ADK_TURN], **changes}])


def adk_turn(**changes: object) -> str:
    return adk_case(conversation=[{**ADK_TURN, **changes}])


def legacy(**changes: object) -> str:
    return json.dumps(
        [{"query": "Turn off the light", "expected_tool_use": [], "reference": "Done.", **changes}]
    )


def holodeck(cases: str = "test_cases: [{name: c1, input: q}]\n", evaluations: str = "") -> str:
    return "name: support\n" + cases + evaluations


def metrics(entries: str) -> str:
    return holodeck(evaluations=f"evaluations:\n  metrics: {entries}\n")


def files(entries: str) -> str:
    return holodeck(f"test_cases:\n  - input: q\n    files: {entries}\n")


def vanna(cases: object = None, **dataset: object) -> str:
    body = {"name": "orders", "test_cases": cases or [{"id": "v1", "message": "hi"}], **dataset}
    return json.dumps({"dataset": body})


def nested_json(depth: int) -> str:
    return evalset(metadata={"agent": "agent.py:agent", "deep": json.loads("[" * depth + "]" * depth)})


def billion_laughs() -> str:
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
    return "\n".join(lines) + "\ntest_cases: [{input: *i}]\n"


def aliased_text() -> str:
    """100 kB of text, one anchor, 200 aliases: 20 MB of messages from a 105 kB file (the
    values counted stay far under the alias-value limit: only the characters are a bomb)."""
    lines = [f"t: &t '{'x' * 100_000}'", "test_cases:"]
    lines += [f"  - {{name: c{i}, input: *t}}" for i in range(200)]
    return "name: s\n" + "\n".join(lines) + "\n"


def three_hundred_megabytes(path: Path) -> None:
    """Sparse: 300 MB that take no disk (a 100,000-case suite is about 21 MB)."""
    with open(path, "wb") as handle:
        handle.write(b'{"eval_set_id": "s", "description": "')
        handle.truncate(300 * 2**20)


@dataclass(frozen=True)
class Bad:
    """A malformed input: the files to write (the first is the suite), the line the error must
    contain (file: field: what was expected), and whether `proctor run` is tried as well."""

    files: dict[str, object]  # name -> text, bytes, FOLDER, or a function that writes the file
    expected: str
    config: str | None = None
    run: bool = False
    suite: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


CORPUS: dict[str, Bad] = {
    # -- broken documents, whatever the format --------------------------------------------
    "empty json": Bad({"s.evalset.json": ""}, "s.evalset.json: the file is empty", run=True),
    "whitespace-only yaml": Bad({"agent.yaml": "  \n\n"}, "agent.yaml: the file is empty"),
    "comments-only agent.yaml": Bad(
        {"agent.yaml": "# nothing yet\n"},
        "agent.yaml: expected a mapping with test_cases (an agent.yaml); found None",
    ),
    "truncated json": Bad(
        {"s.evalset.json": evalset()[:40]},
        "s.evalset.json: line 1, column 35: invalid JSON: Unterminated string",
        run=True,
    ),
    "json trailing comma": Bad(
        {"s.evalset.json": '{"eval_set_id": "s",}'},
        "s.evalset.json: line 1, column 21: invalid JSON: Expecting property name enclosed in double quotes",
    ),
    "truncated yaml": Bad(
        {"agent.yaml": "name: a\ntest_cases: [{input: q\n"}, "agent.yaml: line 3, column 1: invalid YAML"
    ),
    "tabs in yaml": Bad(
        {"agent.yaml": "name: a\ntest_cases:\n\t- input: q\n"},
        "agent.yaml: line 3, column 1: invalid YAML: found character '\\t' that cannot start any token",
        run=True,
    ),
    "duplicate key in json": Bad(
        {"s.evalset.json": '{"eval_set_id": "s", "eval_cases": [], "eval_cases": []}'},
        "s.evalset.json: invalid JSON: duplicate key 'eval_cases'",
    ),
    "duplicate key in yaml": Bad(
        {"agent.yaml": "name: a\ntest_cases: [{input: q}]\ntest_cases: [{input: r}]\n"},
        "agent.yaml: line 3, column 1: invalid YAML: duplicate key 'test_cases'",
    ),
    "binary garbage": Bad(
        {"s.evalset.json": bytes(range(256)) * 4},
        "s.evalset.json: not UTF-8 text (byte 128: invalid start byte); save the file as UTF-8",
        run=True,
    ),
    "latin-1 text": Bad(
        {"agent.yaml": "name: caf\xe9\ntest_cases: [{input: q}]\n".encode("latin-1")},
        "agent.yaml: not UTF-8 text (byte 9: invalid continuation byte)",
    ),
    "utf-16 text": Bad(
        {"s.evalset.json": evalset().encode("utf-16")},
        "s.evalset.json: not UTF-8 text (byte 0: invalid start byte)",
    ),
    "nul byte in yaml": Bad(
        {"agent.yaml": "name: a\x00\ntest_cases: [{input: q}]\n"},
        "agent.yaml: line 1, column 8: invalid YAML: character #x0000 is not allowed in YAML",
    ),
    "json nested 10000 levels": Bad(
        {"s.evalset.json": "[" * 10_000 + "]" * 10_000},
        "s.evalset.json: invalid JSON: nested deeper than 100 levels",
        run=True,
    ),
    "yaml nested 10000 levels": Bad(
        {"agent.yaml": "a: " + "[" * 10_000 + "]" * 10_000},
        "agent.yaml: invalid YAML: nested deeper than 100 levels",
    ),
    "json nested 500 levels": Bad(
        {"s.evalset.json": nested_json(500)},
        "s.evalset.json: metadata.deep[0]...: nested deeper than 100 levels",
    ),
    "yaml bomb": Bad(
        {"agent.yaml": billion_laughs()},
        "agent.yaml: invalid YAML: aliases repeat 926177086 values, more than the 100000 allowed",
        run=True,
    ),
    "recursive yaml anchor": Bad(
        {"agent.yaml": "name: a\ntest_cases: &loop [*loop]\n"},
        "agent.yaml: invalid YAML: an alias refers to the value it is part of (a recursive anchor)",
    ),
    "a 300 MB suite": Bad(
        {"big.evalset.json": three_hundred_megabytes},
        "big.evalset.json: the file is 300.0 MB, over the 256 MB limit for a suite file",
        run=True,
    ),
    "a folder named like a suite": Bad(
        {"s.evalset.json": FOLDER}, "s.evalset.json: no suite files found (looked for *.evalset.json"
    ),
    "unrecognised text file": Bad(
        {"notes.txt": "hello"}, "notes.txt: unrecognised suite format: expected an agentflow evalset"
    ),
    "a missing suite file": Bad({}, "nope.evalset.json: file not found", suite="nope.evalset.json"),
    "json a string": Bad(
        {"s.evalset.json": '"hello"'},
        "s.evalset.json: Input should be a valid dictionary or instance of EvalSet; found 'hello'",
    ),
    "json null": Bad(
        {"s.evalset.json": "null"},
        "s.evalset.json: Input should be a valid dictionary or instance of EvalSet",
    ),
    # -- agentflow evalsets ---------------------------------------------------------------
    "evalset is a list": Bad(
        {"s.evalset.json": "[1, 2]"},
        "s.evalset.json: Input should be a valid dictionary or instance of EvalSet; found [1, 2]",
    ),
    "eval_set_id missing": Bad(
        {"s.evalset.json": json.dumps({"eval_cases": [CASE]})},
        "s.evalset.json: eval_set_id: required field is missing",
    ),
    "eval_set_id a number": Bad(
        {"s.evalset.json": evalset(eval_set_id=12)},
        "s.evalset.json: eval_set_id: Input should be a valid string; found 12",
        run=True,
    ),
    "unknown top-level key": Bad(
        {"s.evalset.json": evalset(eval_case=[])},
        "s.evalset.json: eval_case: Extra inputs are not permitted; found []",
    ),
    "eval_cases a mapping": Bad(
        {"s.evalset.json": evalset(eval_cases={"c1": CASE})},
        "s.evalset.json: eval_cases: Input should be a valid list",
    ),
    "no eval cases": Bad(
        {"s.evalset.json": evalset(eval_cases=[])}, "s.evalset.json: eval_cases: the set has no cases"
    ),
    "case without eval_id": Bad(
        {"s.evalset.json": evalset(eval_cases=[{"conversation": [TURN]}])},
        "s.evalset.json: eval_cases[0].eval_id: required field is missing",
        run=True,
    ),
    "blank eval_id": Bad(
        {"s.evalset.json": case(eval_id="  ")},
        "s.evalset.json: eval_cases[0].eval_id: Value error, eval_id must be non-empty",
    ),
    "a 1e6-character eval_id": Bad(
        {"s.evalset.json": case(eval_id="x" * 1_000_000)},
        "s.evalset.json: eval_cases[0].eval_id: at most 200 characters; found 1000000",
        run=True,
    ),
    "duplicate eval_id": Bad(
        {"s.evalset.json": evalset(eval_cases=[CASE, CASE])},
        "s.evalset.json: eval_cases: Value error, duplicate eval_id 'c1': case ids must be unique",
    ),
    "conversation a string": Bad(
        {"s.evalset.json": case(conversation="hi")},
        "s.evalset.json: eval_cases[0].conversation: Input should be a valid list; found 'hi'",
    ),
    "empty conversation": Bad(
        {"s.evalset.json": case(conversation=[])},
        "s.evalset.json: eval_cases[0].conversation: at least one invocation is required",
    ),
    "invocation without invocation_id": Bad(
        {"s.evalset.json": case(conversation=[{"user_content": TURN["user_content"]}])},
        "s.evalset.json: eval_cases[0].conversation[0].invocation_id: required field is missing",
    ),
    "user_content a number": Bad(
        {"s.evalset.json": turn(user_content=42)},
        "s.evalset.json: eval_cases[0].conversation[0].user_content: Input should be a valid dictionary",
    ),
    "message without role": Bad(
        {"s.evalset.json": turn(user_content={"content": "hi"})},
        "s.evalset.json: eval_cases[0].conversation[0].user_content.role: required field is missing",
    ),
    "misspelt invocation field": Bad(
        {"s.evalset.json": turn(expected_tool_trajectroy=[])},
        "s.evalset.json: eval_cases[0].conversation[0].expected_tool_trajectroy: Extra inputs are not permitted",
    ),
    "tool trajectory a string": Bad(
        {"s.evalset.json": turn(expected_tool_trajectory="get_weather")},
        "s.evalset.json: eval_cases[0].conversation[0].expected_tool_trajectory: Input should be a valid list",
    ),
    "tool call without name": Bad(
        {"s.evalset.json": turn(expected_tool_trajectory=[{"args": {}}])},
        "s.evalset.json: eval_cases[0].conversation[0].expected_tool_trajectory[0].name: required field is missing",
    ),
    "tool args a list": Bad(
        {"s.evalset.json": turn(expected_tool_trajectory=[{"name": "t", "args": [1]}])},
        "s.evalset.json: eval_cases[0].conversation[0].expected_tool_trajectory[0].args: Input should be a valid dictionary",
    ),
    "tags a string": Bad(
        {"s.evalset.json": case(tags="smoke")},
        "s.evalset.json: eval_cases[0].tags: Input should be a valid list; found 'smoke'",
    ),
    "misspelt session_input field": Bad(
        {"s.evalset.json": case(session_input={"thread": "t"})},
        "s.evalset.json: eval_cases[0].session_input.thread: Extra inputs are not permitted",
    ),
    "metadata.agent a number": Bad(
        {"s.evalset.json": evalset(metadata={"agent": 7, "eval_config": INLINE_CONFIG})},
        "s.evalset.json: metadata.agent: expected an agent target such as 'agent.py:attr'; found 7",
    ),
    # -- EvalConfig: inline, beside the suite, or --config ---------------------------------
    "eval_config a number": Bad(
        {"s.evalset.json": metadata(eval_config=5)},
        "s.evalset.json: metadata.eval_config: expected a config file name or an inline config with criteria; found 5",
    ),
    "eval_config file missing": Bad(
        {"s.evalset.json": metadata(eval_config="nowhere.json")}, "nowhere.json: file not found", run=True
    ),
    "eval_config names a folder": Bad(
        {"s.evalset.json": metadata(eval_config="configs"), "configs": FOLDER},
        "configs: is a folder; expected a JSON or YAML file",
    ),
    "unknown metric": Bad(
        {"s.evalset.json": criteria({"vibes_score": 0.5})},
        "s.evalset.json: metadata.eval_config.criteria.vibes_score: unknown metric 'vibes_score'; valid metrics are:",
        run=True,
    ),
    "threshold above 1": Bad(
        {"s.evalset.json": criteria({"response_match": 1.5})},
        "s.evalset.json: metadata.eval_config.criteria.response_match.threshold: expected a threshold between 0 and 1, got 1.5",
        run=True,
    ),
    "threshold negative": Bad(
        {"s.evalset.json": criteria({"response_match": -0.1})},
        "s.evalset.json: metadata.eval_config.criteria.response_match.threshold: Input should be greater than or equal to 0",
    ),
    "threshold a string": Bad(
        {"s.evalset.json": criteria({"response_match": "high"})},
        "s.evalset.json: metadata.eval_config.criteria.response_match: Input should be a valid dictionary or instance of CriterionConfig; found 'high'",
    ),
    "criteria a list": Bad(
        {"s.evalset.json": criteria(["response_match"])},
        "s.evalset.json: metadata.eval_config.criteria: Input should be a valid dictionary",
    ),
    "match_type unknown": Bad(
        {"s.evalset.json": criteria({"trajectory_match": {"match_type": "SIDEWAYS"}})},
        "s.evalset.json: metadata.eval_config.criteria.trajectory_match.match_type: Input should be 'EXACT', 'IN_ORDER' or 'ANY_ORDER'",
    ),
    "metric argument of the wrong type": Bad(
        {"s.evalset.json": criteria({"trajectory_match": {"check_args": "maybe"}})},
        "s.evalset.json: metadata.eval_config.criteria.trajectory_match: metric 'trajectory_match': check_args: Input should be a valid boolean",
    ),
    "metric argument unknown": Bad(
        {"s.evalset.json": criteria({"contains": {"values": ["x"], "valuez": ["y"]}})},
        "s.evalset.json: metadata.eval_config.criteria.contains: metric 'contains': valuez: Extra inputs are not permitted",
    ),
    "rubric without description": Bad(
        {
            "s.evalset.json": criteria(
                {"rubric_based": {"rubrics": [{"name": "r", "scoring_guide": "5=good"}]}}
            )
        },
        "s.evalset.json: metadata.eval_config.criteria.rubric_based.rubrics[0].description: required field is missing",
    ),
    "misspelt criteria in eval_config.json": Bad(
        {
            "s.evalset.json": evalset(metadata={"agent": "agent.py:agent"}),
            "eval_config.json": '{"criterias": {}}',
        },
        "eval_config.json: criterias: Extra inputs are not permitted",
        run=True,
    ),
    "simulator max_invocations 0": Bad(
        {
            "s.evalset.json": evalset(metadata={"agent": "agent.py:agent"}),
            "eval_config.json": json.dumps(
                {**INLINE_CONFIG, "user_simulator_config": {"max_invocations": 0}}
            ),
        },
        "eval_config.json: user_simulator_config.max_invocations: Input should be greater than or equal to 1",
    ),
    "--config a folder": Bad(
        {"s.evalset.json": evalset(), "configs": FOLDER},
        "configs: is a folder; expected a JSON or YAML file",
        config="configs",
        run=True,
    ),
    "--config broken json": Bad(
        {"s.evalset.json": evalset(), "strict.json": '{"criteria": {"bleu": 0.5'},
        "strict.json: line 1, column 26: invalid JSON: Expecting ',' delimiter",
        config="strict.json",
    ),
    "--config a list": Bad(
        {"s.evalset.json": evalset(), "strict.json": "[]"},
        "strict.json: Input should be a valid dictionary or instance of EvalConfig; found []",
        config="strict.json",
    ),
    "--config on a Vanna dataset": Bad(
        {"v.dataset.json": vanna(), "strict.json": json.dumps(INLINE_CONFIG)},
        "strict.json: --config applies to agentflow evalsets only",
        config="strict.json",
    ),
    # -- Google ADK eval files and their test_config.json ----------------------------------
    "adk case a string": Bad(
        {"a.test.json": adk(eval_cases=[{"eval_id": "c1", "conversation": [ADK_TURN]}, "c2"])},
        "a.test.json: not a valid ADK eval file: malformed entry at eval_cases[1]: expected an eval case mapping; found 'c2'",
        run=True,
    ),
    "adk case without eval_id": Bad(
        {"a.test.json": adk(eval_cases=[{"conversation": [ADK_TURN]}])},
        "a.test.json: not a valid ADK eval file: missing or malformed field 'eval_id' at eval_cases[0]: expected the case's id",
    ),
    "adk conversation a mapping": Bad(
        {
            "a.test.json": adk(
                eval_cases=[
                    {"eval_id": "c1", "conversation": [ADK_TURN]},
                    {"eval_id": "c2", "conversation": {"a": ADK_TURN}},
                ]
            )
        },
        "a.test.json: not a valid ADK eval file: missing or malformed field 'conversation' at eval_cases[1]: expected a list of invocations; found {'a':",
    ),
    "adk parts a string": Bad(
        {"a.test.json": adk_turn(final_response={"role": "model", "parts": "4"})},
        "a.test.json: not a valid ADK eval file: missing or malformed field 'parts' at eval_cases[0].conversation[0].final_response: expected a list of parts; found '4'",
    ),
    "adk tool use without name": Bad(
        {"a.test.json": adk_turn(intermediate_data={"tool_uses": [{"args": {}}]})},
        "a.test.json: not a valid ADK eval file: missing or malformed field 'name' at eval_cases[0].conversation[0].intermediate_data.tool_uses[0]: expected the tool's name",
    ),
    "adk tool args a list": Bad(
        {"a.test.json": adk_turn(intermediate_data={"tool_uses": [{"name": "roll_die", "args": [6]}]})},
        "a.test.json: not a valid ADK eval file: missing or malformed field 'args' at eval_cases[0].conversation[0].intermediate_data.tool_uses[0]: expected a mapping of arguments; found [6]",
    ),
    "adk camelCase intermediateData a list": Bad(
        {"a.test.json": adk_turn(intermediate_data=None, intermediateData=[])},
        "a.test.json: not a valid ADK eval file: missing or malformed field 'intermediate_data' at eval_cases[0].conversation[0]: expected one spelling of the field, not both 'intermediate_data' and its camelCase form",
    ),
    "adk session state a list": Bad(
        {"a.test.json": adk_case(session_input={"app_name": "a", "state": []})},
        "a.test.json: not a valid ADK eval file: missing or malformed field 'state' at eval_cases[0].session_input: expected a mapping; found []",
    ),
    "adk invocation without user text": Bad(
        {"a.test.json": adk_turn(user_content={"role": "user", "parts": [{"text": ""}]})},
        "a.test.json: eval_cases[0].conversation: every invocation needs user text",
    ),
    "adk metadata a list": Bad(
        {"a.test.json": adk(metadata=["x"])}, "a.test.json: metadata: expected a mapping; found ['x']"
    ),
    "adk legacy query a mapping": Bad(
        {"l.test.json": legacy(query={"text": "hi"})},
        "l.test.json: not a valid ADK eval file: missing or malformed field 'query' at [0]: expected the user's message (a string)",
    ),
    "adk legacy tool use without tool_name": Bad(
        {"l.test.json": legacy(expected_tool_use=[{"tool_input": {}}])},
        "l.test.json: not a valid ADK eval file: missing or malformed field 'tool_name' at [0].expected_tool_use[0]",
        run=True,
    ),
    "adk legacy expected_tool_use a string": Bad(
        {"l.test.json": legacy(expected_tool_use="set_device_info")},
        "l.test.json: not a valid ADK eval file: missing or malformed field 'expected_tool_use' at [0]: expected a list of {tool_name, tool_input}",
    ),
    "adk legacy reference a number": Bad(
        {"l.test.json": legacy(reference=42)},
        "l.test.json: not a valid ADK eval file: missing or malformed field 'reference' at [0]: expected the expected answer (a string); found 42",
    ),
    "adk test_config unknown criterion": Bad(
        {"a.test.json": adk(), "test_config.json": json.dumps({"criteria": {"tool_trajectory_score": 1.0}})},
        "test_config.json: criteria.tool_trajectory_score: unknown metric 'tool_trajectory_score'",
        run=True,
    ),
    "adk test_config threshold above 1": Bad(
        {"a.test.json": adk(), "test_config.json": json.dumps({"criteria": {"response_match_score": 80}})},
        "test_config.json: criteria.response_match_score.threshold: expected a threshold between 0 and 1, got 80",
    ),
    "adk test_config judge options wrong type": Bad(
        {
            "a.test.json": adk(),
            "test_config.json": json.dumps(
                {"criteria": {"final_response_match_v2": {"threshold": 0.8, "judge_model_options": "gemini"}}}
            ),
        },
        "test_config.json: criteria.final_response_match_v2.judge_model_options: Value error, judge_model_options must be a mapping (judge_model, judge_model_config, num_samples, parallelism_limit)",
    ),
    # -- HoloDeck agent.yaml --------------------------------------------------------------
    "holodeck agent.yaml a list": Bad(
        {"agent.yaml": "- input: q\n"},
        "agent.yaml: expected a mapping with test_cases (an agent.yaml); found",
    ),
    "holodeck no test cases": Bad(
        {"agent.yaml": "name: support\n"}, "agent.yaml: test_cases: at least one test case is required"
    ),
    "holodeck test_cases a mapping": Bad(
        {"agent.yaml": holodeck("test_cases: {input: q}\n")},
        "agent.yaml: test_cases: expected a list of test cases; found {'input': 'q'}",
        run=True,
    ),
    "holodeck case a string": Bad(
        {"agent.yaml": holodeck("test_cases: [q]\n")},
        "agent.yaml: test_cases[0]: expected a mapping; found 'q'",
    ),
    "holodeck case without input": Bad(
        {"agent.yaml": holodeck("test_cases: [{name: c1}]\n")},
        "agent.yaml: test_cases[0].input: required field is missing",
    ),
    "holodeck input a list": Bad(
        {"agent.yaml": holodeck("test_cases: [{input: [a, b]}]\n")},
        "agent.yaml: test_cases[0].input: Input should be a valid string; found ['a', 'b']",
    ),
    "holodeck input a date": Bad(
        {"agent.yaml": holodeck("test_cases: [{input: 2024-01-01}]\n")},
        "agent.yaml: test_cases[0].input: Input should be a valid string; found datetime.date(2024, 1, 1)",
    ),
    "holodeck misspelt case field": Bad(
        {"agent.yaml": holodeck("test_cases: [{input: q, grund_truth: a}]\n")},
        "agent.yaml: test_cases[0].grund_truth: unknown key",
    ),
    "holodeck duplicate case names": Bad(
        {"agent.yaml": holodeck("test_cases: [{name: c, input: q}, {name: c, input: r}]\n")},
        "agent.yaml: test_cases[1].name: duplicate case id 'c' (line 2)",
    ),
    "holodeck expected_tools a string": Bad(
        {"agent.yaml": holodeck("test_cases: [{input: q, expected_tools: get_hours}]\n")},
        "agent.yaml: test_cases[0].expected_tools: expected a list of tool names or {name, args, count}; found 'get_hours'",
    ),
    "holodeck unset variable": Bad(
        {"agent.yaml": holodeck("test_cases: [{input: '${PROCTOR_SURELY_UNSET_VAR}'}]\n")},
        "agent.yaml: test_cases[0].input: environment variable PROCTOR_SURELY_UNSET_VAR is not set",
    ),
    "holodeck evaluations a list": Bad(
        {"agent.yaml": holodeck(evaluations="evaluations: [bleu]\n")},
        "agent.yaml: evaluations: expected a mapping with model and metrics",
    ),
    "holodeck no metrics": Bad(
        {"agent.yaml": holodeck(evaluations="evaluations: {model: gpt-4o}\n")},
        "agent.yaml: evaluations.metrics: List should have at least 1 item",
    ),
    "holodeck metrics a mapping": Bad(
        {"agent.yaml": metrics("{metric: bleu}")},
        "agent.yaml: evaluations.metrics: expected a list of metrics; found {'metric': 'bleu'}",
    ),
    "holodeck metric a bare name": Bad(
        {"agent.yaml": metrics("[bleu]")},
        "agent.yaml: evaluations.metrics[0]: expected a metric mapping ({metric: name, ...} or {type: standard|geval|rag|code, ...}); found 'bleu'",
        run=True,
    ),
    "holodeck unknown metric": Bad(
        {"agent.yaml": metrics("[{metric: vibes}]")},
        "agent.yaml: evaluations.metrics[0]: unknown metric 'vibes'; valid metrics are:",
    ),
    "holodeck unknown standard metric": Bad(
        {"agent.yaml": metrics("[{type: standard, metric: nope}]")},
        "agent.yaml: evaluations.metrics[0]: unknown metric 'nope'",
    ),
    "holodeck unknown metric type": Bad(
        {"agent.yaml": metrics("[{type: vibes}]")},
        "agent.yaml: evaluations.metrics[0]: unknown metric type 'vibes'; expected geval, rag, standard or code",
    ),
    "holodeck threshold above 1": Bad(
        {"agent.yaml": metrics("[{metric: bleu, threshold: 7}]")},
        "agent.yaml: evaluations.metrics[0].threshold: expected a threshold between 0 and 1, got 7",
        run=True,
    ),
    "holodeck threshold negative": Bad(
        {"agent.yaml": metrics("[{metric: bleu, threshold: -0.5}]")},
        "agent.yaml: evaluations.metrics[0].threshold: expected a threshold between 0 and 1, got -0.5",
    ),
    "holodeck threshold above the scale": Bad(
        {"agent.yaml": metrics("[{type: standard, metric: coherence, threshold: 6, scale: 5}]")},
        "agent.yaml: evaluations.metrics[0].threshold: expected a threshold between 0 and 5, got 6",
    ),
    # -- metadata.eval_config obeys the folder rules attached files obey (issue 14, item 9) --
    "eval_config path leaves the folder": Bad(
        {"s.evalset.json": metadata(eval_config="../../../../../../etc/passwd")},
        "s.evalset.json: metadata.eval_config: ../../../../../../etc/passwd leaves the suite folder",
        run=True,
    ),
    "eval_config absolute path": Bad(
        {"s.evalset.json": metadata(eval_config="/etc/passwd")},
        "s.evalset.json: metadata.eval_config: /etc/passwd leaves the suite folder",
    ),
    # -- wrong types in metric settings, in every format (issue 14, item 11) ---------------
    "holodeck standard metric a list": Bad(
        {"agent.yaml": metrics("[{type: standard, metric: [bleu]}]")},
        "agent.yaml: evaluations.metrics[0].metric: expected a metric name (a string); found ['bleu']",
        run=True,
    ),
    "holodeck geval name a number": Bad(
        {"agent.yaml": metrics("[{type: geval, name: 5, criteria: c}]")},
        "agent.yaml: evaluations.metrics[0].name: expected a string; found 5",
    ),
    "holodeck code name a list": Bad(
        {"agent.yaml": metrics("[{type: code, name: [a], grader: g.py:grade}]")},
        "agent.yaml: evaluations.metrics[0].name: expected a string; found ['a']",
    ),
    "holodeck rag metric_type a list": Bad(
        {"agent.yaml": metrics("[{type: rag, metric_type: [faithfulness]}]")},
        "agent.yaml: evaluations.metrics[0].metric_type: expected a string; found ['faithfulness']",
    ),
    "holodeck metric type a mapping": Bad(
        {"agent.yaml": metrics("[{type: {a: 1}, metric: bleu}]")},
        "agent.yaml: evaluations.metrics[0].type: expected a string; found {'a': 1}",
    ),
    "holodeck untyped label a number": Bad(
        {"agent.yaml": metrics("[{metric: bleu, label: 5}]")},
        "agent.yaml: evaluations.metrics[0].label: expected a string; found 5",
    ),
    "holodeck metric args a list": Bad(
        {"agent.yaml": metrics("[{metric: bleu, args: [1, 2]}]")},
        "agent.yaml: evaluations.metrics[0]: metric 'bleu': args: Extra inputs are not permitted",
    ),
    "holodeck turn metric a list": Bad(
        {
            "agent.yaml": "name: s\ntest_cases:\n  - name: c1\n    turns:\n      - input: q\n"
            "        evaluations: [{type: standard, metric: [bleu]}]\n"
        },
        "agent.yaml: test_cases[0].turns[0].evaluations[0].metric: expected a metric name (a string)",
    ),
    "agentflow criterion args a list": Bad(
        {"s.evalset.json": criteria({"response_match_score": {"threshold": 0.5, "args": [1, 2]}})},
        "s.evalset.json: metadata.eval_config.criteria.response_match_score: metric 'response_match_score': args: Extra inputs are not permitted",
    ),
    "agentflow criterion metric a list": Bad(
        {"s.evalset.json": criteria({"response_match_score": {"threshold": 0.5, "metric": ["bleu"]}})},
        "metric 'response_match_score': metric: Extra inputs are not permitted",
    ),
    "vanna evaluator label a number": Bad(
        {"v.dataset.json": vanna(evaluators=[{"name": "bleu", "label": 5}])},
        "v.dataset.json: dataset.evaluators[0].label: expected a string; found 5",
    ),
    "vanna evaluator name a list": Bad(
        {"v.dataset.json": vanna(evaluators=[{"name": ["bleu"]}])},
        "v.dataset.json: dataset.evaluators[0]: expected an evaluator name or {name: ..., arguments}; found {'name': ['bleu']}",
    ),
    "holodeck negative retries": Bad(
        {"agent.yaml": metrics("[{metric: bleu, retry_on_failure: -1}]")},
        "agent.yaml: evaluations.metrics[0].retry_on_failure: Input should be greater than or equal to 1",
    ),
    "holodeck scale zero": Bad(
        {"agent.yaml": metrics("[{metric: llm_judge, scale: 0}]")},
        "agent.yaml: evaluations.metrics[0].scale: Input should be greater than 0",
    ),
    "holodeck judge temperature out of range": Bad(
        {
            "agent.yaml": holodeck(
                evaluations="evaluations:\n  model: {name: m, temperature: 5}\n  metrics: [{metric: bleu}]\n"
            )
        },
        "agent.yaml: evaluations.model.temperature: Input should be less than or equal to 2",
    ),
    "holodeck case names an undefined metric": Bad(
        {
            "agent.yaml": holodeck(
                "test_cases: [{input: q, evaluations: [rouge]}]\n",
                "evaluations:\n  metrics: [{metric: bleu}]\n",
            )
        },
        "agent.yaml: test_cases[0].evaluations[0]: metric 'rouge' is not defined in the evaluations block (defined: bleu)",
    ),
    "holodeck case evaluations a string": Bad(
        {
            "agent.yaml": holodeck(
                "test_cases: [{input: q, evaluations: bleu}]\n", "evaluations:\n  metrics: [{metric: bleu}]\n"
            )
        },
        "agent.yaml: test_cases[0].evaluations: expected a list of metric names or metrics; found 'bleu'",
    ),
    "holodeck case metric with a bad field": Bad(
        {"agent.yaml": holodeck("test_cases: [{input: q, evaluations: [{metric: bleu, timeout_ms: -1}]}]\n")},
        "agent.yaml: test_cases[0].evaluations[0].timeout_ms: Input should be greater than 0",
    ),
    "holodeck more than 10 files": Bad(
        {"agent.yaml": files("[" + ", ".join(f"{{path: f{i}.txt, type: text}}" for i in range(11)) + "]")},
        "agent.yaml: test_cases[0].files: Value error, at most 10 files per test case; got 11",
        run=True,
    ),
    "holodeck file escapes the suite folder": Bad(
        {"agent.yaml": files("[{path: ../../etc/passwd, type: text}]")},
        "agent.yaml: test_cases[0].files[0].path: ../../etc/passwd leaves the suite folder",
        run=True,
    ),
    "holodeck absolute file path": Bad(
        {"agent.yaml": files("[{path: /etc/passwd, type: text}]")},
        "agent.yaml: test_cases[0].files[0].path: /etc/passwd leaves the suite folder",
    ),
    "holodeck file url with file scheme": Bad(
        {"agent.yaml": files("[{url: 'file:///etc/passwd', type: text}]")},
        "agent.yaml: test_cases[0].files[0].url: only http and https URLs are fetched, not 'file'",
    ),
    "holodeck file without path or url": Bad(
        {"agent.yaml": files("[{type: text}]")},
        "agent.yaml: test_cases[0].files[0]: Value error, exactly one of 'path' or 'url' must be given",
    ),
    "holodeck file of unknown type": Bad(
        {"agent.yaml": files("[{path: a.txt, type: hologram}]")},
        "agent.yaml: test_cases[0].files[0].type: Value error, type must be one of csv, excel, image, pdf, powerpoint, text, word; got 'hologram'",
    ),
    "holodeck file page 0": Bad(
        {"agent.yaml": files("[{path: a.pdf, type: pdf, pages: [0, 1]}]")},
        "agent.yaml: test_cases[0].files[0].pages: Value error, pages must be positive integers",
    ),
    "holodeck file a bare name": Bad(
        {"agent.yaml": files("[report.pdf]")},
        "agent.yaml: test_cases[0].files[0]: Input should be a valid dictionary or instance of FileInput; found 'report.pdf'",
    ),
    "holodeck test_cases_file escapes": Bad(
        {"agent.yaml": "name: a\ntest_cases_file: ../../outside.yaml\n"},
        "agent.yaml: test_cases_file: ../../outside.yaml leaves the suite folder",
    ),
    "holodeck test_cases_file a number": Bad(
        {"agent.yaml": "name: a\ntest_cases_file: 7\n"},
        "agent.yaml: test_cases_file: expected a file name relative to the agent.yaml; found 7",
    ),
    "holodeck test_cases_file missing": Bad(
        {"agent.yaml": "name: a\ntest_cases_file: data/cases.yaml\n"}, "data/cases.yaml: file not found"
    ),
    "holodeck test_cases_file a folder": Bad(
        {"agent.yaml": "name: a\ntest_cases_file: data\n", "data": FOLDER},
        "data: is a folder; expected a JSON or YAML file",
    ),
    "holodeck test_cases_file holds a string": Bad(
        {"agent.yaml": "name: a\ntest_cases_file: cases.yaml\n", "cases.yaml": "just words\n"},
        "cases.yaml: expected a list of test cases or a mapping with test_cases",
    ),
    "holodeck case in test_cases_file without input": Bad(
        {
            "agent.yaml": "name: a\ntest_cases_file: data/cases.yaml\n",
            "data": FOLDER,
            "data/cases.yaml": "- name: c1\n",
        },
        "data/cases.yaml: test_cases[0].input: required field is missing",
        suite="agent.yaml",
    ),
    "holodeck test_cases and test_cases_file": Bad(
        {"agent.yaml": "name: a\ntest_cases: [{input: q}]\ntest_cases_file: cases.yaml\n"},
        "agent.yaml: test_cases_file: give test_cases or test_cases_file, not both",
    ),
    "holodeck turns a string": Bad(
        {"agent.yaml": holodeck("test_cases: [{name: c, turns: hello}]\n")},
        "agent.yaml: test_cases[0].turns: at least one turn is required (a list of turns); found 'hello'",
    ),
    "holodeck more than 10 files in a turn": Bad(
        {
            "agent.yaml": holodeck(
                "test_cases:\n  - name: c\n    turns:\n      - input: q\n        files:\n"
                + "".join(f"          - {{path: f{i}.txt, type: text}}\n" for i in range(11))
            )
        },
        "agent.yaml: test_cases[0].turns[0].files: at most 10 files per turn; got 11",
    ),
    "holodeck multi-turn name a number": Bad(
        {"agent.yaml": holodeck("test_cases: [{name: 7, turns: [{input: q}]}]\n")},
        "agent.yaml: test_cases[0].name: expected a non-empty string; found 7",
    ),
    "holodeck turn ground_truth a list": Bad(
        {"agent.yaml": holodeck("test_cases: [{name: c, turns: [{input: q, ground_truth: [a]}]}]\n")},
        "agent.yaml: test_cases[0].turns[0].ground_truth: expected a non-empty string; found ['a']",
    ),
    "holodeck turn file escapes": Bad(
        {
            "agent.yaml": holodeck(
                "test_cases: [{name: c, turns: [{input: q, files: [{path: /etc/shadow, type: text}]}]}]\n"
            )
        },
        "agent.yaml: test_cases[0].turns[0].files[0].path: /etc/shadow leaves the suite folder",
    ),
    "holodeck turn metric unknown": Bad(
        {
            "agent.yaml": holodeck(
                "test_cases: [{name: c, turns: [{input: q, evaluations: [{metric: vibes}]}]}]\n"
            )
        },
        "agent.yaml: test_cases[0].turns[0].evaluations[0]: unknown metric 'vibes'",
    ),
    "holodeck turn metric with a bad field": Bad(
        {
            "agent.yaml": holodeck(
                "test_cases: [{name: c, turns: [{input: q, evaluations: [{metric: bleu, scale: -2}]}]}]\n"
            )
        },
        "agent.yaml: test_cases[0].turns[0].evaluations[0].scale: Input should be greater than 0",
    ),
    "holodeck a 1e6-character case name": Bad(
        {"agent.yaml": holodeck(f"test_cases: [{{name: {'n' * 1_000_000}, input: q}}]\n")},
        "agent.yaml: test_cases[0].name: at most 200 characters; found 1000000",
    ),
    # -- Vanna datasets -------------------------------------------------------------------
    "vanna dataset a string": Bad(
        {"v.dataset.yaml": "orders\n"}, "v.dataset.yaml: expected a list of test cases or a mapping"
    ),
    "vanna dataset a list of strings": Bad(
        {"v.dataset.json": json.dumps({"dataset": ["a"]})},
        "v.dataset.json: dataset: expected a mapping with name, evaluators and test_cases",
    ),
    "vanna unknown dataset field": Bad(
        {"v.dataset.json": vanna(tests=[])},
        "v.dataset.json: dataset.tests: unknown field; expected one of name, description, metadata, evaluators, test_cases",
        run=True,
    ),
    "vanna test_cases a mapping": Bad(
        {
            "v.dataset.json": json.dumps(
                {"dataset": {"name": "o", "test_cases": {"id": "v1", "message": "hi"}}}
            )
        },
        "v.dataset.json: dataset.test_cases: expected a list of test cases; found",
    ),
    "vanna no test cases": Bad(
        {"v.dataset.json": json.dumps({"dataset": {"name": "o", "test_cases": []}})},
        "v.dataset.json: dataset.test_cases: at least one test case is required",
    ),
    "vanna case without message": Bad(
        {"v.dataset.json": vanna([{"id": "v1"}])},
        "v.dataset.json: dataset.test_cases[0].message: required field is missing",
    ),
    "vanna case without id": Bad(
        {"v.dataset.json": vanna([{"message": "hi"}])},
        "v.dataset.json: dataset.test_cases[0].id: required field is missing",
    ),
    "vanna blank message": Bad(
        {"v.dataset.json": vanna([{"id": "v1", "message": " "}])},
        "v.dataset.json: dataset.test_cases[0].message: Value error, must be non-empty",
    ),
    "vanna duplicate ids": Bad(
        {"v.dataset.json": vanna([{"id": "v1", "message": "a"}, {"id": "v1", "message": "b"}])},
        "v.dataset.json: dataset.test_cases: duplicate case id 'v1'",
    ),
    "vanna misspelt expected_outcome field": Bad(
        {
            "v.dataset.json": vanna(
                [{"id": "v1", "message": "hi", "expected_outcome": {"tools_caled": ["a"]}}]
            )
        },
        "v.dataset.json: dataset.test_cases[0].expected_outcome.tools_caled: Extra inputs are not permitted",
    ),
    "vanna min_components above max": Bad(
        {
            "v.dataset.json": vanna(
                [
                    {
                        "id": "v1",
                        "message": "hi",
                        "expected_outcome": {"min_components": 3, "max_components": 1},
                    }
                ]
            )
        },
        "v.dataset.json: dataset.test_cases[0].expected_outcome: Value error, min_components must not exceed max_components",
    ),
    "vanna negative max time": Bad(
        {
            "v.dataset.json": vanna(
                [{"id": "v1", "message": "hi", "expected_outcome": {"max_execution_time_ms": -5}}]
            )
        },
        "v.dataset.json: dataset.test_cases[0].expected_outcome.max_execution_time_ms: Input should be greater than 0",
    ),
    "vanna tools_called a string": Bad(
        {
            "v.dataset.json": vanna(
                [{"id": "v1", "message": "hi", "expected_outcome": {"tools_called": "search"}}]
            )
        },
        "v.dataset.json: dataset.test_cases[0].expected_outcome.tools_called: Input should be a valid list; found 'search'",
    ),
    "vanna unknown evaluator": Bad(
        {"v.dataset.json": vanna(evaluators=["VibesEvaluator"])},
        "v.dataset.json: dataset.evaluators[0]: unknown metric 'VibesEvaluator'; valid metrics are:",
        run=True,
    ),
    "vanna evaluator without name": Bad(
        {"v.dataset.json": vanna(evaluators=[{"threshold": 0.5}])},
        "v.dataset.json: dataset.evaluators[0]: expected an evaluator name or {name: ..., arguments}; found {'threshold': 0.5}",
    ),
    "vanna evaluator a number": Bad(
        {"v.dataset.json": vanna(evaluators=[3])},
        "v.dataset.json: dataset.evaluators[0]: expected an evaluator name or {name: ..., arguments}; found 3",
    ),
    "vanna evaluator with a bad field": Bad(
        {"v.dataset.json": vanna(evaluators=[{"name": "OutputEvaluator", "retry_on_failure": 9}])},
        "v.dataset.json: dataset.evaluators[0].retry_on_failure: Input should be less than or equal to 3",
    ),
    "vanna metadata a string": Bad(
        {"v.dataset.json": vanna(metadata="agent.py:agent")},
        "v.dataset.json: dataset.metadata: expected a mapping; found 'agent.py:agent'",
    ),
    "json a 5000-digit number": Bad(
        {"s.evalset.json": evalset().replace('"eval_set_id"', '"x": ' + "9" * 5000 + ', "eval_set_id"')},
        "s.evalset.json: invalid JSON: a number with more than 4300 digits",
        run=True,
    ),
    "yaml a 5000-digit threshold": Bad(
        {"agent.yaml": metrics("[{metric: bleu, threshold: " + "9" * 5000 + "}]")},
        "agent.yaml: invalid YAML: a number with more than 4300 digits",
    ),
    "yaml aliases repeating 19 MB of text": Bad(
        {"agent.yaml": aliased_text()},
        "agent.yaml: invalid YAML: aliases repeat 19.1 MB of text, more than the 10 MB allowed",
        run=True,
    ),
    "attached file a folder": Bad(
        {"agent.yaml": files("[{path: docs, type: text}]"), "docs": FOLDER},
        "agent.yaml: test_cases[0].files[0].path: docs is a folder, not a file; expected a file to attach",
    ),
    "attached file a named pipe": Bad(
        {"agent.yaml": files("[{path: pipe, type: text}]"), "pipe": os.mkfifo},
        "agent.yaml: test_cases[0].files[0].path: pipe is a named pipe (FIFO), not a file",
        run=True,
    ),
    "vanna one id 20,000 times": Bad(
        {"v.dataset.json": vanna([{"id": "v1", "message": "hi"}] * 20_000)},
        "v.dataset.json: dataset.test_cases: duplicate case id 'v1' (given 20000 times)",
    ),
    "vanna a 1e6-character id": Bad(
        {"v.dataset.json": vanna([{"id": "v" * 1_000_000, "message": "hi"}])},
        "v.dataset.json: dataset.test_cases[0].id: at most 200 characters; found 1000000",
    ),
}


def _write(folder: Path, bad: Bad) -> tuple[Path, Path | None]:
    (folder / "agent.py").write_text(AGENT)
    for name, content in bad.files.items():
        path = folder / name
        if content is FOLDER:
            path.mkdir()
        elif callable(content):
            content(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    suite = folder / (bad.suite or next(iter(bad.files)))
    return suite, folder / bad.config if bad.config else None


def _assert_one_clear_error(bad: Bad, code: int, out: str, err: str) -> None:
    assert code == EXIT_BAD_INPUT, f"exit {code}\n{out}{err}"
    assert "Traceback" not in out + err
    assert "error: 1 problem(s), nothing was run" in err, err
    assert len(err.strip().splitlines()) == 2, err  # the problem on one line
    assert bad.expected in err, err  # the file, the field, what was expected
    assert len(err) < 2000, err  # a message, not a dump


@pytest.mark.parametrize("name", list(CORPUS))
def test_validate_refuses_each_malformed_input(name: str, tmp_path: Path, capsys) -> None:
    bad = CORPUS[name]
    suite, config = _write(tmp_path, bad)
    code = main(["validate", str(suite), *(["--config", str(config)] if config else [])])
    out, err = capsys.readouterr()
    _assert_one_clear_error(bad, code, out, err)


# Checked when a run is prepared: agent configs are loaded, and the command's own numbers.
RUN_ONLY: dict[str, Bad] = {
    "http endpoint missing url": Bad(
        {"s.evalset.json": evalset(), "endpoint.yaml": "timeout_s: 5\n"},
        "endpoint.yaml: url: Field required",
        extra={"--agent": "http:{dir}/endpoint.yaml"},
    ),
    "http endpoint negative timeout": Bad(
        {"s.evalset.json": evalset(), "endpoint.yaml": "url: http://127.0.0.1:9/chat\ntimeout_s: -1\n"},
        "endpoint.yaml: timeout_s: Input should be greater than 0",
        extra={"--agent": "http:{dir}/endpoint.yaml"},
    ),
    "http endpoint unknown field": Bad(
        {"s.evalset.json": evalset(), "endpoint.yaml": "url: http://127.0.0.1:9/chat\nretries: 3\n"},
        "endpoint.yaml: retries: Extra inputs are not permitted",
        extra={"--agent": "http:{dir}/endpoint.yaml"},
    ),
    "http endpoint a list": Bad(
        {"s.evalset.json": evalset(), "endpoint.yaml": "- url: http://127.0.0.1:9/chat\n"},
        "endpoint.yaml: (top level): Input should be a valid dictionary",
        extra={"--agent": "http:{dir}/endpoint.yaml"},
    ),
    "http endpoint a folder": Bad(
        {"s.evalset.json": evalset(), "endpoint.yaml": FOLDER},
        "endpoint.yaml': config file",
        extra={"--agent": "http:{dir}/endpoint.yaml"},
    ),
    "http endpoint broken yaml": Bad(
        {"s.evalset.json": evalset(), "endpoint.yaml": "url: [http://127.0.0.1:9/chat\n"},
        "endpoint.yaml: line 2, column 1: invalid YAML: expected ',' or ']'",
        extra={"--agent": "http:{dir}/endpoint.yaml"},
    ),
    "openai agent without model": Bad(
        {"s.evalset.json": evalset(), "bot.yaml": "instructions: Be brief.\n"},
        "bot.yaml: model: Field required",
        extra={"--agent": "openai:{dir}/bot.yaml"},
    ),
    "openai agent instructions file missing": Bad(
        {"s.evalset.json": evalset(), "bot.yaml": "model: gpt-4o-mini\ninstructions: {file: nowhere.md}\n"},
        "bot.yaml: instructions.file (line 2): nowhere.md: file not found",
        extra={"--agent": "openai:{dir}/bot.yaml"},
    ),
    "openai agent tool rounds 0": Bad(
        {"s.evalset.json": evalset(), "bot.yaml": "model: gpt-4o-mini\nmax_tool_rounds: 0\n"},
        "bot.yaml: max_tool_rounds: Input should be greater than or equal to 1",
        extra={"--agent": "openai:{dir}/bot.yaml"},
    ),
    "agent attribute missing": Bad(
        {"s.evalset.json": metadata(agent="agent.py:nope", eval_config=INLINE_CONFIG)},
        "agent.py has no attribute 'nope'",
    ),
    "agent not callable": Bad(
        {"s.evalset.json": metadata(agent="agent.py:NOT_CALLABLE", eval_config=INLINE_CONFIG)},
        "agent.py:NOT_CALLABLE' is a int, not a callable",
    ),
    "literal judge api key": Bad(
        {
            "agent.yaml": holodeck(
                evaluations="evaluations:\n  model: {name: m, api_key: sk-literal-key}\n"
                "  metrics: [{type: geval, name: G, criteria: c}]\n"
            )
        },
        "agent.yaml: metric 'geval': api_key must be a reference",
        extra={"--agent": "{dir}/agent.py:agent"},
    ),
    "agent file missing": Bad(
        {"s.evalset.json": metadata(agent="nowhere.py:agent", eval_config=INLINE_CONFIG)},
        "nowhere.py not found",
    ),
    "variant name of 300 characters": Bad(
        {"s.evalset.json": evalset()},
        "s.evalset.json: variants.0.name: String should have at most 100 characters",
        extra={"--variant": "v" * 300 + "={dir}/agent.py:agent"},
    ),
    "negative repeat count": Bad(
        {"s.evalset.json": evalset()},
        "s.evalset.json: repeat: Input should be greater than or equal to 1",
        extra={"--repeat": "-1"},
    ),
    "zero concurrency": Bad(
        {"s.evalset.json": evalset()},
        "s.evalset.json: concurrency: Input should be greater than or equal to 1",
        extra={"--concurrency": "0"},
    ),
    "significance above 1": Bad(
        {"s.evalset.json": evalset()},
        "s.evalset.json: significance: Input should be less than 1",
        extra={"--significance": "1.5"},
    ),
    "pass rate above 100": Bad(
        {"s.evalset.json": evalset()},
        "s.evalset.json: min_pass_rate: Input should be less than or equal to 100",
        extra={"--min-pass-rate": "150"},
    ),
}
RUN_CASES = {name: bad for name, bad in CORPUS.items() if bad.run} | RUN_ONLY


def test_the_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 50
    assert len(RUN_CASES) >= 30
    suites = {name.rpartition("/")[2] for bad in CORPUS.values() for name in bad.files}
    assert {"s.evalset.json", "a.test.json", "l.test.json", "agent.yaml", "v.dataset.json"} <= suites
    assert {"eval_config.json", "test_config.json", "strict.json"} <= suites  # configs they reference


RUN_PARAMS = list(RUN_CASES)


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness")
@pytest.mark.parametrize("name", RUN_PARAMS)
def test_run_refuses_each_malformed_input_before_it_starts(
    name: str, tmp_path: Path, sqlite_url: str, capsys
) -> None:
    bad = RUN_CASES[name]
    suite, config = _write(tmp_path, bad)
    options = [item.format(dir=tmp_path) for pair in bad.extra.items() for item in pair]
    if config:
        options += ["--config", str(config)]
    reports = tmp_path / "reports"
    code = main(["run", str(suite), "--db", sqlite_url, "--no-progress", "--output", str(reports), *options])
    out, err = capsys.readouterr()
    _assert_one_clear_error(bad, code, out, err)
    assert not reports.exists()  # nothing ran
    assert "sk-literal-key" not in out + err


@pytest.mark.parametrize(
    "content", ["TOPSECRET-7f3a: not json at all", '"TOPSECRET-7f3a"', "[1, 'TOPSECRET-7f3a']"]
)
def test_an_eval_config_error_never_echoes_the_files_contents(content: str, tmp_path: Path, capsys) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "notes.json").write_text(content)
    suite = tmp_path / "s.evalset.json"
    suite.write_text(metadata(eval_config="notes.json"))
    code = main(["validate", str(suite)])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT, out + err
    assert "notes.json" in err and "TOPSECRET" not in out + err, err
