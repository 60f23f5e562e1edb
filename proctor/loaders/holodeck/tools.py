"""The `tools:` entries of a HoloDeck agent.yaml, checked as HoloDeck checks them, and what
Proctor does with each field: runs it, says by name that it changes nothing, or refuses the
file with the reason (a refusal names the file, the entry and the line).

HoloDeck's own models (`models/holodeck_tools.py`) decide what is a valid entry; this module
adds what only a run can honour: named vector stores from the global config, the database
providers that need a cloud account, the settings HoloDeck itself never reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from proctor.loaders.errors import Problem, found, problems_from_validation
from proctor.loaders.holodeck.lines import line_at
from proctor.models.holodeck_tools import (
    MAX_TOOLS,
    TOOL_MODELS,
    TOOL_TYPES,
    DatabaseConfig,
    HierarchicalDocumentTool,
    PromptTool,
    VectorstoreTool,
)
from proctor.settings import value

# Providers that exist only as a hosted service: nothing to run without an account.
CLOUD_ONLY_PROVIDERS = {
    "azure-ai-search": "Azure AI Search is a hosted Azure service",
    "azure-cosmos-mongo": "Azure Cosmos DB (MongoDB vCore) is a hosted Azure service",
    "azure-cosmos-nosql": "Azure Cosmos DB (NoSQL) is a hosted Azure service",
    "pinecone": "Pinecone is a hosted service",
}
# Providers that could run locally but for which Proctor has no store: refused with the way out.
UNSUPPORTED_PROVIDERS = {
    "postgres": "PostgreSQL with pgvector",
    "weaviate": "Weaviate",
    "sql-server": "SQL Server",
}
LOCAL_PROVIDERS = ("in-memory", "chromadb", "faiss", "qdrant")
REMOTE_SCHEMES = ("s3://", "az://", "http://", "https://")
# Fields HoloDeck 0.7.1 accepts and never reads, with where that shows.
HOLODECK_IGNORES = {
    "record_path": "HoloDeck's structured loader never reads it",
    "record_prefix": "HoloDeck's structured loader never reads it",
    "meta_prefix": "HoloDeck's structured loader never reads it",
    "chunk_overlap": (
        "HoloDeck's chunker (Semantic Kernel's split_plaintext_paragraph) takes no overlap, "
        "so chunks never overlap there either"
    ),
}

# hierarchical_document fields HoloDeck 0.7.1 validates and never uses (its tool passes only
# max_chunk_tokens, the domain and the depth to its chunker, only the semantic and keyword
# weights to its hybrid search, and has no reranker, definition or cross-reference step).
HIERARCHICAL_IGNORES = {
    "chunking_strategy": "HoloDeck's chunker always splits by structure",
    "chunk_overlap": "HoloDeck's structured chunker takes no overlap",
    "exact_weight": "HoloDeck's hybrid search fuses only the semantic and keyword rankings",
    "extract_definitions": "HoloDeck extracts no definitions at search time",
    "extract_cross_references": "HoloDeck extracts no cross-references",
    "enable_reranking": "HoloDeck has no reranking step",
    "reranker_model": "HoloDeck has no reranking step",
}


def _at(file: str, index: int, key: str | None = None) -> str:
    """` (line N)`: the line of `tools[index]`, or of `key` inside it (a dotted path such as
    `context_model.provider` goes as deep as the file has it), read from the file's YAML nodes."""
    line = line_at(file, f"tools[{index}]" + (f".{key}" if key else ""))
    return f" (line {line})" if line else ""


def _unknown_key_problems(
    file: str, index: int, raw: dict[str, Any], model: type[BaseModel]
) -> list[Problem]:
    valid = set(model.model_fields)
    return [
        Problem(
            file,
            f"tools[{index}].{key}",
            f"unknown key{_at(file, index, str(key))} for a {raw.get('type', 'function')} tool; "
            f"valid keys: {', '.join(sorted(valid))}",
        )
        for key in raw
        if key not in valid
    ]


def resolve_database_references(tools: Any, vectorstores: dict[str, Any], where: str) -> list[str]:
    """Each vectorstore tool's `database: name` replaced (in place) by the global config's
    `vectorstores.name`, as HoloDeck's loader does; an unknown name is stored in memory, with
    HoloDeck's warning. Returns the warnings."""
    warnings: list[str] = []
    for index, raw in enumerate(tools if isinstance(tools, list) else []):
        if not isinstance(raw, dict) or raw.get("type") != "vectorstore":
            continue
        database = raw.get("database")
        if not isinstance(database, str):
            continue
        if database not in vectorstores:
            warnings.append(
                f"{where}: tools[{index}].database {database!r} is not a vectorstore of the global "
                f"config (available: {', '.join(sorted(vectorstores)) or 'none'}); stored in memory, "
                "as HoloDeck does"
            )
            raw["database"] = None
            continue
        named = vectorstores[database]
        if isinstance(named, dict):
            entry = {"provider": named.get("provider"), "connection_string": named.get("connection_string")}
            entry.update(named.get("options") or {})
            raw["database"] = entry
    return warnings


