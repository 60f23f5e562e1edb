"""HoloDeck's tool entries (`tools:` in an agent.yaml), field for field as HoloDeck 0.7.1's
`holodeck.models.tool` defines them, with the same defaults and validation rules.

Every model forbids unknown keys, as HoloDeck's do, so a misspelt `top_k` is refused instead of
silently searching with the default. What Proctor does with each field (runs it, warns that it
has no effect, or refuses the file with the reason) is decided by
`proctor.loaders.holodeck.tools`; these models only say what a valid entry is.

One deliberate widening: a `function` tool may be written in Proctor's own form (`function:
tools.py:name` without `file`, no `description`, a JSON-schema `parameters`, or no `function`
at all for canned results), which docs/agents.md documents for `openai:` agents.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SecretStr,
    Tag,
    field_validator,
    model_validator,
)

from proctor.models.holodeck import LLMProvider

TOOL_NAME_PATTERN = r"^[0-9A-Za-z_]+$"
MAX_TOOLS = 50  # HoloDeck's Agent.validate_tools
SOURCE_SCHEMES = frozenset({"s3", "az", "https", "http", "file"})
DATABASE_PROVIDERS = (
    "postgres",
    "azure-ai-search",
    "qdrant",
    "weaviate",
    "chromadb",
    "faiss",
    "azure-cosmos-mongo",
    "azure-cosmos-nosql",
    "sql-server",
    "pinecone",
    "in-memory",
)
MCP_COMMANDS = ("npx", "node", "uvx", "docker")
MCP_TRANSPORTS = ("stdio", "sse", "websocket", "http")
SEARCH_MODES = ("semantic", "keyword", "hybrid")
CHUNKING_STRATEGIES = ("structure", "token")
DOCUMENT_DOMAINS = ("none", "us_legislative", "au_legislative", "academic", "technical", "legal_contract")


def _source_scheme(value: str) -> str:
    if not value or not value.strip():
        raise ValueError("source must be a non-empty path")
    if "://" in value:
        scheme = value.split("://", 1)[0].lower()
        if scheme not in SOURCE_SCHEMES:
            supported = ", ".join(sorted(SOURCE_SCHEMES))
            raise ValueError(f"Unsupported source URI scheme '{scheme}'. Supported schemes: {supported}")
    return value


class DatabaseConfig(BaseModel):
    """Where a tool's vectors are stored. Provider-specific keys (`path`, `persist_directory`,
    `db_schema`, ...) are kept, as HoloDeck passes them to the store."""

    model_config = ConfigDict(extra="allow")

    provider: Literal[
        "postgres",
        "azure-ai-search",
        "qdrant",
        "weaviate",
        "chromadb",
        "faiss",
        "azure-cosmos-mongo",
        "azure-cosmos-nosql",
        "sql-server",
        "pinecone",
        "in-memory",
    ]
    connection_string: SecretStr | None = None

    @field_validator("connection_string")
    @classmethod
    def _not_blank(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().strip():
            raise ValueError("connection_string must be non-empty if provided")
        return value


class KeywordIndexConfig(BaseModel):
    """The BM25 index of a hierarchical_document tool: in-process, or an OpenSearch server."""

    model_config = ConfigDict(extra="allow")

    provider: Literal["in-memory", "opensearch"] = "in-memory"
    endpoint: str | None = None
    index_name: str | None = None
    username: str | None = None
    password: SecretStr | None = None
    api_key: SecretStr | None = None
    verify_certs: bool = True
    timeout_seconds: int = Field(default=10, ge=1, le=120)

    @model_validator(mode="after")
    def _opensearch_fields(self) -> KeywordIndexConfig:
        if self.provider == "opensearch":
            if not self.endpoint:
                raise ValueError("endpoint is required when provider is 'opensearch'")
            if not self.index_name:
                raise ValueError("index_name is required when provider is 'opensearch'")
        return self


class FunctionTool(BaseModel):
    """A Python function the model may call (HoloDeck: `file` + `function`)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str = ""
    type: Literal["function"] = "function"
    defer_loading: bool = True
    file: str | None = None
    function: str | None = None
    parameters: dict[str, Any] | None = None

    @field_validator("file", "function")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be non-empty")
        return value


