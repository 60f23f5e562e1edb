"""What a retrieval tool indexes: the files of its `source`, as markdown, or the records of a
structured file (CSV, JSON, JSONL), read as HoloDeck reads them (`holodeck.tools.common`,
`holodeck.lib.structured_loader`).

Files: a single file, or every file under a folder (recursively, in sorted order) whose
extension HoloDeck ingests (`.txt .md .pdf .csv .json`), each converted to markdown with
markitdown as HoloDeck's FileProcessor converts it; an empty or unreadable file is skipped with
a warning, as HoloDeck skips it. A source may not leave the suite's folder (nor the folders of
PROCTOR_ALLOWED_FILE_ROOTS), like every file a suite names.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from proctor.files import allowed_roots

SUPPORTED_EXTENSIONS = frozenset({".txt", ".md", ".pdf", ".csv", ".json"})
STRUCTURED_EXTENSIONS = {".csv": "csv", ".json": "json", ".jsonl": "jsonl"}


class SourceError(ValueError):
    """A source that cannot be indexed: missing, outside the allowed folders, fields not found."""


def resolve_source(source: str, base_dir: Path) -> Path:
    """The source's path (relative to the agent.yaml's folder, `file://` stripped), checked to
    exist and to stay inside the folders a suite may read."""
    raw = source.removeprefix("file://")
    path = Path(raw) if Path(raw).is_absolute() else (base_dir / raw)
    path = path.resolve()
    if not any(path.is_relative_to(root) for root in allowed_roots(base_dir)):
        raise SourceError(
            f"source {source!r} leaves the suite folder {base_dir.resolve()} "
            "(add its folder to PROCTOR_ALLOWED_FILE_ROOTS to allow it)"
        )
    if not path.exists():
        raise SourceError(f"Source path does not exist: {path} (configured source: {source})")
    return path


def discover_files(path: Path, warn: Callable[[str], None]) -> list[Path]:
    """HoloDeck's `discover_files`: the file itself if its extension is ingested, else every
    ingested file under the folder, sorted."""
    if path.is_file():
        if path.suffix.lower() in SUPPORTED_EXTENSIONS:
            return [path]
        warn(f"{path} has unsupported extension {path.suffix}; supported: {sorted(SUPPORTED_EXTENSIONS)}")
        return []
    return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_EXTENSIONS)


def file_markdown(path: Path) -> str:
    """The file as HoloDeck's FileProcessor gives it: markitdown for every type (it normalises
    blank lines and trailing spaces even in .md and .txt)."""
    from proctor.files import _markitdown_text

    return _markitdown_text(path)[0]


# -- structured records ---------------------------------------------------------------------
def _csv_delimiter(path: Path, delimiter: str | None) -> str:
    if delimiter is not None:
        return delimiter
    sample = path.read_text(encoding="utf-8")[:8192]
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def _raw_records(path: Path, delimiter: str | None) -> Iterator[dict[str, Any]]:
    kind = STRUCTURED_EXTENSIONS.get(path.suffix.lower())
    if kind is None:
        raise SourceError(
            f"Unsupported file type: '{path.suffix.lower()}'. Supported types: {list(STRUCTURED_EXTENSIONS)}"
        )
    if kind == "csv":
        with open(path, newline="", encoding="utf-8") as handle:
            yield from (
                dict(row) for row in csv.DictReader(handle, delimiter=_csv_delimiter(path, delimiter))
            )
    elif kind == "json":
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise SourceError(f"{path}: expected a JSON array of records, got {type(data).__name__}")
        yield from data
    else:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as error:
                        raise SourceError(f"{path}: invalid JSON on line {number}: {error.msg}") from None


def structured_records(
    path: Path,
    id_field: str,
    vector_fields: list[str],
    meta_fields: list[str] | None,
    separator: str,
    delimiter: str | None,
    warn: Callable[[str], None],
) -> list[dict[str, Any]]:
    """HoloDeck's `StructuredDataLoader`: its schema check on the first record, then each
    record's id, its vector fields joined by `separator`, and its metadata (the named fields,
    else every other field); records whose vector fields are all empty are skipped."""
    records = iter(_raw_records(path, delimiter))
    first = next(records, None)
    if first is None:
        raise SourceError(f"No records found in source file: {path}")
    available = list(first)
    for label, names in (
        ("id_field", [id_field]),
        ("vector_field", vector_fields),
        ("meta_fields", meta_fields),
    ):
        for name in names or []:
            if name not in available:
                raise SourceError(
                    f"{label}: Field '{name}' not found in source. Available fields: {available}"
                )
    if meta_fields is None:
        meta_fields = [name for name in available if name not in {id_field, *vector_fields}]
    out: list[dict[str, Any]] = []
    skipped = 0
    for record in (first, *records):
        content = separator.join(str(record[f]) for f in vector_fields if record.get(f) is not None)
        if not content.strip():
            skipped += 1
            continue
        metadata = {f: "" if record.get(f) is None else str(record[f]) for f in meta_fields}
        out.append({"id": str(record.get(id_field, "")), "content": content, "metadata": metadata})
    if skipped:
        warn(f"{path}: skipped {skipped} records with empty vector field content")
    return out
