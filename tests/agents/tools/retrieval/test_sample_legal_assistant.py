"""HoloDeck's legal-assistant sample (copied unchanged, see tests/data/holodeck/samples/SOURCE.md)
through `proctor run`: its `legislation_search` hierarchical_document tool indexes the sample's
H.R. 8847 PDF (chunk contexts written by its Azure `context_model`, here the scripted server;
chunks embedded with the local model), and its `filesystem` MCP tool is the real npm server over
the sample's `data/` folder.

Unchanged, the sample is refused before anything runs, twice over and each time saying why and
what to do: its keyword index is an OpenSearch cluster Proctor does not connect to, and its
Claude model authenticates with `auth_provider: oauth_token`, a Claude Code subscription token
Proctor cannot use against Anthropic's API. The run then takes the two ways out the refusals
name: `PROCTOR_KEYWORD_INDEX=in-memory` (the in-memory BM25 index in OpenSearch's place, named in
the run's warnings) and, in a copy, `auth_provider: api_key` (as the sample's own comment says)
with the copy's model `endpoint` on the scripted server.

The scripted model searches the legislation with the user's words for the first two questions
and answers with the section it found; for the third it reads a report from the filesystem
server instead, so that case misses its expected `legislation_search` and fails: the sample has
no metrics, so a case passes exactly when its expected tool was called and it answered."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from markitdown import MarkItDown

from proctor.cli import EXIT_BAD_INPUT, EXIT_FAILED, main
from proctor.models.request import EvaluationRequest
from proctor.run.preparation import prepare
from tests.fakes import FakeOpenAI

pytest.importorskip("sentence_transformers", reason="local embeddings need the `embeddings` extra")
pytest.importorskip("mcp", reason="MCP tools need the `mcp` extra")
pytestmark = pytest.mark.needs_extra  # CI runs these with the extras installed
if shutil.which("npx") is None:
    pytest.skip("the sample's MCP server is an npm package: npx is needed", allow_module_level=True)

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "holodeck" / "samples" / "legal-assistant"
DEFINITIONS = "What is the definition of 'covered AI system' in this legislation?"
SECTION_3 = "What does Section 3 of the act cover?"
REPORTING = "What are the reporting requirements for federal agencies?"
REPORT_FILE = "cias_hr8847_noncompliance_report.txt"
ACT = "HR8847_CNIMDT_AIGCE_STD_Act.pdf"
CONTEXT = "This chunk is part of H.R. 8847, the CNIMDT-AIGCE-STD Act."


def words(text: str) -> str:
    """Text compared word by word (the chunker writes headings as markdown `#`s)."""
    return " ".join(re.sub(r"#+ ", " ", text).split())


class Counsel:
    """The scripted Claude model, and the Azure context model the index asks."""

    def __init__(self) -> None:
        self.read: dict[str, list[str]] = {}  # question -> the tool results the model received
        self.contexts = 0

    def __call__(self, body: dict[str, Any]) -> Any:
        messages = body["messages"]
        if not body.get("tools"):  # HoloDeck's contextual-retrieval prompt, one per chunk
            assert "!---CHUNK START---!" in messages[-1]["content"]
            self.contexts += 1
            return CONTEXT
        question = next(m["content"] for m in messages if m["role"] == "user")
        results = [m["content"] for m in messages if m["role"] == "tool"]
        self.read[question] = results
        if question != REPORTING:
            if not results:
                return {
                    "tool_calls": [{"name": "legislation_search_search", "arguments": {"query": question}}]
                }
            return results[0].split("\n---\n")[0]  # the top section, as found
        if not results:
            return {"tool_calls": [{"name": "list_allowed_directories", "arguments": {}}]}
        if len(results) == 1:
            allowed = results[0].splitlines()[-1].strip()
            path = f"{allowed}/{REPORT_FILE}"
            return {"tool_calls": [{"name": "read_text_file", "arguments": {"path": path}}]}
        return results[-1][:500]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    counsel = Counsel()
    with FakeOpenAI(default=counsel) as api:
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", api.base_url.removesuffix("/v1"))
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-sample")
        monkeypatch.setenv("AZURE_OPENAI_DEPLOYMENT_NAME", "gpt-5-mini")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-sample")
        monkeypatch.delenv("OPENSEARCH_PASSWORD", raising=False)  # not needed: no cluster is reached
        monkeypatch.delenv("PROCTOR_KEYWORD_INDEX", raising=False)
        monkeypatch.setenv("PROCTOR_EMBEDDINGS", "local")  # offline: the embeddings extra's model
        monkeypatch.setenv("PROCTOR_INDEX_CACHE", str(tmp_path / "indexes"))
        monkeypatch.setenv("HOME", str(tmp_path / "home"))  # npx's cache: this test's own
        yield {"counsel": counsel, "api": api}


def args(tmp_path: Path) -> list[str]:
    return [
        "--no-prefect",
        "--no-progress",
        "--db",
        f"sqlite:///{tmp_path / 'r.db'}",
        "--output",
        str(tmp_path / "out"),
    ]


def test_the_unchanged_sample_is_refused_with_the_reasons_and_the_ways_out(
    tmp_path: Path, env: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    agent_yaml = str(SAMPLE / "agent.yaml")
    assert main(["run", agent_yaml, *args(tmp_path)]) == EXIT_BAD_INPUT
    err = " ".join(capsys.readouterr().err.split())
    assert f"{agent_yaml}: tools[0].keyword_index.provider: 'opensearch' (line 68) cannot be used" in err
    assert "Proctor does not connect to OpenSearch (https://localhost:9200)" in err
    assert "set PROCTOR_KEYWORD_INDEX=in-memory to use it in this run without editing the file" in err

    monkeypatch.setenv("PROCTOR_KEYWORD_INDEX", "in-memory")
    assert main(["run", agent_yaml, *args(tmp_path)]) == EXIT_BAD_INPUT
    err = " ".join(capsys.readouterr().err.split())
    assert "model.auth_provider (line 9): auth_provider 'oauth_token' cannot be used" in err
    assert "CLAUDE_CODE_OAUTH_TOKEN" in err and "set auth_provider: api_key" in err
    assert not env["api"].requests  # nothing was called


def test_the_legal_assistant_searches_its_legislation(
    tmp_path: Path, env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    counsel, api = env["counsel"], env["api"]
    copy = tmp_path / "legal-assistant"
    shutil.copytree(SAMPLE, copy)
    agent_yaml = copy / "agent.yaml"
    text = agent_yaml.read_text()
    oauth = "  auth_provider: oauth_token  # Change to api_key if using ANTHROPIC_API_KEY\n"
    assert text.count(oauth) == 1
    agent_yaml.write_text(text.replace(oauth, f"  auth_provider: api_key\n  endpoint: {api.base_url}\n"))
    monkeypatch.setenv("PROCTOR_KEYWORD_INDEX", "in-memory")

    assert main(["run", str(agent_yaml), *args(tmp_path)]) == EXIT_FAILED
    # the stand-in is named in the run's warnings, with what it changes
    warnings = " ".join(prepare(EvaluationRequest(suite=str(agent_yaml)))[0].warnings)
    assert (
        "tools[0]: keyword_index 'opensearch' replaced by the in-memory BM25 index, as "
        "PROCTOR_KEYWORD_INDEX=in-memory asks: no connection is made to https://localhost:9200"
    ) in warnings
    assert "may differ from HoloDeck's against a cluster" in warnings
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    results = {r["test_input"]: r for r in report["results"]}
    # a case passes exactly when it called the tool it was expected to call
    assert {q: r["passed"] for q, r in results.items()} == {
        DEFINITIONS: True,
        SECTION_3: True,
        REPORTING: False,
    }
    assert results[DEFINITIONS]["tool_calls"] == ["legislation_search_search"]
    assert results[REPORTING]["tool_calls"] == ["list_allowed_directories", "read_text_file"]
    assert results[REPORTING]["tools_matched"] is False

    # what the model read came from the real index of the act and the real files
    act = words(MarkItDown().convert(str(SAMPLE / "data" / ACT)).text_content)
    for question in (DEFINITIONS, SECTION_3):
        [found] = counsel.read[question]
        blocks = found.split("\n---\n")
        assert len(blocks) == 5  # the tool's top_k
        for block in blocks:
            head, _, body = block.partition("\n\n")
            assert re.match(rf"Score: [01]\.\d{{3}} \| Source: {re.escape(str(copy / 'data' / ACT))}\n", head)
            assert words(body.splitlines()[0]) in act  # a chunk of the act itself
        assert results[question]["agent_response"] == blocks[0]
    assert counsel.contexts > 10  # every chunk of the act was given a context before it was embedded
    report_text = (SAMPLE / "data" / REPORT_FILE).read_text()
    assert counsel.read[REPORTING][-1].strip() == report_text.strip()
    claude = [r for r in api.completions if r["body"].get("tools")]
    assert {r["body"]["model"] for r in claude} == {"claude-sonnet-4-6"}
    assert {r["headers"]["authorization"] for r in claude} == {"Bearer sk-ant-sample"}
