"""A second thread runs the program's code: the recording goes on, in the same process, with every
thread recorded in full. Nothing runs twice.

The fast recording (the skeleton, the C tracer) follows one thread, and its replays cannot bring
others back (a fork copies only the calling thread). When the main thread starts the program's
first other thread through `threading`, it switches engines right before (`here`); when another
thread first calls the user's code otherwise (one started by `_thread` itself), that thread waits
while the main thread, between two of its bytecodes (a real-time signal; a main thread blocked in a
join wakes for it), switches engines:

  - the skeleton's records so far are handed over: events 0..K-1 stay replayable from their
    checkpoints (no checkpoint is taken after K, and the journal stops there);
  - ["switch", K] goes to the parent, then every event from K on in full, each thread's events
    after a thread record (child/threads.py), as a full recording has them;
  - the C tracer goes on in full with a tracer per thread (engines.CThreads), the main thread's
    frames sent whole first; where the C tracer is not built, a Python engine of every thread takes
    over the main thread's traced frames (a snapshot of each, then its lines and exits); either
    way the waiting thread's first call comes through `take`.

The parent rebuilds the states before K from the checkpoints and joins them to what follows
(trace/threaded.py). Standard library only.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable

SWITCH_SECONDS = 5.0  # how long a second thread waits for the main thread to switch engines
POKE_SECONDS = 0.05  # how often it signals the main thread again meanwhile
LATE_POKE_SECONDS = 0.25  # a signal this soon after the switch is one of its copies, not a pause


class ThreadSwitch:
    def __init__(self, main_thread: int, signal_number: int | None) -> None:
        self.main_thread = main_thread
        self.signal_number = signal_number
        self.lock = threading.Lock()
        self.requested = False
        self.done = threading.Event()
        self.take: Callable | None = None  # the new engine's: start a frame another thread began
        self.perform: Callable[[], Callable | None] | None = None  # set by the runner: switch, return `take`
        self.failed = ""
        self.begun = False  # the main thread's handler is switching: no more signals are sent
        self.finished_at: float | None = None
        # set by the runner: quiet(True) has the main thread's tracer see nothing until quiet(False)
        # (the switch's own Python code, `here`'s: the library it calls is traced code with
        # justMyCode false); None where the engine cannot (the Python ones)
        self.quiet: Callable[[bool], None] | None = None
        # set by the runner where every thread is recorded as skeletons: numbers a thread about to
        # start (ThreadTable.numbered), so a replay under the recorded schedule knows each thread
        self.numbered: Callable[[Callable], Callable] | None = None

    @property
    def switched(self) -> bool:
        return self.take is not None

    def request(self, who: str) -> Callable | None:
        """From the second thread: have the main thread switch, wait for it; the new engine's
        `take`, or None when the main thread did not switch in time (stuck in C code)."""
        with self.lock:
            first = not self.requested
            self.requested = True
        deadline = time.monotonic() + SWITCH_SECONDS
        while True:
            if first and not self.begun:
                self._signal_main()
            left = deadline - time.monotonic()
            if self.done.wait(min(POKE_SECONDS, left) if first else left):
                return self.take
            if time.monotonic() >= deadline:
                self.failed = f"thread {who!r} ran the program's code while the main thread did not reach Python code"
                return None

    def _signal_main(self) -> None:
        """The signal is sent again until the main thread switches: its Python handler runs only
        when the main thread runs bytecode, and one that came just before the main thread blocked
        (a join's lock) would wait until it wakes; a signal sent while it is blocked interrupts the
        call (EINTR), and the handler runs (again, harmlessly: `due` says whether to switch)."""
        if self.signal_number is None:
            return
        try:
            signal.pthread_kill(self.main_thread, self.signal_number)
        except (OSError, ValueError):
            pass

    def due(self) -> bool:
        """In the main thread's signal handler: a switch is asked for and not begun yet (a copy of
        the request can run the handler again inside the switch: it must not switch twice)."""
        return self.requested and not self.begun

    def late_poke(self) -> bool:
        """In the main thread's signal handler, once the switch has begun: the signal is a copy of
        the request (not a pause, which would end the recording)."""
        return self.begun and (self.finished_at is None or time.monotonic() - self.finished_at < LATE_POKE_SECONDS)

    def here(self) -> None:
        """From the main thread, about to start the program's first other thread (threads.py wraps
        `threading`'s start): switch now, synchronously, before that thread exists. So the
        recording's single-threaded prefix ends before anything the new thread could race with
        (the main thread's wait for it to start, recorded when the library is traced, would replay
        otherwise), and no signal is needed."""
        with self.lock:
            self.requested = True
        quiet = self.quiet
        if quiet is not None:
            quiet(True)
        try:
            self.run()
        finally:
            if quiet is not None:
                quiet(False)

    def run(self) -> None:
        """In the main thread, between bytecodes: switch, and let the waiting threads go. Once:
        a copy of the request may run the handler again before this line (no bytecode between the
        test and the set lets a signal handler in)."""
        if self.begun:
            return
        self.begun = True
        try:
            if self.perform is not None:
                self.take = self.perform()
        except Exception as exc:  # (never the program's: it must not see the recorder's failure)
            self.failed = f"the recording could not go on with every thread ({type(exc).__name__}: {exc})"
        finally:
            self.finished_at = time.monotonic()
            self.done.set()
