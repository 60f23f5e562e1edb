"""Attached files are bounded in wall-clock time and in what archives expand to: an HTTP
source dripping one byte at a time cannot hold a case past its limit, and a small zip bomb
dressed as a .docx is refused before markitdown opens it."""

from __future__ import annotations

import threading
import time
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from proctor import files
from proctor.models.holodeck import FileInput


@pytest.fixture
def dripping_url() -> Iterator[str]:
    """A server on 127.0.0.1 that answers 200 and then one byte every 2 s, for ever; stopped
    (its socket closed, the drip loops told to end) by the test itself."""
    stop = threading.Event()

    class Drip(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            while not stop.is_set():
                try:
                    self.wfile.write(b"x")
                    self.wfile.flush()
                except OSError:
                    return
                stop.wait(2)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/slow.txt"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_a_dripping_download_ends_at_the_files_deadline(
    dripping_url: str, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("PROCTOR_FILE_CACHE", str(tmp_path / "cache"))
    started = time.monotonic()
    result = files.process_file(FileInput(url=dripping_url, type="text", cache=False), tmp_path, limit_s=3)
    elapsed = time.monotonic() - started
    assert result.error is not None and "within 3 s" in result.error, result.error
    assert elapsed < 8, elapsed  # the limit plus at most one drip interval, not the 30 s read timeout
    assert not list((tmp_path / "cache").glob("*.part")) and not list((tmp_path / "cache").glob("*.txt"))


def test_a_run_with_a_dripping_file_ends_within_its_case_timeout(dripping_url: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "agent.py").write_text("def agent(request):\n    return 'hi'\n")
    (tmp_path / "agent.yaml").write_text(
        "name: drip\n"
        f"test_cases:\n  - name: c1\n    input: q\n    files: [{{url: '{dripping_url}', type: text}}]\n"
        "evaluations:\n  metrics: [{metric: bleu}]\n"
    )
    proctor = str(Path(sys.executable).with_name("proctor"))
    command = [
        proctor,
        "run",
        "agent.yaml",
        "--agent",
        "agent.py:agent",
        "--db",
        f"sqlite:///{tmp_path / 'r.db'}",
        "--no-progress",
    ]
    started = time.monotonic()
    done = subprocess.run(
        [*command, "--timeout", "2", "--case-timeout", "4", "--output", str(tmp_path / "out")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "PROCTOR_FILE_CACHE": str(tmp_path / "cache")},
    )
    run_s = time.monotonic() - started
    assert done.returncode == 1, done.stdout + done.stderr  # the case failed, the run completed
    assert "Traceback" not in done.stderr
    # Start-up of a busy 2-core box is not bounded here; the download must stop at ~4 s, not
    # hang for ever, so any hang is far beyond this.
    assert run_s < 120, run_s


def zip_bomb(path: Path, expanded: int) -> None:
    """A .docx-shaped zip whose one member expands to `expanded` bytes of zeros."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            block = b"\0" * 2**20
            for _ in range(expanded // 2**20):
                member.write(block)


def test_a_zip_bomb_docx_is_refused_before_it_is_expanded(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(files, "MAX_EXPANDED_BYTES", 16 * 2**20)
    bomb = tmp_path / "bomb.docx"
    zip_bomb(bomb, 64 * 2**20)
    assert bomb.stat().st_size < 200_000  # small on disk
    started = time.monotonic()
    result = files.process_file(FileInput(path="bomb.docx", type="word"), tmp_path)
    assert result.error is not None and "expands to" in result.error and "limit" in result.error, result.error
    assert time.monotonic() - started < 10


def test_an_ordinary_archive_passes_the_check(tmp_path: Path) -> None:
    normal = tmp_path / "n.docx"
    zip_bomb(normal, 2**20)
    files.check_archive(normal)