def _database_findings(
    file: str, index: int, database: DatabaseConfig | str | None, warnings: list[str], where: str
) -> list[Problem]:
    if isinstance(database, str):
        warnings.append(
            f"{where}: database reference {database!r} is not resolved (HoloDeck resolves names only for "
            "vectorstore tools); stored in memory, as HoloDeck does"
        )
        return []
    if database is not None and database.provider == "chromadb":
        warnings.append(
            f"{where}: database 'chromadb' is kept in memory: Proctor has no Chroma client (HoloDeck does "
            "the same whenever Chroma is not installed or not reachable; the search is exact either way)"
        )
    if database is None or database.provider in LOCAL_PROVIDERS:
        return []
    location = f"tools[{index}].database.provider"
    if database.provider in CLOUD_ONLY_PROVIDERS:
        reason = CLOUD_ONLY_PROVIDERS[database.provider]
        return [
            Problem(
                file,
                location,
                f"{database.provider!r} cannot be used{_at(file, index, 'database')}: {reason}, which "
                "Proctor cannot reach without an account; the search results do not depend on the store, "
                f"so remove `database` (in memory) or use one of {', '.join(LOCAL_PROVIDERS)}",
            )
        ]
    label = UNSUPPORTED_PROVIDERS[database.provider]
    return [
        Problem(
            file,
            location,
            f"{database.provider!r} is not supported{_at(file, index, 'database')}: Proctor has no {label} "
            "store; the search results do not depend on the store, so remove `database` (in memory) or use "
            f"one of {', '.join(LOCAL_PROVIDERS)}",
        )
    ]


def _source_findings(file: str, index: int, source: str) -> list[Problem]:
    if source.startswith(REMOTE_SCHEMES):
        return [
            Problem(
                file,
                f"tools[{index}].source",
                f"remote source {source!r}{_at(file, index, 'source')} is not fetched by Proctor: "
                "download the files and give their local path",
            )
        ]
    return []


def _vectorstore_findings(
    file: str, index: int, tool: VectorstoreTool, raw: dict[str, Any], warnings: list[str], where: str
) -> list[Problem]:
    for key, why in HOLODECK_IGNORES.items():
        if raw.get(key) is not None:
            warnings.append(f"{where}: {key} has no effect ({why}); Proctor does the same")
    problems = _source_findings(file, index, tool.source)
    return problems + _database_findings(file, index, tool.database, warnings, where)


# What `PROCTOR_KEYWORD_INDEX=in-memory` changes for a tool whose keyword_index is OpenSearch.
OPENSEARCH_DIFFERS = (
    "OpenSearch scores each field apart (Lucene BM25, k1 1.2, its standard analyzer) and keeps the best "
    "field's score times its boost (defined_term x3, parent_chain and section_id x2), while the "
    "in-memory index (HoloDeck's own in-memory backend: rank_bm25, k1 1.5, the fields repeated for "
    "weight) scores them as one text, so keyword hits, and the hybrid ranking fused from them, may "
    "differ from HoloDeck's against a cluster"
)
KEYWORD_FALLBACK_ENV = "PROCTOR_KEYWORD_INDEX"


def keyword_fallback() -> bool:
    """Whether the user asked for the in-memory keyword index in place of an OpenSearch one."""
    return (value(KEYWORD_FALLBACK_ENV) or "").lower() == "in-memory"


def _opensearch_findings(
    file: str, index: int, tool: HierarchicalDocumentTool, warnings: list[str], where: str
) -> list[Problem]:
    """An OpenSearch keyword index is a server Proctor does not connect to: refused, unless the
    user asks for the in-memory index in its place, which the run's warnings then name."""
    if keyword_fallback():
        warnings.append(
            f"{where}: keyword_index 'opensearch' replaced by the in-memory BM25 index, as "
            f"{KEYWORD_FALLBACK_ENV}=in-memory asks: no connection is made to {tool.keyword_index.endpoint} "
            f"(index {tool.keyword_index.index_name!r}; endpoint, index_name, username, password, api_key, "
            f"verify_certs and timeout_seconds are not used). {OPENSEARCH_DIFFERS}"
        )
        return []
    return [
        Problem(
            file,
            f"tools[{index}].keyword_index.provider",
            f"'opensearch'{_at(file, index, 'keyword_index')} cannot be used: Proctor does not connect to "
            f"OpenSearch ({tool.keyword_index.endpoint}). Remove keyword_index to use the in-memory BM25 "
            f"index (HoloDeck's default), or set {KEYWORD_FALLBACK_ENV}=in-memory to use it in this run "
            "without editing the file (the run's warnings then say so: rankings may differ from "
            "OpenSearch's)",
        )
    ]