class VectorstoreTool(BaseModel):
    """Semantic search over the files (or structured records) of `source`."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str
    type: Literal["vectorstore"] = "vectorstore"
    defer_loading: bool = True
    source: str
    vector_field: str | list[str] | None = None
    meta_fields: list[str] | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    embedding_model: str | None = None
    embedding_dimensions: int | None = None
    database: DatabaseConfig | str | None = None
    top_k: int = 5
    min_similarity_score: float | None = None
    record_path: str | None = None
    record_prefix: str | None = None
    meta_prefix: str | None = None
    id_field: str | None = None
    field_separator: str = "\n"
    delimiter: str | None = None

    @model_validator(mode="after")
    def _structured_needs_id(self) -> VectorstoreTool:
        if self.vector_field is not None and self.id_field is None:
            raise ValueError("id_field is required when vector_field is specified (structured data mode)")
        return self

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        return _source_scheme(value)

    @field_validator("database")
    @classmethod
    def _database_reference(cls, value: DatabaseConfig | str | None) -> DatabaseConfig | str | None:
        if isinstance(value, str) and not value.strip():
            raise ValueError("database reference must be a non-empty string")
        return value

    @field_validator("chunk_size")
    @classmethod
    def _chunk_size(cls, value: int | None) -> int | None:
        if value is not None and value <= 0:
            raise ValueError("chunk_size must be positive")
        return value

    @field_validator("chunk_overlap")
    @classmethod
    def _chunk_overlap(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise ValueError("chunk_overlap must be non-negative")
        return value

    @field_validator("top_k")
    @classmethod
    def _top_k(cls, value: int) -> int:
        if value <= 0:
            raise ValueError("top_k must be a positive integer")
        if value > 100:
            raise ValueError("top_k should not exceed 100")
        return value

    @field_validator("min_similarity_score")
    @classmethod
    def _min_score(cls, value: float | None) -> float | None:
        if value is not None and not 0.0 <= value <= 1.0:
            raise ValueError("min_similarity_score must be between 0.0 and 1.0")
        return value

    @field_validator("embedding_dimensions")
    @classmethod
    def _dimensions(cls, value: int | None) -> int | None:
        if value is not None and value <= 0:
            raise ValueError("embedding_dimensions must be positive")
        if value is not None and value > 10000:
            raise ValueError("embedding_dimensions unreasonably large (max 10000)")
        return value


class MCPTool(BaseModel):
    """A Model Context Protocol server whose tools the model may call."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str
    type: Literal["mcp"] = "mcp"
    defer_loading: bool = True
    transport: Literal["stdio", "sse", "websocket", "http"] = "stdio"
    command: Literal["npx", "node", "uvx", "docker"] | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None
    env_file: str | None = None
    encoding: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    timeout: float | None = None
    sse_read_timeout: float | None = None
    terminate_on_close: bool | None = None
    config: dict[str, Any] | None = None
    load_tools: bool = True
    load_prompts: bool = True
    request_timeout: int = 60
    is_retrieval: bool = False
    registry_name: str | None = None

    @field_validator("url")
    @classmethod
    def _url_scheme(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if value.startswith("http://"):
            if not value.startswith(("http://localhost", "http://127.0.0.1", "http://[::1]")):
                raise ValueError("'url' must use https:// (or http:// for localhost)")
        elif not value.startswith(("https://", "wss://", "ws://")):
            raise ValueError("'url' must use https://, wss://, or ws:// scheme")
        return value

    @field_validator("request_timeout")
    @classmethod
    def _positive_timeout(cls, value: int) -> int:
        if value <= 0:
            raise ValueError("request_timeout must be positive")
        return value

    @model_validator(mode="after")
    def _transport_fields(self) -> MCPTool:
        if self.transport == "stdio" and self.command is None:
            raise ValueError("'command' is required for stdio transport")
        if self.transport != "stdio" and self.url is None:
            raise ValueError(f"'url' is required for {self.transport} transport")
        return self


class PromptTool(BaseModel):
    """A templated model call: the template filled with the model's arguments, sent to a model."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str
    type: Literal["prompt"] = "prompt"
    defer_loading: bool = True
    template: str | None = None
    file: str | None = None
    parameters: dict[str, dict[str, Any]]
    model: dict[str, Any] | None = None

    @field_validator("template", "file")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be non-empty if provided")
        return value

    @field_validator("parameters")
    @classmethod
    def _some_parameters(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        if not value:
            raise ValueError("parameters must have at least one parameter")
        return value

    @model_validator(mode="after")
    def _template_xor_file(self) -> PromptTool:
        if not self.template and not self.file:
            raise ValueError("Exactly one of 'template' or 'file' must be provided")
        if self.template and self.file:
            raise ValueError("Cannot provide both 'template' and 'file'")
        return self


class HierarchicalDocumentTool(BaseModel):
    """Structure-aware search over markdown/PDF documents: heading-aware chunks, BM25 keyword
    search, dense vectors and exact matches, fused with reciprocal rank fusion."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str
    type: Literal["hierarchical_document"] = "hierarchical_document"
    source: str
    chunking_strategy: Literal["structure", "token"] = "structure"
    max_chunk_tokens: int = Field(default=800, ge=100, le=2000)
    chunk_overlap: int = Field(default=50, ge=0, le=200)
    document_domain: Literal[
        "none", "us_legislative", "au_legislative", "academic", "technical", "legal_contract"
    ] = "none"
    max_subsection_depth: int | None = Field(default=None, ge=1)
    search_mode: Literal["semantic", "keyword", "hybrid"] = "hybrid"
    top_k: int = Field(default=10, ge=1, le=100)
    min_score: float | None = None
    semantic_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    keyword_weight: float = Field(default=0.3, ge=0.0, le=1.0)
    exact_weight: float = Field(default=0.2, ge=0.0, le=1.0)
    rrf_k: int = Field(default=60, ge=1)
    contextual_embeddings: bool = True
    context_max_tokens: int = Field(default=100, ge=50, le=200)
    context_concurrency: int = Field(default=10, ge=1, le=50)
    extract_definitions: bool = True
    extract_cross_references: bool = True
    enable_reranking: bool = False
    reranker_model: LLMProvider | None = None
    context_model: LLMProvider | None = None
    embedding_model: str | None = None
    database: DatabaseConfig | str | None = None
    keyword_index: KeywordIndexConfig | None = None
    defer_loading: bool = True

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        return _source_scheme(value)

    @field_validator("min_score")
    @classmethod
    def _min_score(cls, value: float | None) -> float | None:
        if value is not None and not 0.0 <= value <= 1.0:
            raise ValueError("min_score must be between 0.0 and 1.0")
        return value

    @field_validator("semantic_weight", "keyword_weight", "exact_weight")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("search weights must be finite numbers")
        return value

    @model_validator(mode="after")
    def _weights(self) -> HierarchicalDocumentTool:
        if self.search_mode == "hybrid":
            total = self.semantic_weight + self.keyword_weight + self.exact_weight
            if not math.isclose(total, 1.0, rel_tol=0.0, abs_tol=1e-6):
                raise ValueError(
                    f"Hybrid search weights must sum to 1.0, got {total:.6f} "
                    "(semantic_weight + keyword_weight + exact_weight)"
                )
            if self.semantic_weight + self.keyword_weight <= 0:
                raise ValueError("Hybrid search requires semantic_weight + keyword_weight > 0")
        if self.enable_reranking and self.reranker_model is None:
            raise ValueError("reranker_model is required when enable_reranking=True")
        return self


def _tool_type(value: Any) -> str:
    """The entry's `type`; an entry without one is a function tool (Proctor's own form)."""
    if isinstance(value, dict):
        return str(value.get("type", "function"))
    return str(getattr(value, "type", ""))


ToolEntry = Annotated[
    Annotated[VectorstoreTool, Tag("vectorstore")]
    | Annotated[FunctionTool, Tag("function")]
    | Annotated[MCPTool, Tag("mcp")]
    | Annotated[PromptTool, Tag("prompt")]
    | Annotated[HierarchicalDocumentTool, Tag("hierarchical_document")],
    Discriminator(_tool_type),
]
TOOL_TYPES = ("function", "vectorstore", "hierarchical_document", "mcp", "prompt")
TOOL_MODELS: dict[str, type[BaseModel]] = {
    "function": FunctionTool,
    "vectorstore": VectorstoreTool,
    "hierarchical_document": HierarchicalDocumentTool,
    "mcp": MCPTool,
    "prompt": PromptTool,
}
