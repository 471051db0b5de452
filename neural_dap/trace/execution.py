"""One recorded execution as the recorded world navigates it, whichever way it was recorded.

`FullExecution` holds every state (full capture: short runs, datasets); `SkeletonExecution` holds
the skeleton and materialises states on demand from checkpoints (`trace.skeleton`: millions of
events). Both answer the same questions the same way: where an action leads and where breakpoints are hit
(`semantics`: one `trace.actions.ActionSemantics` over each recording's columns), the state and
the call stack at an event, the output between two events, the exceptions on the way.

The exception filters, as debugpy names them (an "exception" event is a frame exiting by one, and
only the user's code is traced):

  raised         every exception event, and every line where one was caught
  uncaught       where the exception that ends the program was raised: the start of the run of
                 exception exits the recording ends with, when the program did end by it
  userUnhandled  an exception leaving the user's code into code that is not (a failing test's
                 assertion caught by pytest): an exception exit of an invocation with no traced
                 caller, other than the one that ends the program (that is `uncaught`'s)
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Any, Protocol

import msgspec
import numpy as np

from neural_dap.core.actions import Action, Target
from neural_dap.core.state import Frame, State, Value
from neural_dap.trace.actions import EXCEPTION, LINE, RETURN, ActionSemantics, Columns, last_equal
from neural_dap.trace.eventlog import apply_changes, decode_value
from neural_dap.trace.recorder import RecorderError, Recording
from neural_dap.trace.skeleton import DivergenceError, SkeletonRecording, SkeletonTree
from neural_dap.trace.tree import Facts, StateTree


class Execution(Protocol):
    def __len__(self) -> int: ...

    @property
    def last(self) -> int: ...

    @property
    def semantics(self) -> ActionSemantics:
        """The actions and breakpoint hits over this recording's columns."""
        ...

    def apply(self, i: int, action: Action) -> int: ...

    def hits(self, start: int, end: int, targets: tuple[Target, ...]) -> list[int]:
        """Line events at the (path, line) targets strictly after `start` up to `end`, in the
        walking direction."""
        ...

    def state(self, i: int) -> State: ...

    def frames(self, i: int) -> tuple[Frame, ...]:
        """The call stack at event i, innermost first, each frame with its locals."""
        ...

    def output(self, start: int, end: int) -> tuple[tuple[str, str], ...]: ...

    def threads(self, i: int) -> list[tuple[int, str]]:
        """(number, name) of each thread alive at event i: it has run traced code by then and has
        not run its last yet. Thread 0 started the program."""
        ...

    def thread_frames(self, i: int, thread: int) -> tuple[Frame, ...]:
        """The call stack of `thread` as it stood at event i (its latest event up to i)."""
        ...

    def first_exception(self, start: int, end: int, filters: frozenset[str]) -> int | None: ...

    def close(self) -> None: ...


