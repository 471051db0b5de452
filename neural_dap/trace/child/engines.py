"""The tracing engines: sys.settrace (3.11; in C when the extension is built), sys.monitoring (3.12+).
Each records the same events (see `neural_dap.trace.child`). Standard library only."""

from __future__ import annotations

import gc
import sys
import threading
from _thread import get_ident
from collections.abc import Callable

from neural_dap.trace.child import own_tracers
from neural_dap.trace.child.coroutines import RESUMABLE
from neural_dap.trace.child.monitoring import (
    LOCAL_EVENTS,
    free_tool,
    line_table,
    loop_line_rule,
    monitor,
    register,
    unmonitor,
)
from neural_dap.trace.child.recorder import Recorder
from neural_dap.trace.child.threads import ThreadTable, is_ours
from neural_dap.trace.child.wire import call_event, snapshot_event

# -- engines ---------------------------------------------------------------------------------------


class SharedGlobals:
    """A module's globals that another thread changes (a worker filling a module's dict while the
    main thread waits in `pool.map`): after each line of a thread's frame, the globals it shares
    with a `<module>` frame on another thread's stack are diffed, and what changed is sent as an
    update of that module frame ("u"), so a stop in any thread shows the module's globals as they
    are then (its Globals scope), not as the main thread last saw them. Each thread keeps its own
    shadow (differs are not thread-safe), and diffs a copy of the dict (another thread may add to
    it while a repr runs)."""

    def __init__(self, rec: Recorder, stacks: dict) -> None:
        self.rec = rec
        self.stacks = stacks  # per thread: its traced frames, each entry's [0] the frame, [1] its invocation
        self.local = threading.local()
        self.version = dict_version()

    def changes(self, frame, seen: dict | None = None) -> tuple[int, list] | None:
        shared = getattr(self.local, "shared", None)
        if shared is None:
            shared = self.local.shared = {}
        g = frame.f_globals
        found = shared.get(id(g))
        if found is None:
            found = shared[id(g)] = self._module_of(g)
        if not found:
            return None
        inv, diff = found[0], found[1]
        if self.version is not None:
            # no name bound, rebound or deleted since this thread's last diff, and no value that
            # can change in place shown (a module's globals are mostly its functions, classes and
            # imports, never shown): nothing to diff (read before the copy: a change after it
            # shows at the next line)
            version = self.version(g)
            if version == found[2] and not diff.encs:
                return None
            found[2] = version
        changes = diff(dict(g), seen)
        return (inv, changes) if changes else None

    def _module_of(self, g: dict) -> list:
        """[invocation, differ, version diffed] of the `<module>` frame whose globals `g` are, on
        another thread's stack; [] where there is none (a module whose body has run: nobody shows
        its frame)."""
        me = get_ident()
        for ident, stack in list(self.stacks.items()):
            if ident == me:
                continue
            for entry in list(stack):
                frame = entry[0]
                if frame is not None and frame.f_code.co_name == "<module>" and frame.f_globals is g:
                    return [entry[1], self.rec.make_differ(True), None]
        return []


def dict_version():
    """The C tracer's reader of a dict's version tag, on the releases that change it at every
    change of the dict (3.11 to 3.13, not free-threaded); None elsewhere (every line diffs)."""
    if not (3, 11) <= sys.version_info[:2] <= (3, 13) or not getattr(sys, "_is_gil_enabled", lambda: True)():
        return None
    try:
        from neural_dap.trace._ctracer import dict_version as version
    except ImportError:
        return None
    return version


