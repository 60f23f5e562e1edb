"""A HoloDeck `hierarchical_document` tool: its documents cut by their structure, indexed for
dense (cosine) and keyword (BM25) search, and each query answered in the `search_mode` the tool
names, as HoloDeck 0.7.1's `HierarchicalDocumentTool` answers it
(`holodeck/tools/hierarchical_document_tool.py`):

* `semantic`: the `top_k` nearest chunks, scores clamped to 0..1;
* `keyword`: the `top_k` BM25 hits, each score divided by the best one;
* `hybrid` (the default): both rankings (`top_k` each) fused by reciprocal rank fusion with
  `semantic_weight` and `keyword_weight` (`exact_weight` is only checked in the weights' sum:
  HoloDeck never searches by it); with no keyword hit, the semantic ranking as it is.

Chunks below `min_score` are dropped. Header-only chunks are never indexed. Each result is
given to the model as HoloDeck's `SearchResult.format()` text, joined by "\\n---\\n":

    Score: 0.873 | Source: /abs/path/policy.md
    Location: Policy > Returns
    Section: h2_policy_returns

    <chunk>
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from proctor.agents.tools.retrieval import index_cache
from proctor.agents.tools.retrieval.context import ContextGenerator
from proctor.agents.tools.retrieval.embeddings import Embedder, check_dimensions
from proctor.agents.tools.retrieval.keyword import BM25Index, reciprocal_rank_fusion
from proctor.agents.tools.retrieval.pdf_headings import document_markdown
from proctor.agents.tools.retrieval.sources import discover_files, resolve_source
from proctor.agents.tools.retrieval.stores import VectorStore, open_store
from proctor.agents.tools.retrieval.structure import (
    DOMAIN_PATTERNS,
    ChunkType,
    DocumentChunk,
    StructuredChunker,
)
from proctor.agents.tools.retrieval.vectorstore import BuildStats
from proctor.models.holodeck_tools import HierarchicalDocumentTool

NO_RESULTS = "No results found."


def format_result(chunk: DocumentChunk, score: float) -> str:
    lines = [
        f"Score: {score:.3f} | Source: {chunk.source_path}",
        f"Location: {' > '.join(chunk.parent_chain) if chunk.parent_chain else 'Root'}",
    ]
    if chunk.section_id:
        lines.append(f"Section: {chunk.section_id}")
    return "\n".join([*lines, "", chunk.content])


class HierarchicalIndex:
    def __init__(
        self,
        tool: HierarchicalDocumentTool,
        base_dir: Path,
        embedder: Embedder,
        expected_dimensions: int | None,
        context: ContextGenerator | None,
        warn: Callable[[str], None],
    ) -> None:
        self.tool = tool
        self.base_dir = base_dir
        self.embedder = embedder
        self.expected_dimensions = expected_dimensions
        self.context = context if tool.contextual_embeddings else None
        self.warn = warn
        self.chunks: dict[str, DocumentChunk] = {}
        self.store: VectorStore | None = None
        self.keywords: BM25Index | None = None
        self.stats = BuildStats()

    def _chunker(self) -> StructuredChunker:
        patterns = None if self.tool.document_domain == "none" else DOMAIN_PATTERNS[self.tool.document_domain]
        return StructuredChunker(self.tool.max_chunk_tokens, patterns, self.tool.max_subsection_depth)

    def _settings(self) -> dict[str, Any]:
        settings = self.tool.model_dump(
            include={"max_chunk_tokens", "document_domain", "max_subsection_depth", "contextual_embeddings"}
        )
        if self.context is not None:
            model = self.context.model
            settings["context"] = [model.provider, model.name, model.endpoint, self.tool.context_max_tokens]
        return settings

    async def build(self) -> BuildStats:
        started = time.perf_counter()
        source = resolve_source(self.tool.source, self.base_dir)
        files = discover_files(source, self.warn)
        if not files:
            self.warn(f"tool {self.tool.name!r}: no supported files found in source {self.tool.source}")
        root = source if source.is_dir() else source.parent
        key = index_cache.index_key("hierarchical", self._settings(), self.embedder.model_id, files, root)
        cached = index_cache.load(key)
        if cached is not None:
            chunks = [DocumentChunk.from_record(record) for record in cached[0]]
            vectors = cached[1]
            self.stats.from_cache = True
        else:
            chunks = await self._chunks(files)
            texts = [chunk.contextualized_content or chunk.content for chunk in chunks]
            embedded = await self.embedder.embed(texts) if texts else []
            check_dimensions(embedded, self.expected_dimensions)
            vectors = np.asarray(embedded, dtype=np.float64)
            index_cache.save(key, [chunk.to_record() for chunk in chunks], vectors)
        self.chunks = {chunk.id: chunk for chunk in chunks}
        dimensions = int(vectors.shape[1]) if chunks else (self.expected_dimensions or 1)
        self.store = open_store(self.tool.database, dimensions, self.tool.name, self.base_dir, self.warn)
        if chunks:
            self.store.add([chunk.id for chunk in chunks], vectors)
            self.keywords = BM25Index(chunks)
        self.stats.files, self.stats.records = len(files), len(self.chunks)
        self.stats.seconds = time.perf_counter() - started
        return self.stats

    async def _chunks(self, files: list[Path]) -> list[DocumentChunk]:
        chunker = self._chunker()
        chunks: list[DocumentChunk] = []
        for path in files:
            try:
                markdown = document_markdown(path)
            except Exception as error:  # HoloDeck indexes nothing of a file it cannot convert
                self.warn(f"tool {self.tool.name!r}: file skipped: {path}: {type(error).__name__}: {error}")
                continue
            if not markdown.strip():
                self.warn(f"tool {self.tool.name!r}: file skipped: {path}: empty")
                continue
            parsed = [c for c in chunker.parse(markdown, str(path)) if c.chunk_type != ChunkType.HEADER]
            if self.context is not None and parsed:
                texts = await self.context.contextualize(parsed, markdown)
            else:
                texts = [chunk.content for chunk in parsed]
            for chunk, text in zip(parsed, texts, strict=True):
                chunk.contextualized_content = text
            chunks += parsed
        return chunks

    async def _semantic(self, vector: list[float], top_k: int) -> list[tuple[str, float]]:
        assert self.store is not None
        return self.store.search(vector, top_k)

    async def search(self, query: str) -> str:
        if not query or not query.strip():
            return "Search query cannot be empty"
        top_k, mode = self.tool.top_k, self.tool.search_mode
        (vector,) = await self.embedder.embed([query])
        if not self.chunks:
            hits: list[tuple[str, float]] = []
        elif mode == "keyword":
            found = self.keywords.search(query, top_k) if self.keywords else []
            best = max((score for _, score in found), default=0.0)
            hits = [(cid, score / best if best > 0 else 0.0) for cid, score in found]
        elif mode == "hybrid":
            semantic = await self._semantic(vector, top_k)
            keyword = self.keywords.search(query, top_k) if self.keywords else []
            weights = [self.tool.semantic_weight, self.tool.keyword_weight]
            fused = (
                reciprocal_rank_fusion([semantic, keyword], self.tool.rrf_k, weights) if keyword else semantic
            )
            hits = [(cid, max(0.0, min(1.0, score))) for cid, score in fused[:top_k]]
        else:
            hits = [(cid, max(0.0, min(1.0, score))) for cid, score in await self._semantic(vector, top_k)]
        if self.tool.min_score is not None:
            hits = [(cid, score) for cid, score in hits if score >= self.tool.min_score]
        if not hits:
            return NO_RESULTS
        return "\n---\n".join(format_result(self.chunks[cid], score) for cid, score in hits)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
