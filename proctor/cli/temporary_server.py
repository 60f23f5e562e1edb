"""A Prefect API server for one `proctor run --prefect` when no server is configured.

Prefect would start one itself (its "ephemeral" server), but as a child that outlives the
command when the command is killed with SIGKILL, and with a 20 s start-up limit that a busy
machine misses. Proctor starts the same server (Prefect's own app, as Prefect starts it) so
that it dies with the command, whatever ends it: on Linux the server asks the kernel for a
SIGTERM when its parent dies; otherwise it is stopped when the command exits. It may take
`PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS` to start (120 s unless set).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

STARTUP_TIMEOUT_VARIABLE = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
DEFAULT_STARTUP_TIMEOUT_S = 120.0
PR_SET_PDEATHSIG = 1


class ServerDidNotStart(RuntimeError):
    pass


def startup_timeout_s() -> float:
    try:
        return float(os.environ.get(STARTUP_TIMEOUT_VARIABLE) or DEFAULT_STARTUP_TIMEOUT_S)
    except ValueError:
        return DEFAULT_STARTUP_TIMEOUT_S


def _die_with_parent() -> None:  # pragma: no cover - runs in the child, before exec
    """In the server's process: SIGTERM when the process that started it dies (Linux)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _prefect_folder() -> str:
    spec = importlib.util.find_spec("prefect")
    if spec is None or not spec.submodule_search_locations:
        raise ServerDidNotStart("Prefect is not installed")
    return str(Path(next(iter(spec.submodule_search_locations))).parent)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:  # noqa: S310 - our own server
            return bool(reply.status == 200)
    except OSError:
        return False


@contextlib.contextmanager
def temporary_prefect_server(timeout_s: float | None = None) -> Iterator[str]:
    """Start the server, wait until it answers, yield its API URL; stop it afterwards."""
    limit = startup_timeout_s() if timeout_s is None else timeout_s
    port = _free_port()
    url = f"http://127.0.0.1:{port}/api"
    server_env = {
        "PREFECT_UI_ENABLED": "0",
        "PREFECT__SERVER_EPHEMERAL": "1",
        "PREFECT__SERVER_FINAL": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--app-dir", _prefect_folder(), "--factory"]
        + ["prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(port)]
        + ["--log-level", "error", "--lifespan", "on"],
        env={**os.environ, **server_env},
        stdout=subprocess.DEVNULL,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,  # noqa: PLW1509
    )
    try:
        deadline = time.monotonic() + limit
        while not _healthy(url):
            if process.poll() is not None:
                status = process.returncode
                raise ServerDidNotStart(f"the temporary Prefect server exited with status {status}")
            if time.monotonic() > deadline:
                raise ServerDidNotStart(
                    f"the temporary Prefect server did not answer within {limit:g} s; give it longer with "
                    f"{STARTUP_TIMEOUT_VARIABLE}, or point PREFECT_API_URL at a running server"
                )
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def prefect_api_for(forced: bool) -> Iterator[None]:
    """The API a `--prefect` command runs against: the configured one when there is one;
    else, before Prefect is imported in this process, a temporary server of Proctor's, named
    in this process's PREFECT_API_URL while the command runs."""
    from proctor.cli.prefect_api import configured_api_url

    if not forced or "prefect.settings" in sys.modules or configured_api_url():
        yield
        return
    print("prefect: starting a temporary Prefect server for this command; it stops with it", file=sys.stderr)
    previous = os.environ.get("PREFECT_API_URL")
    with temporary_prefect_server() as url:
        os.environ["PREFECT_API_URL"] = url
        try:
            yield
        finally:
            _flush_to(url)
            if previous is None:
                os.environ.pop("PREFECT_API_URL", None)
            else:
                os.environ["PREFECT_API_URL"] = previous


def _flush_to(url: str) -> None:
    """Send Prefect's queued logs and events while the server is still there to take them
    (Prefect would otherwise flush them at exit, to a server already stopped)."""
    if "prefect" not in sys.modules:
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        with contextlib.suppress(Exception):
            worker.drain_all(timeout=30)


def with_prefect_api(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A command (`run`, `resume`) inside `prefect_api_for(--prefect)`; a server that does not
    start is one line and exit 3."""

    @functools.wraps(command)
    def wrapped(args: argparse.Namespace) -> int:
        try:
            with prefect_api_for(getattr(args, "prefect", None) is True):
                return command(args)
        except ServerDidNotStart as error:
            print(f"error: {error}", file=sys.stderr)
            return 3  # the run itself could not happen (EXIT_ERROR)

    return wrapped
