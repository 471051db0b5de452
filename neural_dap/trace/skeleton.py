"""A recording in skeleton mode: what the actions need for every event, full states on demand.

The recording child (`trace.child.skeleton`) sends fixed-size records per event and forks paused
copies of the program (checkpoints). Here the records become numpy arrays (spilled to a file, so a
run of 10^7 events costs ~120 MB of disk and little memory), the actions run on them
(`SkeletonTree`, the same semantics as `trace.tree.StateTree`), and the states of any window of
events are *materialised*: a checkpoint replays to the window and records it in full. Windows are
cached, so stepping near a stop costs nothing more. A replay whose skeleton differs from the
recording's (the program is not deterministic: threads, clocks, files) is reported, and what lies
beyond the divergence is not trusted.
"""

from __future__ import annotations

import array
import functools
import hashlib
import json
import mmap
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import msgspec
import numpy as np

from neural_dap.core.actions import Action, Target
from neural_dap.core.state import State, Value
from neural_dap.trace.actions import ActionSemantics, Columns, positions
from neural_dap.trace.collector_pause import out_of_sight, paused_collector
from neural_dap.trace.eventlog import decode_repr, decode_value
from neural_dap.trace.rolling import RollingEvents

try:  # (one pass in C over each batch of records; the numpy passes below do the same without it)
    from neural_dap.trace._records import index as _records_index
except ImportError:  # pragma: no cover - a checkout whose extensions are not built
    _records_index = None

# per event: its invocation, line and kind byte (the kind | CAUGHT on a line right after a handled
# exception, | LIBRARY_CALL on a call made by library code, | SUSPENDED on a return that is a
# generator's or coroutine's pause; see child/skeleton.py)
EVENT_DTYPE = np.dtype([("inv", "<u4"), ("line", "<i4"), ("kind", "u1"), ("pad", "V3")])
CAUGHT, LIBRARY_CALL, SUSPENDED = 0x80, 0x40, 0x20
_KIND = 0x1F  # the kind byte less its flags
# per call: its code, its caller's latest event (-1: none), the invocation a resumed generator or
# coroutine continues (-1: none; see child/coroutines.py)
CALL_DTYPE = np.dtype([("code", "<u4"), ("caller_last", "<i4"), ("resumes", "<i4")])
KINDS = ("call", "line", "return", "exception")
CALL, LINE, RETURN, EXCEPTION = 0, 1, 2, 3
HASH_EVERY = 1 << 16
WINDOW = 4000  # events materialised on each side of the one asked for, at most...
WINDOW_SECONDS = (
    0.2  # ...and about as many as full capture records in this time (lists re-repr'd at every event are slow)
)
# before that cost is known: list-heavy code captures ~0.1-0.4 ms an event, so a first window of 512
# on each side made a first stop there take 0.4 s (128: 0.19 s, benchmarks/recording.py's far stop);
# the next windows are sized by the cost measured
FIRST_WINDOW = 128
# a stop's library return values (child/returned.py keeps 256), and each one's text
_MAX_RETURNED = 1024
_MAX_RETURNED_TEXT = 1 << 16

MAX_WINDOWS = 8


def _returned_value(encoded: str | list) -> tuple[str, Value | None]:
    """A library return value as the child encodes a local: its text, and its children where it
    has some (a malformed structure: the text alone)."""
    if isinstance(encoded, str):
        return encoded[:_MAX_RETURNED_TEXT], None
    try:
        value = decode_value(encoded)
    except (TypeError, ValueError, RecursionError):
        return decode_repr(encoded)[:_MAX_RETURNED_TEXT], None
    return value.repr[:_MAX_RETURNED_TEXT], value


class DivergenceError(Exception):
    """A replay did not follow the recording: the program is not deterministic from its checkpoint."""


class TreeView(NamedTuple):
    """What a tree takes of the columns (see EventColumns.view)."""

    n: int
    kinds: np.ndarray
    caught: np.ndarray
    lines: np.ndarray
    invs: np.ndarray
    call_pos: np.ndarray
    depth: np.ndarray
    end_index: np.ndarray
    parent: np.ndarray
    code_of: np.ndarray
    caller_last: np.ndarray
    resumes: np.ndarray
    any_resumes: bool
    library: np.ndarray | None
    max_code: int
    zero_lines: np.ndarray


_BUILT = object()  # (EventColumns' indexer: the C pass where it is built)


