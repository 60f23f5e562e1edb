"""HoloDeck's customer-support sample (copied unchanged, see tests/data/holodeck/samples/SOURCE.md)
through `proctor run`: its MCP memory server is the real npm package the sample names, started
once by the run and stopped at its end; its vectorstores are indexed from the sample's data with
the local embedding model. A scripted model calls the tools and answers from what they returned;
a scripted judge scores an answer by whether it holds the fact the case's ground truth names.
Cases answered from the tools pass; the one the model answers without them fails."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proctor.cli import EXIT_FAILED, main
from tests.agents.tools.conftest import alive
from tests.fakes import FakeOpenAI, judged

pytest.importorskip("mcp", reason="MCP tools need the `mcp` extra: pip install -e '.[mcp]'")
pytest.importorskip("faiss", reason="vectorstore tools need the `retrieval` extra")
pytest.importorskip("sentence_transformers", reason="local embeddings need the `embeddings` extra")
pytestmark = pytest.mark.needs_extra  # CI runs these with the extras installed
if shutil.which("npx") is None:
    pytest.skip("the sample's MCP server is an npm package: npx is needed", allow_module_level=True)

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "holodeck" / "samples" / "customer-support"

# What each case's ground truth asks for, as the scripted judge looks for it in the answer.
FACTS = {
    "How do I reset my password?": "Forgot Password",
    "I want to cancel my subscription": "Cancel Subscription",
    "What are the API rate limits for the Pro plan?": "10,000",
    "What are your support hours?": "9 AM - 6 PM",
    "How do I connect Slack to my account?": "Integrations",
}
UNAIDED = "How do I connect Slack to my account?"  # the model answers this one without its tools


class Desk:
    """The scripted agent model and judge, and what the agent was given and answered."""

    def __init__(self) -> None:
        self.answers: dict[str, str] = {}
        self.tool_results: dict[str, dict[str, str]] = {}

    def __call__(self, body: dict[str, Any]) -> Any:
        return self.agent(body) if body.get("tools") else self.judge(body)

    def agent(self, body: dict[str, Any]) -> Any:
        messages = body["messages"]
        question = next(m["content"] for m in messages if m["role"] == "user")
        ticket = f"ticket: {question}"
        called = {c["id"]: c["function"]["name"] for m in messages for c in m.get("tool_calls") or []}
        results = {called[m["tool_call_id"]]: m["content"] for m in messages if m["role"] == "tool"}
        self.tool_results[question] = results
        if question == UNAIDED:
            self.answers[question] = "I am not sure, sorry."
        elif not results:  # remember the ticket in MCP memory, and search the knowledge
            return {
                "tool_calls": [
                    {
                        "name": "create_entities",
                        "arguments": {
                            "entities": [{"name": ticket, "entityType": "ticket", "observations": [question]}]
                        },
                    },
                    {"name": "faq_search", "arguments": {"query": question}},
                    {"name": "knowledge_base_search", "arguments": {"query": question}},
                ]
            }
        elif "open_nodes" not in results:  # read the ticket back from memory
            return {"tool_calls": [{"name": "open_nodes", "arguments": {"names": [ticket]}}]}
        else:
            remembered = json.loads(results["open_nodes"])["entities"][0]["observations"][0]
            self.answers[question] = (
                f"About '{remembered}': {results['faq_search']}\n{results['knowledge_base_search']}"
            )
        return self.answers[question]

    def judge(self, body: dict[str, Any]) -> str:
        prompt = " ".join(m["content"] for m in body["messages"])
        if '"steps"' in prompt:  # G-Eval's own steps, when the metric gives none
            return json.dumps({"steps": ["Check the answer addresses the question."]})
        # the answer under judgment (Professionalism is shown the answer alone)
        question = next(q for q, answer in self.answers.items() if answer in prompt)
        return judged(5 if FACTS[question] in self.answers[question] else 1)


@pytest.fixture
def desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Desk, FakeOpenAI]]:
    scripted = Desk()
    with FakeOpenAI(default=scripted) as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-sample")
        monkeypatch.setenv("PROCTOR_EMBEDDINGS", "local")  # offline: the embeddings extra's model
        monkeypatch.setenv("PROCTOR_INDEX_CACHE", str(tmp_path / "indexes"))
        monkeypatch.setenv("HOME", str(tmp_path / "home"))  # npx's cache, and the memory server's file
        yield scripted, api


def test_the_customer_support_sample_runs_with_its_real_mcp_server(tmp_path: Path, desk) -> None:
    scripted, api = desk
    out = tmp_path / "out"
    args = ["--no-prefect", "--no-progress", "--db", f"sqlite:///{tmp_path / 'r.db'}", "--output", str(out)]
    # one case at a time: the memory server rewrites its whole file on every call, so calls from
    # cases at once could lose each other's entities (in HoloDeck as here)
    args += ["--concurrency", "1"]
    assert main(["run", str(SAMPLE / "agent.yaml"), *args]) == EXIT_FAILED
    report = json.loads((out / "report.json").read_text())
    results = {r["test_name"]: r for r in report["results"]}
    assert len(results) == 5
    by_question = {r["test_input"]: r for r in report["results"]}
    right = {question: FACTS[question] in answer for question, answer in scripted.answers.items()}
    # a case passes exactly when its answer is right: those answered from the tools' results
    assert {question: by_question[question]["passed"] for question in right} == right
    assert not right[UNAIDED] and results["Integration - Slack setup"]["tools_matched"] is False
    assert sum(right.values()) >= 3, right  # the FAQ facts, found by the real index
    # The memory server is the real one: what the model read back is what it stored there.
    for question, results in scripted.tool_results.items():
        if question == UNAIDED:
            continue
        stored = json.loads(results["create_entities"])
        assert stored == [{"name": f"ticket: {question}", "entityType": "ticket", "observations": [question]}]
        assert json.loads(results["open_nodes"])["entities"] == stored
    offered = {
        t["function"]["name"]
        for t in next(c["body"] for c in api.completions if c["body"].get("tools"))["tools"]
    }
    assert {
        "faq_search",
        "knowledge_base_search",
        "product_catalog_search",
        "create_entities",
        "open_nodes",
    } <= offered
    # the server (npx, then node) was started from this test's HOME, and is gone
    assert list((tmp_path / "home").rglob("server-memory/package.json"))
    assert not [pid for pid in _processes_mentioning(str(tmp_path / "home")) if alive(pid)]


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text in cmdline.read_bytes().decode(errors="replace"):
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found
