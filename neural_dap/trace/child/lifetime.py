"""Every process of a recording dies with the adapter: no orphans, whatever ends the adapter.

- the recording child and each worker: the kernel kills it when its parent does (Linux
  PR_SET_PDEATHSIG; the recording child's parent is the adapter, a worker's its checkpoint);
- a checkpoint outlives the recording child (its parent) on purpose, so it watches the adapter
  itself: the *lifeline*, the read end of a pipe whose write end only the adapter holds, reads
  end-of-file the moment the adapter is gone (however it ends, SIGKILL included); the owner's pid is
  polled as well, for a recording started without a lifeline.

Standard library only.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING

from neural_dap.trace.child.dressed import like

if TYPE_CHECKING:
    from neural_dap.trace.child.channel import Channel

_PR_SET_PDEATHSIG = 1


def _load_libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError):
        return None


_LIBC = _load_libc()  # loaded before any fork: a forked child only calls it


def die_with_parent() -> None:
    """SIGKILL this process when the thread that started it ends (Linux). The setting is not
    inherited by forks: each process that needs it asks for it."""
    if _LIBC is None:
        return
    try:
        _LIBC.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (AttributeError, OSError, ValueError):
        pass


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Lifeline:
    """What a checkpoint watches: the adapter's pipe (EOF: gone) and its pid."""

    def __init__(self, fd: int | None, owner: int) -> None:
        self.fd = fd
        self.owner = owner

    def wait(self, fds: list[int], timeout: float) -> list[int] | None:
        """Wait until one of `fds` is readable (those are returned) or `timeout` passes ([]);
        None when the adapter is gone."""
        watched = [*fds, self.fd] if self.fd is not None else list(fds)
        try:
            ready, _, _ = select.select(watched, [], [], timeout)
        except InterruptedError:
            ready = []
        except (OSError, ValueError):
            return None
        if (self.fd is not None and self.fd in ready) or not alive(self.owner):
            return None
        return ready

    def wait_for_child(self, pid: int) -> bool:
        """Reap child `pid`; False (the child killed) when the adapter goes first."""
        pidfd = None
        if hasattr(os, "pidfd_open"):
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                pidfd = None
        try:
            while True:
                if self.wait([pidfd] if pidfd is not None else [], 1.0 if pidfd is not None else 0.02) is None:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    return False
                try:
                    done, _ = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    return True
                if done:
                    return True
        finally:
            if pidfd is not None:
                os.close(pidfd)


_FORK = os.fork  # the real one: the debuggee's process limit wraps os.fork later
OWN_FORK = [False]  # True while we fork a checkpoint, a worker or a live stop (not the debuggee: see runner)
# the real one, for our own at-fork functions: they run at our forks too (see hide_our_forks)
register_at_fork_of_ours = os.register_at_fork


def hide_our_forks() -> None:
    """The at-fork functions the program registers from now on (os.register_at_fork) run at its own
    forks only, never at ours: a checkpoint, a replay's worker or a live stop's copy is the program
    as it was at that moment, not a child it made. logging's resets every handler's lock in a
    child: a checkpoint taken inside a handler (its lock held) replayed with the lock free, the
    handler's release raised, and the replay diverged (a breakpoint in `emit` could not be left);
    a live stop's copy showed the lock free. The interpreter's own (threading's, registered before
    the program starts) still run: a fork needs them."""

    def register_at_fork(**functions):
        return register_at_fork_of_ours(**{when: _not_at_ours(f) for when, f in functions.items()})

    register_at_fork.__doc__ = register_at_fork_of_ours.__doc__
    os.register_at_fork = like(register_at_fork_of_ours, register_at_fork)


def _not_at_ours(function):
    if not callable(function):
        return function  # (os.register_at_fork says what is wrong with it)

    def at_fork() -> None:
        if not OWN_FORK[0]:
            function()

    return at_fork


def fork_ours() -> int:
    """Fork a checkpoint, a worker or a live stop: the at-fork hook that stops tracing in the
    debuggee's own children (and makes them die with their parent) must leave these alone, and the
    journal keeps the copy's place in the recording (a fork of the program's own is not recorded)."""
    from neural_dap.trace.child.journal import plumbing

    # the random module reseeds itself in every fork (os.register_at_fork): a copy of the program
    # must go on with the numbers the program would have drawn
    generator = getattr(sys.modules.get("random"), "_inst", None)
    state = generator.getstate() if generator is not None else None
    OWN_FORK[0] = True
    try:
        with plumbing():
            pid = _FORK()
    finally:
        OWN_FORK[0] = False
    if pid == 0 and state is not None:
        generator.setstate(state)  # type: ignore[union-attr]
    return pid


