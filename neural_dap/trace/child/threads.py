"""The program's threads, as the recording child sees them. Standard library only.

Two jobs:
- `ThreadTable` (a recording of every thread): numbers the threads in the order they first run
  traced code (0 is the thread that started the program) and puts a ["t", number, name] record
  before the first event of each run of events of one thread, so the parent knows whose events
  follow. Events are appended under the GIL, one at a time, so the order they arrive in is the
  order they happened in.
- `watch_for_threads` (a recording of one thread, the fast default): the C tracer and the skeleton
  follow only the thread that started the program, and a replay from a fork checkpoint cannot
  bring threads back (a fork copies only the calling thread). So the first time another thread
  runs the user's code, the recording switches, in place, to recording every thread in full
  (child/switch.py): the main thread switches right before `threading` starts the first other
  thread, else (a thread started by `_thread` itself) at that thread's first call; where the main
  thread cannot switch (stuck in C code), the recording ends there with the outcome "threads",
  keeping what it has (the program is never run again).
"""

from __future__ import annotations

import _thread
import functools
import os
import sys
import threading
from _thread import get_ident
from collections.abc import Callable
from typing import Any

from neural_dap.trace.child.dressed import like
from neural_dap.trace.child.switch import ThreadSwitch

THREADS_OUTCOME = "threads"
OWN_THREADS = "neural-dap"  # the prefix of the names of the recorder's own threads (the flusher, ...)


def is_ours() -> bool:
    """The running thread is one of the recorder's own: never the program's, whatever code it runs
    (with justMyCode false the standard library it calls is traced code). Ours started before the
    program: they are registered (no dummy Thread is made for one still starting up)."""
    thread = threading._active.get(get_ident())  # type: ignore[attr-defined]
    return thread is not None and thread.name.startswith(OWN_THREADS)


class ThreadTable:
    def __init__(self, append: Callable[[object], None]) -> None:
        self._append = append
        # a thread's number lives in its thread-local storage: an ident is reused as soon as its thread
        # ends, thread-local storage is not (and reading it never makes a dummy Thread, as
        # threading.current_thread() would in a thread still starting up)
        self._local = _thread._local()
        self._named: set[int] = set()  # numbers sent with their thread's name
        self._count = 0
        self.idents: dict[int, int] = {}  # number -> the ident of its thread (a live recording's steps)
        self._current = -1
        self._unnamed = False  # the current thread's name is not known yet: look again at each event
        # called in each thread `numbered` started, with its number, before it runs (the journal
        # follows each such thread's calls: child/journal.py `thread`)
        self.started: Callable[[int], None] | None = None
        self.begin()

    def emitter(self) -> Callable[[object], None]:
        """`append` for events: each run of one thread's events starts with its thread record."""
        append = self._append

        def emit(event: object) -> None:
            ident = get_ident()
            if ident != self._current or self._unnamed:
                switched = ident != self._current
                self._current = ident
                record = self._record(ident, switched)
                if record is not None:
                    append(record)
            append(event)

        return emit

    def mark(self, switched: bool) -> tuple[list | None, bool]:
        """For the C tracer of every thread (engines.CThreads), before an event of the calling
        thread: the record to send first (`switched`: another thread's events came last), or None;
        and whether its name is still unknown (then it asks again at the thread's next event)."""
        record = self._record(get_ident(), switched)
        return record, self._unnamed

    def _record(self, ident: int, switched: bool = True) -> list | None:
        """The record to send before this thread's event: its number (a switch), with its name the
        first time it is known; None when there is nothing new."""
        number = getattr(self._local, "number", None)
        if number is None:
            number = self._local.number = self._count
            self._count += 1
            self.idents[number] = ident
        self._unnamed = False
        if number in self._named:
            return ["t", number] if switched else None
        # a thread still starting up (its bootstrap is traced code with justMyCode false) has no
        # Thread object yet: its name follows with a later record
        thread = threading._active.get(ident)  # type: ignore[attr-defined]
        if thread is None:
            self._unnamed = True
            return ["t", number, f"Thread-{number}"] if switched else None
        self._named.add(number)
        return ["t", number, thread.name]

    def number(self) -> int | None:
        """The calling thread's number (None: it has run no traced code yet, and was not numbered
        as it started)."""
        return getattr(self._local, "number", None)

    def numbered(self, function: Callable) -> Callable:
        """`function`, about to start a thread, numbered now, in the order threads are *started*
        (the next number, taken by the starting thread): a replay under the recorded schedule
        starts them in the same order, where the order they first run traced code in is a race
        between them (child/threads.py `_switch_before_start`)."""
        number = self._count
        self._count += 1

        started = self.started

        def run(*args, **kwargs):
            self._local.number = number
            self.idents[number] = get_ident()
            if started is not None:
                started(number)
            return function(*args, **kwargs)

        return run

    def begin(self) -> None:
        """The program starts in this thread: thread 0, whose events need no record before them."""
        self._record(get_ident())
        self._current = get_ident()


