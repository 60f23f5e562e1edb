"""Attached files turned into markdown (`FileInput` -> `ProcessedFileInput`) with markitdown.

What a `FileInput` selects is honoured: PDF `pages`, PowerPoint `pages` (slides), Excel
`sheet` and `range` (A1:E100). Images become their description and metadata. URLs are
downloaded (http and https only, size-limited, redirects checked) into a cache keyed by the
URL and the extraction options, with an expiry. Local paths resolve against the suite's
folder and may not leave it, nor any folder named in PROCTOR_ALLOWED_FILE_ROOTS: a suite is
input from whoever wrote it and must not read arbitrary files of the machine running it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from proctor.models.holodeck import FileInput, ProcessedFileInput
from proctor.settings import value as setting_value

MAX_DOWNLOAD_BYTES = int(setting_value("PROCTOR_MAX_DOWNLOAD_BYTES"))
CACHE_TTL_S = float(setting_value("PROCTOR_FILE_CACHE_TTL_S"))
DOWNLOAD_TIMEOUT_S = 30.0
# A whole file (download and conversion) is bounded by the case's own limit when it has one,
# else by this: a source dripping one byte at a time cannot hold a case for ever.
FILE_TIMEOUT_S = float(setting_value("PROCTOR_FILE_TIMEOUT_S"))
# What an archive (docx, xlsx, pptx are zips) may expand to before markitdown opens it.
MAX_EXPANDED_BYTES = int(setting_value("PROCTOR_MAX_EXPANDED_BYTES"))
MAX_REDIRECTS = 5
SUFFIX_BY_TYPE = {
    "pdf": ".pdf",
    "word": ".docx",
    "excel": ".xlsx",
    "powerpoint": ".pptx",
    "csv": ".csv",
    "text": ".txt",
    "image": ".png",
}
_convert_lock = threading.Lock()


class FileProcessingError(RuntimeError):
    pass


def cache_dir() -> Path:
    return Path.cwd() / setting_value("PROCTOR_FILE_CACHE")


def allowed_roots(base_dir: Path) -> list[Path]:
    extra = [
        Path(p).resolve() for p in (setting_value("PROCTOR_ALLOWED_FILE_ROOTS") or "").split(os.pathsep) if p
    ]
    return [base_dir.resolve(), *extra]


def leaves_roots(path: str | Path, base_dir: Path) -> bool:
    """Whether `path` (relative to `base_dir`) resolves outside the suite folder and every
    allowed root; the loaders ask before a run, `resolve_path` again when the file is read."""
    resolved = (base_dir / path).resolve()
    return not any(resolved.is_relative_to(root) for root in allowed_roots(base_dir))


def not_a_regular_file(path: Path) -> str | None:
    """What `path` is when it exists but is not a file to read: a folder, a named pipe (which
    would block the read for ever), a device (`/dev/zero` never ends) or a socket."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None  # missing: said when the file is read
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "is a named pipe (FIFO), not a file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a file"
    return "is not a regular file"


def resolve_path(file_input: FileInput, base_dir: Path) -> Path:
    assert file_input.path is not None
    path = (base_dir / file_input.path).resolve()
    if leaves_roots(file_input.path, base_dir):
        raise FileProcessingError(
            f"{file_input.path}: path leaves the suite folder {base_dir.resolve()} "
            "(add its folder to PROCTOR_ALLOWED_FILE_ROOTS to allow it)"
        )
    kind = not_a_regular_file(path)
    if kind is not None:
        raise FileProcessingError(f"{file_input.path}: {kind}")
    if not path.is_file():
        raise FileProcessingError(f"{file_input.path}: file not found (looked in {base_dir.resolve()})")
    return path


# -- downloads ---------------------------------------------------------------------------
def _cache_key(file_input: FileInput) -> str:
    options = file_input.model_dump(include={"url", "type", "pages", "sheet", "range"})
    return hashlib.sha256(json.dumps(options, sort_keys=True).encode()).hexdigest()


URL_SCHEMES = ("http", "https")


def _check_url(url: str) -> None:
    scheme = urlparse(url).scheme.lower()
    if scheme not in URL_SCHEMES:
        raise FileProcessingError(f"{url}: only http and https URLs are fetched, not {scheme or 'this'}")


