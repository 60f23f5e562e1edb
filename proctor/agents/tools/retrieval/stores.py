"""Where a retrieval tool's vectors live, and the cosine-similarity search over them.

Every store answers the same question the same way: the `top` records most similar to the
query vector by cosine similarity (HoloDeck declares its records `COSINE_SIMILARITY`), ties kept
in the order the records were added. The search is exact in each, so the store changes how the
index is kept, never which chunks are found:

* `in-memory` (HoloDeck's default): numpy, as Semantic Kernel's in-memory collection scores
  (`1 - scipy cosine distance`).
* `faiss`: a flat inner-product index over unit vectors (cosine), kept in `path` when given.
  (Semantic Kernel's FAISS connector has no cosine index, so HoloDeck's own faiss store fails.)
* `qdrant`: Qdrant's local mode (`:memory:`, a `path`, or a `/path` connection string) or a
  Qdrant server (`http://host:6333`), with cosine distance; the `qdrant` extra.
* `chromadb`: Proctor has no Chroma client; stored in memory with a warning, as HoloDeck does
  whenever Chroma is not installed or not reachable.

A store that cannot be opened (no package, no server) falls back to memory with a warning that
names the provider and the reason, as HoloDeck's `_create_collection_with_fallback` does.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from proctor.models.holodeck_tools import DatabaseConfig


class VectorStore(Protocol):
    provider: str

    def add(self, ids: Sequence[str], vectors: Sequence[Sequence[float]]) -> None: ...

    def search(self, vector: Sequence[float], top: int) -> list[tuple[str, float]]: ...

    def close(self) -> None: ...


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return matrix / norms


class InMemoryStore:
    provider = "in-memory"

    def __init__(self) -> None:
        self._ids: list[str] = []
        self._positions: dict[str, int] = {}
        self._vectors: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None

    def add(self, ids: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        for record_id, vector in zip(ids, vectors, strict=True):
            row = np.asarray(vector, dtype=np.float64)
            if record_id in self._positions:  # an upsert replaces the record in place
                self._vectors[self._positions[record_id]] = row
            else:
                self._positions[record_id] = len(self._ids)
                self._ids.append(record_id)
                self._vectors.append(row)
        self._matrix = None

    def search(self, vector: Sequence[float], top: int) -> list[tuple[str, float]]:
        if not self._ids:
            return []
        if self._matrix is None:
            self._matrix = _unit(np.vstack(self._vectors))
        query = _unit(np.asarray(vector, dtype=np.float64))
        similarities = self._matrix @ query
        scored = [(self._ids[i], float(similarities[i])) for i in range(len(self._ids))]
        scored.sort(key=lambda item: item[1], reverse=True)  # stable: ties in insertion order
        return scored[:top]

    def close(self) -> None:
        pass


class FaissStore:
    provider = "faiss"

    def __init__(self, dimensions: int, path: str | None = None) -> None:
        import faiss

        self._faiss = faiss
        self._path = path
        self._index = faiss.IndexFlatIP(dimensions)
        self._ids: list[str] = []

    def add(self, ids: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        matrix = np.nan_to_num(_unit(np.asarray(vectors, dtype=np.float32)))
        self._index.add(matrix)
        self._ids += list(ids)
        if self._path:
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
            self._faiss.write_index(self._index, self._path)

    def search(self, vector: Sequence[float], top: int) -> list[tuple[str, float]]:
        if not self._ids:
            return []
        query = np.nan_to_num(_unit(np.asarray([vector], dtype=np.float32)))
        scores, positions = self._index.search(query, min(top, len(self._ids)))
        return [(self._ids[p], float(s)) for s, p in zip(scores[0], positions[0], strict=True) if p >= 0]

    def close(self) -> None:
        pass


def qdrant_client_options(options: dict[str, Any]) -> dict[str, Any]:
    """HoloDeck's `parse_qdrant_connection_string`, and the explicit keys that override it."""
    options = dict(options)
    connection = options.pop("connection_string", None)
    params: dict[str, Any] = {}
    if connection:
        from urllib.parse import urlparse

        if connection == ":memory:":
            params = {"location": ":memory:"}
        elif connection.startswith(("/", "file://")):
            params = {"path": connection.replace("file://", "")}
        else:
            parsed = urlparse(connection)
            if parsed.scheme not in ("http", "https", "qdrant", "qdrant+grpc", "grpc"):
                raise ValueError(
                    f"Invalid scheme '{parsed.scheme}'. Qdrant connection string must use http://, "
                    "https://, qdrant://, or qdrant+grpc:// scheme"
                )
            host = parsed.hostname or "localhost"
            if parsed.scheme in ("qdrant+grpc", "grpc"):
                params = {"host": host, "grpc_port": parsed.port or 6334, "prefer_grpc": True}
            elif host in ("localhost", "127.0.0.1"):
                params = {"host": host, "port": parsed.port or 6333}
            else:
                scheme = parsed.scheme if parsed.scheme in ("http", "https") else "http"
                params = {"url": f"{scheme}://{host}" + (f":{parsed.port}" if parsed.port else "")}
            if parsed.username:
                params["api_key"] = parsed.username
    params.update(options)
    if not any(key in params for key in ("location", "path", "url", "host")):
        params["location"] = ":memory:"  # Qdrant's own default with no parameters
    return params


