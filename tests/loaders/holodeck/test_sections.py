"""The agent.yaml sections HoloDeck reads and Proctor does not use (`execution`,
`observability`, `deployment`, `claude`, `openai`) and `instructions`, `embedding_provider`:
a key HoloDeck's models refuse is refused, named with its file and line, as HoloDeck refuses
the file. They were accepted: `instructions: {inline: ..., filex: ...}` ran the agent without
a word, and a misspelt `execution` or `observability` key passed `proctor validate`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from proctor.loaders import SuiteError, load_suite
from proctor.loaders.holodeck.sections import SECTION_KEYS
from tests.upstream_holodeck import run_holodeck, skip_without_holodeck

TAIL = """\
evaluations:
  metrics:
    - {type: standard, metric: equality}
test_cases:
  - {input: q, ground_truth: a}
"""


def _refused(tmp_path: Path, head: str) -> list[str]:
    path = tmp_path / "agent.yaml"
    path.write_text(head + TAIL)
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    return [str(problem) for problem in caught.value.problems]


def _lines(problems: list[str]) -> set[int]:
    return {int(line) for problem in problems for line in re.findall(r"\(line (\d+)\)", problem)}


@pytest.mark.parametrize(
    ("head", "location", "line"),
    [
        (
            "name: a\nexecution:\n  llm_timeout: 60\n  paralel_test_cases: 2\n",
            "execution.paralel_test_cases",
            4,
        ),
        (
            "observability:\n  enabled: true\n  traces:\n    sample_rat: 1.0\n",
            "observability.traces.sample_rat",
            4,
        ),
        ("deployment:\n  port: 8080\n  registry: {url: ghcr.io, repo: x}\n", "deployment.registry.repo", 3),
        ("claude:\n  max_turn: 20\n", "claude.max_turn", 2),
        ("openai:\n  permissions: {allowed_tool: [a]}\n", "openai.permissions.allowed_tool", 2),
        (
            "embedding_provider:\n  provider: openai\n  nam: text-embedding-3-small\n",
            "embedding_provider.nam",
            3,
        ),
    ],
)
def test_a_misspelt_key_in_a_section_proctor_does_not_use_is_refused_at_its_line(
    tmp_path: Path, head: str, location: str, line: int
) -> None:
    problems = _refused(tmp_path, head)
    assert any(f"agent.yaml: {location}: " in problem for problem in problems), problems
    assert line in _lines(problems), problems


MODEL = "model: {provider: openai, name: gpt-4o}\n"


@pytest.mark.parametrize(
    ("instructions", "message", "line"),
    [
        ("{inline: Be brief., filex: prompt.md}", "instructions.filex: unknown key", 2),
        ("\n  file: prompt.md\n  inline: Be brief.", "instructions: give file or inline, not both", 2),
        ("{inlin: Be brief.}", "instructions: give file (a path) or inline (the text)", 2),
        ("{inline: ''}", "instructions.inline: expected non-empty text", 2),
        (
            "\n  file: ../../etc/prompt.md",
            "instructions.file: ../../etc/prompt.md leaves the suite folder",
            3,
        ),
        ("[Be brief.]", "instructions: expected {file: path} or {inline: text}", 2),
    ],
)
def test_instructions_are_checked_as_holodeck_checks_them(
    tmp_path: Path, instructions: str, message: str, line: int
) -> None:
    (tmp_path / "prompt.md").write_text("Be brief.")
    problems = _refused(tmp_path, f"{MODEL}instructions: {instructions}\n")
    assert any(message in problem for problem in problems), problems
    assert line in _lines(problems), problems


def test_instructions_holodeck_accepts_load(tmp_path: Path) -> None:
    (tmp_path / "prompt.md").write_text("Be brief.")
    for instructions in ("{file: prompt.md}", "{inline: Be brief.}", "Be brief."):
        (tmp_path / "agent.yaml").write_text(f"{MODEL}instructions: {instructions}\n{TAIL}")
        assert load_suite(tmp_path / "agent.yaml").agent == "openai:agent.yaml"


DERIVE = """
import json, typing
from pydantic import BaseModel
from holodeck.models.agent import Agent
def models_in(ann):
    if typing.get_origin(ann) is None:
        return [ann] if isinstance(ann, type) and issubclass(ann, BaseModel) else []
    if typing.get_origin(ann) is dict:
        return []
    return [m for a in typing.get_args(ann) for m in models_in(a)]
table = {}
def walk(path, model):
    assert model.model_config.get("extra") == "forbid", path
    table[path] = sorted(f.alias or n for n, f in model.model_fields.items())
    for n, f in model.model_fields.items():
        for m in models_in(f.annotation):
            walk(path + "." + (f.alias or n), m)
for section in ("execution", "observability", "deployment", "claude", "openai"):
    for m in models_in(Agent.model_fields[section].annotation):
        walk(section, m)
print(json.dumps(table))
"""


@pytest.mark.needs_extra
def test_the_section_keys_are_holodecks_own() -> None:
    """The table, derived again from holodeck-ai 0.7.1's models (every one `extra="forbid"`)."""
    skip_without_holodeck()  # holodeck-ai's code runs in a process of its own
    theirs = run_holodeck(DERIVE, None)
    assert {location: sorted(keys) for location, keys in SECTION_KEYS.items()} == theirs
