"""How a Prefect worker stops, for docs/service.md: seconds from a signal to `prefect worker start`
exiting, on a Prefect server started here (its own PREFECT_HOME, a free port).

Each trial starts a process worker on a pool of its own server, waits until it polls, sends the
signals and times the exit (up to `--patience` seconds, then it is killed and reported as
still running):

- started in its own session (a terminal, systemd, a container): SIGTERM, SIGINT, and SIGTERM
  while it runs a flow run (a flow that sleeps);
- started with `&` from a bash script, which makes the job ignore SIGINT: one SIGTERM, two
  SIGTERMs 5 s apart, and one SIGTERM when the script ran `set -m` first.

    python bench/worker_stop.py [--patience 70]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

PREFECT = shutil.which("prefect") or "prefect"
FLOW = textwrap.dedent(
    """
    import time
    from prefect import flow

    @flow
    def sleepy() -> None:
        time.sleep(100)
    """
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Bench:
    def __init__(self, home: Path, patience: float) -> None:
        self.home, self.patience = home, patience
        port = free_port()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")} | {
            "PREFECT_HOME": str(home),
            "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        }
        self.server = subprocess.Popen(
            [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            env=self.env,
            stdout=open(home / "server.log", "wb"),  # noqa: SIM115 - closed with the process
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 300
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or self.server.poll() is not None:
                    raise RuntimeError(f"the server did not start; see {home / 'server.log'}") from None
                time.sleep(0.5)
        self.prefect("work-pool", "create", "stop", "--type", "process")
        (home / "flow").mkdir()
        (home / "flow" / "sleepy.py").write_text(FLOW)
        deploy = (
            "from prefect import flow\n"
            f"flow.from_source(source={str(home / 'flow')!r}, entrypoint='sleepy.py:sleepy')"
            ".deploy(name='s', work_pool_name='stop')\n"
        )
        subprocess.run([sys.executable, "-c", deploy], env=self.env, check=True, capture_output=True)

    def prefect(self, *args: str) -> str:
        done = subprocess.run([PREFECT, *args], env=self.env, check=True, capture_output=True, text=True)
        return done.stdout

    def close(self) -> None:
        os.killpg(self.server.pid, signal.SIGTERM)
        self.server.wait(60)

    def trial(self, name: str, signals: list[int], *, script: str | None = None, busy: bool = False) -> None:
        log = self.home / f"worker-{len(list(self.home.glob('worker-*')))}.log"
        worker = f"{PREFECT} worker start --pool stop"
        if script is None:
            command = worker.split()
        else:  # `prefect worker start … &` in a bash script; its pid written for us
            command = ["bash", "-c", f"{script}{worker} & echo $! > {self.home}/pid; wait"]
        output = open(log, "wb")  # noqa: SIM115 - closed with the process
        started = subprocess.Popen(
            command, env=self.env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + 180
        while "started" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        pid = started.pid if script is None else int((self.home / "pid").read_text())
        if busy:
            self.prefect("deployment", "run", "sleepy/s")
            while "sleepy" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.5)
        time.sleep(5)  # polling (and the flow run under way)
        begun = time.monotonic()
        for index, number in enumerate(signals):
            if index:
                time.sleep(5)
            if started.poll() is None:
                os.kill(pid, number)
        try:
            started.wait(self.patience)
            print(f"{name:<44} exited after {time.monotonic() - begun:5.1f} s", flush=True)
        except subprocess.TimeoutExpired:
            print(f"{name:<44} still running after {self.patience:.0f} s", flush=True)
            os.killpg(started.pid, signal.SIGKILL)
            started.wait()
        if script is not None:  # the worker itself, should it have outlived its script
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patience", type=float, default=70.0, help="seconds to wait for an exit")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="worker-stop-"))
    bench = Bench(home, args.patience)
    try:
        print(f"prefect {bench.prefect('version').split()[1]}; seconds from the first signal to the exit")
        bench.trial("own session, idle: SIGTERM", [signal.SIGTERM])
        bench.trial("own session, idle: SIGINT (Ctrl-C)", [signal.SIGINT])
        bench.trial("own session, running a flow run: SIGTERM", [signal.SIGTERM], busy=True)
        bench.trial("script's & job: SIGTERM", [signal.SIGTERM], script="")
        bench.trial("script's & job: SIGTERM, SIGTERM 5 s later", [signal.SIGTERM] * 2, script="")
        bench.trial("script's & job after set -m: SIGTERM", [signal.SIGTERM], script="set -m; ")
    finally:
        bench.close()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
