"""Typed input: what a terminal console puts into the program's stdin FIFO, kept in a log.

Every byte goes into the pipe and the log as one step, under an exclusive `flock` of the log, so a
recording child holding a shared lock can tell exactly how much of the log its program has read
(child/terminal.py: the log's size less what waits in the pipe); its checkpoints' replays read the
log from there. The adapter's terminal link feeds the pipe (`put`); the recorder calls `rewind`
when it records the same program again (every thread, after the first recording met a second
one), so that run reads everything typed so far again, then what is typed next.
"""

from __future__ import annotations

import fcntl
import os

_PIPE_BYTES = 1 << 20  # what a rewind puts back at once (Linux widens the pipe; 64 KiB elsewhere)


def put(pipe: int, log: int, data: bytes | memoryview) -> int:
    """As much of `data` as the (non-blocking) pipe takes now, into the pipe and the log (opened
    O_APPEND), as one step; returns how much."""
    fcntl.flock(log, fcntl.LOCK_EX)  # a recording child holds it only while it reads two numbers
    try:
        try:
            taken = os.write(pipe, data)
        except BlockingIOError:
            return 0
        kept = memoryview(data)[:taken]
        while kept:
            kept = kept[os.write(log, kept) :]
        return taken
    finally:
        fcntl.flock(log, fcntl.LOCK_UN)


def rewind(fifo: str, log_path: str) -> bool:
    """The program starts over: put everything typed so far back into the pipe, in order, for the
    new run to read from the start. True when the previous run had read some of it (it asked, and
    the user answered: the new run asks again and finds the answers there)."""
    log = os.open(log_path, os.O_RDWR | os.O_APPEND)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fcntl.flock(log, fcntl.LOCK_EX)
        try:
            unread = _drain(reader)
            typed = _read_all(log)
            os.ftruncate(log, 0)
            writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # our reader is open: this does not fail
            try:
                _widen(writer, len(typed))
                taken = os.write(writer, typed) if typed else 0
            except BlockingIOError:
                taken = 0
            finally:
                os.close(writer)
            kept = memoryview(typed)[:taken]
            while kept:
                kept = kept[os.write(log, kept) :]
            return len(unread) < len(typed)
        finally:
            fcntl.flock(log, fcntl.LOCK_UN)
    finally:
        os.close(reader)
        os.close(log)


def _drain(reader: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(reader, _PIPE_BYTES)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _read_all(log: int) -> bytes:
    os.lseek(log, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(log, _PIPE_BYTES):
        chunks.append(chunk)
    return b"".join(chunks)


def _widen(pipe: int, size: int) -> None:
    if size <= 1 << 16:
        return
    try:
        fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, min(_PIPE_BYTES, size))  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        pass  # another platform, or a lower limit: what fits is put back
