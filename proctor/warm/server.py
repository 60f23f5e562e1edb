"""The warm process: everything a command imports, imported once; each command a fork of it.

`proctor warm start` runs `python -m proctor.warm.server` in a session of its own. It imports
what a run needs (Prefect's engines, Proctor's command line, flows and metrics, FastAPI, which
Prefect loads to serialise a flow's parameters), then listens on a Unix socket (a folder only
its user can enter; a connection from another user is closed unanswered). For each command it
forks: the child takes the command's standard streams, folder, environment, `sys.path`,
umask, resource limits and ignored signals, then runs the command's own entry point, so it
behaves as the command would have in a process of its own, agents and all. The parent only
forks and reports: it reaps the child and sends the command its exit status, and stops the
child (SIGTERM) if the command goes away.

Nothing here may start a thread before forking (a fork copies only the forking thread, and a
lock another thread held stays held for ever in the child), and nothing that depends on the
command is decided at import: Prefect's settings are read again in the child, from the
command's environment. A command the warm process cannot run as the command would is refused
before anything runs, and the command runs as usual: one from another Python path or Python
settings, or any command once a module the warm process imported has changed on disk (the
warm process then stops, so the next `proctor warm start` loads the new code).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import select
import signal
import socket
import sys
import time
from typing import Any

from proctor.warm.channel import Reader, connect, peer_uid, send, socket_path

# What a run imports after the command line has parsed its arguments (found by listing
# `sys.modules` before and after a run of the bundled example against a Prefect server).
PRELOAD = (
    "proctor.cli.main",
    "proctor.cli.run",
    "proctor.cli.prefect_api",
    "proctor.flows.evaluate",
    "proctor.metrics.budget",
    "proctor.metrics.lexical",
    "proctor.metrics.response",
    "proctor.metrics.trajectory",
    "prefect.engine",
    "prefect.flow_engine",
    "prefect.task_engine",
    "prefect.concurrency.asyncio",
    "prefect.concurrency.sync",
    "prefect.concurrency.v1.context",
    "prefect.telemetry.run_telemetry",
    "prefect.utilities.visualization",
    "prefect.client.orchestration",
    "prefect.artifacts",
    "fastapi",
    "python_multipart",
    "rouge_score.rouge_scorer",
    "rich.progress",
    "stringprep",
)

# Python settings fixed when an interpreter starts: a command started with others than the
# warm process's would not run the same code, so it runs on its own.
PYTHON_STARTUP = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUTF8",
    "PYTHONHASHSEED",
    "PYTHONOPTIMIZE",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONSAFEPATH",
    "PYTHONNOUSERSITE",
    "PYTHONUSERBASE",
    "PYTHONDEVMODE",
    "PYTHONWARNINGS",
    "PYTHONIOENCODING",
    "PYTHONPLATLIBDIR",
)
TERMINATE_GRACE = 30.0  # seconds a child has to stop after SIGTERM before SIGKILL


def preload() -> list[str]:
    """Import what a run will import; an optional one that is not installed is skipped."""
    skipped = []
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            skipped.append(name)
    return skipped


def loaded_files() -> dict[str, tuple[int, int]]:
    """Each loaded module's file with its modification time and size, to tell when code changed."""
    files: dict[str, tuple[int, int]] = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path not in files:
            with contextlib.suppress(OSError):
                status = os.stat(path)
                files[path] = (status.st_mtime_ns, status.st_size)
    return files


def changed_file(files: dict[str, tuple[int, int]]) -> str | None:
    for path, seen in files.items():
        try:
            status = os.stat(path)
        except OSError:
            return path
        if (status.st_mtime_ns, status.st_size) != seen:
            return path
    return None


def python_settings(environment: dict[str, str]) -> dict[str, str]:
    return {name: environment[name] for name in PYTHON_STARTUP if name in environment}


