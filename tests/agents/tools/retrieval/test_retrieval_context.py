"""HoloDeck's RAG judges read `retrieval_context`, which HoloDeck fills only from retrieval tools'
results (`build_retrieval_context_from_tools` with `_get_retrieval_tool_names`: vectorstore and
hierarchical_document tools, MCP tools marked `is_retrieval`), and only when the case states
none itself. Through `proctor run`: a scripted model calls a vectorstore and a function tool;
the faithfulness judge is shown the vectorstore's result and not the function's, a case stating
its own retrieval_context is judged against that alone, and a case that retrieved nothing is not
scored by faithfulness (HoloDeck skips it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proctor.cli import main
from proctor.metrics.base import MetricContext, retrieval_results
from proctor.models.agentflow import ToolCall
from proctor.models.case import Case, Turn
from proctor.models.outcome import RETRIEVAL_TOOLS, AgentTurn
from tests.fakes import FakeOpenAI, judged

SECRET_CODE = "ORDER-STATUS-7731"  # what only the function tool returns
POLICY = "Opened electronics carry a 15% restocking fee."
STATED = "The restocking fee was waived in 2024."
TOOLS_PY = f'''
def order_status(order_id: str) -> str:
    """The status of an order."""
    return "{SECRET_CODE}: shipped"
'''
AGENT = """\
name: rag
model: {provider: openai, name: gpt-4o}
instructions: {inline: Answer from the tools.}
tools:
  - {name: policies, type: vectorstore, description: store policies, source: docs/, embedding_model: all-MiniLM-L6-v2}
  - {name: order_status, type: function, description: order status, file: tools.py, function: order_status}
evaluations:
  model: {provider: openai, name: gpt-4o}
  metrics:
    - {type: rag, metric_type: faithfulness, threshold: 0.5}
test_cases:
  - name: searched
    input: What is the restocking fee for opened electronics?
  - name: stated
    input: Is there a restocking fee?
    retrieval_context: ["The restocking fee was waived in 2024."]
  - name: unretrieved
    input: Where is order 12?
"""


class Scripted:
    def __init__(self) -> None:
        self.judged: dict[str, str] = {}  # question -> the faithfulness prompt

    def __call__(self, body: dict[str, Any]) -> Any:
        messages = body["messages"]
        if not body.get("tools"):
            prompt = "\n".join(m["content"] for m in messages)
            question = next(q for q in ("restocking fee for", "Is there", "order 12") if q in prompt)
            self.judged[question] = prompt
            return judged(5)
        question = next(m["content"] for m in messages if m["role"] == "user")
        results = [m["content"] for m in messages if m["role"] == "tool"]
        if "order 12" in question:
            return (
                "shipped"
                if results
                else {"tool_calls": [{"name": "order_status", "arguments": {"order_id": "12"}}]}
            )
        if not results:
            return {
                "tool_calls": [
                    {"name": "policies_search", "arguments": {"query": question}},
                    {"name": "order_status", "arguments": {"order_id": "7"}},
                ]
            }
        return "Opened electronics carry a 15% restocking fee."


@pytest.mark.needs_extra
def test_the_faithfulness_judge_sees_retrieval_results_only(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("sentence_transformers", reason="local embeddings need the `embeddings` extra")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "returns.md").write_text(f"# Returns\n\n{POLICY}\n")
    (tmp_path / "tools.py").write_text(TOOLS_PY)
    (tmp_path / "agent.yaml").write_text(AGENT)
    scripted = Scripted()
    with FakeOpenAI(default=scripted) as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("PROCTOR_INDEX_CACHE", str(tmp_path / "indexes"))
        out = tmp_path / "out"
        args = [
            "--no-prefect",
            "--no-progress",
            "--db",
            f"sqlite:///{tmp_path / 'r.db'}",
            "--output",
            str(out),
        ]
        main(["run", str(tmp_path / "agent.yaml"), *args])
    report = json.loads((out / "report.json").read_text())
    results = {r["test_name"]: r for r in report["results"]}
    assert results["searched"]["tool_calls"] == ["policies_search", "order_status"]

    searched = scripted.judged["restocking fee for"].split("grounded in", 1)[1]
    assert POLICY in searched  # the vectorstore's result is the retrieval context
    assert SECRET_CODE not in searched  # the function tool's is not
    stated = scripted.judged["Is there"].split("grounded in", 1)[1]
    assert STATED in stated and POLICY not in stated and SECRET_CODE not in stated  # the case's own wins
    # nothing retrieved: faithfulness is not scored, as HoloDeck skips it
    assert "order 12" not in scripted.judged
    assert [m["metric_name"] for m in results["unretrieved"]["metric_results"]] == []
    assert [m["metric_name"] for m in results["searched"]["metric_results"]] == ["faithfulness"]


def _turn(calls: list[ToolCall], retrieval: list[str] | None) -> AgentTurn:
    metadata = {RETRIEVAL_TOOLS: retrieval} if retrieval is not None else {}
    return AgentTurn(turn_id="t", input="q", response="a", tool_calls=calls, metadata=metadata)


def test_only_the_named_retrieval_tools_results_are_retrieval_context() -> None:
    calls = [
        ToolCall(name="kb_search", result="chunk one"),
        ToolCall(name="lookup", result="not retrieved"),
        ToolCall(name="docs", result=["a", None, "", "b"]),  # a list: item by item, as HoloDeck
        ToolCall(name="kb_search", result={"shape": "ignored"}),  # neither text nor list: left out
    ]
    assert retrieval_results([_turn(calls, ["kb_search", "docs"])]) == ["chunk one", "a", "b"]
    assert retrieval_results([_turn(calls, None)]) == []  # an agent that names none retrieves nothing
    case = Case(case_id="c", turns=[Turn(turn_id="t", input="q")])
    context = MetricContext(case=case, turns=[_turn(calls, ["kb_search"])], earlier_retrieval=("earlier",))
    assert context.retrieval_context == ["earlier", "chunk one"]  # the conversation's, this turn's last
    stated = case.model_copy(update={"turns": [Turn(turn_id="t", input="q", retrieval_context=["given"])]})
    assert MetricContext(case=stated, turns=[_turn(calls, ["kb_search"])]).retrieval_context == ["given"]


def test_an_agents_retrieval_tools_are_its_index_tools_and_marked_mcp_entries() -> None:
    from proctor.agents.tools import retrieval_tool_names

    entries = [
        {"name": "kb", "type": "vectorstore"},
        {"name": "law", "type": "hierarchical_document"},
        {"name": "files", "type": "mcp", "is_retrieval": True},
        {"name": "memory", "type": "mcp"},
        {"name": "calc", "type": "function"},
        {"name": "summarise", "type": "prompt"},
    ]
    assert retrieval_tool_names(entries) == ["files", "kb_search", "law_search"]
