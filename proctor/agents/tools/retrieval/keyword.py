"""The keyword half of a `hierarchical_document` tool's search, as HoloDeck 0.7.1 runs it
(`holodeck/lib/keyword_search.py`, `holodeck/lib/hybrid_search.py`):

* BM25 (rank_bm25's `BM25Okapi`, k1 1.5, b 0.75) over each chunk's text with its fields
  repeated for weight: the (contextualized) content once, the heading chain and section id
  twice, a defined term three times, the file name once; lower-cased alphanumeric tokens;
  the top-k scores above zero, in numpy's `argsort` order.
* Reciprocal rank fusion of the semantic and keyword rankings: each chunk scores
  `sum(weight / (rrf_k + rank))` with the two weights normalised to sum 1, divided by the
  best possible score so a chunk first in both lists scores 1.0.
"""

from __future__ import annotations

import re
from typing import Any

from proctor.agents.tools.retrieval.structure import DocumentChunk


def tokenize(text: str) -> list[str]:
    return re.findall(r"[a-zA-Z0-9]+", text.lower()) if text else []


def bm25_document(chunk: DocumentChunk) -> str:
    """The chunk's text as HoloDeck indexes it for BM25 (`_build_bm25_document`)."""
    parts: list[str] = []
    content = chunk.contextualized_content or chunk.content
    if content:
        parts.append(content)
    chain = " > ".join(chunk.parent_chain)
    if chain:
        parts += [chain, chain]
    if chunk.section_id:
        parts += [chunk.section_id, chunk.section_id]
    if chunk.defined_term:
        parts += [chunk.defined_term] * 3
    source_file = chunk.source_path.rsplit("/", 1)[-1] if chunk.source_path else ""
    if source_file:
        parts.append(source_file)
    return " ".join(parts)


class BM25Index:
    def __init__(self, chunks: list[DocumentChunk]) -> None:
        from rank_bm25 import BM25Okapi

        self._ids = [chunk.id for chunk in chunks]
        self._bm25: Any = BM25Okapi([tokenize(bm25_document(chunk)) for chunk in chunks], k1=1.5, b=0.75)

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        scores = self._bm25.get_scores(tokenize(query))
        top = scores.argsort()[-top_k:][::-1]
        return [(self._ids[i], float(scores[i])) for i in top if scores[i] > 0]


def reciprocal_rank_fusion(
    ranked_lists: list[list[tuple[str, float]]], k: int = 60, weights: list[float] | None = None
) -> list[tuple[str, float]]:
    if not ranked_lists:
        return []
    weights = weights if weights is not None else [1.0] * len(ranked_lists)
    total = sum(weights)
    if total > 0:
        weights = [w / total for w in weights]
    scores: dict[str, float] = {}
    for weight, ranked in zip(weights, ranked_lists, strict=False):
        for rank, (doc_id, _) in enumerate(ranked, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + weight / (k + rank)
    fused = sorted(scores.items(), key=lambda item: item[1], reverse=True)
    best = sum(w / (k + 1) for w in weights) if weights else 1.0
    return [(doc_id, score / best) for doc_id, score in fused] if best > 0 else fused