class FullExecution:
    def __init__(self, recording: Recording, facts: Facts | None = None) -> None:
        """`facts`: read the events from these, the states built only where asked for (a live
        recording of threads joined at each stop: trace/threaded.py's Joiner)."""
        if not len(recording.states):
            outcome = recording.outcome
            why = f": {outcome.message}" if outcome.message else f" (it {outcome.kind})"
            raise RecorderError(f"nothing of the program was recorded{why}")
        self.recording = recording
        log = recording.log
        self.opened = log.open_before()  # (the frames on the stacks where the states begin)
        states = list(recording.states) if facts is None else recording.states
        self.tree = StateTree(states, log.resumes, log.library, self.opened, facts)
        self.raised: list[int] = []
        self._raised_from(0)
        self.alive_now: frozenset[int] | None = None  # the threads alive where a live program is held
        # ... and those of them that have run none of the user's code (by number: their names)
        self.idle_now: dict[int, str] = {}

    def _raised_from(self, start: int) -> None:
        """The exception events and the lines that caught one, from event `start` on."""
        log = self.recording.log
        if self.tree.facts is None:
            states = self.tree.states
            self.raised += [k for k in range(start, len(states)) if states[k].event == "exception" or states[k].caught]
            return
        kinds = self.tree.semantics.columns.kinds
        found = set(np.flatnonzero(kinds[start:] == EXCEPTION) + start)
        found.update(k for k in log.caught if k >= start)
        self.raised += sorted(int(k) for k in found)

    def grow(self, recording: Recording) -> None:
        """The same run, longer: `recording` is its log with more events fed (a live recording of
        threads at its next stop, trace/threaded.py's Joiner; read through the tree's facts). What
        is known of the old events stays; only the new are read."""
        start = len(self.tree)
        self.recording = recording
        log = recording.log
        self.tree.extend(recording.states, log.resumes, log.library)
        self._raised_from(start)
        for name in ("_ends_by_exception", "uncaught", "user_unhandled", "_thread_spans"):
            self.__dict__.pop(name, None)  # (cached over the shorter run)

    @functools.cached_property
    def _ends_by_exception(self) -> bool:
        return _ends_by_exception(self.recording.outcome, lambda: self.tree.states[-1])

    @functools.cached_property
    def uncaught(self) -> list[int]:
        states = self.tree.states
        ends = _uncaught(lambda k: states[k].event, lambda k: states[k].depth, len(states))
        return sorted(set(self._threads_ended_by_exceptions() + (ends if self._ends_by_exception else [])))

    def _threads_ended_by_exceptions(self) -> list[int]:
        """Where each exception that ended a thread other than the main one was raised (debugpy's
        "uncaught" stops there; threading prints it and the program runs on): the start of the run
        of exception exits that ends the thread's events, each one level out from the one before.
        A SystemExit ends a thread quietly: no stop."""
        semantics = self.tree.semantics
        columns = semantics.columns
        if columns.thread_of is None:
            return []
        states = self.tree.states
        out = []
        for thread, (_first, last) in self._thread_spans.items():
            top = states[last]
            if thread == 0 or top.event != "exception" or int(columns.parent[columns.invs[last]]) >= 0:
                continue
            if (top.value or "").startswith("SystemExit"):
                continue
            k = last
            while True:
                before = semantics.last_of_thread(thread, k - 1) if k > 0 else -1
                if before < 0 or states[before].event != "exception" or states[before].depth != states[k].depth + 1:
                    break
                k = before
            out.append(k)
        return out

    @functools.cached_property
    def user_unhandled(self) -> list[int]:
        return _user_unhandled(self.tree.semantics.columns, self._ends_by_exception)

    def __len__(self) -> int:
        return len(self.tree)

    @property
    def last(self) -> int:
        return self.tree.last

    @property
    def semantics(self) -> ActionSemantics:
        return self.tree.semantics

    def apply(self, i: int, action: Action) -> int:
        return self.tree.apply(i, action)

    def hits(self, start: int, end: int, targets: tuple[Target, ...]) -> list[int]:
        return self.tree.semantics.hits(start, end, targets)

    def state(self, i: int) -> State:
        return self.tree.states[i]

    def frames(self, i: int) -> tuple[Frame, ...]:
        states = self.tree.states
        log = self.recording.log
        out = []
        stack = self.tree.stack(i)
        for depth, k in enumerate(stack):
            s = states[k]
            local_reprs, values = s.locals, s.values
            if depth > 0:
                local_reprs, values = log.caller_view(s.invocation, k, i, local_reprs, values)
            out.append(Frame(s.function, s.line, s.source, s.invocation, s.path, local_reprs, values))
        return tuple(out) + self._open_before(states[stack[-1]].invocation, i)

    def _open_before(self, inv: int, i: int, including: bool = False) -> tuple[Frame, ...]:
        """The callers of `inv` (and `inv` itself, `including`) that were on the stack where the
        states begin and have not run since (a recording that starts at a cut: trace/rolling.py):
        as their snapshots show them, with what their callees changed up to state i."""
        log = self.recording.log
        out = []
        caller = inv if including else self.tree.parent.get(inv)
        while (
            caller is not None
            and caller in log.snapshots
            and bisect_right(self.tree.by_invocation.get(caller, []), i) == 0
        ):
            frame = log.invocations[caller]
            line = log.snapshots[caller][2]
            local_reprs, values = log.snapshot_view(caller, i)
            source = frame.lines[line - 1] if 0 < line <= len(frame.lines) else ""
            out.append(Frame(frame.function, line, source, caller, frame.path, local_reprs, values))
            caller = self.tree.parent.get(caller)
        return tuple(out)

    @functools.cached_property
    def _thread_spans(self) -> dict[int, tuple[int, int]]:
        """Per thread: its first and last event."""
        return _thread_spans(self.tree.semantics.columns, len(self.tree))

    def threads(self, i: int) -> list[tuple[int, str]]:
        """The threads alive at event i: those with events before and after it, and those alive
        where the program is held (`alive_now`, a live recording's: a thread waiting in a pool's
        queue or on an event has no later event to say so)."""
        names = self.recording.log.thread_names
        alive = self.alive_now or frozenset()
        spans = self._thread_spans
        return [
            (t, names.get(t, f"Thread-{t}"))
            for t, (first, last) in sorted(spans.items())
            if t == 0 or first <= i <= last or (first <= i and t in alive)
        ] + [(t, name) for t, name in sorted(self.idle_now.items()) if t not in spans and i >= self.last]

    def thread_frames(self, i: int, thread: int) -> tuple[Frame, ...]:
        """Where `thread` stood at its latest event k up to i, each frame's locals as they are at i
        (with what other threads changed since: a module's globals a worker changed)."""
        if thread == self.tree.states[i].thread:
            return self.frames(i)
        k = self.tree.semantics.last_of_thread(thread, i)
        if k < 0:  # (no state of it yet: the frames it had where the states begin, if any)
            innermost = [inv for inv, (t, _) in self.opened.items() if t == thread][-1:]
            return self._open_before(innermost[0], i, including=True) if innermost else ()
        states = self.tree.states
        log = self.recording.log
        out = []
        stack = self.tree.stack(k)
        if self.tree.semantics.kind(k) >= RETURN:
            # its latest event left a function: it stands in the caller now, at the call's line, or
            # (the outermost of its recorded frames) in library code, with no frame of the user's
            left = states[k].invocation
            stack = stack[1:]
            if not stack:
                return self._open_before(left, i)
        for j in stack:
            s = states[j]
            local_reprs, values = log.caller_view(s.invocation, j, i, s.locals, s.values)
            out.append(Frame(s.function, s.line, s.source, s.invocation, s.path, local_reprs, values))
        return tuple(out) + self._open_before(states[stack[-1]].invocation, i)

    def output(self, start: int, end: int) -> tuple[tuple[str, str], ...]:
        """What the program wrote after event `start` up to `end`, from the log's index of it (the
        states carry the same text; building them to read it cost a run's length)."""
        log = self.recording.log
        log.materialize()
        written = [(k, 0, text) for k, text in log.stdout_at.items() if start < k <= end]
        written += [(k, 1, text) for k, text in log.stderr_at.items() if start < k <= end]
        out: list[tuple[str, str]] = [("stdout" if err == 0 else "stderr", text) for _, err, text in sorted(written)]
        if end == len(self.tree) - 1 and start < end:
            out.extend(self._after_last_state())
        return tuple(out)

    def _after_last_state(self) -> list[tuple[str, str]]:
        rec = self.recording
        # (what the states carry, from the log's own index: building every state again to read it
        # cost a live recording of threads seconds at each stop)
        log = rec.log
        log.materialize()
        shown_out = "".join(log.stdout_at[k] for k in sorted(log.stdout_at))
        shown_err = "".join(log.stderr_at[k] for k in sorted(log.stderr_at))
        out = []
        if len(rec.stdout) > len(shown_out) and rec.stdout.startswith(shown_out):
            out.append(("stdout", rec.stdout[len(shown_out) :]))
        if len(rec.stderr) > len(shown_err) and rec.stderr.startswith(shown_err):
            out.append(("stderr", rec.stderr[len(shown_err) :]))
        return out

    def first_exception(self, start: int, end: int, filters: frozenset[str]) -> int | None:
        points: Callable[[str], list[int]] = functools.partial(_filter_points, self)
        if {"uncaught", "userUnhandled"} <= filters:
            # an exception that ends a worker thread leaves the user's code for threading's first:
            # debugpy stops there once, for "User Uncaught Exceptions" (3.12; 3.11 stops again after)
            ended = set(self._threads_ended_by_exceptions())
            if ended:
                points = lambda kind: [k for k in _filter_points(self, kind) if kind != "uncaught" or k not in ended]  # noqa: E731
        return _first_exception(points, start, end, filters, functools.partial(_stops_at, self))

    def close(self) -> None:
        pass


