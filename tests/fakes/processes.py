"""Servers and workers started by tests, each in its own process group, stopped by its pid.

A worker started with a plain `&` ignores SIGTERM (Prefect notes); its own session lets the
test signal the whole group it started, and nothing else.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(command: list[str], *, env: dict[str, str], log: Path, cwd: Path | None = None) -> subprocess.Popen:
    handle = open(log, "wb")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        command, env=env, cwd=cwd, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
    )


def stop(process: subprocess.Popen, timeout: float = 20.0) -> None:
    """SIGTERM the process group this test started, then SIGKILL what is left."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout)


def wait_http(url: str, *, timeout: float, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"process exited ({process.returncode}) before {url} answered:\n{log.read_text()}"
            )
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as response:
            if response.status == 200:
                return
        time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {timeout}s:\n{log.read_text()[-3000:]}")


@contextlib.contextmanager
def running(command: list[str], *, env: dict[str, str], log: Path, cwd: Path | None = None) -> Iterator:
    process = start(command, env=env, log=log, cwd=cwd)
    try:
        yield process
    finally:
        stop(process)