def _hierarchical_findings(
    file: str,
    index: int,
    tool: HierarchicalDocumentTool,
    raw: dict[str, Any],
    warnings: list[str],
    where: str,
) -> list[Problem]:
    for key, why in HIERARCHICAL_IGNORES.items():
        if key in raw:
            warnings.append(f"{where}: {key} has no effect ({why}); Proctor does the same")
    database = tool.database
    if not isinstance(database, str) and database is not None and database.provider == "qdrant":
        warnings.append(
            f"{where}: with a qdrant database HoloDeck runs the keyword half of hybrid search inside "
            "Qdrant; Proctor ranks keywords with the in-memory BM25 index, as for every other store, so "
            "the fused ranking may differ from HoloDeck's"
        )
    problems = _source_findings(file, index, tool.source)
    problems += _database_findings(file, index, tool.database, warnings, where)
    if tool.keyword_index is not None and tool.keyword_index.provider == "opensearch":
        problems += _opensearch_findings(file, index, tool, warnings, where)
    return problems


def tool_entries(
    file: str,
    tools: Any,
    warnings: list[str],
) -> tuple[list[BaseModel], list[Problem]]:
    """Each `tools:` entry as HoloDeck's model of its kind, and the problems that refuse the file."""
    if tools is None:
        return [], []
    if not isinstance(tools, list):
        return [], [Problem(file, "tools", f"expected a list of tool entries; found {found(tools)}")]
    problems: list[Problem] = []
    entries: list[BaseModel] = []
    if len(tools) > MAX_TOOLS:
        problems.append(Problem(file, "tools", f"at most {MAX_TOOLS} tools per agent; found {len(tools)}"))
    for index, raw in enumerate(tools):
        where = f"{file}: tools[{index}]"
        if not isinstance(raw, dict):
            problems.append(
                Problem(
                    file, f"tools[{index}]", f"expected a tool mapping{_at(file, index)}; found {found(raw)}"
                )
            )
            continue
        kind = raw.get("type", "function")
        model = TOOL_MODELS.get(kind) if isinstance(kind, str) else None
        if model is None:
            problems.append(
                Problem(
                    file,
                    f"tools[{index}].type",
                    f"unknown tool type {kind!r}{_at(file, index, 'type')}; "
                    f"expected one of {', '.join(TOOL_TYPES)}",
                )
            )
            continue
        unknown = _unknown_key_problems(file, index, raw, model)
        if unknown:
            problems += unknown
            continue
        try:
            tool = model.model_validate(raw)
        except ValidationError as error:
            for problem in problems_from_validation(file, error, f"tools[{index}]"):
                key = problem.location.split(".", 1)[1] if "." in problem.location else None
                problems.append(Problem(file, problem.location, f"{problem.message}{_at(file, index, key)}"))
            continue
        if isinstance(tool, VectorstoreTool):
            problems += _vectorstore_findings(file, index, tool, raw, warnings, where)
        elif isinstance(tool, HierarchicalDocumentTool):
            problems += _hierarchical_findings(file, index, tool, raw, warnings, where)
        elif isinstance(tool, PromptTool):
            warnings.append(
                f"{where}: prompt tools are not run by HoloDeck 0.7.1 (its backends skip them: its model is "
                "never offered one); Proctor offers and runs it as HoloDeck's documentation describes"
            )
        entries.append(tool)
    names = [getattr(entry, "name", None) for entry in entries]
    duplicates = sorted({name for name in names if name is not None and names.count(name) > 1})
    if duplicates:
        problems.append(
            Problem(
                file,
                "tools",
                f"Duplicate tool names found: {', '.join(duplicates)}. Each tool must have a unique name.",
            )
        )
    return entries, problems


def source_path(tool: VectorstoreTool | HierarchicalDocumentTool, base_dir: Path) -> Path:
    """Where a tool's `source` is: relative to the agent.yaml's folder, `file://` stripped."""
    source = tool.source.removeprefix("file://")
    path = Path(source)
    return path if path.is_absolute() else (base_dir / path).resolve()