class SkeletonExecution:
    def __init__(self, recording: SkeletonRecording) -> None:
        self.recording = recording
        self.keep_open = False  # a live program's recording: closed only when the session ends
        self._quiet_exits: dict[int, bool] = {}  # a thread's last event: its exception is a SystemExit
        self.refresh()

    def refresh(self) -> None:
        """The recording grew (a live one: world/live.py): what is known of it is read again."""
        self.tree: SkeletonTree = self.recording.tree
        tree = self.tree
        self.raised = np.flatnonzero((tree.kinds == EXCEPTION) | tree.caught_flags).tolist()
        for known in ("_ends_by_exception", "uncaught", "user_unhandled", "_thread_spans"):
            self.__dict__.pop(known, None)

    @functools.cached_property
    def _ends_by_exception(self) -> bool:
        return _ends_by_exception(self.recording.outcome, lambda: self.state(self.last))

    @functools.cached_property
    def uncaught(self) -> list[int]:
        tree = self.tree
        ends = []
        if self._ends_by_exception:
            ends = _uncaught(tree.event, lambda k: int(tree.depth[tree.invs[k]]), len(tree))
        return sorted(set(self._threads_ended_by_exceptions() + ends))

    def _threads_ended_by_exceptions(self) -> list[int]:
        """(every thread as skeletons) Where each exception that ended a thread other than the main
        one was raised, as FullExecution finds them; a SystemExit ends a thread quietly (the
        exception's text is the thread's last state: a live stop's own, or a replay's)."""
        semantics = self.tree.semantics
        columns = semantics.columns
        if columns.thread_of is None:
            return []
        tree = self.tree
        out = []
        for thread, (_first, last) in self._thread_spans.items():
            if thread == 0 or semantics.kind(last) != EXCEPTION or int(columns.parent[columns.invs[last]]) >= 0:
                continue
            quiet = self._quiet_exits.get(last)
            if quiet is None:  # (asked once an event: a live recording's grows, its past does not change)
                try:
                    quiet = (self.state(last).value or "").startswith("SystemExit")
                except DivergenceError:
                    quiet = False  # (its text cannot be rebuilt: a stop there says so)
                self._quiet_exits[last] = quiet
            if quiet:
                continue
            k = last
            while True:
                before = semantics.last_of_thread(thread, k - 1) if k > 0 else -1
                depth = int(tree.depth[tree.invs[k]])
                if before < 0 or semantics.kind(before) != EXCEPTION or int(tree.depth[tree.invs[before]]) != depth + 1:
                    break
                k = before
            out.append(k)
        return out

    @functools.cached_property
    def user_unhandled(self) -> list[int]:
        return _user_unhandled(self.tree.semantics.columns, self._ends_by_exception)

    def __len__(self) -> int:
        return len(self.tree)

    @property
    def last(self) -> int:
        return self.tree.last

    @property
    def semantics(self) -> ActionSemantics:
        return self.tree.semantics

    def paused(self, inv: int) -> bool:
        """Invocation `inv` left by a pause (a yield, an await: it may resume), not for good."""
        return self.recording.log.columns.paused_at_exit(inv)

    def library_returns(self, start: int, end: int) -> list[tuple[int, int, str, str, Value | None]]:
        """(event, frame, name, text, its children) of each value a library function returned into
        the user's frame `frame` during a live step, with `start` < event <= `end` (child/returned.py)."""
        return [r for r in self.recording.log.library_returns if start < r[0] <= end]

    def apply(self, i: int, action: Action) -> int:
        return self.tree.apply(i, action)

    def hits(self, start: int, end: int, targets: tuple[Target, ...]) -> list[int]:
        return self.tree.semantics.hits(start, end, targets)

    def state(self, i: int) -> State:
        return self.recording.state(i)

    def frames(self, i: int) -> tuple[Frame, ...]:
        return self._held_globals(i, self._frames(i))

    def _held_globals(self, i: int, frames: tuple[Frame, ...]) -> tuple[Frame, ...]:
        """Where a live program of threads is held (event i is its stop), each `<module>` frame of the
        user's with its globals as the program has them there (child/frontier.py `_module_globals`):
        a replay rebuilds a frame as it was at its thread's latest event, and other threads may have
        changed the module's globals since (a server's counter, a pool's results)."""
        held = self.recording.log.held_globals
        if held is None or held[0] != i or not self.keep_open:
            return frames
        out = []
        for frame in frames:
            changes = held[1].get(frame.path) if frame.function == "<module>" else None
            if changes is None:
                out.append(frame)
                continue
            local_reprs: dict[str, str] = {}
            encoded: dict[str, list] = {}
            apply_changes(local_reprs, encoded, changes)
            values = {name: decode_value(enc) for name, enc in encoded.items()}
            out.append(msgspec.structs.replace(frame, locals=local_reprs, values=values))
        return tuple(out)

    def held_module_frame(self, i: int, path: str) -> Frame | None:
        """Where a live program of threads is held (event i is its stop): the `<module>` frame of
        `path` on the main thread's stack, with its globals as the program has them there, made
        from the records alone (no replay: one of the other threads' moments may not rebuild,
        the stop's own does). None where it is not held at i, or the module is not on that stack."""
        held = self.recording.log.held_globals
        if held is None or held[0] != i or not self.keep_open or path not in held[1]:
            return None
        semantics = self.tree.semantics
        columns = semantics.columns
        k = semantics.last_of_thread(0, i)
        if k < 0:
            return None
        for e in self.tree.stack(k):
            inv = int(columns.invs[e])
            function, where = columns.codes[int(columns.code_of[inv])]
            if function != "<module>" or where != path:
                continue
            line = int(columns.lines[e])
            lines = self.recording.source_lines.get(path) or []
            source = lines[line - 1] if 0 < line <= len(lines) else ""
            return self._held_globals(i, (Frame("<module>", line, source, inv, path),))[0]
        return None

    def _frames(self, i: int) -> tuple[Frame, ...]:
        window = self.recording.window_for(i)
        here = i - window.offset
        out = []
        for depth, k in enumerate(self.tree.stack(i)):
            if depth == 0:
                s = self.state(i)
                out.append(Frame(s.function, s.line, s.source, s.invocation, s.path, s.locals, s.values))
                continue
            inv = int(self.tree.invs[k])
            if k >= window.offset:
                s = window.state(k - window.offset)
                local_reprs, values = window.caller_view(inv, k - window.offset, here, s.locals, s.values)
            else:  # its latest state is before the window: its locals where the window begins
                s = self.state(k)
                local_reprs, values = (
                    window.snapshot_view(inv, here) if inv in window.snapshots else (s.locals, s.values)
                )
            out.append(Frame(s.function, s.line, s.source, s.invocation, s.path, local_reprs, values))
        return tuple(out)

    @functools.cached_property
    def _thread_spans(self) -> dict[int, tuple[int, int]]:
        """Per thread: its first and last event (every thread recorded as skeletons)."""
        return _thread_spans(self.tree.semantics.columns, len(self.tree))

    def threads(self, i: int) -> list[tuple[int, str]]:
        if self.tree.thread_of is not None:
            # every thread as skeletons (trace/skeleton.py): those with events before and after i
            log = self.recording.log
            names = {0: "MainThread", **log.thread_names}
            # (a live program's: the threads alive where it is held, and those that have run none
            # of the user's code: a thread waiting in a pool's queue has no later event to say so)
            alive = (log.alive or frozenset()) if self.keep_open else frozenset()
            spans = self._thread_spans
            idle = log.idle if self.keep_open and i >= self.last else {}
            return [
                (t, names.get(t, f"Thread-{t}"))
                for t, (first, last) in sorted(spans.items())
                if t == 0 or first <= i <= last or (first <= i and t in alive)
            ] + [(t, name) for t, name in sorted(idle.items()) if t not in spans]
        # a skeleton follows one thread (a second one running the user's code is recorded in full);
        # where a live program is held, its threads that have run none of the user's code too
        idle = self.recording.log.idle if self.keep_open and i >= self.last else {}
        return [(0, "MainThread"), *sorted((t, name) for t, name in idle.items() if t != 0)]

    def thread_frames(self, i: int, thread: int) -> tuple[Frame, ...]:
        semantics = self.tree.semantics
        if self.tree.thread_of is None or thread == semantics.thread(i):
            return self.frames(i) if thread == semantics.thread(i) else ()
        # where `thread` stood at its latest event k up to i, its locals as they were at k (they are
        # rebuilt by a replay of the window around k; what other threads changed since k in objects
        # it shows is not in them)
        k = semantics.last_of_thread(thread, i)
        if k < 0:
            return ()
        frames = self._frames(k)
        # (its latest event left a function: it stands in the caller now, at the call's line)
        return self._held_globals(i, frames[1:] if semantics.kind(k) >= RETURN else frames)

    def output(self, start: int, end: int) -> tuple[tuple[str, str], ...]:
        return tuple(self.recording.output_between(start, end))

    def first_exception(self, start: int, end: int, filters: frozenset[str]) -> int | None:
        return _first_exception(
            functools.partial(_filter_points, self), start, end, filters, functools.partial(_stops_at, self)
        )

    def close(self) -> None:
        if not self.keep_open:
            self.recording.close()