# -- a recording process ended by a signal: what it recorded is handed over first -----------------
def keep_events_when_terminated(channel: Channel, finished=lambda sent: None) -> None:
    """A child process is often ended with SIGTERM (a multiprocessing pool's workers are): hand over
    what it recorded, then die of the signal as it would have (its parent sees the same status)."""
    owner = os.getpid()

    began = threading.Event()

    def on_term(signum, _frame) -> None:
        began.set()
        if os.getpid() == owner:  # (a fork of this process inherits the handler, not the channel)
            if channel.finishing and channel.finishing_thread == threading.get_ident():
                # it came in the middle of this thread's own finish(): let that complete, then die
                # (its locks are not reentrant; ending here would lose what it was writing)
                channel.pending_signal = signum
                return
            if channel.finishing:  # another thread's finish (the flusher's, at a limit): let it end
                deadline = time.monotonic() + 1.0
                while not channel.closed and time.monotonic() < deadline:
                    time.sleep(0.005)
            elif channel.lock.acquire(timeout=1.0):  # the flusher writing a batch is waited for
                channel.lock.release()
                channel.finish("terminated", "SIGTERM (a pool ends its workers so)")
                finished(channel.sent)
        die_of(signum)

    on_term.neural_dap = True  # type: ignore[attr-defined]  # (a fork's own recording replaces it)
    try:
        current = signal.getsignal(signal.SIGTERM)
        if current is signal.SIG_DFL or getattr(current, "neural_dap", False):
            signal.signal(signal.SIGTERM, on_term)
            channel.on_watch = _wake_for_sigterm(began)
    except (OSError, ValueError):
        pass


def _wake_for_sigterm(began: threading.Event):
    """A Python signal handler runs only when the main thread runs bytecode. A SIGTERM that comes
    just before the main thread blocks (a pool worker going back to wait on its task queue's
    semaphore, as the pool terminates it) is handled by the C handler and then waits forever; the
    pool waits for the worker forever (a launch that never answered, once in 10 to 38). The C handler
    also writes the signal's number to the wake-up descriptor: the flusher thread reads it at its
    next tick and, if `on_term` has not begun 50 ms later, sends SIGTERM to the main thread itself,
    which interrupts its blocking call (EINTR) so that the handler runs. Returns the tick, or None
    where the process has a wake-up descriptor already (asyncio's) or this is not the main thread."""
    from neural_dap.trace.child.journal import plumbing

    main = threading.get_ident()
    with plumbing():  # (the recorder's own descriptors: never journaled as the program's)
        read_end, write_end = os.pipe()
        for fd in (read_end, write_end):
            os.set_blocking(fd, False)
            os.set_inheritable(fd, False)
        try:
            previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        except ValueError:  # not the main thread
            previous = write_end
        if previous != -1:
            if previous != write_end:
                signal.set_wakeup_fd(previous)
            os.close(read_end)
            os.close(write_end)
            return None
    owner = os.getpid()

    def not_in_forks() -> None:  # a fork's signals must not read as this process's
        if os.getpid() != owner:
            try:
                previous = signal.set_wakeup_fd(-1)
                if previous not in (-1, write_end):
                    signal.set_wakeup_fd(previous)  # (not ours: put it back)
            except ValueError:
                pass

    register_at_fork_of_ours(after_in_child=not_in_forks)
    seen_at: list[float] = []

    def tick() -> None:
        if not seen_at:
            try:
                numbers = os.read(read_end, 512)
            except OSError:  # (nothing came: BlockingIOError)
                return
            if signal.SIGTERM not in numbers:
                return
            seen_at.append(time.monotonic())
        if not began.is_set() and time.monotonic() - seen_at[0] > 0.05:
            signal.pthread_kill(main, signal.SIGTERM)

    return tick


def die_of(signum: int) -> None:
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def die_if_signalled(channel: Channel) -> None:
    """After finish(): a signal that came during it ends the process now, as it would have."""
    if channel.pending_signal is not None:
        die_of(channel.pending_signal)