def settrace_engine(rec: Recorder, threads: ThreadTable | None = None):
    """sys.settrace: one closure per traced frame keeps its invocation id and locals shadow. With a
    thread table, every thread `threading` starts is traced too (each with its own stack). `adopt`
    takes over frames another engine traced (the skeleton meeting a second thread: runner.py)."""
    emit = rec.events.append if threads is None else threads.emitter()
    user_cache = rec.user_cache
    judge = rec.judge
    code_ids = rec.code_ids
    value_repr = rec.value_repr
    make_differ = rec.make_differ
    bounded = rec.reprs.repr
    suspensions = rec.suspensions
    called_by_library = rec.called_by_library
    counter = [0]  # next invocation id
    stacks: dict[int, list] = {}  # per thread: (frame, invocation, diff) of each traced frame on its stack
    shared = SharedGlobals(rec, stacks) if threads is not None else None

    def global_trace(frame, event, arg):
        code = frame.f_code
        user = user_cache.get(id(code))
        if user is None:
            user = judge(code)
        if not user:
            return None
        inv = counter[0]
        counter[0] = inv + 1
        active = stacks.get(get_ident())
        if active is None:
            active = stacks[get_ident()] = []
        depth = len(active)
        below = active[-1][0] if active else None
        diff = make_differ(code.co_name == "<module>")
        active.append((frame, inv, diff))
        cid = code_ids.get(id(code))
        if cid is None:
            cid = rec.code_id(code)
        resumable = code.co_flags & RESUMABLE
        resumes = -1
        if resumable:
            resumes, direct = suspensions.started(frame)
            depth = depth if direct else 0  # run by library code (an event loop): an entry of its own
        library = depth > 0 and called_by_library(frame, below)
        emit(call_event(inv, cid, frame.f_lineno, depth, diff(frame.f_locals), resumes, library))
        return follow(inv, diff, bool(resumable), active)

    def follow(inv: int, diff, resumable: bool, active: list):
        """The local trace function of a traced frame (its lines, its exit)."""
        pending = None

        def local_trace(frame, event, arg):
            nonlocal pending
            if event == "line":
                seen: dict = {}
                if pending is None:
                    emit(("l", inv, frame.f_lineno, diff(frame.f_locals, seen), None))
                else:
                    emit(("l", inv, frame.f_lineno, diff(frame.f_locals, seen), bounded(pending)))
                    pending = None
                if shared is not None:
                    update = shared.changes(frame, seen)
                    if update is not None:
                        emit(("u", *update))
            elif event == "return":
                raised = pending is not None and arg is None
                seen = {}
                changes = diff(frame.f_locals, seen)  # the last statement's effect shows at the exit
                if changes:
                    emit(("u", inv, changes))
                if raised:
                    emit(("x", inv, frame.f_lineno, bounded(pending)))
                else:
                    emit(("r", inv, frame.f_lineno, value_repr(arg)))
                if shared is not None:  # ... in its module's globals: after it (shown from the latest state on)
                    update = shared.changes(frame, seen)
                    if update is not None:
                        emit(("u", *update))
                if resumable:
                    suspensions.left(frame, inv, raised)
                if active and active[-1][1] == inv:
                    active.pop()
                if active:
                    # what the callee changed in its caller's objects shows in the caller right away
                    caller, caller_inv, caller_diff = active[-1]
                    changes = caller_diff(caller.f_locals, seen)
                    if changes:
                        emit(("u", caller_inv, changes))
            elif event == "exception":
                pending = arg[1]
            return local_trace

        return local_trace

    def start():
        if threads is not None:
            threads.begin()
            threading.settrace(global_trace)  # each thread `threading` starts from now on
        sys.settrace(global_trace)  # this thread

    def stop():
        sys.settrace(None)
        if threads is not None:
            threading.settrace(None)  # type: ignore[arg-type]

    def adopt(entries: list, next_invocation: int) -> None:
        """Go on where another engine stops, in this thread: `entries` are its traced frames
        (frame, invocation, code id, depth), outermost first; each is sent as a snapshot (its
        locals now) and followed from its next line."""
        counter[0] = max(counter[0], next_invocation)
        active = stacks.setdefault(get_ident(), [])
        for frame, inv, cid, depth in entries:
            if frame is None:
                continue
            code = frame.f_code
            diff = make_differ(code.co_name == "<module>")
            emit(snapshot_event(inv, cid, frame.f_lineno, depth, diff(frame.f_locals)))
            active.append((frame, inv, diff))
            frame.f_trace = follow(inv, diff, bool(code.co_flags & RESUMABLE), active)
        start()

    def take(frame) -> object:
        """A frame that started in another thread before this engine ran (it was waiting for it):
        its call event now, and its local trace function; that thread's calls come here from now on."""
        sys.settrace(global_trace)
        return global_trace(frame, "call", None)

    def entries() -> list:
        """This thread's traced frames, outermost first, as `adopt` takes them (another engine
        going on from here: a switch to every thread)."""
        return [
            (frame, inv, code_ids.get(id(frame.f_code), -1), k)
            for k, (frame, inv, _) in enumerate(stacks.get(get_ident(), []))
        ]

    return start, stop, adopt, take, lambda: counter[0], entries


