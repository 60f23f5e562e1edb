"""HoloDeck `tools:` entries: checked as HoloDeck's own models check them, every refusal naming
the file, the entry and the line; cloud-only stores refused with the reason; named stores from
the global config resolved; settings HoloDeck never reads named in a warning."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from proctor.loaders import SuiteError, load_suite

HEAD = """\
name: tools-agent
model: {provider: openai, name: gpt-4o-mini}
instructions: Answer from the documents.
tools:
"""
TAIL = """\
evaluations:
  metrics:
    - {type: standard, metric: equality}
test_cases:
  - {input: q, ground_truth: a}
"""


def _write(tmp_path: Path, tools: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(HEAD + textwrap.indent(textwrap.dedent(tools), "  ") + TAIL, encoding="utf-8")
    return path


def _problems(path: Path) -> list[str]:
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    return [str(problem) for problem in caught.value.problems]


def test_a_misspelt_key_inside_a_tool_entry_is_refused_with_its_line(tmp_path):
    path = _write(
        tmp_path,
        """\
        - name: kb
          type: vectorstore
          description: Product docs
          source: docs/
          top_kk: 3
        """,
    )
    (problem,) = _problems(path)
    assert f"{path}: tools[0].top_kk: unknown key (line 9) for a vectorstore tool" in problem
    assert "top_k" in problem.split("valid keys:")[1]


def test_a_misspelt_key_in_a_function_tool_is_refused_too(tmp_path):
    path = _write(
        tmp_path,
        """\
        - name: lookup
          type: function
          description: Look up
          file: tools.py
          fucntion: lookup
        """,
    )
    (problem,) = _problems(path)
    assert "tools[0].fucntion: unknown key (line 9) for a function tool" in problem


def test_each_entry_is_validated_as_holodeck_validates_its_kind(tmp_path):
    path = _write(
        tmp_path,
        """\
        - name: docs
          type: hierarchical_document
          description: Statutes
          source: law.md
          semantic_weight: 0.9
        - name: faq
          type: vectorstore
          description: FAQ
          source: faq.json
          vector_field: question
        - name: summarize
          type: prompt
          description: Summarize text
          template: "Summarize: {{text}}"
        - name: bad-name
          type: vectorstore
          description: x
          source: x.md
          top_k: 101
        - name: ghost
          type: retriever
          description: x
        """,
    )
    problems = "\n".join(_problems(path))
    assert "tools[0]: Value error, Hybrid search weights must sum to 1.0, got 1.400000" in problems
    assert "tools[1]: Value error, id_field is required when vector_field is specified" in problems
    assert "tools[2].parameters: required field is missing (line 15)" in problems
    assert "tools[3].name: String should match pattern '^[0-9A-Za-z_]+$'" in problems
    assert "tools[3].top_k: Value error, top_k should not exceed 100 (line 23)" in problems
    assert "tools[4].type: unknown tool type 'retriever' (line 25)" in problems


def test_duplicate_tool_names_are_refused(tmp_path):
    path = _write(
        tmp_path,
        """\
        - {name: kb, type: vectorstore, description: a, source: a.md}
        - {name: kb, type: vectorstore, description: b, source: b.md}
        """,
    )
    assert any("Duplicate tool names found: kb" in problem for problem in _problems(path))


@pytest.mark.parametrize(
    "provider", ["pinecone", "azure-ai-search", "azure-cosmos-nosql", "azure-cosmos-mongo"]
)
def test_cloud_only_stores_are_refused_with_the_reason(tmp_path, provider):
    path = _write(
        tmp_path,
        f"""\
        - name: kb
          type: vectorstore
          description: docs
          source: docs/
          database:
            provider: {provider}
            connection_string: secret-value
        """,
    )
    (problem,) = _problems(path)
    assert f"tools[0].database.provider: '{provider}' cannot be used (line 9)" in problem
    assert "without an account" in problem and "remove `database`" in problem
    assert "secret-value" not in problem


def test_stores_proctor_has_no_connector_for_are_refused_with_the_way_out(tmp_path):
    path = _write(
        tmp_path,
        """\
        - {name: kb, type: vectorstore, description: d, source: d/, database: {provider: postgres}}
        """,
    )
    (problem,) = _problems(path)
    assert "'postgres' is not supported" in problem and "remove `database` (in memory)" in problem


def test_remote_sources_and_opensearch_are_refused(tmp_path):
    path = _write(
        tmp_path,
        """\
        - {name: kb, type: vectorstore, description: d, source: "s3://bucket/docs"}
        - name: law
          type: hierarchical_document
          description: d
          source: law.md
          keyword_index: {provider: opensearch, endpoint: "https://localhost:9200", index_name: law}
        """,
    )
    problems = "\n".join(_problems(path))
    assert "tools[0].source: remote source 's3://bucket/docs' (line 5) is not fetched" in problems
    assert "tools[1].keyword_index.provider: 'opensearch' (line 10)" in problems


def test_settings_holodeck_never_reads_are_named_in_a_warning(tmp_path):
    path = _write(
        tmp_path,
        """\
        - name: kb
          type: vectorstore
          description: docs
          source: docs/
          chunk_size: 256
          chunk_overlap: 32
          record_path: items
        """,
    )
    suite = load_suite(path)
    text = "\n".join(suite.warnings)
    assert "tools[0]: chunk_overlap has no effect" in text and "split_plaintext_paragraph" in text
    assert "tools[0]: record_path has no effect" in text
    assert "chunk_size" not in text


def test_a_named_database_comes_from_the_global_config(tmp_path):
    (tmp_path / "config.yaml").write_text(
        "vectorstores:\n  local:\n    provider: pinecone\n    connection_string: pc-key\n", encoding="utf-8"
    )
    path = _write(
        tmp_path,
        """\
        - {name: kb, type: vectorstore, description: d, source: d/, database: local}
        - {name: faq, type: vectorstore, description: d, source: f/, database: nowhere}
        """,
    )
    (problem,) = _problems(path)  # the named store is Pinecone: refused as if written inline
    assert "tools[0].database.provider: 'pinecone' cannot be used" in problem
    (tmp_path / "config.yaml").write_text(
        "vectorstores:\n  local:\n    provider: chromadb\n    connection_string: http://localhost:8000\n",
        encoding="utf-8",
    )
    suite = load_suite(path)
    text = "\n".join(suite.warnings)
    assert "tools[1].database 'nowhere' is not a vectorstore of the global config (available: local)" in text
    assert "vectorstores is not used" not in text
    assert "tools[0]: database 'chromadb' is kept in memory: Proctor has no Chroma client" in text
