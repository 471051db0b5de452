"""The adapter's end of a terminal console: the program's input and output through the editor's
terminal, where `neural_dap.terminal_relay` runs (started by the client's `runInTerminal`).

Everything lives in a private folder (mode 0700, ours alone):
  relay.sock  the Unix socket the relay connects to; a connection counts only from a process of
              this user (SO_PEERCRED where the platform has it) that first sends the token it was
              started with; anything else is closed without a word
  stdin       a FIFO: the program's fd 0 (the recording child opens it as its `stdin` file)
  stdin.log   every byte put into that FIFO, in order: replays read the program's input from here
  output      a FIFO the recording child copies the program's output to (child/terminal.py)

What the relay sends (the user's typing) goes into the FIFO and the log as one step
(trace/typed_input.py), so a checkpoint knows how much of the log its program has read. The
adapter writes without blocking (only what fits), so it never holds the lock while the program is
not reading.
"""

from __future__ import annotations

import hmac
import os
import secrets
import shutil
import socket
import struct
import sys
import tempfile

import anyio
from anyio.abc import SocketAttribute, SocketListener, SocketStream

RELAY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "terminal_relay.py")


class TerminalLinkError(Exception):
    """The terminal never connected (the client could not run the relay, or it failed there)."""


class TerminalLink:
    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="neural-dap-terminal-")  # 0700: only this user
        self.socket_path = os.path.join(self.folder, "relay.sock")
        self.stdin_fifo = os.path.join(self.folder, "stdin")
        self.stdin_log = os.path.join(self.folder, "stdin.log")
        self.output_fifo = os.path.join(self.folder, "output")
        self.token = secrets.token_hex(16)
        os.mkfifo(self.stdin_fifo, 0o600)
        os.mkfifo(self.output_fifo, 0o600)
        self._log = os.open(self.stdin_log, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        # the keeper, a reader that never reads, keeps the pipe (and what was typed into it) until
        # `finish`, though the terminal's input may end before the program opens its end; the
        # program reads end-of-file once the writer is closed and it has read everything
        self._keeper = os.open(self.stdin_fifo, os.O_RDONLY | os.O_NONBLOCK)
        self._stdin = os.open(self.stdin_fifo, os.O_WRONLY | os.O_NONBLOCK)
        # read-write: never waits for the other end, and the program's output copy never writes to nobody
        self._output = os.open(self.output_fifo, os.O_RDWR | os.O_NONBLOCK)
        self._listener: SocketListener | None = None
        self._relay: SocketStream | None = None
        self._pumps = anyio.CancelScope()
        self._served: anyio.Event | None = None  # set when `serve` has stopped forwarding
        self._sending = anyio.Lock()  # output comes from several tasks (a plain run's stdout and stderr)

    def relay_command(self, wait: bool = False) -> list[str]:
        """What the terminal runs: the relay file by path under an isolated interpreter (-I: no
        PYTHON* variables, no user site, nothing from the terminal's folder on sys.path), so it
        starts whatever environment the terminal has. `wait`: it waits for Enter once the program
        has ended (a window of its own would close on the program's last words)."""
        return [sys.executable, "-I", RELAY, self.socket_path, self.token, *(["--wait"] if wait else [])]

    async def listen(self) -> None:
        self._listener = await anyio.create_unix_listener(self.socket_path, mode=0o600)

    async def accept(self, timeout: float) -> None:
        """Wait for our relay to connect; whatever else connects is closed."""
        assert self._listener is not None
        with anyio.move_on_after(timeout):
            while self._relay is None:
                stream = await self._listener.accept()
                if await self._is_our_relay(stream):
                    self._relay = stream
                else:
                    await stream.aclose()
        await self._listener.aclose()
        self._listener = None
        if self._relay is None:
            raise TerminalLinkError(f"the terminal did not start neural-dap's relay within {timeout:g} s")

    async def _is_our_relay(self, stream: SocketStream) -> bool:
        if not _same_user(stream.extra(SocketAttribute.raw_socket)):
            return False
        expected = self.token.encode() + b"\n"
        line = b""
        with anyio.move_on_after(5):
            # exactly the token's length: what the terminal typed may follow in the same packet
            while len(line) < len(expected) and not line.endswith(b"\n"):
                try:
                    line += await stream.receive(len(expected) - len(line))
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    return False
        return hmac.compare_digest(line, expected)

    async def serve(self) -> None:
        """Forward the terminal's typing to the program and the program's output to the terminal,
        until `finish`."""
        self._served = served = anyio.Event()
        relay = self._relay
        try:
            if relay is None:
                return  # finished before it started (the launch failed at once)
            with self._pumps:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._typing, relay)
                    tg.start_soon(self._showing)
        finally:
            served.set()

    async def _typing(self, relay: SocketStream) -> None:
        try:
            async for chunk in relay:
                await self._feed(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        self._end_input()  # the terminal's input ended (ctrl-D, or it closed): the program reads EOF

    async def _feed(self, data: bytes) -> None:
        view = memoryview(data)
        while view and self._stdin >= 0:
            put = self._put(view)
            view = view[put:]
            if view:
                await anyio.wait_writable(self._stdin)

    def _put(self, data: memoryview) -> int:
        from neural_dap.trace import typed_input  # POSIX (flock), as terminal consoles are

        return typed_input.put(self._stdin, self._log, data)

    def _end_input(self) -> None:
        if self._stdin >= 0:
            os.close(self._stdin)
            self._stdin = -1

    async def _showing(self) -> None:
        while self._output >= 0:
            await anyio.wait_readable(self._output)
            await self.show(self._read_output())

    def _read_output(self) -> bytes:
        if self._output < 0:
            return b""
        try:
            return os.read(self._output, 1 << 16)
        except BlockingIOError:
            return b""

    async def show(self, data: bytes) -> None:
        """Bytes for the terminal (dropped once it has gone)."""
        async with self._sending:
            if data and self._relay is not None:
                try:
                    await self._relay.send(data)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    self._relay = None  # the terminal closed; output is still read, so the program never blocks

    async def finish(self) -> None:
        """The program has ended (or its recording did): show the rest of its output, end the
        relay (the terminal is the user's again) and the FIFOs. The log stays for replays."""
        self._pumps.cancel()
        if self._served is not None:
            await self._served.wait()  # no pump is halfway through forwarding a piece
        while data := self._read_output():
            await self.show(data)
        if self._relay is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                await self._relay.aclose()
            self._relay = None
        if self._listener is not None:
            await self._listener.aclose()
            self._listener = None
        self._end_input()
        for fd in (self._keeper, self._output):
            if fd >= 0:
                os.close(fd)
        self._keeper = self._output = -1

    def remove(self) -> None:
        """The session is over: no replay reads the log any more."""
        if self._log >= 0:
            os.close(self._log)
            self._log = -1
        shutil.rmtree(self.folder, ignore_errors=True)


def _same_user(sock: socket.socket) -> bool:
    """The peer runs as this user (Linux tells; elsewhere the folder's mode is the guard)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    try:
        _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    except OSError:
        return False
    return uid == os.getuid()
