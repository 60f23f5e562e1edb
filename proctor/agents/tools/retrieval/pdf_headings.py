"""A document as HoloDeck's FileProcessor gives it to a retrieval tool: markitdown for every
type, except PDFs, whose headings it recovers first (`holodeck/lib/pdf_processor/
heading_extractor.py`, ported): from the PDF's bookmarks when it has them and at least 30% of
them are found in its text lines (each line matching a bookmark on its page, or any bookmark
without a page, becomes a heading of the bookmark's level), else from font sizes (a line whose
first character is 14pt or more is `#`, 12pt or more `##`). A PDF this fails on is converted
by markitdown, as HoloDeck falls back. The headings are what a `hierarchical_document` tool
splits on.
"""

from __future__ import annotations

import re
from pathlib import Path

MIN_SUBSTRING_TITLE_LEN = 8
FONT_THRESHOLDS = ((14.0, 1), (12.0, 2))


def document_markdown(path: Path) -> str:
    from proctor.agents.tools.retrieval.sources import file_markdown

    if path.suffix.lower() == ".pdf":
        try:
            return pdf_with_headings(path)
        except Exception:  # HoloDeck falls back to markitdown on any error
            pass
    return file_markdown(path)


def _normalize(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower().strip())


def _text_lines(path: Path) -> list[tuple[int, str, float | None]]:
    """(page, line text, size of its first character) of every text line, in reading order."""
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTChar, LTTextContainer, LTTextLine

    lines: list[tuple[int, str, float | None]] = []
    for page_number, layout in enumerate(extract_pages(str(path))):
        for element in layout:
            if not isinstance(element, LTTextContainer):
                continue
            for text_line in element:
                if isinstance(text_line, LTTextLine):
                    text = text_line.get_text().strip()
                    if text:
                        size = next((c.size for c in text_line if isinstance(c, LTChar)), None)
                        lines.append((page_number, text, size))
    return lines


def _bookmarks(path: Path) -> list[tuple[str, int, int | None]]:
    from pdfminer.pdfdocument import PDFDocument, PDFNoOutlines
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdfparser import PDFParser
    from pdfminer.pdftypes import PDFObjRef

    with open(path, "rb") as handle:
        document = PDFDocument(PDFParser(handle))
        try:
            outlines = list(document.get_outlines())
        except PDFNoOutlines:
            return []
        pages = {page.pageid: number for number, page in enumerate(PDFPage.create_pages(document))}
    marks = []
    for level, title, dest, action, _ in outlines:
        ref = dest[0] if isinstance(dest, list) and dest else dest if isinstance(dest, PDFObjRef) else None
        if ref is None and isinstance(action, dict):
            target = action.get("D")
            ref = target[0] if isinstance(target, list) and target else target
        page = pages.get(ref.objid) if isinstance(ref, PDFObjRef) else None
        marks.append((title, level, page))
    return marks


def _match(line: str, entries: list[tuple[str, int]]) -> int | None:
    if not line:
        return None
    for title, level in entries:
        if title and title == line:
            return level
    best: tuple[int, int] | None = None
    for title, level in entries:
        if len(title) >= MIN_SUBSTRING_TITLE_LEN and title in line and (best is None or len(title) > best[0]):
            best = (len(title), level)
    return best[1] if best else None


def pdf_with_headings(path: Path) -> str:
    lines = _text_lines(path)
    marks = _bookmarks(path)
    if marks:
        by_page: dict[int, list[tuple[str, int]]] = {}
        unplaced: list[tuple[str, int]] = []
        for title, level, page in marks:
            (by_page.setdefault(page, []) if page is not None else unplaced).append(
                (_normalize(title), level)
            )
        out, matched = [], 0
        for page, text, _ in lines:
            level = _match(_normalize(text), by_page.get(page, []))
            if level is None and unplaced:
                level = _match(_normalize(text), unplaced)
            matched += level is not None
            out.append(f"{'#' * level} {text}" if level is not None else text)
        if matched / len(marks) >= 0.3:
            return "\n".join(out)
    out = []
    for _, text, size in lines:
        level = next((lvl for threshold, lvl in FONT_THRESHOLDS if size and size >= threshold), 0)
        out.append(f"{'#' * level} {text}" if level else text)
    return "\n".join(out)