def monitoring_engine(rec: Recorder, threads: ThreadTable | None = None):
    """sys.monitoring (3.12+): events enabled per user code object; other code is DISABLEd. Events
    come from every thread: without a thread table only the thread that started tracing is
    recorded (as settrace would), with one every thread is, each with its own stack."""
    mon = sys.monitoring  # type: ignore[attr-defined]
    tool = free_tool(mon)
    DISABLE = mon.DISABLE
    emit = rec.events.append if threads is None else threads.emitter()
    is_user = rec.is_user
    value_repr = rec.value_repr
    getframe = sys._getframe
    loop_line = loop_line_rule(rec.as_debugpy)
    stacks: dict[int, list] = {}  # per thread: [frame, inv, diff, pending] per active traced frame
    no_stack: list = []
    enabled: set = set()
    line_tables: dict = {}
    every_thread = threads is not None
    traced_thread = [0]  # the thread that started tracing (when only it is recorded)
    ours: set[int] = set()  # the recorder's own threads (their code is traced code with justMyCode false)
    shared = SharedGlobals(rec, stacks) if every_thread else None

    def on_start(code, offset, *thrown):  # PY_START, PY_RESUME and PY_THROW (an exception thrown in)
        if not every_thread and get_ident() != traced_thread[0]:
            return None
        if every_thread and get_ident() in ours:
            return None
        if thrown and not is_user(code):
            return None  # PY_THROW cannot be DISABLEd (that raises "Cannot disable" in the program)
        return start_invocation(code)

    def start_invocation(code):
        if not is_user(code):
            return DISABLE
        if code not in enabled:
            enabled.add(code)
            mon.set_local_events(tool, code, LOCAL_EVENTS)
        frame = getframe(2)  # 0: here, 1: on_start, 2: the code that started
        stack = stacks.get(get_ident())
        if stack is None:
            if every_thread and is_ours():
                ours.add(get_ident())
                return None
            stack = stacks[get_ident()] = []
        inv = rec.next_invocation
        rec.next_invocation = inv + 1
        diff = rec.make_differ(code.co_name == "<module>")
        entry = [frame, inv, diff, None]
        depth, resumes = len(stack), -1
        if code.co_flags & RESUMABLE:
            resumes, direct = rec.suspensions.started(frame)
            if not direct:
                depth = 0  # run by library code (an event loop): an entry of its own
        library = depth > 0 and rec.called_by_library(frame, stack[-1][0])
        emit(call_event(inv, rec.code_id(code), frame.f_lineno, depth, diff(frame.f_locals), resumes, library))
        stack.append(entry)

    def on_line(code, line):
        stack = stacks.get(get_ident(), no_stack)
        if not stack:
            return
        top = stack[-1]
        frame = getframe(1)
        if top[0] is not frame:
            return  # another thread, or a frame we do not trace
        seen: dict = {}
        if top[3] is None:
            emit(["l", top[1], line, top[2](frame.f_locals, seen), None])
        else:
            emit(["l", top[1], line, top[2](frame.f_locals, seen), rec.reprs.repr(top[3])])
            top[3] = None
        if shared is not None:
            update = shared.changes(frame, seen)
            if update is not None:
                emit(["u", *update])

    def on_jump(code, offset, target):
        line = loop_line(line_tables, code, offset, target, DISABLE)
        if line is DISABLE:
            return DISABLE
        on_line_at(code, line, getframe(1))

    def on_line_at(code, line, frame):
        stack = stacks.get(get_ident(), no_stack)
        if not stack:
            return
        top = stack[-1]
        if top[0] is not frame:
            return
        seen: dict = {}
        emit(["l", top[1], line, top[2](frame.f_locals, seen), None])
        if shared is not None:
            update = shared.changes(frame, seen)
            if update is not None:
                emit(["u", *update])

    def on_return(code, offset, retval):
        stack = stacks.get(get_ident(), no_stack)
        if stack and stack[-1][0] is getframe(1):
            top = stack.pop()
            seen: dict = {}
            own_update(top, seen)
            emit(["r", top[1], top[0].f_lineno, value_repr(retval)])
            module_update(top, seen)
            if code.co_flags & RESUMABLE:
                rec.suspensions.left(top[0], top[1], False)
            update_caller(stack, seen)

    def on_unwind(code, offset, exc):
        stack = stacks.get(get_ident(), no_stack)
        if stack and stack[-1][0] is getframe(1):
            top = stack.pop()
            seen: dict = {}
            own_update(top, seen)
            emit(["x", top[1], top[0].f_lineno, rec.reprs.repr(exc)])
            module_update(top, seen)
            if code.co_flags & RESUMABLE:
                rec.suspensions.left(top[0], top[1], True)
            update_caller(stack, seen)

    def own_update(top, seen):
        # the frame's last statement's effect shows at its return (or exit) event
        changes = top[2](top[0].f_locals, seen)
        if changes:
            emit(["u", top[1], changes])

    def module_update(top, seen):
        # ... in its module's globals too: sent after that event (an update shows from the latest
        # state on, in another thread's frames)
        if shared is not None:
            update = shared.changes(top[0], seen)
            if update is not None:
                emit(["u", *update])

    def update_caller(stack, seen):
        if stack:
            caller = stack[-1]
            changes = caller[2](caller[0].f_locals, seen)
            if changes:
                emit(["u", caller[1], changes])

    def on_handled(code, offset, exc):
        stack = stacks.get(get_ident(), no_stack)
        if stack and stack[-1][0] is getframe(1):
            stack[-1][3] = exc

    def start():
        traced_thread[0] = get_ident()
        if threads is not None:
            threads.begin()
        monitor(mon, tool, on_start, on_line, on_jump, on_return, on_unwind, on_handled)

    def adopt(entries: list, next_invocation: int) -> None:
        """Go on where another engine stops, in this thread (see settrace_engine's `adopt`). The
        snapshots are made before the engine starts: their reprs are the program's code, whose
        calls would be recorded as events of this thread."""
        rec.next_invocation = max(rec.next_invocation, next_invocation)
        snapshots = []
        for frame, inv, cid, depth in entries:
            if frame is None:
                continue
            diff = rec.make_differ(frame.f_code.co_name == "<module>")
            snapshots.append((frame, inv, diff, snapshot_event(inv, cid, frame.f_lineno, depth, diff(frame.f_locals))))
        start_once()  # (the tool is taken first: its local events are set below)
        stack = stacks.setdefault(get_ident(), [])
        for frame, inv, diff, event in snapshots:
            emit(event)
            stack.append([frame, inv, diff, None])
            code = frame.f_code
            if code not in enabled:
                enabled.add(code)
                mon.set_local_events(tool, code, LOCAL_EVENTS)

    def take(frame) -> None:
        """A thread that started before this engine ran, at its first call: the thread's legacy
        trace function, which brought it here, is done. The frame's own start is recorded by the
        engine: sys.monitoring calls the legacy trace function's tool before this one's, so the
        frame's PY_START comes next."""
        sys.settrace(None)
        return None

    started = [False]  # (the tool is this engine's only while it runs: another engine may take it next)

    def start_once() -> None:
        started[0] = True
        start()

    def stop() -> None:
        if started[0]:
            started[0] = False
            unmonitor(mon, tool, enabled)

    def entries() -> list:
        """This thread's traced frames, outermost first (see settrace_engine's `entries`)."""
        code_ids = rec.code_ids
        return [
            (entry[0], entry[1], code_ids.get(id(entry[0].f_code), -1), k)
            for k, entry in enumerate(stacks.get(get_ident(), []))
        ]

    return start_once, stop, adopt, take, lambda: rec.next_invocation, entries


