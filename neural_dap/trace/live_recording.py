"""The adapter's side of a live recording (debug while it runs; the child's side is
child/frontier.py): the program runs under the recorder while the session debugs it, and stops where
the session asks. This is the channel to it: the records as they arrive (the recorder's collector
feeds them in from its own thread), each stop the program makes, and the commands that make it run
on, stop at other lines, pause, or end.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from typing import Any

# the child's (child/frontier.py): the program stops at its next event
PAUSE_SIGNAL = signal.SIGRTMIN + 4 if hasattr(signal, "SIGRTMIN") else None


class LiveStop(tuple):
    """(count of events recorded, why, the stop's event captured in full)."""


class LiveControl:
    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.log: Any = None  # the SkeletonLog the recorder feeds (set when the child starts)
        self.pid: int | None = None
        self.finished = False  # the recording is over (the program ended, or the session ended it)
        self.result: Any = None  # the finished SkeletonRecording, or the exception that ended it
        self.taken = 0  # stops the session has taken
        self.command_read, self.command_write = os.pipe()
        os.set_inheritable(self.command_write, False)
        self.breakpoints_sent = 0  # the number of the latest breakpoints sent while it runs

    # -- the recorder's side (its collector thread) --------------------------------------------------
    def started(self, pid: int, log: Any) -> None:
        with self.changed:
            self.pid, self.log = pid, log
            self.changed.notify_all()

    def fed(self) -> None:
        with self.changed:
            self.changed.notify_all()

    def done(self, result: Any) -> None:
        with self.changed:
            self.finished, self.result = True, result
            self.changed.notify_all()
        self._close_write()

    # -- the session's side ----------------------------------------------------------------------
    def next_stop(self, timeout: float | None = None) -> tuple[int, str, list] | None:
        """The program's next stop: (events recorded, reason, its event in full); None when the
        recording ended first (or `timeout` passed)."""
        with self.changed:
            while True:
                log = self.log
                if log is not None and len(log.stops) > self.taken:
                    stop = log.stops[self.taken]
                    self.taken += 1
                    log.sync()
                    return stop
                if self.finished or (log is not None and log.live_refused):
                    return None
                if not self.changed.wait(timeout):
                    return None

    def run(
        self,
        *,
        at: int = -1,
        within: int = -1,
        exit_inv: int = -1,
        exceptions: bool = False,
        breakpoints: dict[str, list] | None = None,
        resumes: int = -1,
        thread: int | None = None,
        uncaught: bool = False,
    ) -> None:
        """Let the held program run on until the next of these (-1: not by that): event `at`, the
        next line or exit of invocation `within` or of one it runs under, the exit of `exit_inv`, an
        exception, a breakpoint line (a line, or [line, hits to run past before stopping there]),
        the resume of paused generator or coroutine invocation `resumes`. Once every thread is
        recorded, `thread` names the stepping thread: `at` (any number) is then its next event,
        and `within` and `exit_inv` are invocations on its stack; `uncaught`: stop where an exception
        ends a thread (the "uncaught" filter: it does not end the program)."""
        run: dict = {
            "at": at,
            "within": within,
            "exit": exit_inv,
            "exceptions": exceptions,
            "breakpoints": breakpoints or {},
            "resumes": resumes,
        }
        if thread is not None:
            run["thread"] = thread
        if uncaught:
            run["uncaught"] = True
        self._send({"run": run})

    def set_breakpoints(self, breakpoints: dict[str, list[int]]) -> None:
        """While it runs: the lines it stops at from now on (`breakpoints_taken` waits until they
        hold: the program reads them in a thread of the recorder's, which waits for the GIL)."""
        self.breakpoints_sent += 1
        self._send({"breakpoints": breakpoints, "number": self.breakpoints_sent})

    def breakpoints_taken(self, timeout: float) -> bool:
        """Whether the running program took the breakpoints sent last (within `timeout` seconds:
        a program busy in C code takes them at its next event; False then, or once it ended)."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                log = self.log
                if log is not None and log.breakpoints_applied >= self.breakpoints_sent:
                    return True
                left = deadline - time.monotonic()
                if self.finished or left <= 0:
                    return False
                self.changed.wait(left)

    def pause(self) -> bool:
        if self.pid is None or PAUSE_SIGNAL is None or self.finished:
            return False
        try:
            os.kill(self.pid, PAUSE_SIGNAL)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def end(self) -> None:
        """The session is over: the program stops here (the recorder ends what it started)."""
        self._send({"end": True})
        self._close_write()

    def _send(self, command: dict) -> None:
        if self.command_write < 0:
            return
        data = json.dumps(command).encode() + b"\n"
        try:
            os.write(self.command_write, data)
        except OSError:
            pass

    def _close_write(self) -> None:
        if self.command_write >= 0:
            try:
                os.close(self.command_write)
            except OSError:
                pass
            self.command_write = -1