def download(file_input: FileInput, limit_s: float = FILE_TIMEOUT_S) -> tuple[Path, bool]:
    """The URL's content on disk, from the cache when fresh; (path, came from cache).

    `limit_s` bounds the whole download in wall-clock time: httpx's timeouts are per read, so
    one byte every few seconds would otherwise never end."""
    import httpx

    deadline = time.monotonic() + limit_s

    url = file_input.url
    assert url is not None
    _check_url(url)
    suffix = Path(urlparse(url).path).suffix or SUFFIX_BY_TYPE.get(file_input.type, "")
    target = cache_dir() / f"{_cache_key(file_input)}{suffix}"
    if (
        file_input.cache is not False
        and target.exists()
        and time.time() - target.stat().st_mtime < CACHE_TTL_S
    ):
        return target, True
    target.parent.mkdir(parents=True, exist_ok=True)
    current = url
    timeout = httpx.Timeout(min(DOWNLOAD_TIMEOUT_S, limit_s))
    with httpx.Client(timeout=timeout, follow_redirects=False) as client:
        for _ in range(MAX_REDIRECTS + 1):
            with client.stream("GET", current) as response:
                if response.is_redirect:
                    current = str(response.url.join(response.headers["location"]))
                    _check_url(current)
                    continue
                if response.status_code >= 400:
                    raise FileProcessingError(f"{url}: download failed with HTTP {response.status_code}")
                declared = int(response.headers.get("content-length") or 0)
                if declared > MAX_DOWNLOAD_BYTES:
                    raise FileProcessingError(
                        f"{url}: {declared} bytes is over the {MAX_DOWNLOAD_BYTES}-byte limit"
                    )
                partial = target.with_suffix(target.suffix + ".part")
                size = 0
                with open(partial, "wb") as handle:
                    for chunk in response.iter_bytes():
                        if time.monotonic() > deadline:
                            handle.close()
                            partial.unlink(missing_ok=True)
                            raise FileProcessingError(f"{url}: download did not finish within {limit_s:g} s")
                        size += len(chunk)
                        if size > MAX_DOWNLOAD_BYTES:
                            handle.close()
                            partial.unlink(missing_ok=True)
                            raise FileProcessingError(
                                f"{url}: larger than the {MAX_DOWNLOAD_BYTES}-byte limit"
                            )
                        handle.write(chunk)
                partial.replace(target)
                return target, False
    raise FileProcessingError(f"{url}: more than {MAX_REDIRECTS} redirects")


# -- conversion --------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _markitdown() -> Any:
    from markitdown import MarkItDown  # heavy import, paid only by suites with files

    return MarkItDown(enable_plugins=False)


# Time this thread spent waiting for the shared converter (its lock, its one-time start-up of
# seconds): not the file's own processing time, which is what a case's `files_ms` reports.
_waits = threading.local()


def check_archive(path: Path, limit: int | None = None) -> None:
    """Refuse a zip (docx, xlsx, pptx) that expands past the limit, before markitdown opens it:
    first by the sizes its headers declare, then by the bytes actually inflated (headers can lie)."""
    import zipfile

    limit = MAX_EXPANDED_BYTES if limit is None else limit
    if not zipfile.is_zipfile(path):
        return
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
        declared = sum(member.file_size for member in members)
        if declared > limit:
            raise FileProcessingError(
                f"{path.name}: expands to {declared} bytes, over the {limit}-byte limit for archives "
                "(PROCTOR_MAX_EXPANDED_BYTES)"
            )
        expanded = 0
        for member in members:
            with archive.open(member) as stream:
                while block := stream.read(2**20):
                    expanded += len(block)
                    if expanded > limit:
                        raise FileProcessingError(
                            f"{path.name}: expands to more than the {limit}-byte limit for archives "
                            "(PROCTOR_MAX_EXPANDED_BYTES)"
                        )


def _markitdown_text(path: Path) -> tuple[str, dict[str, Any]]:
    asked = time.perf_counter()
    converter = _markitdown()
    with _convert_lock:  # markitdown's converters are not documented as thread-safe
        _waits.ms = getattr(_waits, "ms", 0.0) + (time.perf_counter() - asked) * 1000
        result = converter.convert(str(path))
    metadata = {"title": result.title} if result.title else {}
    return result.text_content or "", metadata


def _pdf(path: Path, pages: list[int] | None) -> tuple[str, dict[str, Any]]:
    if not pages:
        return _markitdown_text(path)
    from pdfminer.high_level import extract_text
    from pdfminer.pdfpage import PDFPage

    with open(path, "rb") as handle:
        count = sum(1 for _ in PDFPage.get_pages(handle))
    missing = [page for page in pages if page > count]
    if missing:
        raise FileProcessingError(f"{path.name}: no page {missing[0]} (the PDF has {count})")
    parts = [
        f"<!-- Page {page} -->\n{extract_text(str(path), page_numbers=[page - 1]).strip()}" for page in pages
    ]
    return "\n\n".join(parts), {"pages_total": count, "pages": pages}


_SLIDE = re.compile(r"<!-- Slide number: (\d+) -->")