class Engine:
    """What the runner needs of an engine: start and stop; skeleton mode adds skeleton, capture,
    flush and count (see child.skeleton). A Python engine of every thread can also take over a
    running stack (`adopt`) and a frame another thread started (`take`)."""

    def __init__(self, start, stop, adopt=None, take=None, next_invocation=None, entries=None) -> None:
        self.start = start
        self.stop = stop
        self.adopt = adopt
        self.take = take
        # (a switch to every thread: the next engine numbers invocations on and takes these frames)
        if next_invocation is not None:
            self.next_invocation = next_invocation
        if entries is not None:
            self.entries = entries


def c_tracer(rec: Recorder):
    """The C tracer (built with the package when a compiler is there): the settrace engine on 3.11
    as it is, the sys.monitoring one through `CMonitoring`."""
    from neural_dap.trace._ctracer import Tracer

    tracer = Tracer(
        rec.events,
        rec.user_cache,
        rec.judge,
        rec.code_ids,
        rec.code_id,
        rec.encode_atom,
        rec.encode_object,
        rec.value_repr,
        rec.reprs.repr,
        dotted=rec.comprehensions,
    )
    if not hasattr(tracer, "library"):  # an extension built from older source: its records differ
        raise ImportError("the C tracer is out of date: rebuild it (python setup.py build_ext --inplace)")
    tracer.suspensions(rec.suspensions.started, rec.suspensions.left)
    tracer.library(rec.is_library)
    return tracer