class EventColumns:
    """The tree's columns of a recording's records, read as they are counted: on the adapter's
    thread that reads the child's pipe, while the program runs on the other core. Read after the
    program ended they cost a fifth of a recording (about 20 ns an event), and a live session read
    them all again at each stop.

    Per event: its kind, caught flag, line and invocation. Per invocation (numbered by their calls,
    as the child numbers them): its call's position, depth, last terminal event, caller, code,
    the invocation it resumes and whether library code called it. Each batch of records is indexed
    as it comes (a call's depth is the calls before it minus the ends before it), so a tree, at
    the end or at a live stop, takes views and indexes nothing again (fib(27): 45 ms less after
    the program ends).

    The event columns are allocated for `capacity` events (the recording's event limit, at most
    2^28): the kernel gives their pages only as they are written, so they grow in place and the
    tree takes views of them, not copies; so do the per-invocation columns (at most one invocation
    per event): growing them by copying cost the reading thread a fifth of its time. Past
    `capacity` a column is copied into one twice its size. Read and
    extended on the thread that reads the pipe, and read by a tree only while the program is
    stopped or has ended."""

    def __init__(self, path: str, capacity: int, calls_path: str | None = None, indexer: Any = _BUILT) -> None:
        """`indexer`: the C pass (`_records`, the default where it is built), or None: numpy's."""
        self.path = path
        self.calls_path = calls_path
        self.count = 0  # records read
        self.capacity = max(1, min(capacity, 1 << 28))
        # per invocation: at most one per event, so the same capacity (virtual too)
        self.invocations = 0
        self.terminals = 0  # return and exception events read
        self.calls_read = 0  # invocations whose call record is read (the rest: unnamed, no caller)
        self.max_code = -1  # the largest code id a call record named
        self.any_resumes = False
        self.any_library = False
        try:
            self._allocate(self.capacity, self.capacity)
        except (MemoryError, OSError):  # (a system that commits memory when it is mapped: start small, grow)
            self.capacity = min(self.capacity, 1 << 16)
            self._allocate(self.capacity, 1 << 12)
        self._zero: list[np.ndarray] = []  # a call or exit at line 0 (a module's: see SkeletonRecording)
        self._lock = threading.Lock()  # (the pipe's thread and a tree read at a stop may both extend)
        self.broken = False  # a record named an invocation not called yet: nothing after it is read
        self.indexer = _records_index if indexer is _BUILT else indexer

    def _allocate(self, events: int, invocations: int) -> None:
        self.kinds = _column(np.uint8, events)
        self.caught = _column(np.bool_, events)
        self.lines = _column(np.int32, events)
        self.invs = _column(np.uint32, events)
        # (events' indices and invocations' numbers in 4 bytes while they fit: a long recording's
        # columns are written as its records come, each page a fault of the reading thread)
        index = np.int32 if self.capacity < 1 << 31 else np.int64
        self.call_pos = _column(index, invocations)
        self.depth = _column(index, invocations)
        self.end_index = _column(index, invocations)
        self.parent = _column(index, invocations)
        self.code_of = _column(np.int64, invocations)  # the child's code id (-1: no call record yet)
        self.caller_last = _column(index, invocations)
        self.resumes = _column(index, invocations)
        self.library = _column(np.bool_, invocations)
        self.paused = _column(np.bool_, invocations)  # its exit was a pause (a yield, an await), not a return

    _PER_INVOCATION = (
        "call_pos",
        "depth",
        "end_index",
        "parent",
        "code_of",
        "caller_last",
        "resumes",
        "library",
        "paused",
    )

    def _grow(self, capacity: int) -> None:
        n = self.count
        self.capacity = capacity
        self.kinds = _column(np.uint8, capacity, self.kinds[:n])
        self.caught = _column(np.bool_, capacity, self.caught[:n])
        self.lines = _column(np.int32, capacity, self.lines[:n])
        self.invs = _column(np.uint32, capacity, self.invs[:n])

    def _reserve(self, invocations: int) -> None:
        if invocations <= len(self.depth):
            return
        size = max(invocations, 2 * len(self.depth))
        m = self.invocations
        for name in self._PER_INVOCATION:
            old = getattr(self, name)
            setattr(self, name, _column(old.dtype, size, old[:m]))

    def extend(self, count: int, calls: int | None = None) -> None:
        """Read the records up to `count` (they are in the file), and the first `calls` call
        records (in the calls file)."""
        with self._lock:
            self._extend(count, calls)

    def _extend(self, count: int, calls: int | None) -> None:
        if count > self.count and not self.broken:
            if count > self.capacity:
                self._grow(max(count, 2 * self.capacity))
            with open(self.path, "rb") as f:
                f.seek(self.count * EVENT_DTYPE.itemsize)
                while self.count < count:
                    chunk = np.fromfile(f, dtype=EVENT_DTYPE, count=min(_CHUNK, count - self.count))
                    if not len(chunk):
                        break  # (a shorter file than its count: the tree ends where the records do)
                    if self.indexer is not None:
                        self._index_in_c(chunk)
                    else:
                        self._index_with_numpy(chunk)
                    if self.broken:
                        break
        if calls is not None:
            self._read_calls(calls)

    def _index_in_c(self, chunk: np.ndarray) -> None:
        a = self.count
        self._reserve(self.invocations + len(chunk))
        read, self.invocations, self.terminals, library, zeros = self.indexer(
            chunk,
            a,
            self.invocations,
            self.terminals,
            self.kinds,
            self.caught,
            self.lines,
            self.invs,
            *(getattr(self, name) for name in self._PER_INVOCATION),
        )
        self.count = a + read
        self.broken = read < len(chunk)
        self.any_library = self.any_library or bool(library)
        if zeros:
            self._note_zero_lines(a, self.count)

    def _index_with_numpy(self, chunk: np.ndarray) -> None:
        a, b = self.count, self.count + len(chunk)
        kinds = chunk["kind"]
        # every event belongs to an invocation whose call came at it or before (the
        # child numbers them so): a record that says otherwise is corrupt, and the
        # columns end before it (they index per invocation with it)
        called = self.invocations + np.cumsum((kinds & _KIND) == CALL)
        wrong = np.flatnonzero(chunk["inv"] >= called)
        if len(wrong):
            self.broken = True
            chunk, b = chunk[: wrong[0]], a + int(wrong[0])
            kinds = chunk["kind"]
        np.bitwise_and(kinds, _KIND, out=self.kinds[a:b])
        np.greater_equal(kinds, CAUGHT, out=self.caught[a:b])
        self.lines[a:b] = chunk["line"]
        self.invs[a:b] = chunk["inv"]
        self.count = b
        self._index(a, b, kinds)

    def _note_zero_lines(self, a: int, b: int) -> None:
        zero = np.flatnonzero((self.lines[a:b] == 0) & (self.kinds[a:b] != LINE))
        if len(zero):
            self._zero.append(zero + a)

    def _index(self, a: int, b: int, raw_kinds: np.ndarray) -> None:
        """The invocations that events a..b-1 start and end."""
        kinds, invs = self.kinds[a:b], self.invs[a:b]
        starts = np.flatnonzero(kinds == CALL)
        ends = np.flatnonzero(kinds >= RETURN)
        m, k = self.invocations, len(starts)
        if k:
            self._reserve(m + k)
            self.call_pos[m : m + k] = starts + a
            # a call's depth: the invocations open when it starts (every call opens one, every end
            # closes the latest)
            self.depth[m : m + k] = np.arange(m, m + k) - (self.terminals + np.searchsorted(ends, starts))
            for name in ("end_index", "parent", "code_of", "caller_last", "resumes"):
                getattr(self, name)[m : m + k] = -1
            self.library[m : m + k] = False
            self.paused[m : m + k] = False
            self.invocations = m + k
        if len(ends):
            ended = invs[ends].astype(np.int64)
            ok = ended < self.invocations  # (a corrupt record naming an invocation never called: no end)
            self.end_index[ended[ok]] = ends[ok] + a  # (a generator's last end is its terminal)
            self.paused[ended[ok]] = (raw_kinds[ends[ok]] & SUSPENDED) != 0
            self.terminals += len(ends)
        library = np.flatnonzero(raw_kinds & LIBRARY_CALL)
        if len(library):
            called = invs[library].astype(np.int64)
            self.library[called[called < self.invocations]] = True
            self.any_library = True
        self._note_zero_lines(a, b)

    def _read_calls(self, calls: int) -> None:
        """The call records of the invocations read so far, up to `calls` of them."""
        first, upto = self.calls_read, min(calls, self.invocations)
        if upto <= first or self.calls_path is None:
            return
        records = np.fromfile(self.calls_path, dtype=CALL_DTYPE, count=upto - first, offset=first * CALL_DTYPE.itemsize)
        upto = first + len(records)
        if upto == first:
            return
        code = records["code"].astype(np.int64)
        caller_last = records["caller_last"].astype(np.int64)
        resumes = records["resumes"].astype(np.int64)
        own = np.arange(first, upto)
        # the caller: the invocation of its latest event before the call (read already: it came
        # before), an earlier invocation; a resumed run continues an earlier one (-2: a first run).
        # Anything else is a corrupt record, and taken as none (the columns index with them).
        before = (caller_last >= 0) & (caller_last < self.call_pos[first:upto])
        callers = self.invs[np.clip(caller_last, 0, max(self.count - 1, 0))].astype(np.int64)
        self.parent[first:upto] = np.where(before & (callers < own), callers, -1)
        self.caller_last[first:upto] = np.where(before, caller_last, -1)
        self.resumes[first:upto] = np.where((resumes == -2) | ((resumes >= 0) & (resumes < own)), resumes, -1)
        self.code_of[first:upto] = code
        self.max_code = max(self.max_code, int(code.max()))
        self.any_resumes = self.any_resumes or bool((resumes >= 0).any())
        self.calls_read = upto

    def paused_at_exit(self, inv: int) -> bool:
        """Invocation `inv` left by a pause (a yield, an await: it may resume), not for good."""
        with self._lock:
            return 0 <= inv < self.invocations and bool(self.paused[inv])

    def view(self, count: int, calls: int) -> TreeView:
        """The first `count` records and `calls` call records, read and indexed: views of the
        columns, but for what a later read may still write: the invocations' ends (an invocation
        still running gets its end later, which a tree made before must not see), and the callers,
        codes and resumes of invocations whose call records are not read yet. Under the lock: the
        pipe's thread may be growing the columns."""
        with self._lock:
            self._extend(count, calls)
            n = min(count, self.count)
            m = self.invocations if n == self.count else int(np.searchsorted(self.call_pos[: self.invocations], n))
            end_index = self.end_index[:m].copy()
            if n < self.count:
                end_index[end_index >= n] = -1
            # (invocations whose call records come later get them written in these: copied too)
            lagging = self.calls_read < m
            copied = (lambda column: column[:m].copy()) if lagging else (lambda column: column[:m])
            return TreeView(
                n=n,
                kinds=self.kinds[:n],
                caught=self.caught[:n],
                lines=self.lines[:n],
                invs=self.invs[:n],
                call_pos=self.call_pos[:m],
                depth=self.depth[:m],
                end_index=end_index,
                parent=copied(self.parent),
                code_of=copied(self.code_of),
                caller_last=copied(self.caller_last),
                resumes=copied(self.resumes),
                any_resumes=self.any_resumes,
                library=self.library[:m] if self.any_library else None,
                max_code=self.max_code,
                zero_lines=self._zero_lines(n),
            )

    def _zero_lines(self, count: int) -> np.ndarray:
        """The calls and exits at line 0 among the first `count` events."""
        if len(self._zero) > 1:
            self._zero = [np.concatenate(self._zero)]
        zero = self._zero[0] if self._zero else np.zeros(0, np.int64)
        return zero[zero < count]


