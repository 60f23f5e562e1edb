"""Proctor's bundled 5-case example as a user runs it (`proctor run
examples/weather/weather.evalset.json`, whole command): with no Prefect server configured, and
against a running one (--prefect-api-url URL, or --start-server to start one and stop it)."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from contextlib import closing, suppress
from pathlib import Path

from .common import PROJECT, RunFailed, base_env, run, tail

EXAMPLE = PROJECT / "examples" / "weather" / "weather.evalset.json"


def proctor_example(cli: str, tmp: Path, env: dict[str, str], repeats: int, timeout: float) -> list[float]:
    """`proctor run examples/weather/weather.evalset.json` as a user types it, in a fresh folder
    each time: whole-command seconds (it exits 1: one case fails on purpose)."""
    seconds = []
    for k in range(repeats):
        folder = tmp / f"run-{k}"
        folder.mkdir(parents=True)
        took, output, code = run(
            [cli, "run", str(EXAMPLE), "--no-progress"], cwd=folder, env=env, timeout=timeout
        )
        if code != 1 or "4/5 passed" not in output:
            raise RunFailed(f"proctor run of the example exited {code}:\n{tail(output)}")
        seconds.append(took)
    return seconds


def warm_example(cli: str, tmp: Path, env: dict[str, str], repeats: int, timeout: float) -> list[float]:
    """The example's command started in a warm process (proctor.warm) of its own, started first
    (not timed) and stopped by its process id afterwards."""
    import signal
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="pw", dir="/tmp"))  # a Unix socket's path is short
    env = {**env, "PROCTOR_WARM": "1", "PROCTOR_WARM_SOCKET": str(folder / "warm.sock")}
    _, output, code = run([cli, "warm", "start"], cwd=folder, env=env, timeout=timeout)
    if code != 0:
        raise RunFailed(f"proctor warm start exited {code}:\n{tail(output)}")
    pid = int(output.split("warm process ")[1].split()[0])
    try:
        proctor_example(cli, tmp / "example-warm-process-first", env, 1, timeout)
        return proctor_example(cli, tmp / "example-warm-process", env, repeats, timeout)
    finally:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


def start_prefect_server(python: str, home: Path, timeout: float = 300.0) -> tuple[subprocess.Popen, str]:
    """`prefect server start` on a free port with its own PREFECT_HOME; (process, API URL)."""
    import socket
    import urllib.request

    with closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = base_env({"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"})
    env.pop("PREFECT_API_URL", None)
    home.mkdir(parents=True, exist_ok=True)
    log = (home / "server.log").open("w")
    server = subprocess.Popen(
        [python, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, stopped as one
    )
    url = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as answer:
                if answer.status == 200:
                    return server, url
        except OSError:
            time.sleep(1)
        if server.poll() is not None:
            break
    stop_server(server)
    raise RunFailed(f"the Prefect server did not start within {timeout:.0f} s (log: {home / 'server.log'})")


def stop_server(server: subprocess.Popen) -> None:
    import signal

    with suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)


def example_section(args: argparse.Namespace, tmp: Path) -> None:
    """Proctor's 5-case example, whole command: without a Prefect server, and against one."""
    python = Path(args.proctor_python)
    cli = str(python.parent / "proctor")
    home = tmp / "example-prefect-home"  # no profile naming a server
    env = base_env({"PREFECT_HOME": str(home), "PROCTOR_WARM": "0"})  # warm only where it says so
    env.pop("PREFECT_API_URL", None)
    print(
        f"\nThe bundled example ({EXAMPLE.relative_to(PROJECT)}, 5 cases), whole command, "
        f"median of {args.example_repeats}:"
    )
    figures = {}
    try:
        figures["no Prefect server (in-process run)"] = proctor_example(
            cli, tmp / "example-local", env, args.example_repeats, args.timeout
        )
    except RunFailed as exc:
        print(f"  without a server: FAILED: {exc}")
    server, url = None, args.prefect_api_url
    try:
        if not url and args.start_server:
            started = time.perf_counter()
            server, url = start_prefect_server(str(python), tmp / "server-home")
            print(f"  (started a Prefect server at {url} in {time.perf_counter() - started:.1f} s)")
        if url:
            proctor_example(cli, tmp / "example-warm", {**env, "PREFECT_API_URL": url}, 1, args.timeout)
            figures[f"against a running Prefect server ({url})"] = proctor_example(
                cli,
                tmp / "example-server",
                {**env, "PREFECT_API_URL": url},
                args.example_repeats,
                args.timeout,
            )
            server_env = {**env, "PREFECT_API_URL": url}
            figures["the same, commands started in a warm process (`proctor warm start`)"] = warm_example(
                cli, tmp, server_env, args.example_repeats, args.timeout
            )
        else:
            print("  against a running server: skipped (pass --prefect-api-url URL or --start-server)")
    except RunFailed as exc:
        print(f"  against a running server: FAILED: {exc}")
    finally:
        if server is not None:
            stop_server(server)
    for label, values in figures.items():
        spread = f"{min(values):.2f}-{max(values):.2f}"
        print(f"  proctor  {label:<60} {statistics.median(values):6.2f} s  (range {spread} s)")