def _thread_spans(columns, n: int) -> dict[int, tuple[int, int]]:
    """Per thread: its first and last event (one thread: all of them)."""
    if columns.thread_of is None:
        return {0: (0, n - 1)}
    threads = columns.thread_of[columns.invs]
    numbers, firsts = np.unique(threads, return_index=True)
    _, lasts = np.unique(threads[::-1], return_index=True)
    return {int(t): (int(f), n - 1 - int(b)) for t, f, b in zip(numbers, firsts, lasts, strict=True)}


def _filter_points(execution: FullExecution | SkeletonExecution, kind: str) -> list[int]:
    """The events where the exception filter `kind` stops, in run order (none for an unknown kind)."""
    if kind == "raised":
        return execution.raised
    if kind == "uncaught":
        return execution.uncaught
    if kind == "userUnhandled":
        return execution.user_unhandled
    return []


def _ends_by_exception(outcome: Any, last_state: Callable[[], State]) -> bool:
    """Whether the recording's last event is the exception that ends the program: the program
    raised, or exited by a SystemExit that left the traced code. A program that ended otherwise
    (pytest catching a failing test and exiting with its own code, a run cut at a limit) caught
    whatever exception its last traced event shows. Without an outcome, the last event says."""
    if outcome is None or outcome.kind == "raised":
        return True
    if outcome.kind == "exited":
        last = last_state()
        return last.event == "exception" and (last.value or "").startswith("SystemExit")
    return False


