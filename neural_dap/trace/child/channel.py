"""The recording child's channel to the parent: batches of events on a pipe, and the limits it
enforces (a background thread flushes, so an endless Python loop still ends with its events kept).
Standard library only (msgspec, when the interpreter has it, makes the encoding faster)."""

from __future__ import annotations

import collections
import json
import os
import threading
import time
from typing import Any


class Limits:
    def __init__(self, cfg: dict) -> None:
        self.max_events = int(cfg.get("max_events", 200_000))
        self.wall_time = float(cfg.get("wall_time", 10.0))
        self.max_repr = int(cfg.get("max_repr", 1000))
        self.max_output = int(cfg.get("max_output", 1_000_000))
        self.memory_mb = int(cfg.get("memory_mb", 0))
        self.max_children = int(cfg.get("max_children", 50))
        self.max_processes = int(cfg.get("max_processes", 16))
        self.repr_seconds = float(cfg.get("repr_seconds", 0.1))


def _encoder():
    """msgpack through msgspec when this interpreter has it (several times faster), else JSON."""
    try:
        import msgspec

        return b"m", msgspec.msgpack.Encoder().encode
    except ImportError:
        return b"j", lambda batch: json.dumps(batch, separators=(",", ":")).encode("ascii")


class Channel:
    """Batches events in memory; a background thread writes them to the parent.

    Frames on the wire: one format byte (m: msgpack, j: JSON; upper case for the final record), a
    4-byte little-endian length, the encoded batch (an array of events). The flusher also enforces the
    wall-time and event limits:
    it runs whenever the debuggee releases the GIL, so an endless Python loop still ends with its
    events kept.
    """

    def __init__(self, fd: int, limits: Limits) -> None:
        self.fd = fd
        self.kind, self.encode = _encoder()
        self.events: list = []
        self.limits = limits
        self.sent = 0
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.closed = False
        self.finishing = False  # finish() has begun (a signal handler must not begin it again)
        self.finishing_thread: int | None = None
        self.pending_signal: int | None = None  # a signal that came during finish(): acted on after it
        self.thread = threading.Thread(target=self._run, name="neural-dap-flusher", daemon=True)
        self._soon: collections.deque = collections.deque()
        self.exit = os._exit  # kept before the debuggee can replace it
        self.main: str | None = None  # a module launch: the module's file, sent with the end record
        self.guard: Any = None  # the reprs' deadline (values.ReprGuard), checked at each flush
        try:
            os.set_inheritable(fd, False)  # a program the debuggee execs must not hold the pipe open
        except OSError:
            pass

    # set by the runner: ask the traced (main) thread to end the recording itself, with everything it
    # recorded; returns False where it cannot (then this thread ends it with what was flushed)
    end_in_main = None
    on_tick = None  # called by this thread at each flush (the skeleton asks for timely checkpoints)
    on_watch = None  # called by this thread at each flush too (lifetime.py: a SIGTERM not handled yet)

    def soon(self, call) -> None:
        """Have this thread make `call` at its next tick (within 10 ms). For the recorder's work
        that must not start a thread of its own while the program runs: a thread still starting up
        is not known to be ours (threads.is_ours), and with justMyCode false its start-up code
        would be recorded as the program's."""
        self._soon.append(call)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        from neural_dap.trace.child.journal import mark_thread

        mark_thread()  # the recorder's own thread: what it does is never the program's
        while not self.done.wait(0.01):
            if self.guard is not None:
                self.guard.check()
            self.flush()
            if self.on_tick is not None:
                self.on_tick()
            if self.on_watch is not None:
                self.on_watch()
            while self._soon:
                self._soon.popleft()()
            if time.monotonic() - self.started > self.limits.wall_time:
                message = f"the program ran past the {self.limits.wall_time:g} s wall-time limit"
                if self.end_in_main is not None and self.end_in_main("timeout", message):
                    return  # the main thread ends the recording, keeping what it had not flushed yet
                self.finish("timeout", message)
                self.exit(0)
            if self.sent >= self.limits.max_events:
                self.finish("event_limit", f"the program passed the {self.limits.max_events} event limit")
                self.exit(0)

    def _write(self, batch: list, last: bool = False) -> None:
        self._write_all(
            self.kind.upper() if last else self.kind, self.encode(batch)
        )  # the final record is marked: M / J

    def flush(self) -> None:
        with self.lock:
            if self.closed:
                return
            events = self.events
            n = len(events)
            if not n:
                return
            batch = events[:n]
            del events[:n]
            room = self.limits.max_events - self.sent
            if room <= 0:
                return
            if len(batch) > room:
                batch = _cut_to_states(batch, room)
            self.sent += _count_states(batch)
            try:
                self._write(batch)
            except (OSError, ValueError, TypeError):
                self.closed = True

    def record_files(self, events_path: str, calls_path: str) -> None:
        """Write skeleton records straight into the adapter's two files (it made them empty) and
        send only how many were written (frame kind r). Through the pipe, each byte was copied four
        times (into the pipe, out of it, into the adapter's buffer, into the file), the adapter
        spent more CPU on it than the program, and a recording child waited on it (fib(27) on
        3.12 recorded in 212 ms that way, 194 ms this way). Only this process writes them: a fork
        of it (a checkpoint, a worker, the program's own) never does."""
        self._record_files = (events_path, calls_path, os.getpid())

    _record_files: tuple[str, str, int] | None = None
    _record_fds: tuple[int, int] | None = None
    _written = (0, 0)  # bytes of each file written so far
    _reserved = (0, 0)  # ... and the bytes the file system has allocated for each (_allocated_ahead)

    def write_records(self, first: int, events, calls) -> None:
        """Skeleton records (see child.skeleton), the first event's index and both arrays:
        written into the adapter's files where it gave them (see `record_files`), else sent as a
        frame of kind b. `events` and `calls` are bytes-like (the C tracer lends views of its
        buffers for the length of this call: they are written, never kept)."""
        files = self._record_files
        if files is not None and files[2] == os.getpid() and self._write_record_files(first, events, calls):
            return
        size = 12 + len(events) + len(calls)
        header = b"b" + size.to_bytes(4, "little") + first.to_bytes(8, "little") + len(events).to_bytes(4, "little")
        with self.lock:
            if self.closed:
                return
            try:
                for part in (header, events, calls):
                    self._write_bytes(part)
            except (OSError, ValueError):
                self.closed = True

    def _write_record_files(self, first: int, events, calls) -> bool:
        """False: the files cannot be written (then the pipe carries the records, as it did).
        Under the channel's lock, as the pipe's writes were: the main thread's end signal waits
        while it is held (runner.py), so a recording never ends between the records and their
        notice."""
        assert self._record_files is not None
        with self.lock:
            if self.closed:
                return True
            try:
                if self._record_fds is None:
                    events_path, calls_path, _ = self._record_files
                    flags = os.O_WRONLY | os.O_CLOEXEC
                    self._record_fds = (os.open(events_path, flags), os.open(calls_path, flags))
                events_at, calls_at = self._written
                self._reserved = (
                    _allocated_ahead(self._record_fds[0], events_at + len(events), self._reserved[0], 16 << 20),
                    _allocated_ahead(self._record_fds[1], calls_at + len(calls), self._reserved[1], 4 << 20),
                )
                _pwrite_all(self._record_fds[0], events, events_at)
                _pwrite_all(self._record_fds[1], calls, calls_at)
            except OSError:
                self._record_files = None  # (a record half written is written again below, whole)
                for fd in self._record_fds or ():
                    os.close(fd)
                self._record_fds = None
                return False
            self._written = (events_at + len(events), calls_at + len(calls))
            notice = first.to_bytes(8, "little") + len(events).to_bytes(4, "little") + len(calls).to_bytes(4, "little")
            try:
                self._write_all(b"r", notice)
            except (OSError, ValueError):
                self.closed = True
        return True

    def _write_all(self, kind: bytes, payload: bytes) -> None:
        self._write_bytes(kind + len(payload).to_bytes(4, "little") + payload)

    def _write_bytes(self, data) -> None:
        with memoryview(data) as view:
            while view:
                written = os.write(self.fd, view)
                view = view[written:]

    def encode_document(self, value) -> bytes:
        """One value, encoded the way batches are (the first byte says how)."""
        return self.kind + self.encode(value)

    def finish(self, outcome: str, message: str = "", exit_code: int | None = None, value=None) -> None:
        self.finishing, self.finishing_thread = True, threading.get_ident()
        self.done.set()
        self.flush()
        with self.lock:
            if self.closed:
                return
            try:
                end: tuple = ("end", outcome, message, exit_code, value)
                self._write([(*end, self.main) if self.main else end], last=True)
            except (OSError, ValueError, TypeError):
                pass
            self.closed = True


