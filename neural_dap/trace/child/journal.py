"""The journal's controls in the recording child (the library is `trace/_journal.c`, preloaded into
this process by the adapter; see there for what it records and how a replay is answered).

Every process that runs the program's code for the debugger is one of:
  the recording     `record(fd)`: the program runs once, for real; what it receives is journaled
  a replay          `replay(fd)`: a checkpoint's worker, a live copy; answered from the journal, under
                    the seccomp net; nothing it does reaches the world
  a full capture    `live()`: the program runs for real, unjournaled (no replays are made of it)
  a sandboxed run   `sandbox(scratch)`: effects refused but under its scratch folder, reads real
                    (the language server's runs, a failing test run again)
and in each, the debugger's own work runs in a context of its own: `plumbing()` (its pipes, sockets,
clocks and forks: real, never journaled) or `sandboxed()` (code it runs for the user: a repr, a
condition, an expression; reads real, effects refused).

Standard library only. Where the library is not loaded (another platform, a build without it),
`JOURNAL` is None and the recorder records in full, without replays.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterator

PROGRAM, PLUMBING, SANDBOX = 0, 1, 2  # a thread's context
MODE_OFF, MODE_LIVE, MODE_RECORD, MODE_REPLAY, MODE_SANDBOX = 0, 1, 2, 3, 4  # the process's mode
_VERSION = 2  # (2: each entry says its thread)


class Journal:
    def __init__(self, lib: ctypes.PyDLL) -> None:
        self.lib = lib
        lib.nd_journal_divergence.restype = ctypes.c_longlong
        lib.nd_journal_divergence.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        lib.nd_journal_refusals.restype = ctypes.c_ulonglong
        lib.nd_journal_refusals.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        lib.nd_journal_entries.restype = ctypes.c_ulonglong
        lib.nd_journal_bytes.restype = ctypes.c_ulonglong
        lib.nd_journal_flushed.restype = ctypes.c_ulonglong
        lib.nd_journal_replay_limit.argtypes = [ctypes.c_ulonglong]
        lib.nd_journal_checkpoint.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        self._enter = lib.nd_journal_enter
        self._leave = lib.nd_journal_leave

    # -- the process's mode ---------------------------------------------------------------------
    def record(self, fd: int) -> None:
        self.lib.nd_journal_record(fd)

    def replay(self, fd: int) -> None:
        self.lib.nd_journal_replay(fd)

    def live(self) -> None:
        self.lib.nd_journal_live()

    def sandbox(self, scratch: str | None) -> None:
        self.lib.nd_journal_sandbox(scratch.encode() if scratch else None)

    def off(self) -> None:
        self.lib.nd_journal_off()

    def flush(self) -> int:
        """Everything journaled so far into the file; the bytes it holds (whole entries)."""
        self.lib.nd_journal_flush()
        return int(self.lib.nd_journal_flushed())

    def limit(self, bytes_: int) -> None:
        """(a replay) Read no further than `bytes_` of the journal (a live recording's stop wrote them)."""
        self.lib.nd_journal_replay_limit(bytes_)

    def thread(self, number: int) -> None:
        """The calling thread is the program's thread `number` (numbered as the program started
        it): its calls are journaled, and replayed, as the main thread's are."""
        self.lib.nd_journal_thread(number)

    def mode(self) -> int:
        return int(self.lib.nd_journal_mode())

    # -- the calling thread's context ------------------------------------------------------------
    @contextlib.contextmanager
    def plumbing(self) -> Iterator[None]:
        previous = self._enter(PLUMBING)
        try:
            yield
        finally:
            self._leave(previous)

    @contextlib.contextmanager
    def sandboxed(self) -> Iterator[None]:
        previous = self._enter(SANDBOX)
        try:
            yield
        finally:
            self._leave(previous)

    @contextlib.contextmanager
    def as_program(self) -> Iterator[None]:
        previous = self._enter(PROGRAM)
        try:
            yield
        finally:
            self._leave(previous)

    def in_plumbing(self) -> bool:
        """The calling thread runs the recorder's own work (the plumbing context)."""
        return self._context() == PLUMBING

    def in_sandbox(self) -> bool:
        """The calling thread runs code the recorder runs for the user (a repr of a value)."""
        return self._context() == SANDBOX

    def _context(self) -> int:
        previous = self._enter(PLUMBING)
        self._leave(previous)
        return int(previous)

    def enter(self, context: int) -> int:
        """Switch this thread to `context` for good (a thread of the recorder's own, the recorder's
        work after the program ended); returns the previous one."""
        return int(self._enter(context))

    # -- what happened ------------------------------------------------------------------------------
    def divergence(self) -> tuple[int, str] | None:
        """(event count when it happened, -1 unknown; why) where this replay stopped being one."""
        why = ctypes.create_string_buffer(600)
        at = int(self.lib.nd_journal_divergence(why, len(why)))
        if at == -2:
            return None
        return at, why.value.decode("utf-8", "replace")

    def refusals(self) -> tuple[int, str]:
        """How many effects the sandbox refused, and the first of them."""
        first = ctypes.create_string_buffer(300)
        count = int(self.lib.nd_journal_refusals(first, len(first)))
        return count, first.value.decode("utf-8", "replace")

    def clear_refusals(self) -> None:
        self.lib.nd_journal_clear_refusals()

    def size(self) -> tuple[int, int]:
        """(entries, bytes) journaled so far."""
        return int(self.lib.nd_journal_entries()), int(self.lib.nd_journal_bytes())

    # -- checkpoints and replays ----------------------------------------------------------------------
    def checkpoint(self, keep: list[int]) -> None:
        """This process is a checkpoint: it lets go of the program's descriptors (each becomes
        /dev/null; `keep` stay) and of memory it shares with another process."""
        array = (ctypes.c_int * len(keep))(*keep)
        self.lib.nd_journal_checkpoint(array, len(keep))

    def install_net(self) -> bool:
        """The seccomp filter of a replay: what would change the world by a path, a process or an
        address is refused. False where the kernel refuses it."""
        return self.lib.nd_journal_install_net() == 0


def _load() -> Journal | None:
    try:
        lib = ctypes.PyDLL(None)  # (holds the GIL through each call: they are short)
        version = lib.nd_journal_version
    except (OSError, AttributeError):
        return None  # not preloaded: this process records in full
    try:
        if version() != _VERSION:
            return None
    except OSError:
        return None
    return Journal(lib)


JOURNAL: Journal | None = _load()


def reopen_read_only(fd: int) -> int:
    """A read-only descriptor of the journal (a checkpoint's workers must not be able to write it)."""
    try:
        return os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return fd


@contextlib.contextmanager
def plumbing() -> Iterator[None]:
    """The debugger's own work, in any process: real and never journaled."""
    if JOURNAL is None:
        yield
        return
    with JOURNAL.plumbing():
        yield


@contextlib.contextmanager
def sandboxed() -> Iterator[None]:
    """Code the debugger runs for the user: reads real, effects refused."""
    if JOURNAL is None:
        yield
        return
    with JOURNAL.sandboxed():
        yield


@contextlib.contextmanager
def as_program() -> Iterator[None]:
    """The program's own work done from the recorder's (its collections): journaled as the program's."""
    if JOURNAL is None:
        yield
        return
    with JOURNAL.as_program():
        yield


def mark_thread(context: int = PLUMBING) -> None:
    """This thread is the recorder's own (its flusher, a watchdog): never journaled."""
    if JOURNAL is not None:
        JOURNAL.enter(context)