def _uncaught(event: Callable[[int], str], depth: Callable[[int], int], total: int) -> list[int]:
    """Where the exception that ends the program was raised: the start of the run of exception
    exits at the end, each one level out from the one before."""
    if not total or event(total - 1) != "exception":
        return []
    k = total - 1
    while k > 0 and event(k - 1) == "exception" and depth(k - 1) == depth(k) + 1:
        k -= 1
    return [k]


def _user_unhandled(columns: Columns, ends_by_exception: bool) -> list[int]:
    """Exception exits of invocations with no traced caller (the exception goes on into code that
    is not the user's), less the last event when it is the exception that ends the program."""
    exits = np.flatnonzero(columns.kinds == EXCEPTION)
    top = exits[columns.parent[columns.invs[exits]] < 0].tolist()
    if ends_by_exception and top and top[-1] == len(columns.kinds) - 1:
        top.pop()
    return top


# Exceptions that are a generator's or coroutine's control flow (an `await` resuming, a generator
# closed): debugpy never stops at them (pydevd's `should_stop_on_exception`)
CONTROL_FLOW = frozenset({"StopIteration", "StopAsyncIteration", "GeneratorExit"})
# ... nor, under "User Uncaught Exceptions", at an asyncio task's cancellation leaving its coroutine
# for the event loop (how a task ends when it is cancelled)
NOT_USER_UNHANDLED = CONTROL_FLOW | {"CancelledError"}


