"""`proctor warm start | stop | status`: the warm process's life, from the command line."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import datetime
from typing import Any

from proctor.warm.channel import Reader, connect, private_folder, send, socket_path

READY_TIMEOUT = 180.0


def ask(command: str) -> dict[str, Any] | None:
    """The warm process's answer to `command` ("status" or "stop"), or None when none answers."""
    connection = connect(socket_path())
    if connection is None:
        return None
    with connection:
        connection.settimeout(10)
        try:
            send(connection, {"command": command})
            return Reader(connection).next()
        except OSError:
            return None


def describe(answer: dict[str, Any]) -> str:
    since = datetime.fromtimestamp(answer["since"]).strftime("%Y-%m-%d %H:%M:%S")
    return (
        f"warm process {answer['pid']} at {socket_path()}, up since {since}: "
        f"{answer['served']} command(s) served, {answer['running']} running"
    )


def start() -> int:
    answer = ask("status")
    if answer is not None:
        print(f"already running: {describe(answer)}")
        return 0
    path = socket_path()
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    if not private_folder(path):
        print(
            f"error: {os.path.dirname(path)} is not yours alone (owner and mode 0700): commands would "
            "send their environment there; remove it, or name another socket in PROCTOR_WARM_SOCKET",
            file=sys.stderr,
        )
        return 3
    log_path = path + ".log"
    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "proctor.warm.server"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # not stopped by this terminal's Ctrl-C or its closing
            cwd="/",
        )
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        answer = ask("status")
        if answer is not None:
            print(f"started: {describe(answer)}")
            print("`proctor` commands of this environment now start in it; `proctor warm stop` ends it")
            return 0
        if process.poll() is not None:
            break
        time.sleep(0.1)
    else:
        process.terminate()
    with open(log_path, encoding="utf-8", errors="replace") as log:
        said = log.read()[-2000:].strip()
    print(f"error: the warm process did not start; its log ({log_path}):\n{said}", file=sys.stderr)
    return 3


def stop() -> int:
    answer = ask("stop")
    if answer is None:
        print("no warm process is running")
        return 0
    waiting = f"; the {answer['running']} command(s) it is running finish first" if answer["running"] else ""
    print(f"stopping warm process {answer['pid']}{waiting}")
    return 0


def status() -> int:
    answer = ask("status")
    if answer is None:
        print("no warm process is running (`proctor warm start` starts one)")
        return 1
    print(describe(answer))
    return 0


def warm_command(action: str) -> int:
    return {"start": start, "stop": stop, "status": status}[action]()