class CMonitoring:
    """The C tracer as the sys.monitoring callbacks (3.12+): the same events as `monitoring_engine`
    (and, in skeleton mode, as `MonitoringSkeleton`), without running Python code per event."""

    def __init__(self, rec: Recorder) -> None:
        self.tracer = c_tracer(rec)
        self.is_library = rec.is_library
        self.loop_line = loop_line_rule(rec.as_debugpy)
        self.mon = sys.monitoring  # type: ignore[attr-defined]
        self.tool = free_tool(self.mon)
        self.enabled: set = set()
        self.line_tables: dict = {}
        self.stopped = False
        self.skeleton = self.tracer.skeleton
        self.capture = self.tracer.capture
        self.flush = self.tracer.flush
        self.count = self.tracer.count
        self.entries = self.tracer.entries
        self.invocations = self.tracer.invocations
        self.next_invocation = self.tracer.next_invocation
        # a live recording's stops (child/frontier.py)
        self.live = self.tracer.live
        self.stop_reason = self.tracer.stop_reason
        self.stop_at = self.tracer.stop_at

    def configure(self, tracer) -> None:
        """Make `tracer` one that this tool's callbacks reach: it turns a code's local events on,
        makes its line tables, and tells jumps that are lines (the main thread's tracer, and each
        thread's in a recording of every thread: CThreads)."""
        mon, tool, enabled, line_tables = self.mon, self.tool, self.enabled, self.line_tables
        # CALL too: the tracer tells a function called by the traced frame itself from one library
        # code called without making the callee's frame object (the C tracer's mon_call)
        local_events = LOCAL_EVENTS | mon.events.CALL

        def enable(code) -> None:
            enabled.add(code)
            mon.set_local_events(tool, code, local_events)

        loop_line = self.loop_line

        def jump_line(code, offset, target):
            return loop_line(line_tables, code, offset, target, mon.DISABLE)

        is_library = self.is_library

        def table(code) -> bytes:
            # (no shortcuts in library code a recording of every file traces: reading a code's
            # bytecode for them costs 0.2 ms a code, and a program calls thousands of the library's)
            return line_table(code, shortcuts=not is_library(code))

        tracer.monitoring(mon.DISABLE, enable, jump_line, table)

    def register(self, callbacks) -> None:
        """`callbacks` (a Tracer, or the Threads group) get this tool's events from now on."""
        t = callbacks
        register(self.mon, self.tool, t.on_start, t.on_line, t.on_jump, t.on_return, t.on_unwind, t.on_handled)
        self.mon.register_callback(self.tool, self.mon.events.CALL, t.on_call)

    def start(self) -> None:
        from neural_dap.trace._ctracer import no_shortcuts

        self.configure(self.tracer)
        self.tracer.start()
        self.mon.use_tool_id(self.tool, "neural-dap")
        self.register(self.tracer)
        E = self.mon.events
        self.mon.set_events(self.tool, E.PY_START | E.PY_RESUME | E.PY_THROW | E.PY_UNWIND | E.EXCEPTION_HANDLED)
        self.unwatch = own_tracers.watch(no_shortcuts)  # (the program's own tracer ends the line shortcuts)

    def stop(self) -> None:
        if not self.stopped:  # (the tool is ours only until then: another engine may take it next)
            self.stopped = True
            self.unwatch()
            unmonitor(self.mon, self.tool, self.enabled)
        self.tracer.stop()

    unwatch: Callable[[], None] = staticmethod(lambda: None)