def exception_type(state: State) -> str:
    """The short type name of the exception a state raises or catches ("" where it has none)."""
    text = (state.value if state.event == "exception" else state.caught) or ""
    match = re.match(r"[\w.]+", text)
    return match.group(0).rsplit(".", 1)[-1] if match else ""


def _stops_at(execution: FullExecution | SkeletonExecution, kind: str, i: int) -> bool:
    """Whether filter `kind` stops at event i, one of its points: not at control flow, nor (raised)
    where an exception a `finally` or a `with` let run its cleanup goes on out of the frame."""
    state = execution.state(i)
    name = exception_type(state)
    if name in (NOT_USER_UNHANDLED if kind == "userUnhandled" else CONTROL_FLOW):
        return False
    if kind == "raised" and state.event == "line" and state.caught:
        return not _caught_again(execution, i, state)
    return not (kind == "raised" and state.event == "exception" and _goes_on_after_cleanup(execution, i, state))


def _caught_again(execution: FullExecution | SkeletonExecution, i: int, state: State) -> bool:
    """The frame's previous event caught this same exception (3.13: an `await` takes a cancellation
    thrown in, then the `finally` or `except` around it does): one stop, where it came in."""
    columns = execution.semantics.columns
    inv = int(columns.invs[i])
    before = last_equal(columns.invs, inv, int(columns.call_index[inv]), i)
    if before < 0 or int(columns.kinds[before]) != LINE:
        return False
    return execution.state(before).caught == state.caught


