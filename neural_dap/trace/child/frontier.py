"""Debug while it runs: the frontier of a live recording, where the running program stops for the
adapter (UDB's model: stop the live program, travel back over everything recorded so far, go on).

The program runs under the skeleton recorder as in any recording. The C tracer stops it where the
adapter asked (`Tracer.live`: an event number, a breakpoint line, a place on the stack, an
invocation's exit, an exception): the event is captured in full as it is recorded (a window of one
event, with the frames already on the stack), then the recorder's hook calls `stop`, which
  - takes a checkpoint right there (every earlier moment replays from the checkpoints, as in any
    recording; the adapter's `evaluate` runs in a copy of this one),
  - hands over everything recorded so far: the records, the captured event, the program's output,
    the journal,
  - says ["stopped", count, reason], and holds the program until the adapter's next command.

Commands come on a pipe of their own, one JSON object a line, read by a thread of the recorder's:
  {"run": {"at": N, "within": INV, "exit": INV, "exceptions": bool, "breakpoints": {path: [lines]},
           "resumes": INV}}
        go on until the next of those (-1: not by that): event N, the next line or exit of invocation
        INV or of one under which it runs (`within`: where a step over lands), the exit of INV, an
        exception, a breakpoint line (a line is a number, or [number, skip]: run past its next
        `skip` hits, which a hit condition rules out), the start of the run that resumes paused
        invocation INV (a step over an `await`); held: the program resumes
  {"breakpoints": {path: [lines]}}   while it runs: the lines to stop at from now on
  {"end": true}                      end the recording here (the adapter ends what is left)
Once a second thread runs, every thread is recorded in full by a C tracer of its own (child/switch.py,
the `Threads` group of _ctracer.c), and the program goes on stopping for the adapter (`threaded`):
every thread stops at the breakpoint lines and exceptions, a step's predicates are set on the
stepping thread's tracer (a run command names it: "thread"; "at" is then its next event, "within"
and "exit" invocations on its stack), the thread that stops sends ["stopped", -1, reason, its
number] once its event is recorded, and every other thread waits at its next event until the
adapter tells the stopped one to go on (a thread blocked in C code runs on until it returns to
Python code, as with debugpy). No checkpoint is taken there (a fork copies one thread): the adapter
joins the recording so far into one full recording and answers from it.
A pause is the real-time signal PAUSE_SIGNAL, handled in the main thread between two bytecodes of
whatever it runs (library code too; a call blocked in C code stops when it returns, as with
debugpy): the program stops right there, shown at its latest event in the user's code (the library
frames above it are not recorded). Standard library only.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import select
import signal
import socket
import sys
import threading
from typing import Any

from neural_dap.trace.child import live
from neural_dap.trace.child.journal import mark_thread, plumbing, sandboxed
from neural_dap.trace.child.lifetime import die_with_parent, fork_ours
from neural_dap.trace.child.returned import ForeignReturns
from neural_dap.trace.child.skeleton import silence_output
from neural_dap.trace.child.threads import OWN_THREADS

PAUSE_SIGNAL = signal.SIGRTMIN + 4 if hasattr(signal, "SIGRTMIN") else None
IDLE_NUMBERS = 10_000  # the numbers of threads that have run none of the user's code (see `_idle`)
REASONS = {1: "step", 2: "breakpoint", 3: "step", 4: "exception"}  # Tracer's STOP_* (and pause: "pause")


class Frontier:
    def __init__(self, command_fd: int, tracer, skeleton, channel) -> None:
        self.command_fd = command_fd
        self.tracer = tracer
        self.skeleton = skeleton
        self.channel = channel
        self.commands: queue.Queue[dict] = queue.Queue()
        self.paused = False  # the next stop is a pause
        self.holding = False  # the program is held at a stop
        self.ending = False  # the adapter said "end": a hold that goes on anyway pauses again
        self.stops = 0
        # every thread recorded in full (`threaded`): their tracers (engines.CThreads), the stepping
        # thread's tracer and its predicates (at, depth, exit, resumes), and where the held threads wait
        self.cthreads: Any = None
        self.step: tuple[Any, tuple[int, int, int, int]] | None = None
        self.released = threading.Condition()
        self.uncaught = False  # (every thread in full) stop where an exception ends a thread
        self.copy: int | None = None  # ... and the copy of the program held at the stop (its pid)
        self._idle_numbers: dict[int, tuple[object, int]] = {}  # ident -> (its Thread, its number)
        # what the library's functions return into the user's frames while a step runs (runner sets it)
        self.returns: ForeignReturns | None = None
        self.recorder: Any = None  # (runner sets it) its encodings of values: `_module_globals`

    def start(self) -> None:
        """The command reader, and the pause signal; the program stops at its first event."""
        threading.Thread(target=self._read_commands, name="neural-dap-commands", daemon=True).start()
        if PAUSE_SIGNAL is not None:
            signal.signal(PAUSE_SIGNAL, self._on_pause)
        self.tracer.live(0, -1, -1, False, None)  # the first event: the adapter opens the session there

    def _on_pause(self, _signum, _frame) -> None:
        if self.cthreads is not None:
            # every thread in full: the main thread stops right here, at its latest event in the
            # user's code (a server's main thread waits in library code), the others at their next
            if self.cthreads.skeletons and self.skeleton.busy():
                # (every thread as skeletons, the main thread writing records in order, as it does
                # right before an event of its own: stopping here would write them again under the
                # order's lock: its next event, or another thread's, is the stop)
                self.paused = True
                for tracer in self.cthreads.group.tracers():
                    tracer.stop_at(0)
                return
            if not self.holding and not self.cthreads.group.held():  # (a thread stopping already stays the one)
                self.paused = True
                self.cthreads.group.stop_here(self.cthreads.main_tracer)
                self._stop_thread(0)
            return
        if self.skeleton.switched:
            # every thread is recorded in full since a second one started (child/switch.py): no
            # thread is held alone, so a pause ends the recording here (the session opens on it)
            self.tracer.flush()
            self.skeleton.flush_journal()
            self.skeleton.finish("paused", "the recording was paused: it ends here")
            return
        self.paused = True
        if self.skeleton.in_hook or self.holding:
            self.tracer.stop_at(self.tracer.count())  # (the recorder's own work: at the next event)
            return
        if self.stop(self.tracer.count(), 0) == "end":
            self.tracer.flush()
            self.skeleton.finish("paused", "the debug session ended while the program ran")

    def _read_commands(self) -> None:
        mark_thread()
        reader = os.fdopen(self.command_fd, "rb", buffering=0)
        pending = b""
        while True:
            try:
                select.select([self.command_fd], [], [])
                chunk = os.read(self.command_fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:  # the adapter is gone (or ended the session): end here
                self._end_soon({"end": True})
                return
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                try:
                    command = json.loads(line)
                except ValueError:
                    continue
                if isinstance(command, dict) and "breakpoints" in command and "run" not in command:
                    self._set_breakpoints(command["breakpoints"])  # (under the GIL: between two events)
                    if type(command.get("number")) is int:  # (the session answers once they hold)
                        self.channel.events.append(["breakpoints", command["number"]])
                elif isinstance(command, dict) and command.get("end"):
                    self._end_soon(command)
                elif isinstance(command, dict):
                    self.commands.put(command)
        del reader

    def _end_soon(self, command: dict) -> None:
        """The session ends: a held program reads it at once; a running one is stopped first, as a
        pause stops it, and reads it there (it ran on to its next stop, or its end, for seconds while
        the adapter waited for it)."""
        self.ending = True
        self.commands.put(command)
        if not self.holding:
            self._pause_self()

    def _pause_self(self) -> None:
        if PAUSE_SIGNAL is not None:
            try:
                os.kill(os.getpid(), PAUSE_SIGNAL)
            except OSError:
                pass

    def _left_hold(self, ended: bool) -> None:
        """A hold is over and the program goes on: where "end" came while it was held, after the run
        command the hold took (the end told no one, as the program was held), it stops again, as a
        pause stops it, and reads the end there. (Under load the end of a disconnect sent right
        after configurationDone came so, and the program ran on for minutes.)"""
        if self.ending and not ended and self.skeleton.worker is None:  # (a checkpoint's worker replays)
            self._pause_self()

    def _set_breakpoints(self, breakpoints: dict | None, keep=None) -> None:
        """The lines to stop at, keeping the other predicates (`keep`: (at, depth, exit, exceptions,
        resumes))."""
        lines = {str(path): _lines(numbers) for path, numbers in (breakpoints or {}).items()}
        at, depth, exit_, exceptions, resumes = keep if keep is not None else self.predicates
        self.breakpoints = lines or None
        if self.cthreads is not None:
            self._arm_threads()
            return
        self.tracer.live(at, depth, exit_, exceptions, self.breakpoints, resumes)

    # -- every thread in full ----------------------------------------------------------------------
    def threaded(self, cthreads: Any) -> None:
        """A second thread runs (child/switch.py; in the main thread, between bytecodes): every
        thread's tracer stops at the breakpoints and exceptions from now on, and a step in flight
        goes on in the main thread (its place on the stack holds; an event number is its next event)."""
        at, depth, exit_, _exceptions, resumes = self.predicates
        if self.returns is not None:
            self.returns.end()  # (one thread's: the values of a threaded step are not followed)
        self.cthreads = cthreads
        cthreads.group.live(self._stop_thread, self._wait_while_held)
        cthreads.armed = self._arm
        if at >= 0 or depth >= 0 or exit_ >= 0 or resumes >= 0:
            self.step = (cthreads.main_tracer, (0 if at >= 0 else -1, depth, exit_, resumes))
        self._arm_threads()

    def _arm(self, tracer: Any) -> None:
        """A thread's tracer: the breakpoints and exceptions, and the step's predicates where it is
        the stepping thread's. (Exceptions: every one, or, for the "uncaught" filter alone, one that
        ends a thread other than the main one: debugpy stops there; the main thread's ends the program.)"""
        exceptions = int(self.predicates[3]) or (2 if self.uncaught and tracer is not self.cthreads.main_tracer else 0)
        if self.step is not None and self.step[0] is tracer:
            at, depth, exit_, resumes = self.step[1]
            tracer.live(at, depth, exit_, exceptions, self.breakpoints, resumes)
        else:
            tracer.live(-1, -1, -1, exceptions, self.breakpoints, -1)

    def _arm_threads(self) -> None:
        for tracer in self.cthreads.group.tracers():
            self._arm(tracer)

    def _wait_while_held(self, _arg=None) -> None:
        """In a thread's event while another is stopped: wait until it goes on."""
        group = self.cthreads.group
        with self.released:
            while group.held():
                self.released.wait()

    def _stop_thread(self, reason_code: int) -> None:
        """In the thread that stopped, its event recorded: hand everything over, hold the program
        (every other thread waits at its next event) until told to run."""
        with plumbing():
            reason = "pause" if self.paused else REASONS.get(reason_code, "step")
            self.paused = False
            self.holding = True
            ended = False
            try:
                count = self._recorded_so_far(reason_code)
                journaled = self.skeleton.flush_journal()
                if self.cthreads.skeletons and journaled is not None:
                    # (the other threads may go on journaling, in library code, while this one is
                    # held: a replay to this stop reads no further than this)
                    self.channel.events.append(["journaled", journaled])
                copy = self._held_copy()
                number = self.cthreads.table.number()
                stopped = ["stopped", count, reason, number, copy, self._alive() + self._idle()]
                if self.cthreads.skeletons:
                    stopped += [None, self._module_globals()]
                self.channel.events.append(stopped)
                self.channel.flush()
                self.stops += 1
                command = self.commands.get()
                while not command.get("end") and not isinstance(command.get("run"), dict):
                    command = self.commands.get()
                if command.get("end"):
                    ended = True
                    self._end_copy()
                    self.skeleton.finish("paused", "the debug session ended while the program ran")
                    return
                self._run_threads(command["run"])
            finally:
                self._end_copy()
                self.holding = False
                self.cthreads.group.release()
                with self.released:
                    self.released.notify_all()
                self._left_hold(ended)

    def _recorded_so_far(self, reason_code: int) -> int:
        """Every thread as skeletons: the records so far handed over, and the count up to the stop's
        event (its index + 1; it was captured in full as it was recorded: the stop's window). -1:
        every thread in full, or a pause (shown at the latest event)."""
        if not self.cthreads.skeletons:
            return -1
        self.cthreads.flush()
        tracer = self.cthreads.by_ident.get(threading.get_ident())
        at = tracer.stop_index() if tracer is not None and reason_code else -1
        if at >= 0:
            self.skeleton.wait_written(at + 1)
        return at + 1 if at >= 0 else -1

    def _module_globals(self) -> dict[str, list]:
        """Every thread as skeletons: the globals of each module of the user's whose `<module>` frame is
        on a thread's stack (a script's), as they are at this stop, encoded as a frame's locals are:
        {path: [name, encoding, ...]}. A thread's frames are rebuilt by a replay as they were at its
        latest event; a module's globals other threads changed since (a server's counter, a pool's
        results) are the program's now, as debugpy shows them."""
        rec = self.recorder
        if rec is None:
            return {}
        found: dict[str, dict] = {}
        for top in list(sys._current_frames().values()):
            frame: Any = top
            while frame is not None:
                code = frame.f_code
                if code.co_name == "<module>" and code.co_filename not in found and rec.is_user(code):
                    found[code.co_filename] = frame.f_globals
                frame = frame.f_back
        out: dict[str, list] = {}
        with sandboxed():  # (the program's reprs, run for the user: they change nothing)
            for path, names in found.items():
                try:
                    out[path] = rec.make_differ(True)(dict(names)) or []
                except Exception:  # (a repr that fails is the recorder's to show, not to die of)
                    continue
        return out

    def _alive(self) -> list[int]:
        """The numbers of the program's threads alive now (an idle one, waiting in a pool's queue or
        on an event, has no event that says so: the adapter lists it from this)."""
        running = sys._current_frames()
        latest: dict[int, int] = {}  # ident -> the latest number given to a thread with it
        for number, ident in list(self.cthreads.table.idents.items()):
            latest[ident] = max(number, latest.get(ident, -1))
        return sorted(number for ident, number in latest.items() if ident in running)

    def _idle(self) -> list[list]:
        """[number, name] of each of the program's threads alive now that has run none of the
        user's code (a server's thread in `serve_forever`, a thread waiting on an event): debugpy
        lists them too, with no frame of the user's. A thread keeps its number while it stays so
        (IDLE_NUMBERS up); it gets one of its own with its first event of the user's code."""
        numbers: dict[int, int] = {}  # ident -> its number in the thread table
        if self.cthreads is not None and self.cthreads.skeletons:
            # every thread as skeletons: numbered as each started; every thread alive is said with
            # its number and name (the adapter lists those with no event of the user's code)
            traced: set = set()
            for number, ident in list(self.cthreads.table.idents.items()):
                numbers[ident] = max(number, numbers.get(ident, -1))
        elif self.cthreads is not None:
            traced = set(self.cthreads.table.idents.values())
        else:
            traced = {threading.main_thread().ident}
        out: list[list] = []
        # (threading's own table read without its lock: a thread held at a stop may hold that)
        for ident, thread in list(threading._active.items()):  # type: ignore[attr-defined]
            name = getattr(thread, "name", "")
            if ident in traced or not isinstance(name, str) or name.startswith(OWN_THREADS):
                continue
            if ident in numbers:
                out.append([numbers[ident], name])
                continue
            kept = self._idle_numbers.get(ident)
            if kept is None or kept[0] is not thread:  # (an ident is reused once its thread ends)
                kept = self._idle_numbers[ident] = (thread, IDLE_NUMBERS + len(self._idle_numbers))
            out.append([kept[1], name])
        return sorted(out)

    def _held_copy(self) -> str | None:
        """A copy of the program as it is held here, which answers the adapter's expressions with
        real objects (child/live.py `serve_held`): a fork made by this thread, the only one a fork
        keeps, its stack the stop's. It lives while the program is held; the path of its socket."""
        path = os.path.join(self.skeleton.dir, f"held-{self.stops}.sock")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.bind(path)
            server.listen(1)
        except OSError:
            server.close()
            return None
        frames = live.user_frames(self.skeleton.is_user)
        # the program's threads, for the copy (the recorder's own are not the program's)
        active = {i: t for i, t in threading._active.items() if not t.name.startswith(OWN_THREADS)}  # type: ignore[attr-defined]
        main = threading.main_thread()
        pid = fork_ours()
        if pid == 0:  # the copy
            try:
                # it never outlives the program, nor its own idle limit: a fork of a program whose
                # other threads may hold a lock (a C library's) can block on it for ever (one did)
                die_with_parent()
                signal.alarm(int(live.IDLE_SECONDS))
                self.channel.closed = True  # never write to the recording's pipe ...
                for fd in (self.channel.fd, self.command_fd):  # ... nor hold it open: the adapter reads it to its end
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                silence_output()
                as_they_were = functools.partial(live.threads_as_they_were, active, main)
                live.serve_held(server, frames, self.channel.encode_document, self.skeleton.owner, as_they_were)
            finally:
                os._exit(0)
        server.close()
        self.copy = pid
        return path

    def _end_copy(self) -> None:
        """The program goes on: the copy of where it was held is no longer that moment."""
        if self.copy is None:
            return
        try:
            os.kill(self.copy, signal.SIGKILL)
            os.waitpid(self.copy, 0)
        except (OSError, ChildProcessError):
            pass
        self.copy = None

    def _run_threads(self, run: dict) -> None:
        """A run command while every thread is recorded: the step's predicates go to its thread."""
        exceptions = bool(run.get("exceptions", False))
        self.uncaught = bool(run.get("uncaught", False))
        self.predicates = (-1, -1, -1, exceptions, -1)
        self.step = None
        number = run.get("thread")
        tracer = self.cthreads.tracer_of(int(number)) if isinstance(number, int) else None
        if tracer is not None:
            at = 0 if int(run.get("at", -1)) >= 0 else -1
            depth = _place_of(tracer, int(run.get("within", -1)))
            self.step = (tracer, (at, depth, int(run.get("exit", -1)), int(run.get("resumes", -1))))
        self._set_breakpoints(run.get("breakpoints"), self.predicates)

    def _depth_of(self, inv: int) -> int:
        """The place on the stack of invocation `inv` (-1: not on it, so no stop by that)."""
        if inv < 0:
            return -1
        # (invocations, not entries: no frame object is made for this question: see _ctracer.c)
        for place, number in enumerate(self.tracer.invocations()):
            if number == inv:
                return place
        return -1

    predicates: tuple = (-1, -1, -1, False, -1)
    breakpoints: dict | None = None

    def stop(self, count: int, reason_code: int) -> str | None:
        """In the hook, at a live stop after event count-1: hand everything over, hold the program
        until told to run. Returns "end" when the recording should end here."""
        with plumbing():
            reason = "pause" if self.paused else REASONS.get(reason_code, "step")
            self.paused = False
            self.holding = True
            said = None
            try:
                said = self._hold(count, reason)
                return said
            finally:
                self.holding = False
                self._left_hold(said == "end")

    def _hold(self, count: int, reason: str) -> str | None:
        """Hand everything recorded over, say where it stopped, and wait for the next command."""
        returned = self.returns.end() if self.returns is not None else []
        self.tracer.capture(1 << 62, -1)  # (the captured event was this one)
        self.skeleton.checkpoint(count, at_stop=True)
        if self.skeleton.worker is not None:
            return None  # this is the checkpoint's worker now: it replays, it does not stop
        self.tracer.flush()
        self.skeleton.flush_journal()
        idle = self._idle()
        # [thread, copy, idle threads, library returns]: the first two are a threaded stop's
        extra = [None, None, idle or None, returned] if returned else [None, None, idle] if idle else []
        self.channel.events.append(["stopped", count, reason, *extra])
        self.channel.flush()
        self.stops += 1
        while True:
            command = self.commands.get()
            if command.get("end"):
                return "end"
            run = command.get("run")
            if isinstance(run, dict):
                self.predicates = (
                    int(run.get("at", -1)),
                    self._depth_of(int(run.get("within", -1))),
                    int(run.get("exit", -1)),
                    bool(run.get("exceptions", False)),
                    int(run.get("resumes", -1)),
                )
                self.uncaught = bool(run.get("uncaught", False))
                self._set_breakpoints(run.get("breakpoints"), self.predicates)
                at, depth, exit_, _exceptions, resumes = self.predicates
                if self.returns is not None and max(at, depth, exit_, resumes) >= 0:
                    self.returns.begin()  # a step: debugpy shows what the library returns on its way
                return None


def _place_of(tracer: Any, inv: int) -> int:
    """The place of invocation `inv` on `tracer`'s stack (-1: not on it)."""
    if inv < 0:
        return -1
    for place, number in enumerate(tracer.invocations()):
        if number == inv:
            return place
    return -1


def _lines(numbers: list) -> dict[int, int]:
    """A file's breakpoint lines as the C tracer counts them: line -> hits still to run past (the
    tracer counts it down at each hit, and stops at the hit that finds it 0)."""
    out: dict[int, int] = {}
    for entry in numbers:
        line, skip = (entry[0], entry[1]) if isinstance(entry, list) and len(entry) == 2 else (entry, 0)
        out[int(line)] = max(0, int(skip))
    return out