_FALLOC_FL_KEEP_SIZE = 1
_fallocate: Any = None  # libc's fallocate (False: none here)


def _allocated_ahead(fd: int, upto: int, reserved: int, step: int) -> int:
    """The file's blocks allocated ahead, past `upto` bytes, in steps of `step` (its size kept: the
    adapter reads the records counted, never the file's size): a write into allocated blocks costs
    the file system half as much as one that allocates them as it goes (ext4: 2.3 ms for fib(25)'s
    16 MB of records, 1.2 ms). Where it cannot be done, the writes allocate, as before. Returns the
    bytes allocated now."""
    global _fallocate
    if upto <= reserved:
        return reserved
    if _fallocate is None:
        try:
            import ctypes

            _fallocate = ctypes.CDLL(None, use_errno=True).fallocate
            _fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
        except (OSError, AttributeError):
            _fallocate = False
    size = max(step, upto - reserved)
    if _fallocate is False or _fallocate(fd, _FALLOC_FL_KEEP_SIZE, reserved, size) != 0:
        return upto + (1 << 62)  # (not again: the file system does not allocate ahead)
    return reserved + size


def _pwrite_all(fd: int, data, offset: int) -> None:
    with memoryview(data) as view:
        while view:
            written = os.pwrite(fd, view, offset)
            offset += written
            view = view[written:]


def _count_states(batch: list) -> int:
    return sum(1 for e in batch if e[0] in "clrx")


def _cut_to_states(batch: list, room: int) -> list:
    out = []
    for e in batch:
        if e[0] in "clrx":
            if room == 0:
                break
            room -= 1
        out.append(e)
    return out
