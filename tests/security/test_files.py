"""A suite cannot read the machine: paths stay in the suite's folder (or an allowed root) however
they are spelt, and URLs are fetched over http(s) only, within a size and a redirect limit.

tests/test_files.py covers `../` escapes, PROCTOR_ALLOWED_FILE_ROOTS, a redirect to file://,
ftp:// and the size limit announced by Content-Length; these cover the rest.
"""

from __future__ import annotations

import http.server
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from proctor import files
from proctor.files import MAX_REDIRECTS, process_file
from proctor.models.holodeck import FileInput

SECRET = "root:x:0:0 the machine's own file"
STREAMED_BYTES = 256 * 1024 * 1024  # what /endless would send if nobody stopped reading


def _process(folder: Path, **fields):
    return process_file(FileInput(**fields), folder)


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A suite folder beside a folder of secrets, one named like the suite's to trick prefix checks."""
    monkeypatch.delenv("PROCTOR_ALLOWED_FILE_ROOTS", raising=False)
    for folder in ("suite", "outside", "suite-evil"):
        (tmp_path / folder).mkdir()
    (tmp_path / "outside" / "secret.txt").write_text(SECRET)
    (tmp_path / "suite-evil" / "secret.txt").write_text(SECRET)
    (tmp_path / "suite" / "notes.txt").write_text("Opening hours: 9 to 5.")
    return tmp_path / "suite"


@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "../suite-evil/secret.txt",  # shares the suite folder's name as a prefix
        "ABSOLUTE",  # the secret's absolute path
        "link-to-secret.txt",  # a symlink in the suite pointing out
        "linked-dir/secret.txt",  # a symlinked folder pointing out
    ],
)
def test_paths_cannot_leave_the_suite_folder(layout: Path, path: str) -> None:
    outside = layout.parent / "outside"
    (layout / "sub").mkdir()
    (layout / "link-to-secret.txt").symlink_to(outside / "secret.txt")
    (layout / "linked-dir").symlink_to(outside, target_is_directory=True)
    if path == "ABSOLUTE":
        path = str(outside / "secret.txt")
    result = _process(layout, path=path, type="text")
    assert result.error and "leaves the suite folder" in result.error
    assert result.markdown_content == "" and SECRET not in repr(result)


def test_symlinks_within_the_suite_and_allowed_roots_are_followed(layout: Path, monkeypatch) -> None:
    (layout / "alias.txt").symlink_to(layout / "notes.txt")
    assert "Opening hours" in _process(layout, path="alias.txt", type="text").markdown_content
    (layout / "shared").symlink_to(layout.parent / "outside", target_is_directory=True)
    monkeypatch.setenv("PROCTOR_ALLOWED_FILE_ROOTS", str(layout.parent / "outside"))
    assert SECRET in _process(layout, path="shared/secret.txt", type="text").markdown_content
    assert "leaves" in _process(layout, path="../suite-evil/secret.txt", type="text").error


class _HostileServer:
    """127.0.0.1 over HTTP/1.0 (the body ends when the connection closes, no Content-Length):
    /loop redirects to itself, /hop-N redirects N more times then serves text, /endless
    streams without end; counts requests and bytes sent per path."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.sent: Counter[str] = Counter()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                server.hits[self.path] += 1
                if self.path == "/loop" or self.path.startswith("/hop-"):
                    hops = 1 if self.path == "/loop" else int(self.path.removeprefix("/hop-"))
                    if hops:
                        self.send_response(302)
                        self.send_header("Location", "/loop" if self.path == "/loop" else f"/hop-{hops - 1}")
                        self.end_headers()
                        return
                    self.send_response(200)
                    self.end_headers()
                    self.wfile.write(b"Arrived after the redirects.")
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                chunk = b"x" * 65536
                try:
                    while server.sent[self.path] < STREAMED_BYTES:
                        self.wfile.write(chunk)
                        server.sent[self.path] += len(chunk)
                except OSError:  # the client stopped reading: what the test wants
                    pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{path}"


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch) -> Iterator[_HostileServer]:
    monkeypatch.setenv("PROCTOR_FILE_CACHE", str(tmp_path / "cache"))
    server = _HostileServer()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def test_redirects_are_followed_a_few_times_only(hostile: _HostileServer, tmp_path: Path) -> None:
    arrived = _process(tmp_path, url=hostile.url(f"hop-{MAX_REDIRECTS}"), type="text", cache=False)
    assert arrived.error is None and "Arrived" in arrived.markdown_content
    looping = _process(tmp_path, url=hostile.url("loop"), type="text", cache=False)
    assert looping.error.endswith(f"more than {MAX_REDIRECTS} redirects")
    assert hostile.hits["/loop"] == MAX_REDIRECTS + 1
    too_far = _process(tmp_path, url=hostile.url(f"hop-{MAX_REDIRECTS + 1}"), type="text", cache=False)
    assert "redirects" in too_far.error


def test_a_body_without_a_declared_size_is_cut_at_the_limit(
    hostile: _HostileServer, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr(files, "MAX_DOWNLOAD_BYTES", 100_000)
    result = _process(tmp_path, url=hostile.url("endless"), type="text", cache=False)
    assert "larger than the 100000-byte limit" in result.error and result.markdown_content == ""
    assert not list((tmp_path / "cache").iterdir())  # no partial download kept
    assert hostile.sent["/endless"] < STREAMED_BYTES  # reading stopped; it was not fetched whole


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "FILE:///etc/passwd",
        "ftp://127.0.0.1/secret.txt",
        "data:text/plain,hello",
        "gopher://127.0.0.1:70/",
        "//127.0.0.1/secret.txt",
        "/etc/passwd",
    ],
)
def test_only_http_and_https_urls_are_fetched(url: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PROCTOR_FILE_CACHE", str(tmp_path / "cache"))
    result = _process(tmp_path, url=url, type="text")
    assert "only http and https" in result.error and result.markdown_content == ""
    assert not (tmp_path / "cache").exists()
