"""A vectorstore tool's chunks are the ones HoloDeck indexes: Semantic Kernel's
`split_plaintext_paragraph` under HoloDeck's TextChunker. The expected chunks below are what
Semantic Kernel 1.45.0's own function returns for the same text and size."""

from __future__ import annotations

import pytest

from proctor.agents.tools.retrieval.text_chunker import split_text

POLICY = (
    "# Returns\n\nElectronics may be returned within 30 days of delivery if unopened. Opened electronics "
    "carry a 15% restocking fee.\n\n## Exceptions\n\nGift cards cannot be returned. Software licences "
    "cannot be returned once activated."
)


def test_long_lines_are_cut_at_the_sentence_nearest_their_middle_and_packed_into_paragraphs():
    assert split_text(POLICY, chunk_size=20) == [
        "# Returns\nElectronics may be returned within 30 days of delivery if unopened.",
        "Opened electronics carry a 15% restocking fee.\n## Exceptions",
        "Gift cards cannot be returned. Software licences cannot be returned once activated.",
    ]


def test_a_short_last_paragraph_is_folded_into_the_one_before():
    chunks = split_text("alpha beta gamma delta. " * 30, chunk_size=32)
    assert len(chunks) == 8
    assert chunks[0] == "alpha beta gamma delta. " * 2 + "alpha beta gamma delta."
    assert chunks[-1] == ("alpha beta gamma delta. " * 4).strip()


def test_a_document_within_the_size_is_one_chunk_and_an_empty_one_is_refused():
    assert split_text(POLICY) == [POLICY.replace("\n\n", "\n")]
    with pytest.raises(ValueError, match="Text cannot be empty"):
        split_text("  \n ")
