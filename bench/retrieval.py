"""What a HoloDeck retrieval tool costs a run: building its index once, and each search. Runs
the real runners (`proctor.agents.tools.retrieval.runners`) over a seeded source of `--docs` markdown files
(each a heading, a topic sentence and filler from a fixed vocabulary), embedded by the local
model of the `embeddings` extra (all-MiniLM-L6-v2 on the CPU), as a run does: opened once
(cold: every chunk embedded; warm: the same files again, from the index cache), then called by
`--queries` searches one at a time.

    python bench/retrieval.py [--docs 1000] [--queries 100] [--kind vectorstore|hierarchical_document]
                              [--store in-memory|faiss|qdrant]

Prints the chunks indexed, the cold and warm build times, the process's peak memory growth while
building (ru_maxrss, which includes loading the embedding model) and the index's own vectors,
and the per-search latency (median and 95th percentile, ms; the query's embedding included).
Wall-clock figures of a shared machine: compare them on one machine, not across machines.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from proctor.agents.protocol import AgentRequest  # noqa: E402
from proctor.agents.tools import ToolContext  # noqa: E402
from proctor.agents.tools.retrieval.runners import HierarchicalDocumentRunner, VectorstoreRunner  # noqa: E402
from proctor.models.holodeck import LLMProvider  # noqa: E402

TOPICS = ["refund", "shipping", "warranty", "invoice", "password", "battery", "screen", "subscription"]
FILLER = [
    *("the", "customer", "account", "order", "policy", "team", "product", "service", "support"),
    *("request", "update", "period", "item", "delivery", "payment", "region", "store", "record"),
    *("date", "note", "section", "detail", "process", "review"),
]


def write_source(folder: Path, docs: int, seed: int) -> list[str]:
    """`docs` markdown files, and one query per file naming its topic and number."""
    rng = random.Random(seed)
    queries = []
    for n in range(docs):
        topic = TOPICS[n % len(TOPICS)]
        body = " ".join(rng.choice(FILLER) for _ in range(rng.randint(60, 200)))
        text = (
            f"# Article {n}\n\n## {topic.title()} rule {n}\n\nThe {topic} rule number {n} applies. {body}.\n"
        )
        (folder / f"doc_{n:05d}.md").write_text(text, encoding="utf-8")
        queries.append(f"What does {topic} rule number {n} say?")
    return queries


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def bench(docs: int, queries: int, kind: str, store: str, seed: int) -> None:
    os.environ["PROCTOR_EMBEDDINGS"] = "local"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "docs").mkdir()
        asked = write_source(root / "docs", docs, seed)
        os.environ["PROCTOR_INDEX_CACHE"] = str(root / "cache")
        context = ToolContext(base_dir=root, agent_name="bench", model=LLMProvider(name="m"))
        entry = {"name": "kb", "type": kind, "description": "articles", "source": "docs/"}
        entry |= {"embedding_model": "all-MiniLM-L6-v2"}
        if store != "in-memory":
            entry["database"] = {"provider": store}
        runner_class = VectorstoreRunner if kind == "vectorstore" else HierarchicalDocumentRunner
        rss_before = _peak_mb()
        timings = {}
        for label in ("cold", "warm"):
            runner = runner_class(entry, context)
            started = time.perf_counter()
            await runner.open()
            timings[label] = time.perf_counter() - started
            if label == "warm":
                break
            await runner.aclose()
        rss_growth = _peak_mb() - rss_before
        index = runner.index
        chunks = len(index.records if kind == "vectorstore" else index.chunks)
        vectors_mb = chunks * 384 * 8 / 1e6
        rng = random.Random(seed + 1)
        request = AgentRequest(input="q", case_id="c", turn_id="t", thread_id="th")
        latencies = []
        for query in rng.sample(asked, min(queries, len(asked))):
            started = time.perf_counter()
            await runner.call("kb_search", {"query": query}, request)
            latencies.append((time.perf_counter() - started) * 1000)
        await runner.aclose()
    latencies.sort()
    p95 = latencies[max(0, round(0.95 * len(latencies)) - 1)]
    print(f"{kind}, {store}, {docs} documents -> {chunks} chunks (all-MiniLM-L6-v2, CPU)")
    print(
        f"  index build: cold {timings['cold']:.1f} s (files converted, every chunk embedded), "
        f"warm {timings['warm']:.2f} s (from the index cache)"
    )
    print(
        f"  memory: peak RSS grew {rss_growth:.0f} MB while building (embedding model included); "
        f"vectors {vectors_mb:.1f} MB"
    )
    print(f"  search: {len(latencies)} calls, median {statistics.median(latencies):.1f} ms, p95 {p95:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--kind", choices=["vectorstore", "hierarchical_document"], default="vectorstore")
    parser.add_argument("--store", choices=["in-memory", "faiss", "qdrant"], default="in-memory")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    asyncio.run(bench(args.docs, args.queries, args.kind, args.store, args.seed))


if __name__ == "__main__":
    main()