def _pptx(path: Path, slides: list[int] | None) -> tuple[str, dict[str, Any]]:
    text, metadata = _markitdown_text(path)
    pieces = _SLIDE.split(text)  # ["before", "1", "slide 1 text", "2", ...]
    numbered = {int(pieces[i]): pieces[i + 1] for i in range(1, len(pieces) - 1, 2)}
    metadata["slides_total"] = len(numbered)
    if not slides:
        return text, metadata
    missing = [slide for slide in slides if slide not in numbered]
    if missing:
        raise FileProcessingError(f"{path.name}: no slide {missing[0]} (the deck has {len(numbered)})")
    return "".join(f"<!-- Slide number: {s} -->{numbered[s]}" for s in slides), {**metadata, "slides": slides}


def _cell_text(value: Any) -> str:
    return "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")


def _excel(path: Path, sheet: str | None, cell_range: str | None) -> tuple[str, dict[str, Any]]:
    if not sheet and not cell_range:
        return _markitdown_text(path)
    from openpyxl import load_workbook
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        workbook = load_workbook(path, read_only=True, data_only=True)
    except (InvalidFileException, OSError, KeyError) as error:
        raise FileProcessingError(f"{path.name}: not a readable Excel workbook: {error}") from None
    names = workbook.sheetnames
    if sheet and sheet not in names:
        raise FileProcessingError(f"{path.name}: no sheet {sheet!r} (sheets: {', '.join(names)})")
    worksheet = workbook[sheet or names[0]]
    try:
        rows = list(worksheet[cell_range]) if cell_range else list(worksheet.iter_rows())
    except ValueError as error:
        raise FileProcessingError(f"{path.name}: bad range {cell_range!r}: {error}") from None
    if rows and not isinstance(rows[0], tuple):  # a single cell
        rows = [(rows[0],)]
    values = [[_cell_text(cell.value) for cell in row] for row in rows]
    workbook.close()
    if not values:
        return "", {"sheet": worksheet.title, "range": cell_range}
    header, *body = values
    lines = [f"## {worksheet.title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines), {"sheet": worksheet.title, "range": cell_range, "rows": len(values)}


def _image(path: Path, description: str | None) -> tuple[str, dict[str, Any]]:
    from PIL import Image

    with Image.open(path) as image:
        metadata = {
            "width": image.width,
            "height": image.height,
            "image_format": image.format,
            "mode": image.mode,
        }
    lines = [f"# Image: {path.name}", ""]
    if description:
        lines += [description, ""]
    lines += [f"- {key.replace('_', ' ')}: {value}" for key, value in metadata.items()]
    return "\n".join(lines), metadata


def convert(path: Path, file_input: FileInput) -> tuple[str, dict[str, Any]]:
    kind = file_input.type
    if kind in ("word", "excel", "powerpoint"):
        check_archive(path)
    if kind == "pdf":
        return _pdf(path, file_input.pages)
    if kind == "powerpoint":
        return _pptx(path, file_input.pages)
    if kind == "excel":
        return _excel(path, file_input.sheet, file_input.range)
    if kind == "image":
        return _image(path, file_input.description)
    if kind == "text":
        return path.read_text(encoding="utf-8", errors="replace"), {}
    return _markitdown_text(path)  # word, csv


def process_file(
    file_input: FileInput, base_dir: Path, limit_s: float = FILE_TIMEOUT_S
) -> ProcessedFileInput:
    """Convert one file; a failure is recorded on the result, not raised. A download is bounded
    by `limit_s` of wall-clock time (the caller also stops waiting for the conversion then)."""
    started = time.perf_counter()
    _waits.ms = 0.0
    cached_path = None
    try:
        if file_input.url is not None:
            path, from_cache = download(file_input, limit_s)
            cached_path = str(path)
        else:
            path, from_cache = resolve_path(file_input, base_dir), False
        markdown, metadata = convert(path, file_input)
        if not markdown.strip():
            raise FileProcessingError(f"{file_input.path or file_input.url}: no text could be extracted")
        metadata = {"size_bytes": path.stat().st_size, "format": path.suffix.lstrip(".").lower(), **metadata}
        if file_input.url is not None:
            metadata["from_cache"] = from_cache
        error = None
    except Exception as exc:  # every failure is the case's, with the reason
        markdown, metadata = "", {}
        name = file_input.path or file_input.url
        error = str(exc) if isinstance(exc, FileProcessingError) else f"{name}: {type(exc).__name__}: {exc}"
    waited_ms = _waits.ms
    if waited_ms >= 1:
        metadata["wait_ms"] = round(waited_ms)  # for the shared converter, stored apart
    return ProcessedFileInput(
        original=file_input,
        markdown_content=markdown,
        metadata=metadata,
        cached_path=cached_path,
        processing_time_ms=max(0, int((time.perf_counter() - started) * 1000 - waited_ms)),
        error=error,
    )
