"""Skeleton mode for the pure-Python engines: sys.monitoring (3.12+), and sys.settrace where the C
tracer is not built. The same records and capture windows as the C tracer (see child.skeleton):
each event appends three ints (invocation, line, kind), byte for byte the 12-byte record on a
little-endian machine; inside a capture window the full events are recorded as the full engines
record them, after a snapshot of the frames already on the stack. Standard library only.
"""

from __future__ import annotations

import sys
from _thread import get_ident
from array import array

from neural_dap.trace.child.collector import EVERY as HOOK_EVERY
from neural_dap.trace.child.coroutines import RESUMABLE
from neural_dap.trace.child.journal import plumbing
from neural_dap.trace.child.monitoring import LOCAL_EVENTS, free_tool, loop_line_rule, monitor, unmonitor
from neural_dap.trace.child.recorder import Recorder
from neural_dap.trace.child.wire import call_event

BUFFER = 65536  # events per flushed batch
LIBRARY_CALL = 0x40  # the kind byte's flag on a call event: a call by library code (see child.skeleton)
SUSPENDED = 0x20  # ... on a return event: a generator or coroutine pausing (a yield, an await)


class _Entry:
    __slots__ = ("code_id", "depth", "diff", "frame", "inv", "last", "module", "pending")

    def __init__(self, frame, inv: int, code_id: int, last: int, module: bool) -> None:
        self.frame = frame
        self.inv = inv
        self.code_id = code_id
        self.diff = None  # the locals differ, made when a capture window needs it
        self.pending = None  # an exception raised here and not yet handled
        self.last = last
        self.module = module
        self.depth = 0  # as recorded: 0 for an entry of its own (a task's coroutine)


class _Skeleton:
    """The bookkeeping both Python engines share; they feed it call / line / return events."""

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.emit = rec.events.append
        self.stack: list[_Entry] = []
        self.records = array("i")
        self.call_records = array("i")
        self.first = 0
        self.n = 0
        self.hook = None
        self.flush_to = None
        self.hook_every = HOOK_EVERY
        self.hook_at = 1 << 62
        self.capture_from = 1 << 62
        self.capture_to = -1
        self.snapshotted = False
        if sys.byteorder != "little":
            raise RuntimeError("skeleton records are little-endian")

    # -- the engine API (see child.skeleton) ----------------------------------------------------------
    def entries(self) -> list[tuple]:
        """The traced frames on the stack: (frame, invocation, code id, depth), outermost first."""
        return [(e.frame, e.inv, e.code_id, e.depth) for e in self.stack]

    def next_invocation(self) -> int:
        return self.rec.next_invocation

    def skeleton(self, hook, flush, hook_every: int, hook_at: int) -> None:
        self.hook, self.flush_to, self.hook_every, self.hook_at = hook, flush, hook_every, hook_at

    def capture(self, first: int, last: int) -> None:
        self.capture_from, self.capture_to, self.snapshotted = first, last, False

    def flush(self) -> None:
        if not self.records:
            return
        events, calls, first = self.records.tobytes(), self.call_records.tobytes(), self.first
        self.first += len(self.records) // 3
        self.records = array("i")
        self.call_records = array("i")
        with plumbing():
            self.flush_to(events, calls, first)  # type: ignore[misc]

    def count(self) -> int:
        return self.n

    # -- events ------------------------------------------------------------------------------------------
    def _record(self, inv: int, line: int, kind: int) -> None:
        self.records.extend((inv, line, kind))
        if len(self.records) >= 3 * BUFFER:
            self.flush()

    def _counted(self) -> None:
        n = self.n = self.n + 1
        if n >= self.hook_at or n % self.hook_every == 0:
            with plumbing():
                self.hook_at = self.hook(n)  # type: ignore[misc]

    def _capturing(self) -> bool:
        return self.capture_from <= self.n <= self.capture_to

    def _differ(self, entry: _Entry):
        if entry.diff is None:
            entry.diff = self.rec.make_differ(entry.module)
        return entry.diff

    def _snapshot(self, upto: int) -> None:
        if self.snapshotted:
            return
        self.snapshotted = True
        for entry in self.stack[:upto]:
            if entry.diff is None:
                self.emit(
                    [
                        "s",
                        entry.inv,
                        entry.code_id,
                        entry.frame.f_lineno or 0,
                        entry.depth,
                        self._differ(entry)(entry.frame.f_locals),
                    ]
                )

    def call(self, frame, code) -> None:
        rec = self.rec
        inv = rec.next_invocation
        rec.next_invocation = inv + 1
        code_id = rec.code_id(code)
        index = self.n
        depth = len(self.stack)
        entry = _Entry(frame, inv, code_id, index, code.co_name == "<module>")
        caller_last = self.stack[-1].last if self.stack else -1
        resumes = -1
        if code.co_flags & RESUMABLE:
            resumes, direct = rec.suspensions.started(frame)
            resumes = resumes if resumes >= 0 else -2  # (a first run: as the C tracer says it)
            if not direct:  # run by library code (an event loop): an entry of its own
                caller_last, depth = -1, 0
        library = depth > 0 and rec.called_by_library(frame, self.stack[-1].frame)
        entry.depth = depth
        self.stack.append(entry)
        capture = self._capturing()
        self._record(inv, frame.f_lineno or 0, LIBRARY_CALL if library else 0)
        self.call_records.extend((code_id, caller_last, resumes))
        if capture:
            self._snapshot(len(self.stack) - 1)
            changes = self._differ(entry)(frame.f_locals)
            self.emit(call_event(inv, code_id, frame.f_lineno, depth, changes, resumes, library))
        self._counted()

    def line(self, entry: _Entry, line: int) -> None:
        index = self.n
        capture = self._capturing()
        self._record(entry.inv, line, 0x81 if entry.pending is not None else 1)
        entry.last = index
        if capture:
            self._snapshot(len(self.stack))
            caught = None if entry.pending is None else self.rec.reprs.repr(entry.pending)
            self.emit(["l", entry.inv, line, self._differ(entry)(entry.frame.f_locals), caught])
        entry.pending = None
        self._counted()

    def leave(self, entry: _Entry, line: int, value, raised) -> None:
        """A return (value) or an exit by exception (raised)."""
        index = self.n
        capture = self._capturing()
        paused = bool(entry.frame.f_code.co_flags & RESUMABLE) and self.rec.suspensions.left(
            entry.frame, entry.inv, raised is not None
        )
        self._record(entry.inv, line, 3 if raised is not None else 2 | SUSPENDED if paused else 2)
        entry.last = index
        if capture:
            self._snapshot(len(self.stack))
            if entry.diff is not None:  # the last statement's effect shows at the exit event
                changes = entry.diff(entry.frame.f_locals)
                if changes:
                    self.emit(["u", entry.inv, changes])
            if raised is not None:
                self.emit(["x", entry.inv, line, self.rec.reprs.repr(raised)])
            else:
                self.emit(["r", entry.inv, line, self.rec.value_repr(value)])
        self.stack.pop()
        if capture and self.stack and self.stack[-1].diff is not None:
            caller = self.stack[-1]
            changes = caller.diff(caller.frame.f_locals)
            if changes:
                self.emit(["u", caller.inv, changes])
        self._counted()