_MAP_NORESERVE = 0x4000  # (Linux's: the mmap module does not name it)
_HUGE_FROM = 2 << 20  # a column's first 2 MiB in small pages: a small recording keeps small columns


def _column(dtype, capacity: int, start: np.ndarray | None = None) -> np.ndarray:
    """A column of `capacity` items, beginning with `start`'s, in a private anonymous mapping
    reserved, not committed: the kernel gives it pages only as they are written, whatever the
    allocator's state (np.zeros is calloc, which clears memory it reuses from the heap: every page
    of a column, for every recording still alive). Past its first 2 MiB the kernel is asked for
    huge pages (512 times fewer faults while a long recording is read; a shared mapping, as these
    were, gets none and cost the reading thread more than the rest of its work)."""
    size = max(1, capacity * np.dtype(dtype).itemsize)
    buffer = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | _MAP_NORESERVE)
    if size > _HUGE_FROM and hasattr(mmap, "MADV_HUGEPAGE"):
        try:
            buffer.madvise(mmap.MADV_HUGEPAGE, _HUGE_FROM, size - _HUGE_FROM)
        except OSError:  # (a kernel without transparent huge pages: small ones)
            pass
    column: np.ndarray = np.frombuffer(buffer, dtype=dtype, count=capacity)
    if start is not None:
        column[: len(start)] = start
    return column


