"""The `proctor` command's entry point: a warm process runs it when one is up, else it runs here.

Only the standard library is imported before knowing which: the point of a warm process is
the two seconds of imports a command would otherwise pay. Once the warm process has forked
the command's child, this process only relays: signals to the child (Ctrl-C, SIGTERM, SIGHUP)
and, at the end, the child's exit code. Anything that keeps the warm process from taking the
command (none running, a stale socket, a refusal) leaves the command to run here, as usual.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

from proctor.warm.channel import ENV_SWITCH, Reader, connect, send, socket_path

# proctor.cli.console's (importing it would import the whole command line)
EXIT_BAD_INPUT, EXIT_ERROR, EXIT_INTERRUPTED = 2, 3, 130
FIRST_ANSWER_TIMEOUT = 30.0
RELAYED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def console_main() -> int:
    """What the `proctor` console script calls."""
    try:
        os.getcwd()
    except FileNotFoundError:  # deleted under the shell that is still in it
        print("error: the current folder no longer exists: cd to one that does", file=sys.stderr)
        return EXIT_BAD_INPUT
    if sys.argv[1:2] == ["warm"] and sys.argv[2:] in (["start"], ["stop"], ["status"]):
        from proctor.warm.control import warm_command  # light: the warm process's own controls

        return warm_command(sys.argv[2])
    code = run_in_warm_process()
    if code is not None:
        return code
    from proctor.cli.main import console_main as run_here

    return run_here()


def run_in_warm_process() -> int | None:
    """The command's exit code once a warm process ran it, or None when none could."""
    if os.environ.get(ENV_SWITCH) == "0":
        return None
    path = socket_path()
    streams = standard_streams()
    if streams is None:
        return None
    connection = connect(path)
    if connection is None:
        return None
    with connection:
        request = {
            "argv": sys.argv,
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "path": sys.path,
            "umask": current_umask(),
            "limits": resource_limits(),
            # signals the command was started ignoring (nohup, a background job): ignored by its
            # child as well, and not relayed
            "ignored_signals": [
                int(sig) for sig in RELAYED_SIGNALS if signal.getsignal(sig) == signal.SIG_IGN
            ],
            "streams": [spec for spec, _ in streams],
        }
        try:
            send(connection, request, [fd for _, fd in streams])
            connection.settimeout(FIRST_ANSWER_TIMEOUT)
            reader = Reader(connection)
            first = reader.next()
        except TimeoutError:
            print(
                f"error: the warm process at {path} did not answer in {FIRST_ANSWER_TIMEOUT:.0f} s; "
                f"stop it (`proctor warm stop`) or set {ENV_SWITCH}=0",
                file=sys.stderr,
            )
            return EXIT_ERROR
        except OSError:
            return None  # it went away before taking the command: nothing ran
        except KeyboardInterrupt:  # Ctrl-C before the run's process was known: closing the
            # connection has the warm process stop it, if it was forked at all
            print(
                "interrupted as the command started; a run it had begun is stopped "
                "(`proctor history` lists it, `proctor resume` finishes it)",
                file=sys.stderr,
            )
            return EXIT_INTERRUPTED
        if first is None or "pid" not in first:
            if first and first.get("say"):
                print(f"note: {first['refused']}", file=sys.stderr)
            return None
        connection.settimeout(None)
        return relay(reader, first["pid"])


def relay(reader: Reader, pid: int) -> int:
    """Forward signals to the command's child until the warm process reports its exit code."""

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for signum in RELAYED_SIGNALS:
        if signal.getsignal(signum) != signal.SIG_IGN:
            signal.signal(signum, forward)
    try:
        message = reader.next()
    except OSError:
        message = None
    if message is None or "exit" not in message:
        print(
            f"error: the warm process stopped while running this command (pid {pid}); "
            "its exit code is unknown: `proctor history` shows what was stored",
            file=sys.stderr,
        )
        return EXIT_ERROR
    return int(message["exit"])


def standard_streams() -> list[tuple[dict[str, object], int]] | None:
    """Each standard stream's descriptor and text settings; None when one is closed or missing."""
    found = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        try:
            fd = stream.fileno()
            os.fstat(fd)
            spec = {
                "encoding": stream.encoding,
                "errors": stream.errors,
                "line_buffering": stream.line_buffering,
            }
        except (AttributeError, OSError, ValueError):
            return None
        found.append((spec, fd))
    return found


LIMITS = (
    "RLIMIT_AS",
    "RLIMIT_CORE",
    "RLIMIT_CPU",
    "RLIMIT_DATA",
    "RLIMIT_FSIZE",
    "RLIMIT_NOFILE",
    "RLIMIT_NPROC",
    "RLIMIT_STACK",
)


def resource_limits() -> dict[str, list[int]]:
    """The command's resource limits (`ulimit`), which its child takes on."""
    import resource

    return {
        name: list(resource.getrlimit(getattr(resource, name))) for name in LIMITS if hasattr(resource, name)
    }


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