class WarmServer:
    def __init__(self, path: str) -> None:
        self.path = path
        self.started = time.time()
        self.served = 0
        self.settings = python_settings(dict(os.environ))
        self.files = loaded_files()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.children: dict[int, socket.socket] = {}  # child pid -> its command's connection
        self.stopping: dict[int, float] = {}  # child pid -> when it was sent SIGTERM
        self.running = True

    def listen(self) -> None:
        folder = os.path.dirname(self.path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)
        if (running := connect(self.path)) is not None:
            running.close()
            raise SystemExit(f"another warm process is already listening at {self.path}")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # left by a warm process that died
        self.listener.bind(self.path)
        os.chmod(self.path, 0o600)
        self.listener.listen(64)

    def serve(self) -> None:
        while self.running or self.children:
            if not self.running and self.listener.fileno() != -1:
                self.close_listener()  # stopping: new commands run on their own at once
            waiting = [self.listener] if self.running else []
            readable, _, _ = select.select([*waiting, *self.children.values()], [], [], 0.2)
            for ready in readable:
                if ready is self.listener:
                    self.accept()
                else:
                    self.command_went_away(ready)
            self.reap()
        self.close_listener()

    def close_listener(self) -> None:
        if self.listener.fileno() != -1:
            self.listener.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)

    def accept(self) -> None:
        connection, _ = self.listener.accept()
        if peer_uid(connection) != os.getuid():  # the folder's mode keeps others out; in case it did not
            connection.close()
            return
        connection.settimeout(10)
        reader = Reader(connection)
        try:
            request = reader.next(with_fds=True)
        except (OSError, ValueError):
            request = None
        if request is None:
            self.close_all(reader.fds, connection)
            return
        if "command" in request:  # from `proctor warm status` or `stop`
            self.control(request["command"], connection)
            self.close_all(reader.fds, connection)
            return
        refusal = self.refusal(request, reader.fds)
        if refusal:
            with contextlib.suppress(OSError):
                send(connection, {"refused": refusal[0], "say": refusal[1]})
            self.close_all(reader.fds, connection)
            return
        pid = os.fork()
        if pid == 0:
            run_command(request, reader.fds, [self.listener, connection, *self.children.values()])
        self.served += 1
        for fd in reader.fds:
            os.close(fd)
        connection.settimeout(None)
        try:
            send(connection, {"pid": pid})
        except OSError:  # the command is already gone: so is its child
            self.terminate(pid)
        self.children[pid] = connection

    def refusal(self, request: dict[str, Any], fds: list[int]) -> tuple[str, bool] | None:
        """Why this command cannot run here (then it runs on its own), and whether to say so."""
        changed = changed_file(self.files)
        if changed:
            self.running = False  # the next `proctor warm start` loads the new code
            return (
                f"the warm process (pid {os.getpid()}) stopped: {changed} changed since it started; "
                "this command runs on its own (`proctor warm start` again to use the new code)",
                True,
            )
        if len(fds) != 3:
            return "the command's standard streams did not arrive", False
        if request.get("path", [None])[1:] != sys.path[1:]:
            return "the command's Python path differs from the warm process's", False
        if python_settings(request.get("env", {})) != self.settings:
            return "the command's Python settings differ from the warm process's", False
        if not within_own_limits(request.get("limits", {})):
            return "the command's resource limits are above the warm process's", False
        return None

    def control(self, command: str, connection: socket.socket) -> None:
        if command == "stop":
            self.running = False
        with contextlib.suppress(OSError):
            send(
                connection,
                {
                    "pid": os.getpid(),
                    "since": self.started,
                    "served": self.served,
                    "running": len(self.children),
                    "stopping": not self.running,
                },
            )

    def command_went_away(self, connection: socket.socket) -> None:
        """The command's end of the connection closed (it was killed): stop its child, as a
        command's own process would have stopped with it."""
        with contextlib.suppress(OSError):
            if connection.recv(1 << 16):
                return  # a command sends nothing after its request; ignore it
        for pid, held in self.children.items():
            if held is connection and pid not in self.stopping:
                self.terminate(pid)

    def terminate(self, pid: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        self.stopping[pid] = time.monotonic()

    def reap(self) -> None:
        now = time.monotonic()
        for pid, since in list(self.stopping.items()):
            if now - since > TERMINATE_GRACE:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            connection = self.children.pop(pid, None)
            self.stopping.pop(pid, None)
            if connection is not None:
                with contextlib.suppress(OSError):
                    send(connection, {"exit": exit_code(status)})
                connection.close()

    @staticmethod
    def close_all(fds: list[int], connection: socket.socket) -> None:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        connection.close()


def within_own_limits(limits: dict[str, list[int]]) -> bool:
    """Whether a child of this process can take these limits: it can lower its own, never raise
    a hard limit above this process's."""
    import resource

    for name, (soft, hard) in limits.items():
        _, own_hard = resource.getrlimit(getattr(resource, name))
        if own_hard != resource.RLIM_INFINITY and (
            hard == resource.RLIM_INFINITY
            or hard > own_hard
            or soft == resource.RLIM_INFINITY
            or soft > own_hard
        ):
            return False
    return True


def exit_code(status: int) -> int:
    """A child's wait status as a shell reports it: its exit code, or 128 + the signal."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


def run_command(request: dict[str, Any], fds: list[int], inherited: list[socket.socket]) -> None:
    """In the forked child: become the command's process, run it, exit with its code."""
    code = 1
    try:
        for held in inherited:
            held.close()
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as CPython sets it at start-up
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.umask(request["umask"])
        import resource

        for name, limit in request["limits"].items():
            resource.setrlimit(getattr(resource, name), tuple(limit))
        for signum in request["ignored_signals"]:
            signal.signal(signum, signal.SIG_IGN)
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[:] = request["path"]
        sys.argv[:] = request["argv"]
        adopt_streams(request["streams"])
        # Prefect's settings and logging are read again from the command's environment when
        # the command has set its own defaults (proctor.cli.console.quiet_prefect).
        import proctor.cli.console
        from proctor.cli.main import console_main

        proctor.cli.console.prefect_imported_before_command = True

        code = console_main()
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:  # noqa: BLE001 - whatever it was, this process must end here
        import traceback

        traceback.print_exc()
    finally:
        os._exit(finish(code))


def finish(code: int) -> int:
    """What the interpreter does when a command's process exits, short of unwinding into the
    warm process's own code: wait for non-daemon threads, run the exit handlers (Prefect
    flushes its logs and events to the API there), flush the standard streams."""
    import atexit
    import threading

    try:
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001 - an exit handler's trouble is printed, as at exit
        import traceback

        traceback.print_exc()
        code = code or 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return code


def adopt_streams(streams: list[dict[str, Any]]) -> None:
    """The standard streams as the command had them (encoding, errors, line buffering): they
    now write to its descriptors, but were set up for the warm process's."""
    for stream, spec in zip((sys.stdin, sys.stdout, sys.stderr), streams, strict=True):
        with contextlib.suppress(Exception):
            stream.reconfigure(
                encoding=spec["encoding"], errors=spec["errors"], line_buffering=spec["line_buffering"]
            )


def main() -> None:
    path = socket_path()
    started = time.perf_counter()
    skipped = preload()
    server = WarmServer(path)
    server.listen()
    took = time.perf_counter() - started
    note = f" (not installed, skipped: {', '.join(skipped)})" if skipped else ""
    print(f"warm process {os.getpid()} ready at {path}: imported in {took:.1f} s{note}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: setattr(server, "running", False))
    signal.signal(signal.SIGINT, lambda *_: setattr(server, "running", False))
    server.serve()


if __name__ == "__main__":
    main()
