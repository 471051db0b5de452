"""Content-Length framing of DAP messages over a byte stream.

`Content-Length` counts bytes of the UTF-8 body. A DAP header is a few `Name: value` lines, the
last blank; headers are limited in size and bodies in length, and both limits are checked before
anything is allocated. A stream that breaks the framing is not speaking DAP: the reader reports
the problem and stops, and the server closes the connection. That is also what keeps a web page
out: a browser's cross-origin `POST` to the adapter's port starts with an HTTP request line, which
is not a DAP header, so its body is never read as DAP. (A well-framed message whose body is not a
valid request is a different matter: it gets an error response and the session goes on.)
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

MAX_HEADER_BYTES = 8 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024
_SEPARATOR = b"\r\n\r\n"
_HEADER_LINE = re.compile(rb"[A-Za-z][A-Za-z0-9-]*:[ \t]*[\x21-\x7e][\x20-\x7e]*")


@dataclass(frozen=True)
class Frame:
    body: bytes


@dataclass(frozen=True)
class FramingProblem:
    """The stream broke the framing (`what` says how); nothing more is read from it."""

    what: str
    before_first_frame: bool = False  # the stream never sent a valid frame: it does not speak DAP


class FrameReader:
    def __init__(self, stream: ByteReceiveStream, max_body: int = MAX_BODY_BYTES) -> None:
        self.stream = stream
        self.max_body = max_body
        self.buffer = bytearray()
        self.closed = False
        self.frames_read = 0

    async def _fill(self) -> bool:
        try:
            chunk = await self.stream.receive(65536)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError):
            self.closed = True
            return False
        self.buffer.extend(chunk)
        return True

    def _problem(self, what: str) -> FramingProblem:
        return FramingProblem(what, before_first_frame=self.frames_read == 0)

    async def frames(self) -> AsyncIterator[Frame | FramingProblem]:
        """Frames until the stream ends; a framing problem is the last item."""
        while True:
            end = self.buffer.find(_SEPARATOR)
            while end < 0:
                if not self._plausible_header_start():
                    yield self._problem(f"the stream does not start a DAP header: {bytes(self.buffer[:40])!r}")
                    return
                if len(self.buffer) > MAX_HEADER_BYTES:
                    yield self._problem("the header is longer than 8 KiB")
                    return
                if not await self._fill():
                    if self.buffer.strip():
                        yield self._problem("the stream ended inside a message header")
                    return
                end = self.buffer.find(_SEPARATOR)
            length, problem = _content_length(bytes(self.buffer[:end]))
            if problem is not None:
                yield self._problem(problem)
                return
            assert length is not None
            if length > self.max_body:
                yield self._problem(f"a message of {length} bytes is over the {self.max_body}-byte limit")
                return
            del self.buffer[: end + len(_SEPARATOR)]
            while len(self.buffer) < length:
                if not await self._fill():
                    yield self._problem(f"the stream ended {length - len(self.buffer)} bytes short of a message")
                    return
            body = bytes(self.buffer[:length])
            del self.buffer[:length]
            self.frames_read += 1
            yield Frame(body)

    def _plausible_header_start(self) -> bool:
        """Can what is buffered still become a DAP header? (Decided on the first line, early.)"""
        first = bytes(self.buffer.split(b"\r\n", 1)[0])
        if b"\r\n" in self.buffer:
            return bool(_HEADER_LINE.fullmatch(first))
        # an incomplete first line: a header name so far, or an HTTP request line already?
        name = first.split(b":", 1)[0]
        return len(first) <= MAX_HEADER_BYTES and bool(re.fullmatch(rb"[A-Za-z][A-Za-z0-9-]*", name) or not name)


def _content_length(header: bytes) -> tuple[int | None, str | None]:
    length = None
    for raw in header.split(b"\r\n"):
        if not _HEADER_LINE.fullmatch(raw):
            return None, f"malformed header line {raw[:60]!r}"
        name, _, value = raw.partition(b":")
        if name.strip().lower() == b"content-length":
            digits = value.strip()
            if not digits.isdigit() or len(digits) > 12:
                return None, f"Content-Length is not a number of bytes: {digits[:30]!r}"
            length = int(digits)
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
