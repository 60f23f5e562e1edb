"""Where a warm process listens, and the messages it and a `proctor` command exchange.

Light on purpose: the `proctor` command imports this before anything else, to find out
whether a warm process can run it. Messages are JSON objects, one per line, over a Unix
socket; the command's first message carries its standard input, output and error."""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
from typing import Any

ENV_SOCKET = "PROCTOR_WARM_SOCKET"  # a socket path of one's own (tests; several warm processes)
ENV_SWITCH = "PROCTOR_WARM"  # "0": never use a warm process, even when one is running


def socket_path() -> str:
    """One warm process per interpreter and Proctor checkout: a command from another virtual
    environment or another clone never reaches it. In a folder only this user can enter."""
    explicit = os.environ.get(ENV_SOCKET)
    if explicit:
        return explicit
    import zlib

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    key = f"{os.path.realpath(sys.executable)}\0{package}".encode()
    base = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(base, f"proctor-{os.getuid()}", f"warm-{zlib.crc32(key):08x}.sock")


def private_folder(path: str) -> bool:
    """Whether the socket's folder is this user's alone: a command sends its environment (keys
    included) and its terminal, so never to a socket another user could have put there."""
    try:
        folder = os.stat(os.path.dirname(path))
    except OSError:
        return False
    return folder.st_uid == os.getuid() and not folder.st_mode & 0o077


def peer_uid(connection: socket.socket) -> int:
    """The user id of the process at the other end of a Unix socket (Linux's SO_PEERCRED)."""
    return struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[2]


def connect(path: str) -> socket.socket | None:
    """A connection to the warm process listening at `path`, or None: none listens there, or the
    socket, its folder or the process at its other end is not this user's alone."""
    if not os.path.exists(path) or not private_folder(path):
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
        if peer_uid(connection) == os.getuid():
            return connection
    except OSError:  # a socket left by a warm process that is gone
        pass
    connection.close()
    return None


def send(connection: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode() + b"\n"
    if fds:
        socket.send_fds(connection, [data], fds)
    else:
        connection.sendall(data)


class Reader:
    """Messages from a connection, one line at a time (a message may arrive in pieces)."""

    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection
        self.buffer = b""
        self.fds: list[int] = []

    def next(self, with_fds: bool = False) -> dict[str, Any] | None:
        """The next message, or None when the other side closed the connection."""
        while b"\n" not in self.buffer:
            if with_fds and not self.fds:
                data, fds, _flags, _address = socket.recv_fds(self.connection, 1 << 20, 3)
                self.fds.extend(fds)
            else:
                data = self.connection.recv(1 << 20)
            if not data:
                return None
            self.buffer += data
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)  # type: ignore[no-any-return]
