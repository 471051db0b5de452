"""Content-Length framing of DAP messages over a byte stream.

`Content-Length` counts bytes of the UTF-8 body. Headers are limited in size and the body in
length; a frame that breaks the rules is reported and skipped, and reading goes on with the next
frame, so one bad message never ends a session.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

MAX_HEADER_BYTES = 8 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024
_SEPARATOR = b"\r\n\r\n"


@dataclass(frozen=True)
class Frame:
    body: bytes


@dataclass(frozen=True)
class FramingProblem:
    """A frame that could not be read; `what` says why. Reading continues after it."""

    what: str


class FrameReader:
    def __init__(self, stream: ByteReceiveStream, max_body: int = MAX_BODY_BYTES) -> None:
        self.stream = stream
        self.max_body = max_body
        self.buffer = bytearray()
        self.closed = False

    async def _fill(self) -> bool:
        try:
            chunk = await self.stream.receive(65536)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError):
            self.closed = True
            return False
        self.buffer.extend(chunk)
        return True

    async def frames(self) -> AsyncIterator[Frame | FramingProblem]:
        while True:
            end = self.buffer.find(_SEPARATOR)
            while end < 0:
                if len(self.buffer) > MAX_HEADER_BYTES:
                    yield self._resync("the header is longer than 8 KiB")
                    break
                if not await self._fill():
                    if self.buffer.strip():
                        yield FramingProblem("the stream ended inside a message header")
                    return
                end = self.buffer.find(_SEPARATOR)
            if end < 0:
                continue
            header = bytes(self.buffer[:end])
            at = header.find(b"Content-Length:")
            if at > 0 and not header[:at].endswith(b"\r\n"):
                del self.buffer[:at]  # garbage glued to the front of a good header
                yield FramingProblem(f"skipped {at} bytes that were not a message header")
                continue
            length, problem = _content_length(header)
            if problem is not None:
                del self.buffer[: end + len(_SEPARATOR)]
                yield FramingProblem(problem)
                continue
            assert length is not None
            del self.buffer[: end + len(_SEPARATOR)]
            if length > self.max_body:
                skipped = await self._skip(length)
                yield FramingProblem(f"a message of {length} bytes is over the {self.max_body}-byte limit and was skipped")
                if not skipped:
                    return
                continue
            while len(self.buffer) < length:
                if not await self._fill():
                    yield FramingProblem(f"the stream ended {length - len(self.buffer)} bytes short of a message")
                    return
            body = bytes(self.buffer[:length])
            del self.buffer[:length]
            yield Frame(body)

    def _resync(self, what: str) -> FramingProblem:
        """Drop bytes up to the next `Content-Length:` so the next good frame is found."""
        at = self.buffer.find(b"Content-Length:", 1)
        if at < 0:
            self.buffer.clear()
        else:
            del self.buffer[:at]
        return FramingProblem(what)

    async def _skip(self, length: int) -> bool:
        left = length
        while left > 0:
            if not self.buffer and not await self._fill():
                return False
            take = min(left, len(self.buffer))
            del self.buffer[:take]
            left -= take
        return True


def _content_length(header: bytes) -> tuple[int | None, str | None]:
    length = None
    for raw in header.split(b"\r\n"):
        if not raw.strip():
            continue
        name, sep, value = raw.partition(b":")
        if not sep:
            return None, f"malformed header line {raw[:60]!r}"
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                return None, f"Content-Length is not a number: {value.strip()[:30]!r}"
            if length < 0:
                return None, "Content-Length is negative"
    if length is None:
        return None, "the header has no Content-Length"
    return length, None


def encode_frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class FrameWriter:
    """Writes whole frames; a lock keeps concurrent writers from interleaving bytes."""

    def __init__(self, stream: ByteSendStream) -> None:
        self.stream = stream
        self.lock = anyio.Lock()
        self.closed = False

    async def write(self, body: bytes) -> None:
        if self.closed:
            return
        async with self.lock:
            try:
                await self.stream.send(encode_frame(body))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError):
                self.closed = True
