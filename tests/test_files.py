"""Attached files of every type become markdown, made by the real libraries and markitdown."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from proctor import files
from proctor.files import process_file
from proctor.models.holodeck import FileInput


def _process(folder: Path, **fields):
    return process_file(FileInput(**fields), folder)


@pytest.fixture
def documents(tmp_path: Path) -> Path:
    """One real file of each type, written by the libraries that make them."""
    (tmp_path / "notes.txt").write_text("Opening hours: 9 to 5.\nClosed on Sundays.")
    (tmp_path / "prices.csv").write_text("item,price\ncoffee,3.50\ntea,2.80\n")

    import docx

    document = docx.Document()
    document.add_heading("Refund policy", level=1)
    document.add_paragraph("Refunds are accepted within 30 days.")
    document.save(tmp_path / "policy.docx")

    from openpyxl import Workbook

    book = Workbook()
    sales = book.active
    sales.title = "Sales"
    for row in [("month", "revenue", "cost"), ("Jan", 100, 60), ("Feb", 120, 70), ("Mar", 90, 50)]:
        sales.append(row)
    book.create_sheet("Staff").append(("name", "role"))
    book.save(tmp_path / "report.xlsx")

    from pptx import Presentation

    deck = Presentation()
    for title in ("Intro", "Roadmap", "Questions"):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"{title} slide"
    deck.save(tmp_path / "deck.pptx")

    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for page in ("alpha", "bravo", "charlie"):
        pdf.add_page()
        pdf.cell(text=f"Page about {page}")
    pdf.output(str(tmp_path / "manual.pdf"))

    from PIL import Image

    Image.new("RGB", (40, 20), "red").save(tmp_path / "logo.png")
    return tmp_path


def test_text_csv_and_word(documents: Path) -> None:
    assert "Closed on Sundays." in _process(documents, path="notes.txt", type="text").markdown_content
    assert "| coffee | 3.50 |" in _process(documents, path="prices.csv", type="csv").markdown_content
    word = _process(documents, path="policy.docx", type="word")
    assert (
        word.error is None
        and "# Refund policy" in word.markdown_content
        and "30 days" in word.markdown_content
    )


def test_pdf_pages_are_selected(documents: Path) -> None:
    whole = _process(documents, path="manual.pdf", type="pdf")
    assert all(f"Page about {w}" in whole.markdown_content for w in ("alpha", "bravo", "charlie"))
    some = _process(documents, path="manual.pdf", type="pdf", pages=[1, 3])
    assert "alpha" in some.markdown_content and "charlie" in some.markdown_content
    assert "bravo" not in some.markdown_content
    assert some.metadata["pages_total"] == 3 and some.processing_time_ms >= 0
    assert "no page 7 (the PDF has 3)" in _process(documents, path="manual.pdf", type="pdf", pages=[7]).error


def test_excel_sheet_and_range(documents: Path) -> None:
    whole = _process(documents, path="report.xlsx", type="excel")
    assert "Sales" in whole.markdown_content and "Staff" in whole.markdown_content
    part = _process(documents, path="report.xlsx", type="excel", sheet="Sales", range="A1:B3")
    assert part.markdown_content.splitlines()[2:] == [
        "| month | revenue |",
        "|---|---|",
        "| Jan | 100 |",
        "| Feb | 120 |",
    ]
    assert "cost" not in part.markdown_content and part.metadata["rows"] == 3
    missing = _process(documents, path="report.xlsx", type="excel", sheet="Budget")
    assert missing.error.endswith("no sheet 'Budget' (sheets: Sales, Staff)")


def test_powerpoint_slides_are_selected(documents: Path) -> None:
    deck = _process(documents, path="deck.pptx", type="powerpoint", pages=[2])
    assert "Roadmap slide" in deck.markdown_content and "Intro slide" not in deck.markdown_content
    assert deck.metadata["slides_total"] == 3
    assert "no slide 9" in _process(documents, path="deck.pptx", type="powerpoint", pages=[9]).error


def test_images_become_description_and_metadata(documents: Path) -> None:
    image = _process(documents, path="logo.png", type="image", description="The shop's red logo.")
    assert "The shop's red logo." in image.markdown_content and "width: 40" in image.markdown_content
    assert (image.metadata["width"], image.metadata["height"], image.metadata["image_format"]) == (
        40,
        20,
        "PNG",
    )


def test_a_corrupt_file_is_an_error_not_a_crash(documents: Path) -> None:
    (documents / "broken.xlsx").write_bytes(b"not a workbook")
    result = _process(documents, path="broken.xlsx", type="excel", sheet="Sales")
    assert result.error and "broken.xlsx" in result.error and result.markdown_content == ""


def test_paths_may_not_leave_the_suite_folder_unless_allowed(tmp_path: Path, monkeypatch) -> None:
    suite, outside = tmp_path / "suite", tmp_path / "shared"
    suite.mkdir()
    outside.mkdir()
    (outside / "glossary.txt").write_text("SLA: service level agreement")
    refused = _process(suite, path="../shared/glossary.txt", type="text")
    assert "leaves the suite folder" in refused.error and refused.markdown_content == ""
    monkeypatch.setenv("PROCTOR_ALLOWED_FILE_ROOTS", str(outside))
    assert "SLA" in _process(suite, path="../shared/glossary.txt", type="text").markdown_content


class _Server:
    """Files over HTTP on 127.0.0.1, counting requests; /redirect-* answer with redirects."""

    def __init__(self, folder: Path) -> None:
        self.hits: list[str] = []
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs) -> None:
                super().__init__(*args, directory=str(folder), **kwargs)

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                server.hits.append(self.path)
                if self.path.startswith("/redirect-file"):
                    self.send_response(302)
                    self.send_header("Location", "file:///etc/passwd")
                    self.end_headers()
                elif self.path.startswith("/redirect"):
                    self.send_response(302)
                    self.send_header("Location", "/notes.txt")
                    self.end_headers()
                else:
                    super().do_GET()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{path}"


@pytest.fixture
def server(documents: Path, tmp_path: Path, monkeypatch) -> Iterator[_Server]:
    monkeypatch.setenv("PROCTOR_FILE_CACHE", str(tmp_path / "cache"))
    served = _Server(documents)
    yield served
    served.httpd.shutdown()
    served.httpd.server_close()


def test_urls_are_downloaded_once_then_cached(server: _Server, tmp_path: Path) -> None:
    first = _process(tmp_path, url=server.url("manual.pdf"), type="pdf", pages=[2])
    second = _process(tmp_path, url=server.url("manual.pdf"), type="pdf", pages=[2])
    assert "bravo" in first.markdown_content and first.markdown_content == second.markdown_content
    assert (first.metadata["from_cache"], second.metadata["from_cache"]) == (False, True)
    assert server.hits == ["/manual.pdf"] and Path(second.cached_path).is_file()
    other_options = _process(tmp_path, url=server.url("manual.pdf"), type="pdf", pages=[1])
    assert other_options.metadata["from_cache"] is False  # the key includes the extraction options
    uncached = _process(tmp_path, url=server.url("notes.txt"), type="text", cache=False)
    _process(tmp_path, url=server.url("notes.txt"), type="text", cache=False)
    assert uncached.error is None and server.hits.count("/notes.txt") == 2


def test_expired_cache_entries_are_fetched_again(server: _Server, tmp_path: Path, monkeypatch) -> None:
    _process(tmp_path, url=server.url("notes.txt"), type="text")
    monkeypatch.setattr(files, "CACHE_TTL_S", 0.0)
    assert _process(tmp_path, url=server.url("notes.txt"), type="text").metadata["from_cache"] is False


def test_downloads_are_limited_in_size_scheme_and_redirects(
    server: _Server, tmp_path: Path, monkeypatch
) -> None:
    assert "Closed on Sundays" in _process(tmp_path, url=server.url("redirect"), type="text").markdown_content
    escaped = _process(tmp_path, url=server.url("redirect-file"), type="text")
    assert "only http and https" in escaped.error
    assert "only http and https" in _process(tmp_path, url="ftp://127.0.0.1/x.txt", type="text").error
    assert "HTTP 404" in _process(tmp_path, url=server.url("missing.txt"), type="text").error
    monkeypatch.setattr(files, "MAX_DOWNLOAD_BYTES", 100)
    too_big = _process(tmp_path, url=server.url("manual.pdf"), type="pdf", cache=False)
    assert "100-byte limit" in too_big.error and not list((tmp_path / "cache").glob("*.part"))