def watch_for_threads(switch: ThreadSwitch, end: Callable[[str, str], object]) -> Callable[[], None]:
    """Until the returned function is called: the first thread `threading` starts has the
    recording switch to every thread (`switch`); its first call, and every other thread's, then go
    to the new engine. Only in the process that was started to record: a replay (a worker forked
    from a checkpoint) follows the recording it replays, and a process the program forked is not
    recorded at all."""
    recording_pid = os.getpid()
    ended = [False]

    def first_call(frame, event, arg):
        if event != "call" or os.getpid() != recording_pid or is_ours():
            return None
        # any thread of the program's, even one that runs library code only (a pool's handler): a
        # replay cannot bring it back, and the main thread may wait on it, so nothing after it is
        # replayed; the recording of every thread goes on from here
        take = switch.take if switch.switched else switch.request(_thread_name())
        if take is None:
            if not ended[0]:
                ended[0] = True
                end(THREADS_OUTCOME, switch.failed or "another thread ran the program's code")
            threading.Event().wait()  # this thread must not run on while the recording ends (it never wakes)
            return None
        return take(frame)

    threading.settrace(first_call)
    unwrap = _switch_before_start(switch, recording_pid)

    def stop() -> None:
        unwrap()
        if threading.gettrace() is first_call:  # type: ignore[attr-defined]
            threading.settrace(None)  # type: ignore[arg-type]

    return stop


def _switch_before_start(switch: ThreadSwitch, recording_pid: int) -> Callable[[], None]:
    """Wrap the function `threading` starts an OS thread with (3.11, 3.12: `_start_new_thread`;
    3.13: `_start_joinable_thread`): where the main thread starts the program's first other thread,
    the recording switches to every thread right before it exists (`ThreadSwitch.here`). Returns
    what puts the original back."""
    name = next((n for n in ("_start_joinable_thread", "_start_new_thread") if hasattr(threading, n)), None)
    if name is None:
        return lambda: None
    original = getattr(threading, name)
    main = get_ident()

    def start(function, *args, **kwargs):
        ours = _ours(getattr(function, "__self__", None))
        if not switch.begun and get_ident() == main and os.getpid() == recording_pid and not ours:
            switch.here()
        if switch.numbered is not None and not ours:
            function = switch.numbered(function)  # (every thread as skeletons: numbered as started)
        return original(function, *args, **kwargs)

    dressed = like(original, start)
    setattr(threading, name, dressed)

    def unwrap() -> None:
        if getattr(threading, name) is dressed:
            setattr(threading, name, original)

    return unwrap


def _ours(thread: object) -> bool:
    """The thread about to start is one of the recorder's own (named so before it starts)."""
    name = getattr(thread, "name", None) if isinstance(thread, threading.Thread) else None
    return isinstance(name, str) and name.startswith(OWN_THREADS)


def _thread_name() -> str:
    thread = threading._active.get(get_ident())  # type: ignore[attr-defined]
    return thread.name if thread is not None else f"thread {get_ident()}"


def wait_for_threads() -> None:
    """What the interpreter does when the main module ends: run the atexit work `threading`
    registered (a thread pool's shutdown) and join every non-daemon thread, so the program's
    threads run to their end (and are recorded) as they would without us."""
    module = sys.modules.get("threading")
    shutdown = getattr(module, "_shutdown", None)
    if shutdown is None:
        return
    try:
        shutdown()
    except Exception:  # a thread's atexit work raised: the interpreter prints it and exits too
        pass


def quiet_thread_reprs(by_the_recorder: Callable[[], bool]) -> None:
    """On 3.11 and 3.12 a `Thread`'s repr asks `is_alive()`, which, for a thread that has ended,
    takes and releases the thread's state lock and marks the thread stopped. The recorder's reprs
    of the program's values (`by_the_recorder()`: a replay's capture, a list of threads in a server's
    attributes) then changed the program they show: the program's next `is_alive()` of that thread
    took no lock, where the recording's had (a replay of threads gave its order up), and a thread's
    `_stop` at exit found its lock gone. Made there, the repr says the same, looking at the lock
    only. (3.13's `is_alive` looks at a handle and changes nothing.)"""
    if sys.version_info >= (3, 13):
        return
    original = threading.Thread.__repr__

    @functools.wraps(original)
    def __repr__(self):
        return _thread_text(self) if by_the_recorder() else original(self)

    threading.Thread.__repr__ = __repr__  # type: ignore[method-assign]


def _thread_text(thread: Any) -> str:  # (a threading.Thread: its private attributes, untyped)
    """`Thread.__repr__`'s text on 3.11 and 3.12, without calling `is_alive()`."""
    lock = thread._tstate_lock
    status = "started" if thread._started.is_set() else "initial"
    if thread._is_stopped or (lock is not None and not lock.locked()):
        status = "stopped"
    if thread._daemonic:
        status += " daemon"
    if thread._ident is not None:
        status += f" {thread._ident}"
    return f"<{type(thread).__name__}({thread._name}, {status})>"
