"""A full recording's event log: the compact events the child streams (per state its kind, line,
invocation and changed locals), indexed as they arrive, and the states rebuilt from them on demand."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import overload

import msgspec

from neural_dap.core.state import State, Value
from neural_dap.trace.collector_pause import out_of_sight, paused_collector
from neural_dap.trace.program import Outcome, Program

_CHECKPOINT = 32  # every 32nd state of an invocation keeps a full copy of its locals


class _Invocation:
    __slots__ = (
        "checkpoints",
        "depth",
        "first_line",
        "function",
        "lines",
        "locals",
        "path",
        "states",
        "thread",
        "values",
    )

    def __init__(
        self, function: str, path: str, depth: int, first_line: int, lines: list[str], thread: int = 0
    ) -> None:
        self.function = function
        self.path = path
        self.depth = depth  # within its thread
        self.thread = thread  # the number of the thread it ran in (0: the one that started the program)
        self.first_line = first_line
        self.lines = lines  # the source lines of its file
        self.states: list[int] = []  # indices of its states
        self.locals: dict[str, str] = {}  # as of its latest state (mutated while recording)
        self.values: dict[str, list] = {}  # encoded structured values, likewise
        self.checkpoints: dict[int, tuple[dict[str, str], dict[str, list]]] = {}


class EventLog:
    """The compact form of a recording: per state its kind, line, invocation and changed locals.

    Only what changed is kept; every `_CHECKPOINT`-th state of an invocation also keeps a copy of
    its locals, so any state can be rebuilt with a few dictionary updates.
    """

    def __init__(self, program: Program, main_path: str) -> None:
        self.program = program
        self.main_path = main_path
        self.kinds: list[str] = []
        self.lines: list[int] = []
        self.invs: list[int] = []
        self.changes: list[list | None] = []
        self.values: dict[int, str] = {}
        self.caught: dict[int, str] = {}
        self.stdout_at: dict[int, str] = {}
        self.stderr_at: dict[int, str] = {}
        self.codes: dict[int, tuple[str, str, int]] = {}
        self.resumes: dict[int, int] = {}  # invocation -> the one it continues (a generator or coroutine resumed)
        self.library: set[int] = set()  # invocations library code called (see trace/child/__init__.py)
        self.thread = 0  # whose events arrive now (a ["t", number, name?] record switches)
        self.thread_names: dict[int, str] = {0: "MainThread"}
        self.invocations: dict[int, _Invocation] = {}
        self.sources: dict[str, str] = {}
        self.source_lines: dict[str, list[str]] = {}
        self.pending_out: list[str] = []
        self.pending_updates: dict[int, list] = {}
        self.updates: dict[int, list[tuple[int, list]]] = {}  # invocation -> (state index, changes)
        self.pending_err: list[str] = []
        self.all_stdout: list[str] = []
        self.all_stderr: list[str] = []
        self.outcome: Outcome | None = None
        self.engine = ""
        self.raw_events: list = []  # a materialised window's events as they came (see trace/threaded.py)
        self.refused: tuple[int, str] | None = None  # (count, first) of the changes the sandbox refused
        self.python = ""
        self.main_file: str | None = None
        self.corrupt = False
        self.wire_bytes = 0
        self._buffer = bytearray()
        self._unread: list[tuple[bytes, bytes]] = []  # (format, payload) of batches not indexed yet
        self.offset = 0  # a materialised window: the event index of its first state
        self.snapshots: dict[
            int, tuple[dict[str, str], dict[str, list], int]
        ] = {}  # invocation -> locals at the window's start

    def __len__(self) -> int:
        self.materialize()
        return len(self.kinds)

    # -- reading the wire ------------------------------------------------------------------------
    def feed_frames(self, chunk: bytes) -> None:
        """Frames: format byte, 4-byte little-endian length, payload (see child.Channel)."""
        self.wire_bytes += len(chunk)
        self._buffer += chunk
        if len(self._buffer) - 5 < int.from_bytes(self._buffer[1:5], "little"):
            return  # the frame is not complete yet (no copying while a large one arrives)
        data = bytes(self._buffer)
        pos = 0
        while len(data) - pos >= 5 and not self.corrupt:
            kind = data[pos : pos + 1]
            size = int.from_bytes(data[pos + 1 : pos + 5], "little")
            if len(data) - pos - 5 < size:
                break
            payload = data[pos + 5 : pos + 5 + size]
            pos += 5 + size
            if kind in (b"M", b"J"):  # the final record: the outcome is needed at once
                batch = self._decode(kind.lower(), payload)
                if batch is not None:
                    self.feed(batch)  # only sets the outcome: the events before it wait for a reader
            elif kind in (b"m", b"j"):
                self._unread.append((kind, payload))  # decoded and indexed on first use
            else:
                self.corrupt = True
        self._buffer = bytearray(data[pos:])

    def materialize(self) -> None:
        """Index the events received so far (done on first use, not while the program runs)."""
        if not self._unread:
            return
        with paused_collector():
            self._index()

    def _decode(self, kind: bytes, payload: bytes) -> list | None:
        try:
            batch = msgspec.msgpack.decode(payload) if kind == b"m" else msgspec.json.decode(payload)
        except (msgspec.DecodeError, ValueError, TypeError):
            self.corrupt = True
            return None
        out_of_sight(batch)
        return batch

    def _index(self) -> None:
        # batches hold ~10^5 small lists: the cyclic GC scanning them while they are made would
        # cost more than making them (none can form a cycle), so the caller turns it off
        unread, self._unread = self._unread, []
        for kind, payload in unread:
            batch = self._decode(kind, payload)
            if batch is None:
                break
            try:
                self.feed(batch)
            except (ValueError, TypeError, KeyError, IndexError):
                self.corrupt = True
                break

    def feed(self, batch: list) -> None:
        for event in batch:
            tag = event[0]
            if tag == "l":
                self._state(event[1], "line", event[2], event[3])
                if event[4] is not None:
                    self.caught[len(self.kinds) - 1] = event[4]
            elif tag == "c":
                self._call(event)
            elif tag == "s":
                self._snapshot(event)
            elif tag == "r" or tag == "x":
                inv = self.invocations[event[1]]
                self._state(event[1], "return" if tag == "r" else "exception", event[2] or inv.first_line, None)
                self.values[len(self.kinds) - 1] = decode_repr(event[3])
            elif tag == "u":
                # a callee returned and changed objects its caller holds: the caller's next state
                # carries the change, and stops before it show it through `updates`
                inv_id, changes = event[1], event[2]
                self.pending_updates.setdefault(inv_id, []).extend(changes)
                self.updates.setdefault(inv_id, []).append((len(self.kinds) - 1, changes))
            elif tag == "o":
                self.pending_out.append(event[1])
                self.all_stdout.append(event[1])
            elif tag == "e":
                self.pending_err.append(event[1])
                self.all_stderr.append(event[1])
            elif tag == "t":
                self.thread = event[1]
                if len(event) > 2:
                    self.thread_names[event[1]] = str(event[2])
            elif tag == "k":
                _, cid, name, filename, first = event
                self.codes[cid] = (name, filename, first)
                self._load_source(filename)
            elif tag == "engine":
                self.engine, self.python = event[1], event[2]
            elif tag == "refused":
                self.refused = (int(event[1]), str(event[2]))
            elif tag == "end":
                _, kind, message, exit_code, value = event[:5]
                self.outcome = Outcome(kind, message, exit_code, None if value is None else decode_repr(value))
                if len(event) > 5 and event[5]:
                    self.main_file = str(event[5])  # a module launch: the file the child ran

    def _load_source(self, filename: str) -> None:
        if filename in self.sources:
            return
        if filename == self.main_path and self.program.source is not None:
            text = self.program.source
        else:
            try:
                text = Path(filename).read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
        self.sources[filename] = text
        self.source_lines[filename] = text.splitlines()

    def _snapshot(self, event: list) -> None:
        """A frame already on the stack where a materialised window begins: its locals there."""
        _, inv_id, cid, line, depth, changes = event
        known = self.invocations.get(inv_id)
        if known is not None:  # a frame this log follows already: another engine took it over here
            if changes:
                self.pending_updates.setdefault(inv_id, []).extend(changes)
            return
        name, path, first = self.codes[cid]
        inv = self.invocations[inv_id] = _Invocation(
            name, path, depth, first, self.source_lines.get(path, []), self.thread
        )
        if changes:
            apply_changes(inv.locals, inv.values, changes)
        self.snapshots[inv_id] = (dict(inv.locals), dict(inv.values), line)

    def open_before(self) -> dict[int, tuple[int, int]]:
        """(thread, depth) of each frame known by its snapshot, in the order they came (each
        thread's outermost first): the frames on the stacks where this log's states begin."""
        return {inv: (self.invocations[inv].thread, self.invocations[inv].depth) for inv in self.snapshots}

    def snapshot_view(self, inv_id: int, until: int) -> tuple[dict[str, str], dict]:
        """A frame known only by its snapshot: its locals at the window's start, plus what callees
        that returned since changed (up to state `until`)."""
        local_reprs, encoded, _ = self.snapshots[inv_id]
        local_reprs, encoded = dict(local_reprs), dict(encoded)
        for index, changes in self.updates.get(inv_id, []):
            if index <= until:
                apply_changes(local_reprs, encoded, changes)
        return local_reprs, {k: decode_value(v) for k, v in encoded.items()}

    def _call(self, event: list) -> None:
        _, inv_id, cid, line, depth, changes = event[:6]
        if len(event) > 6 and event[6] >= 0:
            self.resumes[inv_id] = event[6]
        if len(event) > 7 and event[7]:
            self.library.add(inv_id)
        name, path, first = self.codes[cid]
        self.invocations[inv_id] = _Invocation(name, path, depth, first, self.source_lines.get(path, []), self.thread)
        self._state(inv_id, "call", line or first, changes)  # a module's call event says line 0

    def _state(self, inv_id: int, kind: str, line: int, changes: list | None) -> None:
        if inv_id in self.pending_updates:
            changes = self.pending_updates.pop(inv_id) + (changes or [])
        index = len(self.kinds)
        self.kinds.append(kind)
        self.lines.append(line)
        self.invs.append(inv_id)
        self.changes.append(changes)
        inv = self.invocations[inv_id]
        if changes:
            apply_changes(inv.locals, inv.values, changes)
        position = len(inv.states)
        inv.states.append(index)
        if position % _CHECKPOINT == 0:
            inv.checkpoints[index] = (dict(inv.locals), dict(inv.values))
        if self.pending_out or self.pending_err:
            self._outputs_at(index)

    def _outputs_at(self, index: int) -> None:
        """The output written since the previous state, shown at state `index`."""
        if self.pending_out:
            self.stdout_at[index] = "".join(self.pending_out)
            self.pending_out.clear()
        if self.pending_err:
            self.stderr_at[index] = "".join(self.pending_err)
            self.pending_err.clear()

    # -- rebuilding states -----------------------------------------------------------------------
    def locals_at(self, index: int) -> tuple[dict[str, str], dict[str, list]]:
        self.materialize()
        inv = self.invocations[self.invs[index]]
        position = bisect_left(inv.states, index)
        base = position - position % _CHECKPOINT
        local_reprs, values = inv.checkpoints[inv.states[base]]
        local_reprs, values = dict(local_reprs), dict(values)
        for k in range(base + 1, position + 1):
            changes = self.changes[inv.states[k]]
            if changes:
                apply_changes(local_reprs, values, changes)
        return local_reprs, values

    def make_state(self, index: int, local_reprs: dict[str, str], values: dict[str, Value]) -> State:
        inv_id = self.invs[index]
        inv = self.invocations[inv_id]
        line = self.lines[index]
        lines = inv.lines
        return State(
            self.kinds[index],  # type: ignore[arg-type]
            line,
            lines[line - 1] if 0 < line <= len(lines) else "",
            inv.function,
            inv.depth,
            inv_id,
            local_reprs,
            self.values.get(index),
            inv.path,
            self.stdout_at.get(index, ""),
            self.stderr_at.get(index, ""),
            values,
            self.caught.get(index),
            inv.thread,
        )

    def caller_view(
        self, inv_id: int, since: int, until: int, local_reprs: dict[str, str], values: dict
    ) -> tuple[dict[str, str], dict]:
        """A caller's locals at state `until`, from its own latest state `since` plus what the
        callees that returned in between changed."""
        self.materialize()
        updates = self.updates.get(inv_id)
        if not updates:
            return local_reprs, values
        start = bisect_left(updates, (since, []))
        relevant = [c for index, c in updates[start:] if since <= index <= until]
        if not relevant:
            return local_reprs, values
        local_reprs, encoded = dict(local_reprs), dict[str, list]()
        for changes in relevant:
            apply_changes(local_reprs, encoded, changes)
        merged = {k: v for k, v in values.items() if k in local_reprs and k not in encoded}
        merged.update({k: decode_value(v) for k, v in encoded.items()})
        return local_reprs, merged

    def state(self, index: int) -> State:
        local_reprs, values = self.locals_at(index)
        return self.make_state(index, local_reprs, {k: decode_value(v) for k, v in values.items()})


class StateList(Sequence[State]):
    """The states of a recording, built on demand (and cheaply in order, when iterated)."""

    def __init__(self, log: EventLog) -> None:
        self._log = log

    def __len__(self) -> int:
        return len(self._log)

    @overload
    def __getitem__(self, index: int) -> State: ...
    @overload
    def __getitem__(self, index: slice) -> list[State]: ...
    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._log.state(i) for i in range(*index.indices(len(self)))]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("state index out of range")
        return self._log.state(index)

    def __iter__(self) -> Iterator[State]:
        return states_from(self._log, 0, {})


Running = dict[int, tuple[dict[str, str], dict[str, Value]]]  # each invocation's locals so far


def states_from(log: EventLog, start: int, running: Running) -> Iterator[State]:
    """The states of `log` from index `start`, built in order: `running` holds each invocation's
    locals before `start` (empty from 0) and is kept up to date, so a log that grows (a live
    recording of threads, trace/threaded.py) is read on from where the last reading ended."""
    for index in range(start, len(log)):
        inv_id = log.invs[index]
        found = running.get(inv_id)
        if found is None:
            # a frame known first by its snapshot (a window's or a cut's start: trace/threaded.py)
            # starts from the locals it had there, as `state(index)` does
            snapshot = log.snapshots.get(inv_id)
            found = ({}, {}) if snapshot is None else _snapshot_locals(snapshot)
        local_reprs, values = found
        changes = log.changes[index]
        if changes:
            local_reprs, values = dict(local_reprs), dict(values)
            for i in range(0, len(changes), 2):
                name, enc = changes[i], changes[i + 1]
                values.pop(name, None)
                if type(enc) is list and not enc:
                    local_reprs.pop(name, None)
                elif type(enc) is list:
                    values[name] = decode_value(enc)
                    local_reprs[name] = values[name].repr
                else:
                    local_reprs[name] = decode_repr(enc)
        running[inv_id] = (local_reprs, values)
        yield log.make_state(index, local_reprs, values)


def _snapshot_locals(snapshot: tuple[dict[str, str], dict[str, list], int]) -> tuple[dict[str, str], dict[str, Value]]:
    local_reprs, encoded, _line = snapshot
    return dict(local_reprs), {name: decode_value(enc) for name, enc in encoded.items()}


def apply_changes(local_reprs: dict[str, str], values: dict[str, list], changes: list) -> None:
    for i in range(0, len(changes), 2):
        name, enc = changes[i], changes[i + 1]
        kind = type(enc)
        if kind is str or kind is int:  # (most changes: as decode_repr gives them)
            local_reprs[name] = enc if kind is str else str(enc)
            if values:
                values.pop(name, None)
        elif kind is list:
            if enc:
                local_reprs[name] = str(enc[0])
                values[name] = enc
            else:
                local_reprs.pop(name, None)
                values.pop(name, None)
        else:
            local_reprs[name] = decode_repr(enc)
            if values:
                values.pop(name, None)


def decode_repr(enc) -> str:
    kind = type(enc)
    if kind is str:
        return enc
    if kind is int:
        return str(enc)
    if enc is True:
        return "True"
    if enc is False:
        return "False"
    if enc is None:
        return "None"
    if kind is list and enc:
        return str(enc[0])
    return repr(enc)


def decode_value(enc: list) -> Value:
    text, type_name, children, more = enc
    return Value(
        repr=text,
        type=type_name,
        children=tuple(
            (str(name), decode_value(c) if type(c) is list else Value(decode_repr(c))) for name, c in children
        ),
        more=int(more),
    )