class QdrantStore:
    provider = "qdrant"

    def __init__(self, dimensions: int, collection: str, options: dict[str, Any]) -> None:
        from qdrant_client import QdrantClient, models

        self._models = models
        self._client = QdrantClient(**qdrant_client_options(options))
        self._collection = f"proctor_{collection}"  # never a collection of the user's own
        if self._client.collection_exists(self._collection):
            self._client.delete_collection(self._collection)  # built afresh for each run
        self._client.create_collection(
            self._collection,
            vectors_config=models.VectorParams(size=dimensions, distance=models.Distance.COSINE),
        )
        self._ids: dict[str, str] = {}
        self._order: dict[str, int] = {}

    def add(self, ids: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        points = []
        for record_id, vector in zip(ids, vectors, strict=True):
            point_id = str(uuid.uuid5(uuid.NAMESPACE_URL, record_id))
            self._ids[point_id] = record_id
            self._order.setdefault(record_id, len(self._order))
            points.append(self._models.PointStruct(id=point_id, vector=[float(v) for v in vector]))
        for start in range(0, len(points), 256):
            self._client.upsert(self._collection, points=points[start : start + 256])

    def search(self, vector: Sequence[float], top: int) -> list[tuple[str, float]]:
        hits = self._client.query_points(
            self._collection, query=[float(v) for v in vector], limit=top, with_payload=False
        ).points
        found = [(self._ids[str(hit.id)], float(hit.score)) for hit in hits]
        found.sort(key=lambda item: (-item[1], self._order[item[0]]))
        return found

    def close(self) -> None:
        self._client.close()


def open_store(
    database: DatabaseConfig | str | None,
    dimensions: int,
    collection: str,
    base_dir: Path,
    warn: Callable[[str], None],
) -> VectorStore:
    """The tool's store, or memory (with the reason) when it cannot be had, as HoloDeck falls back."""
    if database is None or isinstance(database, str) or database.provider == "in-memory":
        return InMemoryStore()
    options = dict(database.model_extra or {})
    if database.connection_string is not None:
        options["connection_string"] = database.connection_string.get_secret_value()
    try:
        if database.provider == "faiss":
            path = options.get("path") or options.get("connection_string")
            if path and not Path(path).is_absolute():
                path = str(base_dir / path)
            return FaissStore(dimensions, path)
        if database.provider == "qdrant":
            if "path" in options and not Path(options["path"]).is_absolute():
                options["path"] = str(base_dir / options["path"])
            return QdrantStore(dimensions, collection, options)
        if database.provider == "chromadb":
            raise RuntimeError("Proctor has no Chroma client")
        raise ValueError(f"no store for provider {database.provider!r}")  # refused when the file loads
    except ImportError as error:
        reason = f"{error.name or error} is not installed (pip install -e '.[retrieval]')"
    except Exception as error:  # an unreachable server, a bad option: memory, as HoloDeck does
        reason = f"{type(error).__name__}: {error}"
    secret = options.get("connection_string")
    if secret:
        reason = reason.replace(secret, "<connection_string>")
    warn(
        f"tool {collection!r}: the {database.provider} store could not be opened ({reason}); "
        "the vectors are kept in memory instead, as HoloDeck does (the results are the same: "
        "every store searches exactly)"
    )
    return InMemoryStore()
