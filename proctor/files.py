"""Attached files turned into markdown with markitdown (`FileInput` -> `ProcessedFileInput`).

Paths resolve against the suite's folder and may not leave it: a suite is input from
whoever wrote it, and must not read arbitrary files of the machine running it.
"""

from __future__ import annotations

import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from models.holodeck import FileInput, ProcessedFileInput

_convert_lock = threading.Lock()


class FileProcessingError(RuntimeError):
    pass


@lru_cache(maxsize=1)
def _markitdown() -> Any:
    from markitdown import MarkItDown  # heavy import, paid only by suites with files

    return MarkItDown(enable_plugins=False)


def resolve_path(file_input: FileInput, base_dir: Path) -> Path:
    assert file_input.path is not None
    base = base_dir.resolve()
    path = (base / file_input.path).resolve()
    if not path.is_relative_to(base):
        raise FileProcessingError(f"{file_input.path}: path leaves the suite folder {base}")
    if not path.is_file():
        raise FileProcessingError(f"{file_input.path}: file not found (looked in {base})")
    return path


def process_file(file_input: FileInput, base_dir: Path) -> ProcessedFileInput:
    """Convert one file; a failure is recorded on the result, not raised."""
    started = time.perf_counter()
    try:
        if file_input.url is not None:
            raise FileProcessingError(f"{file_input.url}: URL inputs are not supported by this version")
        path = resolve_path(file_input, base_dir)
        with _convert_lock:  # markitdown's converters are not documented as thread-safe
            result = _markitdown().convert(str(path))
        markdown = result.text_content or ""
        if not markdown.strip():
            raise FileProcessingError(f"{file_input.path}: no text could be extracted")
        metadata = {"size_bytes": path.stat().st_size, "format": path.suffix.lstrip(".").lower()}
        if result.title:
            metadata["title"] = result.title
        error = None
    except Exception as exc:
        markdown, metadata, error = "", {}, str(exc) if isinstance(exc, FileProcessingError) else repr(exc)
    return ProcessedFileInput(
        original=file_input,
        markdown_content=markdown,
        metadata=metadata,
        processing_time_ms=int((time.perf_counter() - started) * 1000),
        error=error,
    )