class CThreads:
    """Every thread recorded in full by the C tracer, from where a recording of one thread met a
    second (child/switch.py): the tracer that recorded the main thread goes on in full, its frames
    sent whole first, and every other thread gets a tracer of its own at its first event (the
    `Threads` group in _ctracer.c: one numbering of invocations, a thread record before each run of
    a thread's events). The Python engines of every thread, which remain where the C tracer is not
    built, do the same at several times the cost per event."""

    def __init__(self, rec: Recorder, threads: ThreadTable, main, skeletons: bool = False) -> None:
        """`skeletons`: every thread recorded as skeleton records, in the main tracer's one stream,
        each run of a thread's events after a ["ts", its first index, number] record (its values
        are a replay's to rebuild, under that schedule: `follow`)."""
        from neural_dap.trace._ctracer import Threads

        self.rec = rec
        self.main = main  # CMonitoring (3.12+), or the 3.11 Tracer itself (a settrace function)
        self.monitoring = isinstance(main, CMonitoring)
        self.skeletons = skeletons
        self.group = Threads(self._tracer, threads.mark, self.monitoring, skeletons, threads.number)
        self.table = threads
        self.take = self.group.take
        self.next_invocation = self.group.next_invocation
        self.main_tracer = main.tracer if self.monitoring else main
        self.by_ident: dict[int, object] = {}  # each thread's tracer (a live recording steps one thread)
        self.armed: Callable | None = None  # a live recording: sets a new thread's stops (child/frontier.py)

    def _tracer(self):
        """In a thread's first event: its tracer; None for the recorder's own threads."""
        if is_ours():
            return None
        tracer = c_tracer(self.rec)
        if self.monitoring:
            self.main.configure(tracer)
        self.by_ident[threading.get_ident()] = tracer
        if self.armed is not None:
            self.armed(tracer)
        return tracer

    def tracer_of(self, number: int):
        """The tracer of the thread the table numbers `number`, else None."""
        ident = self.table.idents.get(number)
        return None if ident is None else self.by_ident.get(ident)

    def adopt(self) -> None:
        """In the main thread (right before it starts a thread, or between two bytecodes at a
        signal): its tracer goes on in full, and every thread's
        events reach the group from now on: sys.monitoring's callbacks are the group's (threads
        started from now on need no trace function), or, on 3.11, each thread `threading` starts
        installs its tracer at its first call."""
        self.group.adopt(self.main_tracer)
        self.by_ident[threading.get_ident()] = self.main_tracer
        if self.monitoring:
            self.main.register(self.group)
            threading.settrace(None)  # type: ignore[arg-type]
        else:
            threading.settrace(self.group.take)

    def start(self) -> None:
        """(Started by `adopt`: the tracers run already.)"""

    def stop(self) -> None:
        self.group.stop()
        threading.settrace(None)  # type: ignore[arg-type]
        if self.monitoring:
            self.main.stop()  # (the tool is freed)
        followed, runs, given_up, _why = self.following()
        if runs:  # a replay under a schedule: how far it held (the parent says whether it was followed)
            self.rec.events.append(["followed", followed, runs, given_up])

    def flush(self) -> None:
        """Every thread as skeletons: the one stream's records (else nothing is buffered: every
        event is in the event list)."""
        if self.skeletons:
            self.main_tracer.flush()

    def follow(self, schedule: bytes, patience: float) -> None:
        """A replay: record each event only in a run of its thread's, in the order of `schedule`
        (native int64 pairs: thread number, events in the run); a wait of `patience` seconds while
        the schedule does not move gives it up (`following`)."""
        self.group.follow(schedule, patience)

    def following(self) -> tuple[int, int, bool, str | None]:
        """(runs followed so far, runs in the schedule, whether it was given up, and why)"""
        return self.group.following()

    def gate_locks(self) -> None:
        """The acquiring methods of the program's locks (`_thread.lock`, `_thread.RLock`: what
        `threading`'s locks, conditions, events, semaphores and queues are made of) and
        `_queue.SimpleQueue.get` (a thread pool's work queue) go through the
        group: each call a thread of the program makes is said (["lk", thread, call, lock,
        outcome, order]), or, after `follow_locks`, takes its lock in the recording's order. A thread's
        turn in the schedule says when it runs, not which of two threads gets a lock: the kernel
        decides that, between events."""
        import _queue
        import _thread

        kinds = (type(_thread.allocate_lock()), _thread.RLock, _queue.SimpleQueue)
        # (the types are immutable: their own dicts, under the read-only views Python gives)
        dicts = [gc.get_referents(vars(kind))[0] for kind in kinds]
        self.group.gate_locks(*(value for pair in zip(kinds, dicts, strict=True) for value in pair))

    def follow_locks(self, takes: bytes) -> None:
        """A replay: each lock is taken in the order of `takes` (native int64 quads: thread, its
        call, lock, outcome; `SkeletonLog.locks()`)."""
        self.group.locks(takes)


