"""A second thread runs the program's code: the recording goes on, in the same process, with every
thread recorded in full. Nothing runs twice.

The fast recording (the skeleton, the C tracer) follows one thread, and its replays cannot bring
others back (a fork copies only the calling thread). When another thread first calls the user's
code, that thread waits while the main thread, between two of its bytecodes (a real-time signal;
a main thread blocked in a join wakes for it), switches engines:

  - the skeleton's records so far are handed over: events 0..K-1 stay replayable from their
    checkpoints (no checkpoint is taken after K, and the journal stops there);
  - ["switch", K] goes to the parent, then every event from K on in full, each thread's events
    after a thread record (child/threads.py), as a full recording has them;
  - a Python engine of every thread takes over the main thread's traced frames (a snapshot of each,
    then its lines and exits) and the waiting thread's first call.

The parent rebuilds the states before K from the checkpoints and joins them to what follows
(trace/threaded.py). Standard library only.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

SWITCH_SECONDS = 5.0  # how long a second thread waits for the main thread to switch engines


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

    @property
    def switched(self) -> bool:
        return self.take is not None

    def request(self, who: str) -> Callable | None:
        """From the second thread: have the main thread switch, wait for it; the new engine's
        `take`, or None when the main thread did not switch in time (stuck in C code)."""
        with self.lock:
            first = not self.requested
            self.requested = True
        if first and self.signal_number is not None:
            try:
                signal.pthread_kill(self.main_thread, self.signal_number)
            except (OSError, ValueError):
                pass
        if not self.done.wait(SWITCH_SECONDS):
            self.failed = f"thread {who!r} ran the program's code while the main thread did not reach Python code"
            return None
        return self.take

    def due(self) -> bool:
        """In the main thread's signal handler: a switch is asked for and not made yet."""
        return self.requested and not self.done.is_set()

    def run(self) -> None:
        """In the main thread, between bytecodes: switch, and let the waiting threads go."""
        try:
            if self.perform is not None:
                self.take = self.perform()
        except Exception as exc:  # (never the program's: it must not see the recorder's failure)
            self.failed = f"the recording could not go on with every thread ({type(exc).__name__}: {exc})"
        finally:
            self.done.set()
