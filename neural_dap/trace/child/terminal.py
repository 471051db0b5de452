"""The recording child's side of a terminal console (launch `"console": "integratedTerminal"`).

The adapter feeds what the user types into a FIFO (the program's fd 0) and appends the very same
bytes to a log file, both while it holds an exclusive `flock` on the log (trace/typed_input.py). So
while this side holds a shared lock, the log's size is everything ever put into the pipe, and what
the program has read of it is that size less what still waits in the pipe (FIONREAD). A checkpoint
keeps that offset; its replays read the log from there, so they see exactly the bytes the
recording read (skeleton.Skeleton._own_stdin), though nobody types them again.

What the program writes is copied, as it writes it, to a second FIFO the adapter forwards to the
terminal: the user sees a prompt before input() waits for an answer.

Standard library only (the recording child runs under any interpreter).
"""

from __future__ import annotations

import array
import os


def typed_offset(log_path: str) -> int:
    """How many bytes of the typed-input log the program has read from its fd 0 so far."""
    import fcntl
    import termios

    fd = os.open(log_path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # the adapter writes pipe and log as one step, under LOCK_EX
        size = os.fstat(fd).st_size
        waiting = array.array("i", [0])
        try:
            fcntl.ioctl(0, termios.FIONREAD, waiting, True)
        except OSError:
            waiting[0] = 0
        return max(0, size - waiting[0])
    finally:
        os.close(fd)  # releases the lock


class OutputCopy:
    """The program's output, copied to the terminal as it is written (best effort: a terminal that
    went away must not end the recording)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def open(cls, path: str | None) -> OutputCopy | None:
        if not path:
            return None
        try:  # the adapter holds the FIFO open for reading, so this does not wait
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.set_blocking(fd, True)  # a slow terminal slows the program, as a real one would
        except OSError:
            return None
        return cls(fd)

    def write(self, text: str) -> None:
        self.write_bytes(text.encode("utf-8", "replace"))

    def write_bytes(self, data: bytes | memoryview) -> None:
        if self.fd < 0:
            return
        data = memoryview(data)
        try:
            while data:
                data = data[os.write(self.fd, data) :]
        except OSError:
            self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
