"""The runners that answer HoloDeck's `vectorstore` and `hierarchical_document` tools in an
agent's tool loop (the contract: `proctor.agents.tools.runner`).

Each offers the model one tool, named and described as HoloDeck's OpenAI Agents backend names
it (`holodeck/lib/backends/openai_agents_tool_adapters.py`): `<name>_search`, "Search <name>:
<description>", one string parameter `query`. The index is built when the run opens the tool
(once per run and process; reused from the index cache when the sources and settings have not
changed), and each call is answered from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from proctor.agents.tools.retrieval.context import ContextGenerator
from proctor.agents.tools.retrieval.embeddings import (
    Embedder,
    EmbeddingError,
    LocalEmbedder,
    OpenAIEmbedder,
    embedding_model_name,
    embedding_provider,
    expected_dimensions,
    make_embedder,
)
from proctor.agents.tools.retrieval.sources import SourceError
from proctor.agents.tools.runner import ToolCallError, ToolContext, ToolOpenError
from proctor.models.holodeck_tools import HierarchicalDocumentTool, VectorstoreTool

if TYPE_CHECKING:
    from proctor.agents.protocol import AgentRequest

NO_RESULTS = "No results found."  # HoloDeck's sentinel for a search that found nothing
SEARCH_PARAMETERS = {
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
    "additionalProperties": False,
}


def validated(model: type[BaseModel], entry: Mapping[str, Any]) -> Any:
    """The entry as HoloDeck's model of its kind, or a ValueError naming each bad field."""
    try:
        return model.model_validate(dict(entry))
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in issue['loc']) or 'entry'}: {issue['msg']}"
            for issue in error.errors()
        )
        raise ValueError(problems) from None


def retrieval_tools(document: Mapping[str, Any]) -> list[Any]:
    """The agent's vectorstore and hierarchical_document entries (for the shared embedding model)."""
    models = {"vectorstore": VectorstoreTool, "hierarchical_document": HierarchicalDocumentTool}
    tools = []
    for raw in document.get("tools") or []:
        model = models.get(raw.get("type")) if isinstance(raw, dict) else None
        if model is not None:
            try:
                tools.append(model.model_validate(raw))
            except ValidationError:
                continue  # that entry's own runner reports it
    return tools


def agent_embedder(tool: Any, context: ToolContext) -> tuple[Embedder, int | None]:
    """The embedding model HoloDeck would use for this agent, and the length it expects."""
    provider = embedding_provider(context.model, context.document)
    name = embedding_model_name(retrieval_tools(context.document) or [tool], provider)
    model, local = make_embedder(name)
    if local and name != model and name not in ("all-MiniLM-L6-v2", "local"):
        context.warn(
            f"tool {tool.name!r}: PROCTOR_EMBEDDINGS=local embeds with all-MiniLM-L6-v2 instead of "
            f"{name!r}: scores and rankings are not the ones HoloDeck's model gives"
        )
    embedder: Embedder = LocalEmbedder() if local else OpenAIEmbedder(provider, model)
    if not isinstance(tool, VectorstoreTool):
        return embedder, None  # HoloDeck checks the length for vectorstore tools only
    explicit = tool.embedding_dimensions
    return embedder, explicit if local else expected_dimensions(explicit, model)


def search_schema(tool: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": f"{tool.name}_search",
            "description": f"Search {tool.name}: {tool.description}",
            "parameters": SEARCH_PARAMETERS,
        },
    }


class IndexRunner:
    """What both retrieval runners do with their index: build it when the run opens the tool,
    offer `<name>_search`, answer each call from the index, let it go at the end."""

    kind: str
    tool: Any
    index: Any

    async def open(self) -> None:
        try:
            await self.index.build()
        except (SourceError, EmbeddingError, ValueError, OSError) as error:
            raise ToolOpenError(f"{self.kind} tool {self.tool.name!r}: {error}") from None

    def schemas(self) -> list[dict[str, Any]]:
        return [search_schema(self.tool)]

    async def call(self, name: str, args: dict[str, Any], request: AgentRequest) -> Any:
        try:
            return await self.index.search(str(args.get("query", "")))
        except EmbeddingError as error:
            raise ToolCallError(f"{self.kind} tool {self.tool.name!r}: {error}") from None

    async def aclose(self) -> None:
        self.index.close()


class VectorstoreRunner(IndexRunner):
    kind = "vectorstore"

    def __init__(self, entry: Mapping[str, Any], context: ToolContext) -> None:
        from proctor.agents.tools.retrieval.vectorstore import VectorstoreIndex

        self.tool: VectorstoreTool = validated(VectorstoreTool, entry)
        self.context = context
        embedder, dimensions = agent_embedder(self.tool, context)
        self.index = VectorstoreIndex(self.tool, context.base_dir, embedder, dimensions, context.warn)


def context_generator(tool: HierarchicalDocumentTool, context: ToolContext) -> ContextGenerator | None:
    """Who writes the chunks' contexts, by HoloDeck's precedence: the tool's `context_model`;
    for an Anthropic agent, its own model (HoloDeck uses the Claude Agent SDK there; Proctor
    the same prompt through Anthropic's OpenAI-compatible endpoint, and says so); else nobody,
    and chunks are embedded as they are."""
    if not tool.contextual_embeddings:
        return None
    if tool.context_model is not None:
        model = tool.context_model
    elif context.model.provider == "anthropic":
        model = context.model
        context.warn(
            f"tool {tool.name!r}: chunk contexts are written by the agent's Anthropic model with HoloDeck's "
            "prompt through Anthropic's OpenAI-compatible endpoint (HoloDeck uses the Claude Agent SDK)"
        )
    else:
        return None
    return ContextGenerator(model, tool.context_max_tokens, tool.context_concurrency, context.warn)


class HierarchicalDocumentRunner(IndexRunner):
    kind = "hierarchical_document"

    def __init__(self, entry: Mapping[str, Any], context: ToolContext) -> None:
        from proctor.agents.tools.retrieval.hierarchical import HierarchicalIndex

        self.tool: HierarchicalDocumentTool = validated(HierarchicalDocumentTool, entry)
        embedder, dimensions = agent_embedder(self.tool, context)
        generator = context_generator(self.tool, context)
        self.index = HierarchicalIndex(
            self.tool, context.base_dir, embedder, dimensions, generator, context.warn
        )
