"""The HoloDeck support table (docs/suites/holodeck.md, generated from
`proctor/agents/tools/holodeck_support.py`): every tool kind and provider HoloDeck accepts is in it,
and what it says is what loading an agent.yaml does."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

from proctor.agents.providers import auth_problem
from proctor.agents.tools.holodeck_support import REFUSED, SUPPORTED, WARNED, support_rows
from proctor.loaders.holodeck.tools import tool_entries
from proctor.models.holodeck import PROVIDERS
from proctor.models.holodeck_tools import TOOL_TYPES, DatabaseConfig, KeywordIndexConfig, MCPTool

PAGE = Path(__file__).resolve().parents[3] / "docs" / "suites" / "holodeck.md"
# HoloDeck's own AuthProvider enum (src/holodeck/models/claude_config.py)
HOLODECK_AUTH_PROVIDERS = ("api_key", "oauth_token", "bedrock", "vertex", "foundry", "custom")


def _table() -> dict[tuple[str, str], str]:
    block = PAGE.read_text(encoding="utf-8").split("<!-- generated: holodeck_support -->", 1)[1]
    block = block.split("<!-- end generated -->", 1)[0]
    rows = re.findall(r"^\| ([^|]+) \| `?([^|`]+?)`? \| (\w+) \|", block, re.M)
    return {(category, value): status for category, value, status in rows}


def test_every_kind_and_provider_holodeck_accepts_is_in_the_table() -> None:
    table = _table()
    expected = {
        "tool kind": TOOL_TYPES,
        "vector store (`database`)": get_args(DatabaseConfig.model_fields["provider"].annotation),
        "keyword index": get_args(KeywordIndexConfig.model_fields["provider"].annotation),
        "MCP transport": get_args(MCPTool.model_fields["transport"].annotation),
        "model provider": PROVIDERS,
        "embeddings": (*PROVIDERS, "local"),
        "Anthropic `auth_provider`": HOLODECK_AUTH_PROVIDERS,
    }
    missing = [
        f"{category}: {value}"
        for category, values in expected.items()
        for value in values
        if (category, value) not in table
    ]
    assert not missing, f"not in {PAGE.name}'s table (run python scripts/docs_reference.py): {missing}"
    assert set(table.values()) == {SUPPORTED, WARNED, REFUSED}
    assert len(table) == len(support_rows())


@pytest.mark.parametrize(
    "row", [r for r in support_rows() if r.category == "vector store (`database`)"], ids=lambda r: r.value
)
def test_a_vector_stores_verdict_is_what_loading_does(row, tmp_path: Path) -> None:
    source = tmp_path / "docs"
    source.mkdir()
    entry = {
        "name": "kb",
        "type": "vectorstore",
        "description": "d",
        "source": "docs",
        "database": {"provider": row.value},
    }
    warnings: list[str] = []
    _, problems = tool_entries(str(tmp_path / "agent.yaml"), [entry], warnings)
    assert bool(problems) == (row.status == REFUSED), problems
    if row.status == WARNED:
        assert any(row.value in warning for warning in warnings)


def test_a_keyword_index_and_an_auth_providers_verdicts_are_what_the_code_does(tmp_path: Path) -> None:
    for row in support_rows():
        if row.category == "Anthropic `auth_provider`":
            assert (auth_problem(row.value) is not None) == (row.status == REFUSED), row
        if row.category == "keyword index":
            index = {"provider": row.value, "endpoint": "https://localhost:9200", "index_name": "law"}
            entry = {"name": "law", "type": "hierarchical_document", "description": "d", "source": "law.md"}
            _, problems = tool_entries(str(tmp_path / "agent.yaml"), [entry | {"keyword_index": index}], [])
            assert bool(problems) == (row.status == REFUSED), row
