"""Embedded chunks kept between runs, keyed by everything they depend on: the source files'
bytes, the tool's chunking settings and the embedding model. A run whose sources and settings
have not changed reuses them and calls no embedding model; any change makes a new key.

The cache is a folder (`PROCTOR_INDEX_CACHE`, default `.proctor/cache/indexes`) with, per index,
a JSON file (its records) and a `.npy` file (their vectors, float64 as computed). A damaged or
partial entry is rebuilt, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from proctor.settings import value


def cache_dir() -> Path:
    return Path.cwd() / value("PROCTOR_INDEX_CACHE")


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def index_key(kind: str, settings: dict[str, Any], model_id: str, files: list[Path], root: Path) -> str:
    """The key of an index: its kind, settings, embedding model and each file's name and bytes."""
    parts = {
        "kind": kind,
        "settings": settings,
        "model": model_id,
        "files": [
            [str(path.relative_to(root)) if path != root else path.name, file_digest(path)] for path in files
        ],
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def load(key: str) -> tuple[list[dict[str, Any]], np.ndarray] | None:
    """The records and vectors of the index `key`, or None if there is no whole entry."""
    folder = cache_dir()
    try:
        entry = json.loads((folder / f"{key}.json").read_text(encoding="utf-8"))
        vectors = np.load(folder / f"{key}.npy", allow_pickle=False)
    except (OSError, ValueError):
        return None
    if (
        not isinstance(entry, dict)
        or entry.get("key") != key
        or len(entry.get("records", [])) != len(vectors)
    ):
        return None
    return entry["records"], vectors


def save(key: str, records: list[dict[str, Any]], vectors: np.ndarray) -> None:
    """Written whole or not at all (temporary files renamed, the vectors first), so a reader never
    takes half an entry."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".npy.tmp", delete=False) as out:
            np.save(out, np.asarray(vectors, dtype=np.float64), allow_pickle=False)
        os.replace(out.name, folder / f"{key}.npy")
        with tempfile.NamedTemporaryFile(
            "w", dir=folder, suffix=".tmp", delete=False, encoding="utf-8"
        ) as out:
            json.dump({"key": key, "records": records}, out)
        os.replace(out.name, folder / f"{key}.json")
    except OSError:
        pass  # a cache that cannot be written only costs the next run its embedding calls
