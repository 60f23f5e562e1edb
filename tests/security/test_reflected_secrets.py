"""A secret a server reflects back is never stored, printed or posted (issue 26, item 10).

A judge whose "reason" quotes the API key it was sent, and a Slack webhook whose 404 body
echoes its secret path: before, the key landed in `metric_result.reason` and the judge
cache, and the webhook path in `eval_run.notification` and on the terminal. A real
`proctor run` against local servers; then every byte it left (the database file, the
reports, stdout and stderr) is searched for each secret, whole and by its first 12
characters.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.fakes import FakeOpenAI, judged
from tests.resilience.test_stored_values import proctor, rows

JUDGE_KEY = "sk-REFLECTED-JUDGE-7c1e9a3f5b2d8e4a"
WEBHOOK_TOKEN = "REFLECTEDHOOK9f3a7c1e5b2d8e4a6c"


@pytest.fixture
def echoing_webhook() -> Iterator[str]:
    """A webhook endpoint that answers 404 with the path it was asked for, as some do."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            seen.append(self.path)
            body = f"no_service: no webhook at {self.path}".encode()
            self.send_response(404)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/services/T0001/B0001/{WEBHOOK_TOKEN}"
    finally:
        server.shutdown()
        server.server_close()
    assert seen, "the webhook was never called: the test proves nothing"


def test_a_key_quoted_by_the_judge_and_a_webhook_path_echoed_by_slack_are_stored_nowhere(
    tmp_path: Path, echoing_webhook: str
) -> None:
    (tmp_path / "agent.py").write_text("def agent(request):\n    return 'We open at 9am.'\n")
    suite = tmp_path / "agent.yaml"
    suite.write_text(
        "name: reflected\ntest_cases:\n  - {name: opening, input: 'When do you open?', ground_truth: 'At 9am.'}\n"
        "evaluations:\n  model: {name: judge-model}\n  metrics:\n    - {metric: llm_judge, threshold: 0.5}\n"
    )
    url = f"sqlite:///{tmp_path / 'results.db'}"
    with FakeOpenAI(default=judged(5, f"the answer is right (you sent me the key {JUDGE_KEY})")) as judge:
        done = proctor(
            "run",
            str(suite),
            "--agent",
            f"{tmp_path / 'agent.py'}:agent",
            "--db",
            url,
            "--output",
            str(tmp_path / "reports"),
            "--slack-webhook",
            "${PROCTOR_TEST_WEBHOOK}",
            "--notify",
            "always",
            PROCTOR_JUDGE_API_KEY=JUDGE_KEY,
            PROCTOR_JUDGE_BASE_URL=judge.base_url,
            PROCTOR_TEST_WEBHOOK=echoing_webhook,
        )
        assert judge.requests, "the judge was never asked"
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    ((notification,),) = rows(url, "SELECT notification FROM eval_run")
    assert "404" in json.loads(notification)["error"]  # the echo did reach Proctor
    ((reason,),) = rows(url, "SELECT reason FROM metric_result")
    assert "the answer is right" in reason
    from proctor.storage.db import dispose_engines

    dispose_engines()
    left_behind = {"terminal": output.encode()}
    for path in [*tmp_path.rglob("*")]:
        if path.is_file() and path.suffix != ".py" and path.name != "agent.yaml":
            left_behind[str(path.relative_to(tmp_path))] = path.read_bytes()
    assert any(name.startswith("results.db") for name in left_behind)
    for secret in (JUDGE_KEY, WEBHOOK_TOKEN):
        for needle in (secret, secret[:12]):
            leaks = [name for name, data in left_behind.items() if needle.encode() in data]
            assert not leaks, f"{needle!r} found in {leaks}"