class MonitoringSkeleton(_Skeleton):
    """sys.monitoring (3.12+): events enabled per user code object; other code is DISABLEd."""

    def __init__(self, rec: Recorder) -> None:
        super().__init__(rec)
        self.mon = sys.monitoring  # type: ignore[attr-defined]
        self.tool = free_tool(self.mon)
        self.enabled: set = set()
        self.line_tables: dict = {}
        self.loop_line = loop_line_rule(rec.as_debugpy)

    def start(self) -> None:
        mon, tool = self.mon, self.tool
        DISABLE = mon.DISABLE
        getframe = sys._getframe
        is_user = self.rec.is_user
        stack = self.stack
        traced_thread = get_ident()  # settrace traces only the thread that started it, and so do we

        def on_start(code, offset, *thrown):  # PY_START, PY_RESUME and PY_THROW (an exception thrown in)
            if get_ident() != traced_thread:
                return None
            if not is_user(code):
                # PY_THROW cannot be DISABLEd (that raises "Cannot disable" in the program)
                return None if thrown else DISABLE
            if code not in self.enabled:
                self.enabled.add(code)
                mon.set_local_events(tool, code, LOCAL_EVENTS)
            self.call(getframe(1), code)

        def on_line(code, line):
            if stack and stack[-1].frame is getframe(1):
                self.line(stack[-1], line)

        def on_jump(code, offset, target):
            # a backward jump within one line may be a line event (see monitoring.loop_line_rule)
            line = self.loop_line(self.line_tables, code, offset, target, DISABLE)
            if line is DISABLE:
                return DISABLE
            if stack and stack[-1].frame is getframe(1):
                self.line(stack[-1], line)

        def on_return(code, offset, retval):
            if stack and stack[-1].frame is getframe(1):
                top = stack[-1]
                self.leave(top, top.frame.f_lineno, retval, None)

        def on_unwind(code, offset, exc):
            if stack and stack[-1].frame is getframe(1):
                top = stack[-1]
                self.leave(top, top.frame.f_lineno, None, exc)

        def on_handled(code, offset, exc):
            if stack and stack[-1].frame is getframe(1):
                stack[-1].pending = exc

        monitor(mon, tool, on_start, on_line, on_jump, on_return, on_unwind, on_handled)

    def stop(self) -> None:
        unmonitor(self.mon, self.tool, self.enabled)


class SettraceSkeleton(_Skeleton):
    """sys.settrace in Python (where the C tracer is not built): one closure per traced frame."""

    def start(self) -> None:
        rec = self.rec
        user_cache = rec.user_cache
        judge = rec.judge

        def global_trace(frame, event, arg):
            code = frame.f_code
            user = user_cache.get(id(code))
            if user is None:
                user = judge(code)
            if not user:
                return None
            self.call(frame, code)
            entry = self.stack[-1]

            def local_trace(frame, event, arg):
                if event == "line":
                    self.line(entry, frame.f_lineno)
                elif event == "return":
                    if self.stack and self.stack[-1] is entry:
                        if entry.pending is not None and arg is None:
                            self.leave(entry, frame.f_lineno, None, entry.pending)
                        else:
                            self.leave(entry, frame.f_lineno, arg, None)
                elif event == "exception":
                    entry.pending = arg[1]
                return local_trace

            return local_trace

        sys.settrace(global_trace)

    def stop(self) -> None:
        sys.settrace(None)