def _goes_on_after_cleanup(execution: FullExecution | SkeletonExecution, i: int, state: State) -> bool:
    """Exception exit i leaves the frame with the exception its `finally` body (or its `with`
    statement) caught last, the cleanup done: the exception re-raised, not a new one. debugpy's
    "raised" stops once in the frame, where it came in; a bare `raise` in an `except` clause is a
    stop of its own (as in debugpy on 3.11)."""
    columns = execution.semantics.columns
    inv = int(columns.invs[i])
    start = int(columns.call_index[inv])
    points = execution.raised
    k = bisect_left(points, i) - 1
    while k >= 0 and points[k] >= start:
        c = points[k]
        if int(columns.invs[c]) == inv and int(columns.kinds[c]) == LINE:
            caught = execution.state(c)
            return caught.caught == state.value and not caught.source.lstrip().startswith("except")
        k -= 1
    return False


def _first_exception(
    points: Callable[[str], list[int]],
    start: int,
    end: int,
    filters: frozenset[str],
    stops_at: Callable[[str, int], bool] = lambda _kind, _i: True,
) -> int | None:
    """The first event after `start` up to `end` where one of the filters stops, in the walking
    direction (backwards when `end` is before `start`: reverse-continue stops there too)."""
    found = None
    for kind in filters:
        at = points(kind)
        if end >= start:
            k = bisect_right(at, start)
            while k < len(at) and at[k] <= end and (found is None or at[k] < found):
                if stops_at(kind, at[k]):
                    found = at[k]
                    break
                k += 1
        else:
            k = bisect_left(at, start) - 1
            while k >= 0 and at[k] >= end and (found is None or at[k] > found):
                if stops_at(kind, at[k]):
                    found = at[k]
                    break
                k -= 1
    return found


def enclosing_frames(execution: Execution, i: int) -> tuple[Frame, ...]:
    """The user's frames still running under a chain that library code runs (an event loop's task:
    its coroutine's stack ends where the loop resumed it): the real stack's frames below it, as
    debugpy lists them (`main` ← `<module>` under `asyncio.run`). The innermost invocation of the
    thread that started before the chain and has not ended by i is the one whose call into the
    library runs it; its frames are taken where it stood (its latest event before the chain), and
    so on below."""
    columns = execution.semantics.columns
    out: list[Frame] = []
    root = _outermost_event(execution, i)
    for _ in range(64):  # (nested event loops are rare; a bound all the same)
        inv = int(columns.invs[root])
        if int(columns.parent[inv]) >= 0:
            break
        start = int(columns.call_index[inv])
        calls, ends = columns.call_index, columns.end_index
        open_ = (calls < start) & ((ends < 0) | (ends > i))
        if columns.thread_of is not None:
            open_ &= columns.thread_of == columns.thread_of[inv]
        candidates = np.flatnonzero(open_)
        if not len(candidates):
            break
        enclosing = int(candidates[np.argmax(calls[candidates])])
        seen = np.flatnonzero(columns.invs[:start] == enclosing)
        if not len(seen):
            break
        j = int(seen[-1])
        out.extend(execution.frames(j))
        root = _outermost_event(execution, j)  # (below them, where a library ran their chain too)
    return tuple(out)


def _outermost_event(execution: Execution, j: int) -> int:
    """The event of the outermost frame on the stack at j (its own chain's root)."""
    columns = execution.semantics.columns
    inv = int(columns.invs[j])
    while int(columns.parent[inv]) >= 0:
        inv = int(columns.parent[inv])
    return int(columns.call_index[inv])