def every_thread_in_c(rec: Recorder, engine, threads: ThreadTable, skeletons: bool = False) -> CThreads | None:
    """The C tracer of every thread going on from `engine`, where `engine` is the C tracer
    (`skeletons`: as skeleton records, see CThreads)."""
    try:
        from neural_dap.trace._ctracer import Threads, Tracer  # noqa: F401  (an older build has no Threads)
    except ImportError:
        return None
    if isinstance(engine, (CMonitoring, Tracer)):
        return CThreads(rec, threads, engine, skeletons)
    return None


def choose_engine(name: str, rec: Recorder, skeleton: bool = False, threads: ThreadTable | None = None):
    """(name, engine); skeleton mode needs an engine that has it (see child.skeleton).

    "auto" picks the C tracer where it is built (sys.monitoring on 3.12+, settrace on 3.11) and
    the Python engine of the same kind where it is not. A recording of every thread from its start
    (a thread table; full capture) takes the Python engine; one that meets its second thread goes
    on with the C tracer of every thread (`every_thread_in_c`).
    """
    if threads is not None:
        if hasattr(sys, "monitoring"):
            return "monitoring", Engine(*monitoring_engine(rec, threads))
        return "settrace", Engine(*settrace_engine(rec, threads))
    if name in ("auto", "cmonitoring") and hasattr(sys, "monitoring"):
        try:
            return "cmonitoring", CMonitoring(rec)
        except ImportError:
            if name == "cmonitoring":
                raise
    if name == "monitoring" or (name == "auto" and hasattr(sys, "monitoring")):
        if skeleton:
            from neural_dap.trace.child.pyskeleton import MonitoringSkeleton

            return "monitoring", MonitoringSkeleton(rec)
        return "monitoring", Engine(*monitoring_engine(rec))
    if name in ("auto", "ctrace") and sys.version_info[:2] == (3, 11):
        try:
            return "ctrace", c_tracer(rec)
        except ImportError:
            if name == "ctrace":
                raise
    if skeleton:
        from neural_dap.trace.child.pyskeleton import SettraceSkeleton

        return "settrace", SettraceSkeleton(rec)
    return "settrace", Engine(*settrace_engine(rec))