class SkeletonLog:
    """Reads the recording child's pipe in skeleton mode: records to files (the child writes them
    there itself, `record_files`, and says how many), the rest in memory."""

    def __init__(self, folder: str, capacity: int = 1 << 24, limit: int | None = None) -> None:
        """`capacity`: the events expected at most, see EventColumns; `limit`: the recording's
        event limit (the events other threads record after it, while the program is ended there,
        are not kept: `close`)."""
        self.folder = folder
        self.limit = limit
        self.events_path = os.path.join(folder, "events.bin")
        self.calls_path = os.path.join(folder, "calls.bin")
        # (made empty before the child started, which may be writing them already: never truncated here)
        self._events = _open_records(self.events_path)
        self._calls = _open_records(self.calls_path)
        self.count = 0
        self.calls_bytes = 0  # of the calls file, the records counted so far
        self.columns = EventColumns(self.events_path, capacity, self.calls_path)
        self.codes: dict[int, tuple[str, str, int]] = {}
        self.outputs: list[tuple[int, str, str]] = []  # (events before it, stdout|stderr, text)
        self.checkpoints: dict[int, tuple[str, int]] = {}  # event index -> (socket path, pid)
        self.outcome: tuple | None = None
        self.what_if: list[tuple[int, str, str]] = []  # (event, name, "applied" or why not): child/whatif.py
        self.engine = ""
        self.python = ""
        self.refused: tuple[int, str] | None = None  # (count, first) of the changes the sandbox refused
        # a second thread ran the program's code: the event it happened at, and every event since
        # (every thread, in full: child/switch.py, trace/threaded.py)
        self.switched_at: int | None = None
        self.threaded = RollingEvents()  # (the oldest dropped past a budget: trace/rolling.py)
        # ... or every thread as skeleton records since (`record_skeleton(thread_skeletons=True)`):
        # the records' runs, (index of a run's first event, thread number), and the threads' names
        self.thread_skeletons = False
        self.runs: list[tuple[int, int]] = []
        self.thread_names: dict[int, str] = {}
        # every call of a lock's acquiring methods by a thread of the program (every thread as
        # skeletons): int64 quads (thread, its call number, lock, outcome), in the order said, and
        # each one's place among its lock's takes (a take said after a later one: a 3.13 queue's
        # get, decided as it starts and said as it returns)
        self.lock_takes = array.array("q")
        self.lock_order = array.array("q")
        # a recording that followed a schedule: (runs followed, runs in it, whether it was given up)
        self.followed: tuple[int, int, bool] | None = None
        # a live recording (child/frontier.py): each stop the program made (events recorded then, why,
        # the stop's event captured in full), and the capture of the next one as it arrives
        self.stops: list[tuple[int, str, list]] = []
        self.window: list = []
        self.live_refused = False  # the engine cannot stop the program for the adapter
        self.held: tuple[int, str] | None = None  # (thread, copy's socket) of the latest threaded stop
        self.alive: frozenset[int] | None = None  # ... and the threads alive there
        self.idle: dict[int, str] = {}  # ... those that have run none of the user's code: their names
        # ... and (every thread as skeletons) the event shown there and the globals of the user's
        # modules as the program had them: {path: [name, encoding, ...]} (child/frontier.py)
        self.held_globals: tuple[int, dict[str, list]] | None = None
        # (every thread as skeletons, a live program) the journal's bytes its latest stop wrote: what
        # a replay reads of it (other threads may write on meanwhile); None: all of it
        self.journal_bytes: int | None = None
        # (a live recording) the latest breakpoints the program took while it ran (their number:
        # LiveControl.set_breakpoints), so that a session answers setBreakpoints once they hold
        self.breakpoints_applied = 0
        # the values the library's functions returned into the user's frames during live steps:
        # (event, frame's invocation, name, text, its children or None), `event` the first one after
        # it (child/returned.py)
        self.library_returns: list[tuple[int, int, str, str, Value | None]] = []
        self.corrupt = False
        self.wire_bytes = 0
        self._buffer = bytearray()

    def feed_frames(self, chunk: bytes) -> None:
        self.wire_bytes += len(chunk)
        self._buffer += chunk
        pos = 0
        with memoryview(self._buffer) as data:  # frames are read in place: records are megabytes
            while len(data) - pos >= 5 and not self.corrupt:
                kind = data[pos : pos + 1].tobytes()
                size = int.from_bytes(data[pos + 1 : pos + 5], "little")
                if len(data) - pos - 5 < size:
                    break
                with data[pos + 5 : pos + 5 + size] as payload:  # released before the buffer shrinks
                    pos += 5 + size
                    self._frame(kind, payload)
        del self._buffer[:pos]

    def _frame(self, kind: bytes, payload: memoryview) -> None:
        if kind == b"r":
            self._written(payload)
        elif kind == b"b":
            self._records(payload)
        elif kind in (b"m", b"j", b"M", b"J"):
            with paused_collector():  # (a batch of every thread's events: ~10^4 small lists)
                try:
                    batch = (msgspec.msgpack.decode if kind in (b"m", b"M") else msgspec.json.decode)(payload)
                except (msgspec.DecodeError, ValueError):
                    self.corrupt = True
                    return
                out_of_sight(batch)
                self._messages(batch)
        else:
            self.corrupt = True

    def _records(self, payload: memoryview) -> None:
        first = int.from_bytes(payload[:8], "little")
        size = int.from_bytes(payload[8:12], "little")
        if first != self.count or size % EVENT_DTYPE.itemsize or 12 + size > len(payload):
            self.corrupt = True  # records must arrive in order, without gaps, and whole
            return
        self._events.seek(self.count * EVENT_DTYPE.itemsize)
        self._events.write(payload[12 : 12 + size])
        self._calls.seek(self.calls_bytes)
        self.calls_bytes += self._calls.write(payload[12 + size :])
        self.count += size // EVENT_DTYPE.itemsize

    def _written(self, payload: memoryview) -> None:
        """The child wrote records into the files itself (child/channel.py's record_files): they
        are there before this notice is sent, so the count may grow over them."""
        first = int.from_bytes(payload[:8], "little")
        size = int.from_bytes(payload[8:12], "little")
        calls = int.from_bytes(payload[12:16], "little")
        if first != self.count or size % EVENT_DTYPE.itemsize or calls % CALL_DTYPE.itemsize:
            self.corrupt = True  # records must arrive in order, without gaps
            return
        # a notice names records already in the files: one naming more than they hold is believed
        # never (nothing is counted, read or allocated for what is not there)
        if (self.count * EVENT_DTYPE.itemsize + size > os.path.getsize(self.events_path)) or (
            self.calls_bytes + calls > os.path.getsize(self.calls_path)
        ):
            self.corrupt = True
            return
        self.count += size // EVENT_DTYPE.itemsize
        self.calls_bytes += calls
        self.columns.extend(self.count, self.calls_bytes // CALL_DTYPE.itemsize)
        if self.columns.broken:
            self.corrupt = True

    def _messages(self, batch: list) -> None:
        for event in batch:
            tag = event[0]
            if self.switched_at is not None and not self.thread_skeletons and tag in _FULL_TAGS:
                self.threaded.append(event)  # every thread, in full, since the switch (child/switch.py)
            elif tag in _FULL_TAGS:
                self.window.append(event)  # a live stop's event, captured in full (child/frontier.py)
            elif tag == "stopped":
                window = self.window
                if window and self.thread_skeletons and len(event) > 3 and type(event[3]) is int:
                    window = [["t", event[3]], *window]  # (the thread that stopped: its run's record)
                self.stops.append((int(event[1]), str(event[2]), window))
                self.window = []
                # (every thread in full: the thread that stopped, and the socket of the copy of the
                # program held there, which answers expressions: child/frontier.py `_held_copy`)
                held = event[3:5]
                ok = len(held) == 2 and type(held[0]) is int and isinstance(held[1], str)
                self.held = (held[0], held[1]) if ok else None
                # (the threads alive there: numbers, and [number, name] of those that have run
                # none of the user's code: child/frontier.py `_idle`)
                alive = event[5] if len(event) > 5 and isinstance(event[5], list) else None
                idle = [n for n in alive or () if isinstance(n, list) and len(n) == 2 and type(n[0]) is int]
                self.idle = {n[0]: str(n[1])[:200] for n in idle}
                self.alive = (
                    frozenset(n for n in alive if type(n) is int) | frozenset(self.idle) if alive is not None else None
                )
                self.held_globals = _held_globals(event, self.count)
                returned = event[6] if len(event) > 6 and isinstance(event[6], list) else ()
                self.library_returns.extend(
                    (r[3], r[0], r[1][:200], *_returned_value(r[2]))
                    for r in returned[:_MAX_RETURNED]
                    if isinstance(r, list)
                    and len(r) == 4
                    and type(r[0]) is int
                    and isinstance(r[1], str)
                    and isinstance(r[2], (str, list))
                    and type(r[3]) is int
                )
            elif tag == "nolive":
                self.live_refused = True
            elif tag == "switch":
                self.switched_at = self.count if int(event[1]) < 0 else int(event[1])
                self.thread_skeletons = event[2:3] == ["skeletons"]
            elif tag == "followed" and len(event) == 4 and type(event[1]) is int and type(event[2]) is int:
                self.followed = (event[1], event[2], event[3] is True)
            elif tag == "lk" and _is_take(event):
                self.lock_takes.extend(event[1:5])
                self.lock_order.append(event[5])
            elif tag == "ts" and len(event) >= 3 and type(event[1]) is int and type(event[2]) is int and event[1] >= 0:
                self._run(event[1], event[2], event[3] if len(event) > 3 and isinstance(event[3], str) else None)
            elif tag == "k":
                _, cid, name, filename, first = event
                if type(cid) is not int or not 0 <= cid < 1 << 32:
                    self.corrupt = True  # (the child numbers its codes 0, 1, 2, ...: a call record's u32)
                    return
                self.codes[cid] = (name, filename, first)
            elif tag in ("o", "e") and len(event) == 2:  # (since the switch: output among the events)
                self.threaded.append(event)
            elif tag in ("o", "e"):
                self.outputs.append(
                    (int(event[2]) if len(event) > 2 else self.count, "stdout" if tag == "o" else "stderr", event[1])
                )
            elif tag == "cp":
                self.checkpoints[int(event[1])] = (event[2], int(event[3]))
            elif tag == "cpx":
                self.checkpoints.pop(int(event[1]), None)
            elif tag == "engine":
                self.engine, self.python = event[1], event[2]
            elif tag == "refused":
                self.refused = (int(event[1]), str(event[2]))
            elif tag == "whatif":
                self.what_if.append((int(event[1]), str(event[2]), str(event[3])))
            elif tag == "end":
                self.outcome = tuple(event[1:])
                self.journal_bytes = None  # (the journal is whole)
            elif tag == "journaled" and len(event) == 2 and type(event[1]) is int and 0 <= event[1] < 1 << 62:
                self.journal_bytes = event[1]
            elif tag == "breakpoints" and len(event) == 2 and type(event[1]) is int:
                self.breakpoints_applied = max(self.breakpoints_applied, event[1])

    def _run(self, first: int, number: int, name: str | None) -> None:
        """A run of one thread's records begins at `first` (a record at an index another run began
        at a moment before, with no event between, replaces it; one of the same thread goes on)."""
        if name is not None:
            self.thread_names[number] = name[:200]
        runs = self.runs
        if runs and runs[-1][0] >= first:
            runs.pop()
        if not runs or runs[-1][1] != number:
            runs.append((first, number))

    def schedule(self) -> bytes:
        """The runs as a replay follows them: native int64 pairs (thread number, events in the run),
        the last run to the end of the records."""
        pairs = [(number, end - first) for (first, number), end in zip(self.runs, self._run_ends(), strict=True)]
        return array.array("q", [value for pair in pairs for value in pair]).tobytes()

    def locks(self) -> bytes:
        """Who took each lock (`lock_takes`), as a replay takes them: native int64 quads, in the
        order the takes were decided."""
        quads = np.frombuffer(self.lock_takes, dtype=np.int64).reshape(-1, 4)
        return quads[np.argsort(np.frombuffer(self.lock_order, dtype=np.int64), kind="stable")].tobytes()

    def _run_ends(self) -> list[int]:
        """Where each run ends: where the next begins, the last at the end of the records."""
        return [first for first, _ in self.runs[1:]] + ([self.count] if self.runs else [])

    def thread_column(self):
        """The thread number of every record from the switch on (numpy, int32), by the runs."""
        start = self.switched_at or 0
        column = np.zeros(self.count - start, dtype=np.int32)
        for (first, number), end in zip(self.runs, self._run_ends(), strict=True):
            column[max(first, start) - start : end - start] = number
        return column

    def sync(self) -> None:
        """The records received so far are in the files (a live recording is read while it grows)."""
        for file in (self._events, self._calls):
            if not file.closed:
                file.flush()

    def close(self) -> None:
        """The recording ended: the records stop at its event limit (the thread that reached it
        ends the program, while the others may go on recording until it is gone)."""
        self._events.close()
        self._calls.close()
        if self.limit is not None and self.count > self.limit:
            self.count = self.limit
            self.runs = [run for run in self.runs if run[0] < self.limit]


def _is_take(event: list) -> bool:
    """["lk", thread, call, lock, outcome, order] (child/engines.py `gate_locks`): numbers, none
    past 2^62; the outcome -1 (the call raised), 0 (nothing taken) or 1."""
    return (
        len(event) == 6
        and all(type(v) is int and 0 <= v < 1 << 62 for v in (event[1], event[2], event[3], event[5]))
        and type(event[4]) is int
        and event[4] in (-1, 0, 1)
    )


def _open_records(path: str):
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    return os.fdopen(fd, "r+b")


_CHUNK = 1 << 20  # events read at a time
_DENSE_CODES = 1 << 20  # code ids below this are looked up in a table
_FULL_TAGS = frozenset(("c", "l", "r", "x", "u", "s", "t"))
_positions = positions  # kept under its old name for readers of this module


class SkeletonTree:
    """A skeleton's columns (numpy arrays) and the call stack; the actions on them are
    `trace.actions.ActionSemantics`, the full recording's."""

    def __init__(
        self,
        columns: EventColumns,
        count: int,
        calls: int,
        codes: Mapping[int, tuple[str, str, int]],
        runs: Sequence[tuple[int, int]] = (),
    ) -> None:
        """The tree of the first `count` records and `calls` call records, from their columns (read
        and indexed while the program ran: see EventColumns): views, not copies, but for the
        invocations' ends (an invocation still running gets its end later, which a tree made before
        must not see). `runs`: where every thread was recorded as skeletons, (first event, thread
        number) of each run of one thread's events (SkeletonLog.runs); the events before the first
        are the main thread's (number 0)."""
        view = columns.view(count, calls)
        self.n = view.n
        self.kinds, self.caught_flags, self.lines, self.invs = view.kinds, view.caught, view.lines, view.invs
        self.call_index = view.call_pos
        self.code_of = view.code_of  # the child's code ids (-1: its call record is not read)
        self.caller_last, self.parent, self.depth = view.caller_last, view.parent, view.depth
        self.end_index = view.end_index
        self.resumes = view.resumes
        self.any_resumes = view.any_resumes
        self.library = view.library
        self.max_code = view.max_code
        self.zero_lines = view.zero_lines
        self.thread_of: np.ndarray | None = None  # per invocation: its thread's number (None: one thread)
        if runs:
            self.thread_of, self.depth = _per_thread(view, runs)
        self.semantics = ActionSemantics(self._columns(codes))

    @functools.cached_property
    def line_events(self) -> np.ndarray:
        """The positions of the `line` events (made when asked: the actions index lines per target)."""
        return _positions(self.kinds == LINE)

    def _columns(self, codes: Mapping[int, tuple[str, str, int]]) -> Columns:
        """The columns the actions read: invocations are numbered by their calls already; code ids
        become indices into (function, path) pairs, an id the recording never named (or a call
        whose record is not read, -1) into ("", "")."""
        ids = sorted(codes)
        code_of = self.code_of
        dense = bool(ids) and ids[0] == 0 and ids[-1] == len(ids) - 1 and self.max_code < len(ids)
        if dense and (not len(code_of) or int(code_of.min()) >= 0):
            # every id the child numbered (0, 1, 2, ... as it met them) is named, and every call's
            # record read: each id is its own index (no pass that maps them, at a recording's end)
            code_index = code_of
        elif max(self.max_code, ids[-1] if ids else 0) < _DENSE_CODES:
            # the child numbers codes 0, 1, 2, ... as it meets them: a table, not a search
            table = np.full(max(self.max_code, ids[-1] if ids else 0) + 2, len(ids), dtype=np.int32)
            table[ids] = np.arange(len(ids))
            code_index = table[code_of]  # (-1, no record: the table's last entry, unnamed)
        else:  # (ids no child makes: a corrupt pipe)
            known = np.array(ids, dtype=np.int64)
            k = np.searchsorted(known, code_of)
            named = (k < len(known)) & (code_of >= 0)
            named[named] = known[k[named]] == code_of[named]
            code_index = np.where(named, k, len(ids))
        return Columns(
            kinds=self.kinds,
            lines=self.lines,
            invs=self.invs,
            call_index=self.call_index,
            end_index=self.end_index,
            parent=self.parent,
            code_of=code_index,
            codes=(*((codes[c][0], codes[c][1]) for c in ids), ("", "")),
            resumes=self.resumes if self.any_resumes else None,
            library=self.library,
            thread_of=self.thread_of,
        )

    def __len__(self) -> int:
        return self.n

    @property
    def last(self) -> int:
        return self.n - 1

    def event(self, i: int) -> str:
        return KINDS[int(self.kinds[i])]

    def is_terminal(self, i: int) -> bool:
        return int(self.kinds[i]) >= RETURN

    def is_call(self, i: int) -> bool:
        return int(self.kinds[i]) == CALL

    def invocation(self, i: int) -> int:
        return int(self.invs[i])

    # -- the actions (defined in trace.actions) ---------------------------------------------------
    def apply(self, i: int, action: Action) -> int:
        return self.semantics.apply(i, action)

    def next_line_at(self, i: int, targets: Sequence[Target]) -> int | None:
        return self.semantics.next_hit(i, targets)

    def previous_line_at(self, i: int, targets: Sequence[Target]) -> int | None:
        return self.semantics.previous_hit(i, targets)

    def hits(self, start: int, end: int, targets: Sequence[Target]) -> list[int]:
        """Line events at the (path, line) targets strictly after `start` up to `end`, in the
        walking direction."""
        return self.semantics.hits(start, end, targets)

    # -- the call stack ----------------------------------------------------------------------------
    def stack(self, i: int) -> list[int]:
        """The latest event of each invocation on the stack at i, innermost first (the caller's
        latest event before a call is the one the call record names)."""
        out = [i]
        inv = int(self.invs[i])
        while True:
            last = int(self.caller_last[inv])
            if last < 0:
                break
            out.append(last)
            inv = int(self.invs[last])
        return out


def _per_thread(view: TreeView, runs: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Per invocation, its thread and its depth within that thread, from the runs of one thread's
    events (the columns' depth counts every thread's open calls as one stack). A loop over runs, not
    events: a run is thousands of events (a thread runs 5 ms before the recording hands over)."""
    n = view.n
    threads = np.zeros(n, dtype=np.int32)
    opened = np.cumsum((view.kinds == CALL).astype(np.int64) - (view.kinds >= RETURN).astype(np.int64))
    # open calls of its own thread after each event: within a run, the stream's running count less
    # what it was where the run began, plus what the thread had open when its previous run ended
    own = opened.copy()
    carry: dict[int, int] = {}
    starts = [first for first, _ in runs]
    bounds = [0, *starts, n]
    numbers = [0, *(number for _, number in runs)]
    for k, number in enumerate(numbers):
        a, b = max(0, min(bounds[k], n)), max(0, min(bounds[k + 1], n))
        if a >= b:
            continue
        before = int(opened[a - 1]) if a else 0
        own[a:b] += carry.get(number, 0) - before
        carry[number] = int(own[b - 1])
        threads[a:b] = number
    call_pos = view.call_pos.astype(np.int64)
    return threads[call_pos], own[call_pos] - 1


class SkeletonRecording:
    """One recorded execution in skeleton mode, with its checkpoints and materialised windows."""

    def __init__(
        self, log: SkeletonLog, main_path: str, seconds: float, fd_stdout: str, fd_stderr: str, program=None
    ) -> None:
        self.log = log
        self.program = program
        self.outcome: Any = None  # set by the recorder: how the run ended (an Outcome)
        self.main_path = main_path
        self.seconds = seconds
        self.fd_stdout = fd_stdout
        self.fd_stderr = fd_stderr
        self.sources: dict[str, str] = {}
        self.source_lines: dict[str, list[str]] = {}
        if program is not None and program.source is not None:
            self.sources[main_path] = program.source
            self.source_lines[main_path] = program.source.splitlines()
        self._read()
        self.windows: OrderedDict[tuple[int, int], object] = OrderedDict()
        self.diverged_at: int | None = None  # the first event a replay did not reproduce
        self.divergence: str = ""  # why, where the journal says (a call the recording did not make)
        self.unguarded = False  # a replay ran without the seccomp net (the kernel refused it)
        self.materialisations = 0
        self._hashes: dict[tuple[int, int], str] = {}
        self._output_index: dict[int, list[tuple[str, str]]] | None = None
        self.window = FIRST_WINDOW  # adapted to what capturing this program costs
        self._schedule_written: tuple[int, int] | None = None  # (runs, events) of the schedule file
        self._threads_why = ""  # the latest replay of threads gave their recorded order up: why

    def _read(self) -> None:
        """The tree over the records in the files (all of them; a live recording's so far)."""
        log = self.log
        log.sync()  # (records that came through the pipe are in the file)
        # (only the records counted: a child writing the files may have put more there already)
        events = (
            np.memmap(log.events_path, dtype=EVENT_DTYPE, mode="r", shape=(log.count,))
            if log.count
            else np.zeros(0, dtype=EVENT_DTYPE)
        )
        self.events = events  # mapped for hashing the ranges a replay checks; the tree reads the columns
        self.tree = SkeletonTree(
            log.columns,
            log.count,
            log.calls_bytes // CALL_DTYPE.itemsize,
            log.codes,
            log.runs if log.thread_skeletons else (),
        )
        # a module's call event says line 0 (as does the exit of an empty module): it is at the
        # code's first line, as full capture says
        tree = self.tree
        zero = tree.zero_lines
        zero = zero[tree.invs[zero] < len(tree.code_of)]  # (a corrupt record's invocation: none)
        if len(zero):
            codes = tree.code_of[tree.invs[zero]]
            guessed = not all(int(c) in log.codes for c in codes)
            if guessed:
                # (a code not known yet, in a live recording read mid-run: its line 1 is a guess, made
                # on a copy, not in the columns later reads share)
                tree.lines = tree.lines.copy()
            tree.lines[zero] = np.array([log.codes.get(int(c), ("", "", 1))[2] for c in codes], dtype=np.int32)
            if guessed:
                tree.semantics = ActionSemantics(tree._columns(log.codes))
        for _, filename, _ in log.codes.values():
            self._load_source(filename)

    def grown(self) -> None:
        """A live recording went on (child/frontier.py): read its records again. The windows rebuilt
        so far stay (the events they hold do not change)."""
        self.log.sync()
        self._read()
        self._output_index = None  # (more output came with the events)

    def adopt_window(self, index: int, events: list) -> None:
        """The state of event `index` as the live program captured it at a stop: a window of one
        event, kept as a replay's would be."""
        from neural_dap.trace.eventlog import EventLog
        from neural_dap.trace.program import Program

        log = EventLog(self.program or Program(self.main_path), self.main_path)
        log.codes.update(self.log.codes)
        log.sources.update(self.sources)
        log.source_lines.update(self.source_lines)
        log.offset = index
        log.raw_events = events
        log.feed(events)
        tree = self.tree
        if len(log.kinds) != 1 or index >= len(self) or log.invs[0] != int(tree.invs[index]):
            return  # (not what the records say: left to a replay)
        self.windows[(index, index)] = log
        self.windows.move_to_end((index, index))
        while len(self.windows) > MAX_WINDOWS:
            self.windows.popitem(last=False)

    def __len__(self) -> int:
        return self.tree.n

    @property
    def refused(self) -> tuple[int, str] | None:
        return self.log.refused

    @property
    def journal_file(self) -> str:
        """What the program received from the world, in order (trace/_journal.c)."""
        return os.path.join(self.log.folder, "journal.bin")

    @property
    def checkpoints(self) -> list[int]:
        return sorted(self.log.checkpoints)

    def _load_source(self, filename: str) -> None:
        if filename in self.sources:
            return
        try:
            with open(filename, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            text = ""
        self.sources[filename] = text
        self.source_lines[filename] = text.splitlines()

    # -- output --------------------------------------------------------------------------------------
    def output_between(self, start: int, end: int) -> list[tuple[str, str]]:
        """Output written after event `start` up to event `end` (and everything left at the end),
        joined per event and stream as full capture joins it."""
        out: list[tuple[str, str]] = []
        for i in (
            range(start + 1, end + 1)
            if end - start < 10_000
            else sorted({c for c, _, _ in self.log.outputs if start < c <= end})
        ):
            stdout, stderr = self.output_at(i)
            if stdout:
                out.append(("stdout", stdout))
            if stderr:
                out.append(("stderr", stderr))
        if end == len(self) - 1 and start < end:
            late = [(c, s, t) for c, s, t in self.log.outputs if c > end]
            stdout = "".join(t for _, s, t in late if s == "stdout") + self.fd_stdout
            stderr = "".join(t for _, s, t in late if s == "stderr") + self.fd_stderr
            if stdout:
                out.append(("stdout", stdout))
            if stderr:
                out.append(("stderr", stderr))
        return out

    @property
    def stdout(self) -> str:
        # (since a switch to every thread, output comes among the full events: child/switch.py)
        threaded = "".join(event[1] for event in self.log.threaded if event[0] == "o")
        recorded = "".join(text for _, stream, text in self.log.outputs if stream == "stdout")
        return recorded + threaded + self.fd_stdout

    # -- materialisation ------------------------------------------------------------------------------
    def window_for(self, i: int):
        """The materialised window holding event i (cached)."""
        if self.diverged_at is not None and i >= self.diverged_at:
            raise DivergenceError(self.divergence_message())
        for (a, b), window in self.windows.items():
            if a <= i <= b:
                self.windows.move_to_end((a, b))
                return window
        checkpoints = self.checkpoints
        if not checkpoints:
            raise DivergenceError("no checkpoint is left to replay from")
        c = checkpoints[max(0, bisect_right(checkpoints, i) - 1)]
        a = max(c, i - self.window)
        b = min(len(self) - 1, i + self.window)
        started = time.monotonic()
        window = self._materialise(c, a, b)
        per_event = (time.monotonic() - started) / max(1, b - a + 1)
        self.window = max(32, min(WINDOW, int(WINDOW_SECONDS / max(per_event, 1e-7) / 2)))
        self.windows[(a, b)] = window
        if self.diverged_at is not None and i >= self.diverged_at:
            raise DivergenceError(self.divergence_message())
        while len(self.windows) > MAX_WINDOWS:
            self.windows.popitem(last=False)
        return window

    def _materialise(self, checkpoint: int, a: int, b: int):
        from neural_dap.trace.eventlog import EventLog
        from neural_dap.trace.program import Program

        path, _pid = self.log.checkpoints[checkpoint]
        answer = _ask(path, {"from": a, "to": b, **self.schedule_for(b)})
        self.materialisations += 1
        self._check_threads(answer.get("threads"), b)  # (first: the journal's divergence may name no reason)
        self._check_journal(answer.get("journal") or {}, a, b)
        self._check_hashes(answer.get("hashes") or [])
        log = EventLog(self.program or Program(self.main_path), self.main_path)
        log.codes.update(self.log.codes)
        log.sources.update(self.sources)
        log.source_lines.update(self.source_lines)
        log.offset = a
        # (trace/threaded.py joins windows into one log)
        log.raw_events = _thread_records(answer.get("events") or [])
        log.feed(log.raw_events)
        got = len(log.kinds)
        expected = min(b, len(self) - 1) - a + 1
        tree = self.tree
        for k in range(min(got, expected)):
            i = a + k
            if (
                log.kinds[k] != KINDS[int(tree.kinds[i])]
                or log.lines[k] != int(tree.lines[i])
                or log.invs[k] != int(tree.invs[i])
            ):
                self._diverged(i)
                break
        else:
            if got < expected:
                self._diverged(a + got)
        return log

    def watch(self, first: int, last: int, path: list) -> list[tuple[int, object, bool]]:
        """The value a path reaches from the frame of event `first` (a local, then attribute and
        literal-key steps), at `first` and at every event up to `last` where it differs, as
        (event, encoding, bound): a replay from the checkpoint before `first` (child/watch.py)."""
        if self.diverged_at is not None and last >= self.diverged_at:
            raise DivergenceError(self.divergence_message())
        checkpoints = self.checkpoints
        if not checkpoints:
            raise DivergenceError("no checkpoint is left to replay from")
        checkpoint = checkpoints[max(0, bisect_right(checkpoints, first) - 1)]
        where, _pid = self.log.checkpoints[checkpoint]
        answer = _ask(where, {"from": first, "to": last, "watch": {"path": path}, **self.schedule_for(last)})
        self.materialisations += 1
        self._check_threads(answer.get("threads"), last)
        self._check_journal(answer.get("journal") or {}, first, last)
        self._check_hashes(answer.get("hashes") or [])
        if self.diverged_at is not None and last >= self.diverged_at:
            raise DivergenceError(self.divergence_message())
        reached = int(answer.get("reached") or 0)
        if reached <= last:
            raise DivergenceError(f"the replay ended at event {reached}, before event {last}")
        return [(int(e), enc, bool(bound)) for e, enc, bound in answer.get("watch") or []]

    def schedule_for(self, last: int) -> dict:
        """What a replay up to event `last` needs to follow the threads (every thread recorded as
        skeletons since a second one started): the file of their schedule, written when first asked
        (a recording that ended; a live one's grows: written again when it has)."""
        log = self.log
        if not log.thread_skeletons or log.switched_at is None or last < log.switched_at:
            return {}
        limit = {} if log.journal_bytes is None else {"journal_bytes": log.journal_bytes}
        path = os.path.join(log.folder, "schedule.bin")
        locks = os.path.join(log.folder, "locks.bin")
        if self._schedule_written != (len(log.runs), log.count):
            for file, data in ((path, log.schedule()), (locks, log.locks())):
                # (written aside, then moved in: a replay asked for a moment ago may be reading it)
                aside = f"{file}.{threading.get_ident()}"
                with open(aside, "wb") as fh:
                    fh.write(data)
                os.replace(aside, file)
            self._schedule_written = (len(log.runs), log.count)
        return {"schedule": path, "locks": locks, **limit}

    def _check_hashes(self, hashes: list) -> None:
        for start, end, digest in hashes:
            start, end = int(start), int(end)
            if end > len(self):
                self._diverged(len(self))
                return
            mine = self._hashes.get((start, end))
            if mine is None:
                mine = hashlib.blake2b(self.events[start:end].tobytes(), digest_size=16).hexdigest()
                self._hashes[(start, end)] = mine
            if mine != digest:
                self._diverged(start)
                return

    def _check_journal(self, report: dict, first: int, last: int) -> None:
        """A replay that asked the journal for something it did not hold (or made a call the net
        refused) is one no more from that event on. (One that did so after `last`, the window's
        end, as another thread ran on while the replay's answer was made, changed nothing the
        window holds: a replay that reaches that event will say so.)"""
        if not report.get("net", True):
            self.unguarded = True
        at = report.get("diverged_at")
        if isinstance(at, int) and at <= last:
            self._diverged(at if at >= 0 else first, str(report.get("why") or ""))

    def _check_threads(self, report: Any, last: int) -> None:
        """A replay of threads that gave the recorded order up: why, for the divergence its records
        will show, and a divergence from the run it was in by itself. Its threads ran free from
        there: their records may still be the recording's (the same lines, a loop's) while their
        values are another interleaving's (a counter under a lock given to another thread after a
        wait past the patience, under load), never to be shown as the recording's."""
        why = report.get("why") if isinstance(report, dict) and report.get("given_up") is True else None
        self._threads_why = ""
        if not isinstance(why, str):
            return
        self._threads_why = f"the threads' replay gave the recorded order up ({why[:300]})"
        followed = report.get("followed")
        runs = self.log.runs
        if type(followed) is int and 0 <= followed < len(runs) and runs[followed][0] <= last:
            self._diverged(runs[followed][0], self._threads_why)

    def divergence_message(self) -> str:
        text = f"the program did not replay the same way after event {self.diverged_at}"
        return f"{text}: {self.divergence}" if self.divergence else text

    def _diverged(self, index: int, why: str = "") -> None:
        if self.diverged_at is None or index < self.diverged_at:
            self.diverged_at = index
            self.divergence = why or self._threads_why

    # -- states ------------------------------------------------------------------------------------------
    def state(self, i: int) -> State:
        window = self.window_for(i)
        state = window.state(i - window.offset)
        stdout, stderr = self.output_at(i)
        return msgspec.structs.replace(state, stdout=stdout, stderr=stderr) if stdout or stderr else state

    def output_at(self, i: int) -> tuple[str, str]:
        """What the program wrote just before event i (full capture attaches it to that state)."""
        if self._output_index is None:
            index: dict[int, list[tuple[str, str]]] = {}
            for count, stream, text in self.log.outputs:
                index.setdefault(count, []).append((stream, text))
            self._output_index = index
        found = self._output_index.get(i, ())
        return "".join(t for s, t in found if s == "stdout"), "".join(t for s, t in found if s == "stderr")

    def close(self) -> None:
        """End the checkpoint processes and remove the files."""
        for _path, pid in list(self.log.checkpoints.values()):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.log.checkpoints.clear()
        self.events = np.zeros(0, dtype=EVENT_DTYPE)
        shutil.rmtree(self.log.folder, ignore_errors=True)


def _held_globals(stopped: list, count: int) -> tuple[int, dict[str, list]] | None:
    """A threaded stop's globals of the user's modules (["stopped", count, reason, thread, copy,
    alive, returns, {path: [name, encoding, ...]}]), and the event they are shown at: the stop's, or
    (a pause: count -1) the latest recorded. None where the stop has none, or they are malformed."""
    found = stopped[7] if len(stopped) > 7 else None
    if not isinstance(found, dict):
        return None
    modules = {path: changes for path, changes in found.items() if isinstance(path, str) and _readable(changes)}
    at = stopped[1] - 1 if type(stopped[1]) is int and stopped[1] > 0 else count - 1
    return at, modules


def _readable(changes: object) -> bool:
    """A frame's locals as the child encodes them ([name, encoding, ...]) that decode: a module whose
    globals do not is left out (its Globals come from a replay), never an error at every stop."""
    from neural_dap.trace.eventlog import apply_changes, decode_value

    if not isinstance(changes, list) or len(changes) % 2 or not all(isinstance(n, str) for n in changes[::2]):
        return False
    try:
        names: dict = {}
        encoded: dict = {}
        apply_changes(names, encoded, changes)
        for enc in encoded.values():
            decode_value(enc)
    except (TypeError, ValueError, RecursionError, IndexError, AttributeError):
        return False
    return True


def _thread_records(events: list) -> list:
    """A replay's events with each run's ["ts", first index, number(, name)] (every thread as
    skeletons: child/runner.py) as the ["t", number(, name)] record full capture sends before a run
    of one thread's events."""
    return [
        ["t", *event[2:4]] if type(event) is list and len(event) >= 3 and event[0] == "ts" else event
        for event in events
        if not (type(event) is list and event[:1] == ["lk"])
    ]


def _ask(path: str, request: dict, timeout: float = 60.0) -> dict:
    """One request to a checkpoint: a JSON line out, a length-prefixed document back."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
            sock.sendall(json.dumps(request).encode() + b"\n")
            header = _read_exactly(sock, 8)
            data = _read_exactly(sock, int.from_bytes(header, "little"))
        except OSError as exc:
            raise DivergenceError(f"the checkpoint at {os.path.basename(path)} did not answer ({exc})") from None
    if not data:
        raise DivergenceError("the checkpoint's replay ended without an answer")
    kind, body = data[:1], data[1:]
    try:
        answer = msgspec.msgpack.decode(body) if kind == b"m" else msgspec.json.decode(body)
    except (msgspec.DecodeError, ValueError):
        raise DivergenceError("the checkpoint's answer could not be read") from None
    return answer if isinstance(answer, dict) else {}


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n > 0:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise OSError("the connection closed early")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def new_folder() -> str:
    return tempfile.mkdtemp(prefix="neural-dap-rec-")
