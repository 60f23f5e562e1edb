"""A local OpenAI-compatible server that enforces a quota the way providers do, in its own process.

It is `tests.fakes.FakeOpenAI` with a `ProviderQuota` (RPM/TPM over a sliding 60 s window,
429 with `retry-after` / `retry-after-ms`, `x-ratelimit-*` headers on every answer; see
tests/fakes/quota.py), answering after a latency drawn from a log-normal distribution (median
and spread as given; seeded), the shape measured for hosted chat models: most answers near the
median, a long tail of slow ones. Judge requests (JSON mode) get a judge's verdict, others a
short answer; a grader's prompt from Inspect AI (`model_graded_qa`) or promptfoo (`llm-rubric`)
gets a passing verdict in the form that grader asks for. `GET /_fake/stats` returns what it
admitted and refused.

    with QuotaServer(rpm=600) as server:
        server.base_url, server.stats()
"""

from __future__ import annotations

import json
import math
import multiprocessing
import random
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
INSPECT_GRADER = "GRADE: $LETTER"  # in Inspect AI's model_graded_qa instructions
PROMPTFOO_GRADER = "{reason: string, pass: boolean, score: number}"  # promptfoo's llm-rubric prompt


def _serve(conn: Any, rpm: float | None, tpm: float | None, median_s: float, sigma: float, seed: int) -> None:
    sys.path.insert(0, str(PROJECT))
    from http.server import ThreadingHTTPServer

    from tests.fakes.openai_server import FakeOpenAI, judged
    from tests.fakes.quota import ProviderQuota

    ThreadingHTTPServer.request_queue_size = 1024  # bursts of new connections are accepted
    rng, lock = random.Random(seed), threading.Lock()

    def reply(body: dict[str, Any]) -> str:
        with lock:
            latency = median_s * math.exp(rng.gauss(0.0, sigma)) if median_s > 0 else 0.0
        time.sleep(latency)
        if (body.get("response_format") or {}).get("type") == "json_object":
            return judged(5, "matches")  # Proctor's judged metrics ask for JSON
        asked = json.dumps(body.get("messages") or "")
        if INSPECT_GRADER in asked:
            return "The submission answers 42, as the criterion asks.\nGRADE: C"
        if PROMPTFOO_GRADER in asked:
            return json.dumps({"reason": "the answer is 42", "pass": True, "score": 1.0})
        return "The answer is 42."

    quota = ProviderQuota(rpm=rpm, tpm=tpm) if rpm or tpm else None
    server = FakeOpenAI(default=reply, quota=quota).start()
    conn.send(server.base_url)
    conn.recv()  # until told to stop
    server.stop()


class QuotaServer:
    def __init__(
        self,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        median_s: float = 0.6,
        sigma: float = 0.5,
        seed: int = 28,
    ) -> None:
        self.args = (rpm, tpm, median_s, sigma, seed)
        self.base_url = ""

    def __enter__(self) -> QuotaServer:
        ours, theirs = multiprocessing.Pipe()
        self._conn = ours
        self._process = multiprocessing.get_context("spawn").Process(
            target=_serve, args=(theirs, *self.args), daemon=True
        )
        self._process.start()
        self.base_url = ours.recv()
        return self

    def stats(self) -> dict[str, Any]:
        root = self.base_url.rsplit("/v1", 1)[0]
        with urllib.request.urlopen(f"{root}/_fake/stats", timeout=30) as answer:
            return json.loads(answer.read())

    def __exit__(self, *exc: object) -> None:
        self._conn.send("stop")
        self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.terminate()
