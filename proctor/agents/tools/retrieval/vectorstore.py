"""A HoloDeck `vectorstore` tool: its source indexed once, each query answered with the top-k
chunks (or records) above the minimum score, in the text HoloDeck's `VectorStoreTool.search`
returns to the model (`holodeck/tools/vectorstore_tool.py`):

    Found 2 result(s):

    [1] Score: 0.89 | Source: /abs/path/data/docs/api.md
    Content of the matched chunk...

Structured sources (`vector_field` set) answer `[1] ID: <id> | Score: 0.89`, `Content: ...` and,
when `meta_fields` are named, `Metadata: field: value, ...`. No hit above the minimum:
`No relevant results found for query: <query>`.

Scores are cosine similarities clamped to 0..1, as HoloDeck clamps them; `top_k` chunks are
asked of the store, those below `min_similarity_score` dropped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from proctor.agents.tools.retrieval import index_cache
from proctor.agents.tools.retrieval.embeddings import Embedder, check_dimensions
from proctor.agents.tools.retrieval.sources import (
    discover_files,
    file_markdown,
    resolve_source,
    structured_records,
)
from proctor.agents.tools.retrieval.stores import VectorStore, open_store
from proctor.agents.tools.retrieval.text_chunker import DEFAULT_CHUNK_SIZE, split_text
from proctor.models.holodeck_tools import VectorstoreTool


@dataclass
class BuildStats:
    """What building the index took, for the bench and the run's log."""

    files: int = 0
    records: int = 0
    seconds: float = 0.0
    from_cache: bool = False
    skipped: list[str] = field(default_factory=list)


class VectorstoreIndex:
    def __init__(
        self,
        tool: VectorstoreTool,
        base_dir: Path,
        embedder: Embedder,
        expected_dimensions: int | None,
        warn: Callable[[str], None],
    ) -> None:
        self.tool = tool
        self.base_dir = base_dir
        self.embedder = embedder
        self.expected_dimensions = expected_dimensions
        self.warn = warn
        self.records: dict[str, dict[str, Any]] = {}
        self.store: VectorStore | None = None
        self.stats = BuildStats()

    @property
    def structured(self) -> bool:
        return self.tool.vector_field is not None

    def _vector_fields(self) -> list[str]:
        field_ = self.tool.vector_field
        return [field_] if isinstance(field_, str) else list(field_ or [])

    def _files(self, source: Path) -> list[Path]:
        if self.structured:
            return [source]
        files = discover_files(source, self.warn)
        if not files:
            self.warn(f"tool {self.tool.name!r}: no supported files found in source {self.tool.source}")
        return files

    def _read_records(self, source: Path, files: list[Path]) -> list[dict[str, Any]]:
        """Every record to index: id, content, source (and metadata or chunk index)."""
        tool = self.tool
        if self.structured:
            rows = structured_records(
                source,
                tool.id_field or "",
                self._vector_fields(),
                tool.meta_fields,
                tool.field_separator,
                tool.delimiter,
                self.warn,
            )
            return [{**row, "source": str(source)} for row in rows]
        records: list[dict[str, Any]] = []
        for path in files:
            try:
                markdown = file_markdown(path)
            except Exception as error:  # HoloDeck skips a file it cannot convert
                self.stats.skipped.append(f"{path}: {type(error).__name__}: {error}")
                continue
            if not markdown.strip():
                self.stats.skipped.append(f"{path}: empty")
                continue
            chunks = split_text(markdown, tool.chunk_size or DEFAULT_CHUNK_SIZE)
            records += [
                {"id": f"{path}_chunk_{index}", "content": chunk, "source": str(path), "chunk_index": index}
                for index, chunk in enumerate(chunks)
            ]
        for skipped in self.stats.skipped:
            self.warn(f"tool {self.tool.name!r}: file skipped: {skipped}")
        return records

    async def build(self) -> BuildStats:
        """Index the source, or take the cached index of the same files, settings and embedding
        model (then no file is converted and no chunk embedded again)."""
        started = time.perf_counter()
        source = resolve_source(self.tool.source, self.base_dir)
        files = self._files(source)
        settings = self.tool.model_dump(
            include={"chunk_size", "vector_field", "meta_fields", "id_field", "field_separator", "delimiter"}
        )
        root = source if source.is_dir() else source.parent
        key = index_cache.index_key("vectorstore", settings, self.embedder.model_id, files, root)
        cached = index_cache.load(key)
        if cached is not None:
            records, vectors = cached
            self.stats.from_cache = True
        else:
            records = self._read_records(source, files)
            embedded = await self.embedder.embed([record["content"] for record in records]) if records else []
            check_dimensions(embedded, self.expected_dimensions)
            vectors = np.asarray(embedded, dtype=np.float64)
            index_cache.save(key, records, vectors)
        for record in records:
            self.records[record["id"]] = record  # a repeated id replaces the record, as an upsert does
        dimensions = int(vectors.shape[1]) if len(records) else (self.expected_dimensions or 1)
        self.store = open_store(self.tool.database, dimensions, self.tool.name, self.base_dir, self.warn)
        if records:
            self.store.add([record["id"] for record in records], vectors)
        self.stats.files, self.stats.records = len(files), len(self.records)
        self.stats.seconds = time.perf_counter() - started
        return self.stats

    async def search(self, query: str) -> str:
        """The model's query answered as HoloDeck answers it."""
        if not query or not query.strip():
            return "Search query cannot be empty"
        assert self.store is not None, "search before build"
        (vector,) = await self.embedder.embed([query])
        hits = [(rid, max(0.0, min(1.0, score))) for rid, score in self.store.search(vector, self.tool.top_k)]
        if self.tool.min_similarity_score is not None:
            hits = [(rid, score) for rid, score in hits if score >= self.tool.min_similarity_score]
        hits = hits[: self.tool.top_k]
        if not hits:
            return f"No relevant results found for query: {query}"
        lines = [f"Found {len(hits)} result(s):", ""]
        for rank, (rid, score) in enumerate(hits, start=1):
            record = self.records[rid]
            if self.structured:
                lines.append(f"[{rank}] ID: {record['id']} | Score: {score:.2f}")
                lines.append(f"Content: {record['content']}")
                metadata = {name: record["metadata"].get(name) for name in self.tool.meta_fields or []}
                if metadata:
                    lines.append("Metadata: " + ", ".join(f"{k}: {v}" for k, v in metadata.items()))
            else:
                lines.append(f"[{rank}] Score: {score:.2f} | Source: {record['source']}")
                lines.append(record["content"])
            lines.append("")
        return "\n".join(lines).rstrip()

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
