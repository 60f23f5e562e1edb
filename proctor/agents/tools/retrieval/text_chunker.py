"""How a HoloDeck `vectorstore` tool cuts a document into chunks: HoloDeck's `TextChunker`
(default 512 "tokens") over Semantic Kernel's `split_plaintext_paragraph`, ported line for line
so the chunks, and so the search results, are the ones HoloDeck indexes.

Semantic Kernel counts a "token" as four characters (`len(text) // 4`), splits over-long lines
at the separator nearest their middle (new lines first, then `.`, `?!`, `;`, `:`, `,`, closing
brackets, spaces, `-`, then anywhere), packs lines into paragraphs below the limit, and folds a
short last paragraph into the one before. It takes no overlap: `chunk_overlap` changes nothing
in HoloDeck, and nothing here. (Semantic Kernel, MIT licence, `semantic_kernel/text/text_chunker.py`,
identical in 1.39.4 and 1.45.0.)
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

DEFAULT_CHUNK_SIZE = 512  # HoloDeck's TextChunker.DEFAULT_CHUNK_SIZE
NEWLINE = os.linesep
TEXT_SPLIT_OPTIONS: list[list[str] | None] = [
    ["\n", "\r"],
    ["."],
    ["?", "!"],
    [";"],
    [":"],
    [","],
    [")", "]", "}"],
    [" "],
    ["-"],
    None,
]


def _token_counter(text: str) -> int:
    return len(text) // 4


def split_text(text: str, chunk_size: int = DEFAULT_CHUNK_SIZE) -> list[str]:
    """HoloDeck's `TextChunker.split_text`: the text's lines as paragraphs of at most
    `chunk_size` (SK) tokens, empty chunks dropped."""
    if not text or not text.strip():
        raise ValueError("Text cannot be empty")
    chunks = split_plaintext_paragraph(text.split("\n"), max_tokens=chunk_size)
    return [chunk for chunk in chunks if chunk.strip()]


def split_plaintext_paragraph(
    text: list[str], max_tokens: int, token_counter: Callable[[str], int] = _token_counter
) -> list[str]:
    split_lines: list[str] = []
    for line in text:
        split_lines.extend(_split_str_lines(line, max_tokens, TEXT_SPLIT_OPTIONS, True, token_counter))
    return _split_text_paragraph(split_lines, max_tokens, token_counter)


def _split_text_paragraph(
    text: list[str], max_tokens: int, token_counter: Callable[[str], int] = _token_counter
) -> list[str]:
    if not text:
        return []
    paragraphs: list[str] = []
    current: list[str] = []
    for line in text:
        if token_counter("".join(current)) + token_counter(line) + 1 >= max_tokens and current:
            paragraphs.append("".join(current).strip())
            current = []
        current.append(f"{line}{NEWLINE}")
    if current:
        paragraphs.append("".join(current).strip())
    if len(paragraphs) > 1:
        last, second_last = paragraphs[-1], paragraphs[-2]
        if token_counter(last) < max_tokens / 4:
            last_tokens, second_tokens = last.split(" "), second_last.split(" ")
            if len(last_tokens) + len(second_tokens) <= max_tokens:
                merged = " ".join(second_tokens) + NEWLINE + " ".join(last_tokens)
                paragraphs[-2] = merged.strip()
                paragraphs.pop()
    return paragraphs


def _split_str_lines(
    text: str,
    max_tokens: int,
    separators: list[list[str] | None],
    trim: bool,
    token_counter: Callable[[str], int] = _token_counter,
) -> list[str]:
    if not text:
        return []
    text = text.replace("\r\n", "\n")
    lines: list[str] = []
    for option in separators:
        if not lines:
            lines, was_split = _split_str(text, max_tokens, option, trim, token_counter)
        else:
            lines, was_split = _split_list(lines, max_tokens, option, trim, token_counter)
        if was_split:
            break
    return lines


def _split_str(
    text: str,
    max_tokens: int,
    separators: list[str] | None,
    trim: bool,
    token_counter: Callable[[str], int] = _token_counter,
) -> tuple[list[str], bool]:
    was_split = False
    if not text:
        return [], was_split
    if trim:
        text = text.strip()
    as_is = [text]
    if token_counter(text) <= max_tokens:
        return as_is, was_split
    half = len(text) // 2
    cutpoint = -1
    if not separators:
        cutpoint = half
    elif set(separators) & set(text) and len(text) > 2:
        pattern = re.compile("|".join(re.escape(s) for s in separators))
        min_dist = half
        for match in re.finditer(pattern, text):
            end = match.end()
            dist = abs(half - end)
            if dist < min_dist:
                min_dist = dist
                cutpoint = end
            elif end > half:
                break
    else:
        return as_is, was_split
    if not 0 < cutpoint < len(text):
        return as_is, was_split
    lines: list[str] = []
    for part in (text[:cutpoint], text[cutpoint:]):
        split, has_split = _split_str(part, max_tokens, separators, trim, token_counter)
        lines.extend(split)
        was_split = was_split or has_split
    return lines, was_split


def _split_list(
    text: list[str],
    max_tokens: int,
    separators: list[str] | None,
    trim: bool,
    token_counter: Callable[[str], int] = _token_counter,
) -> tuple[list[str], bool]:
    if not text:
        return [], False
    lines: list[str] = []
    was_split = False
    for line in text:
        split, has_split = _split_str(line, max_tokens, separators, trim, token_counter)
        lines.extend(split)
        was_split = was_split or has_split
    return lines, was_split
