"""debugpy's own adapter, run as `python -m debugpy.adapter` runs it, acknowledging what the
debuggee sends at once.

pydevd (the debugpy inside the program) writes each message to the adapter's socket in two
`sendall`s, the `Content-Length` header and then the body, and leaves Nagle's algorithm on
(microsoft/debugpy#2054, open): the body waits for the header's ACK, which Linux delays up to 40 ms
when the receiver has nothing to send back. Every answer of debugpy's took about 44 ms here (a stop
with its threads, stack, scopes and variables: 0.2 s), whatever it did. The program's sockets are
not ours to change (TCP_NODELAY on pydevd's would be), so the adapter, the receiving end, asks the
kernel for a quick ACK before each read (TCP_QUICKACK is not sticky: the kernel goes back to
delaying). What debugpy answers is unchanged; only when. The same stop: about 1 ms a request.

This runs in the adapter's own process (reality/debugpy_peer.py starts it), never in the program.
"""

from __future__ import annotations

import runpy
import socket
from typing import Any


class _AckingReader:
    """The adapter's reader of one socket: each read first asks for a quick ACK of what arrives."""

    def __init__(self, raw: Any, sock: socket.socket) -> None:
        self._raw, self._sock = raw, sock

    def _quick_ack(self) -> None:
        try:
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        except OSError:
            pass  # (a socket closed under it: the read says so)

    def readline(self, *args: Any) -> bytes:
        self._quick_ack()
        return self._raw.readline(*args)

    def read(self, *args: Any) -> bytes:
        self._quick_ack()
        return self._raw.read(*args)

    def close(self) -> None:
        self._raw.close()


def acknowledge_at_once() -> bool:
    """Wrap the reader of every socket stream debugpy's adapter opens; False where this debugpy or
    this platform has no place for it (the adapter then runs as shipped)."""
    try:
        from debugpy.common import messaging
    except ImportError:
        return False
    stream_class = getattr(messaging, "JsonIOStream", None)
    from_socket = getattr(stream_class, "from_socket", None)
    if from_socket is None or not hasattr(socket, "TCP_QUICKACK"):
        return False
    shipped = from_socket.__func__

    def quick(cls: type, sock: socket.socket, name: str | None = None) -> Any:
        stream = shipped(cls, sock, name)
        if getattr(stream, "_reader", None) is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            stream._reader = _AckingReader(stream._reader, sock)
        return stream

    stream_class.from_socket = classmethod(quick)  # type: ignore[union-attr]
    return True


def main() -> None:
    acknowledge_at_once()
    runpy.run_module("debugpy.adapter", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
