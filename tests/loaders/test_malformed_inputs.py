"""A corpus of malformed suites and configs, in every format: each gets exit code 2 and one
clear message naming the file and the field, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.cli import EXIT_BAD_INPUT, main

GOOD_CASE = {
    "eval_id": "c1",
    "conversation": [
        {
            "invocation_id": "t1",
            "user_content": {"role": "user", "content": "hi"},
            "expected_final_response": {"role": "assistant", "content": "hello"},
        }
    ],
}
AGENT = "def agent(request):\n    return 'hello'\n"


def evalset(**changes: object) -> str:
    suite = {
        "eval_set_id": "s",
        "metadata": {"agent": "agent.py:agent", "eval_config": {"criteria": {"response_match": 0.5}}},
        "eval_cases": [GOOD_CASE],
    }
    suite.update(changes)
    return json.dumps(suite)


def case(**changes: object) -> str:
    return evalset(eval_cases=[{**GOOD_CASE, **changes}])


def criteria(value: object) -> str:
    return evalset(metadata={"agent": "agent.py:agent", "eval_config": {"criteria": value}})


def turn(**changes: object) -> str:
    return case(conversation=[{**GOOD_CASE["conversation"][0], **changes}])


def holodeck(body: str) -> str:
    return "name: a\n" + body


FILE = "files.evalset.json"

# name -> (file name, content, text the error must contain)
CORPUS: dict[str, tuple[str, str | bytes, str]] = {
    # broken documents
    "empty json": ("s.evalset.json", "", "s.evalset.json"),
    "truncated json": ("s.evalset.json", evalset()[:40], "line 1, column 35: invalid JSON"),
    "json trailing comma": ("s.evalset.json", '{"eval_set_id": "s",}', "line 1, column 21: invalid JSON"),
    "json is a list of numbers": ("s.evalset.json", "[1, 2, 3]", "s.evalset.json"),
    "json is a string": ("s.evalset.json", '"hello"', "s.evalset.json"),
    "json is null": ("s.evalset.json", "null", "s.evalset.json"),
    "binary garbage": ("s.evalset.json", bytes(range(256)) * 4, "s.evalset.json"),
    "latin-1 bytes": ("s.evalset.json", evalset().encode().replace(b'"hi"', b'"h\xe9"'), "s.evalset.json"),
    "deeply nested json": ("s.evalset.json", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    "deeply nested yaml": ("agent.yaml", "a: " + "[" * 100_000 + "]" * 100_000, "agent.yaml"),
    "broken yaml": ("agent.yaml", "name: a\ntest_cases: [\n", "agent.yaml:"),
    "yaml tabs": ("agent.yaml", "name: a\ntest_cases:\n\t- input: q\n", "agent.yaml:"),
    "yaml scalar": ("agent.yaml", "just words", "agent.yaml"),
    "yaml bomb": (
        "agent.yaml",
        "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
        "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\ntest_cases: *g\n",
        "agent.yaml",
    ),
    "unknown extension": ("suite.txt", "hello", "suite.txt"),
    # agentflow evalsets: structure and types
    "no eval_cases": ("s.evalset.json", json.dumps({"eval_set_id": "s"}), "eval_cases"),
    "eval_cases not a list": ("s.evalset.json", evalset(eval_cases={"a": 1}), "eval_cases"),
    "empty eval_cases": ("s.evalset.json", evalset(eval_cases=[]), "s.evalset.json"),
    "eval_set_id a number": ("s.evalset.json", evalset(eval_set_id=12), "eval_set_id"),
    "eval_set_id missing": ("s.evalset.json", json.dumps({"eval_cases": [GOOD_CASE]}), "eval_set_id"),
    "case without eval_id": (
        "s.evalset.json",
        evalset(eval_cases=[{k: v for k, v in GOOD_CASE.items() if k != "eval_id"}]),
        "eval_id",
    ),
    "duplicate case ids": ("s.evalset.json", evalset(eval_cases=[GOOD_CASE, GOOD_CASE]), "c1"),
    "conversation not a list": ("s.evalset.json", case(conversation="hi"), "conversation"),
    "empty conversation": ("s.evalset.json", case(conversation=[]), "conversation"),
    "turn without user_content": (
        "s.evalset.json",
        case(conversation=[{"invocation_id": "t1"}]),
        "user_content",
    ),
    "user_content wrong type": ("s.evalset.json", turn(user_content=42), "user_content"),
    "tool trajectory not a list": (
        "s.evalset.json",
        turn(expected_tool_trajectory="get"),
        "expected_tool_trajectory",
    ),
    "tool call without name": ("s.evalset.json", turn(expected_tool_trajectory=[{"args": {}}]), "name"),
    "tool args not an object": (
        "s.evalset.json",
        turn(expected_tool_trajectory=[{"name": "t", "args": [1]}]),
        "args",
    ),
    "tags not a list": ("s.evalset.json", case(tags="x"), "tags"),
    # criteria and metrics
    "unknown metric": ("s.evalset.json", criteria({"vibes_score": 0.5}), "vibes_score"),
    "threshold above 1": ("s.evalset.json", criteria({"response_match": 1.5}), "between 0 and 1, got 1.5"),
    "threshold negative": ("s.evalset.json", criteria({"response_match": -0.1}), "response_match"),
    "threshold a string": ("s.evalset.json", criteria({"response_match": "high"}), "response_match"),
    "criteria a list": ("s.evalset.json", criteria(["response_match"]), "criteria"),
    "metric unknown argument": (
        "s.evalset.json",
        criteria({"trajectory_match": {"threshold": 1.0, "match_type": "SIDEWAYS"}}),
        "match_type",
    ),
    "metric argument wrong type": (
        "s.evalset.json",
        criteria({"trajectory_match": {"threshold": 1.0, "check_args": "maybe"}}),
        "check_args",
    ),
    "eval_config file missing": (
        "s.evalset.json",
        evalset(metadata={"agent": "agent.py:agent", "eval_config": "nowhere.json"}),
        "nowhere.json",
    ),
    # HoloDeck agent.yaml
    "holodeck no test cases": ("agent.yaml", holodeck(""), "agent.yaml"),
    "holodeck test_cases a mapping": ("agent.yaml", holodeck("test_cases: {a: 1}\n"), "test_cases"),
    "holodeck case without input": ("agent.yaml", holodeck("test_cases: [{name: c}]\n"), "input"),
    "holodeck input a list": ("agent.yaml", holodeck("test_cases: [{input: [1, 2]}]\n"), "input"),
    "holodeck unknown metric type": (
        "agent.yaml",
        holodeck("test_cases: [{input: q}]\nevaluations:\n  metrics: [{type: vibes}]\n"),
        "vibes",
    ),
    "holodeck unknown standard metric": (
        "agent.yaml",
        holodeck("test_cases: [{input: q}]\nevaluations:\n  metrics: [{type: standard, metric: nope}]\n"),
        "nope",
    ),
    "holodeck threshold out of range": (
        "agent.yaml",
        holodeck("test_cases: [{input: q}]\nevaluations:\n  metrics: [{metric: bleu, threshold: 7}]\n"),
        "expected a threshold between 0 and 1, got 7",
    ),
    "holodeck negative retries": (
        "agent.yaml",
        holodeck(
            "test_cases: [{input: q}]\nevaluations:\n  metrics: [{metric: bleu, retry_on_failure: -1}]\n"
        ),
        "retry_on_failure",
    ),
    "holodeck more than 10 files": (
        "agent.yaml",
        holodeck(
            "test_cases:\n  - input: q\n    files:\n"
            + "".join(f"      - {{path: f{i}.txt, type: text}}\n" for i in range(11))
        ),
        "files",
    ),
    "holodeck file escapes the suite": (
        "agent.yaml",
        holodeck("test_cases:\n  - input: q\n    files: [{path: ../../../etc/passwd, type: text}]\n"),
        "../../../etc/passwd leaves the suite folder",
    ),
    "holodeck absolute file path": (
        "agent.yaml",
        holodeck("test_cases:\n  - input: q\n    files: [{path: /etc/hostname, type: text}]\n"),
        "/etc/hostname leaves the suite folder",
    ),
    "holodeck file without path or url": (
        "agent.yaml",
        holodeck("test_cases:\n  - input: q\n    files: [{type: text}]\n"),
        "files",
    ),
    "holodeck file bad type": (
        "agent.yaml",
        holodeck("test_cases:\n  - input: q\n    files: [{path: a.txt, type: hologram}]\n"),
        "type",
    ),
    "holodeck url with file scheme": (
        "agent.yaml",
        holodeck("test_cases:\n  - input: q\n    files: [{url: 'file:///etc/passwd', type: text}]\n"),
        "only http and https URLs are fetched, not 'file'",
    ),
    "holodeck test_cases_file escapes": (
        "agent.yaml",
        holodeck("test_cases_file: ../../outside.yaml\n"),
        "../../outside.yaml leaves the suite folder",
    ),
    "holodeck unset variable": (
        "agent.yaml",
        holodeck("test_cases: [{input: '${PROCTOR_SURELY_UNSET_VAR}'}]\n"),
        "PROCTOR_SURELY_UNSET_VAR",
    ),
    # ADK
    "adk test file not a list": ("a.test.json", '{"query": 1}', "a.test.json"),
    "adk entry without query": (
        "a.test.json",
        json.dumps([{"expected_tool_use": []}]),
        "unrecognised suite format",
    ),
    "adk camelCase evalset without cases": (
        "a.evalset.json",
        json.dumps({"evalSetId": "x", "evalCases": "none"}),
        "evalCases",
    ),
    # Vanna
    "vanna case without message": ("v.json", json.dumps({"test_cases": [{"id": "a"}]}), "message"),
    "vanna expected_outcome wrong type": (
        "v.json",
        json.dumps({"test_cases": [{"id": "a", "message": "m", "expected_outcome": "good"}]}),
        "expected_outcome",
    ),
    "vanna negative max time": (
        "v.json",
        json.dumps(
            {
                "test_cases": [
                    {"id": "a", "message": "m", "expected_outcome": {"max_execution_time_ms": "soon"}}
                ]
            }
        ),
        "max_execution_time_ms",
    ),
}


def _write(folder: Path, name: str, content: str | bytes) -> Path:
    (folder / "agent.py").write_text(AGENT)
    path = folder / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def test_the_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 50


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_each_malformed_input_is_one_clear_error(name: str, tmp_path: Path, capsys) -> None:
    filename, content, expected = CORPUS[name]
    path = _write(tmp_path, filename, content)
    code = main(["validate", str(path)])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT, f"{name}: exit {code}\n{out}{err}"
    assert "Traceback" not in out + err
    assert str(tmp_path) in err and expected in err, f"{name}:\n{err}"  # the file, and what is wrong
    assert len(err) < 5000  # a message, not a dump


def test_an_absurdly_large_suite_file_is_refused_before_it_is_read(tmp_path: Path, capsys) -> None:
    path = tmp_path / "huge.evalset.json"
    with open(path, "wb") as handle:  # sparse: 300 MB that take no disk
        handle.truncate(300 * 2**20)
    assert main(["validate", str(path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "file is 300 MB, over the 256 MB limit for a suite file" in err


def test_a_directory_where_a_suite_file_is_expected(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["validate", str(tmp_path / "empty")]) == EXIT_BAD_INPUT
    assert "no suite files found" in capsys.readouterr().err


def test_a_missing_path(tmp_path: Path, capsys) -> None:
    assert main(["validate", str(tmp_path / "nope.evalset.json")]) == EXIT_BAD_INPUT
    assert "nope.evalset.json" in capsys.readouterr().err


RUN_TIME: dict[str, tuple[str, str]] = {
    # checked when a run is prepared (they import the agent or need the environment)
    "agent file missing": ("nowhere.py:agent", "nowhere.py"),
    "agent attribute missing": ("agent.py:nope", "nope"),
    "agent not callable": ("agent.py:NOT_CALLABLE", "NOT_CALLABLE"),
}


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness")
@pytest.mark.parametrize("name", sorted(RUN_TIME))
def test_a_bad_agent_target_stops_the_run_before_it_starts(name: str, tmp_path: Path, capsys) -> None:
    target, expected = RUN_TIME[name]
    (tmp_path / "agent.py").write_text(AGENT + "NOT_CALLABLE = 3\n")
    path = tmp_path / "s.evalset.json"
    path.write_text(evalset(metadata={"agent": target, "eval_config": {"criteria": {"response_match": 0.5}}}))
    code = main(
        ["run", str(path), "--db", f"sqlite:///{tmp_path}/r.db", "--no-progress", "--output", str(tmp_path)]
    )
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and expected in err and "Traceback" not in err, err
    assert not (tmp_path / "r.db").exists() or "case_result" not in (tmp_path / "r.db").read_bytes().decode(
        "latin-1"
    )


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness")
def test_a_literal_api_key_stops_the_run(tmp_path: Path, capsys) -> None:
    path = _write(
        tmp_path,
        "agent.yaml",
        holodeck(
            "test_cases: [{input: q}]\nevaluations:\n  model: {provider: openai, name: m, api_key: sk-literal}\n"
            "  metrics: [{type: geval, name: G, criteria: c}]\n"
        ),
    )
    code = main(
        ["run", str(path), "--agent", f"{tmp_path}/agent.py:agent", "--db", f"sqlite:///{tmp_path}/r.db"]
    )
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "api_key must be a reference" in err and "sk-literal" not in err
