"""The DAP server loop: one session per connection, over stdio, TCP or a Unix socket.

A connection is an attack surface (any local program, and through the browser any web page, can
reach a TCP port on 127.0.0.1): a stream that does not speak DAP framing is closed without a word,
and nothing but `initialize` is served until `initialize` has been answered (see `DebugSession`).
On a machine shared with other users, the Unix socket (created 0600) is the one only its owner
can reach.

In stdio mode nothing but DAP may reach stdout: the original stdout is kept for DAP frames and
`sys.stdout` is pointed at stderr, so a stray print (ours or a library's) cannot corrupt the stream.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterator

import anyio
import msgspec
from anyio.abc import ByteReceiveStream, ByteSendStream, ByteStream

from neural_dap.dap.session import DebugSession, WorldFactory
from neural_dap.dapwire import protocol as p
from neural_dap.dapwire.framing import Frame, FrameReader, FrameWriter, FramingProblem

log = logging.getLogger("neural_dap.dap")
_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


async def _messages(
    reader: FrameReader,
) -> AsyncIterator[p.Request | p.Response | tuple[int | None, str] | FramingProblem]:
    """Requests; the client's answers to our reverse requests (runInTerminal); (seq if known, what
    was wrong) for a frame that is not a valid request; and a `FramingProblem`, last, when the stream
    stops speaking DAP."""
    async for frame in reader.frames():
        if not isinstance(frame, Frame):
            yield frame
            return
        try:
            raw = _decoder.decode(frame.body)
        except msgspec.DecodeError as exc:
            yield (None, f"the body is not JSON ({exc})")
            continue
        seq = raw.get("seq") if isinstance(raw, dict) else None
        seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else None
        if not isinstance(raw, dict) or raw.get("type") != "request":
            if isinstance(raw, dict) and raw.get("type") == "response":
                try:
                    yield msgspec.convert(raw, p.Response)
                except msgspec.ValidationError:
                    pass  # an answer nobody can match to a question
                continue
            if isinstance(raw, dict) and raw.get("type") == "event":
                continue  # a client has no events for an adapter
            yield (seq, "expected a request object with type 'request'")
            continue
        try:
            yield msgspec.convert(raw, p.Request)
        except msgspec.ValidationError as exc:
            yield (seq, str(exc))


async def serve_streams(receive: ByteReceiveStream, send: ByteSendStream, world_factory: WorldFactory) -> None:
    writer = FrameWriter(send)

    async def send_message(message: msgspec.Struct) -> None:
        await writer.write(_encoder.encode(message))

    session = DebugSession(world_factory, send_message)
    try:
        async with anyio.create_task_group() as tg:
            try:
                await session.run(_messages(FrameReader(receive)), tg)
            finally:
                # the client has gone (or a signal ends the adapter): a program still being recorded
                # is interrupted, as by `pause`, or the launch's task would keep the task group open
                # until the recording ends by itself (a program waiting for input in the terminal:
                # its 10-minute wall time)
                session.debugger.pause()
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await session._shutdown()


class FdStream(ByteStream):
    """A non-blocking byte stream over a pipe's file descriptors, served by the event loop.

    (Reading stdio through a thread per read, as file streams do, costs a thread hop per message.)
    """

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            try:
                data = os.read(self.read_fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self.read_fd)
                continue
            if not data:
                raise anyio.EndOfStream
            return data

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            try:
                written = os.write(self.write_fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self.write_fd)
                continue
            view = view[written:]

    async def send_eof(self) -> None:
        os.close(self.write_fd)

    async def aclose(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass


async def serve_stdio(world_factory: WorldFactory) -> None:
    read_fd, write_fd = os.dup(sys.stdin.fileno()), os.dup(sys.stdout.fileno())
    # anything printed from now on goes to stderr, never into the DAP stream
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    stream = FdStream(read_fd, write_fd)
    await serve_streams(stream, stream, world_factory)


async def serve_tcp(world_factory: WorldFactory, host: str = "127.0.0.1", port: int = 0, announce=print) -> None:
    listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
    bound = listener.extra(anyio.abc.SocketAttribute.local_port)
    announce(f"neural-dap adapter listening on {host}:{bound}")
    await _serve(listener, world_factory)


async def serve_unix(world_factory: WorldFactory, path: str, announce=print) -> None:
    """DAP on a Unix socket only this user can open (mode 0600); VS Code connects to it as a
    named-pipe server."""
    _remove_stale_socket(path)
    listener = await anyio.create_unix_listener(path, mode=0o600)
    announce(f"neural-dap adapter listening on {path}")
    try:
        await _serve(listener, world_factory)
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


def _remove_stale_socket(path: str) -> None:
    """A socket file left by an adapter that died is removed; anything else there is an error."""
    import socket
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise OSError(f"{path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        os.unlink(path)  # nobody listens: stale
        return
    finally:
        probe.close()
    raise OSError(f"another adapter is listening on {path}")


async def _serve(listener, world_factory: WorldFactory) -> None:
    async def handle(stream) -> None:
        async with stream:
            await serve_streams(stream, stream, world_factory)

    async with listener:
        await listener.serve(handle)
