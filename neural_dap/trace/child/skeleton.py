"""Skeleton mode: record only what the debugger actions need, and fork checkpoints to rebuild the rest.

While the program runs, the engine writes fixed-size binary records (no locals, no reprs):
  event  12 bytes  <u4 invocation, i4 line, u1 kind (0 call, 1 line, 2 return, 3 exception;
                   | 0x80 a line right after a handled exception; | 0x40 a call made by library
                   code: the frame under it is not the traced frame below it; | 0x20 a return
                   that is a generator's or coroutine's pause, a yield or an await), 3 bytes padding>
  call   12 bytes  <u4 code id, i4 the caller's latest event index (-1: none), i4 the invocation a
                   resumed generator or coroutine continues (-1: none)>, one per call event
and every so many events (and every so many seconds) the recording process forks a *checkpoint*:
a copy of the running program, paused at that event, that listens on a Unix socket. To
materialise events a..b, the parent connects to the nearest checkpoint at or before a; the
checkpoint forks a *worker*, which runs on from the checkpoint with output discarded, records in
full from event a to b (the frames already on the stack first, as snapshots), hashes the skeleton
records it replays, sends all of it back and exits; the checkpoint waits for the next request.

The program runs once. A checkpoint lets go of every resource of the program (its descriptors
become /dev/null, its shared memory a private copy), and a worker answers everything the program
asks of the world from the recording's journal (child/journal.py), under a seccomp net that refuses
what would change it: a replay reads what the recording read and touches nothing. A replay whose
records hash differently from the recording's, or that asks the journal for something it does not
hold, has diverged: the parent says so (and why), and trusts only what came before.

Standard library only (the recording child runs under any interpreter).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import threading
import time
from typing import Any

from neural_dap.trace.child import live
from neural_dap.trace.child.collector import EVERY as HOOK_EVERY
from neural_dap.trace.child.collector import Collector
from neural_dap.trace.child.journal import (
    JOURNAL,
    MODE_RECORD,
    MODE_REPLAY,
    as_program,
    mark_thread,
    plumbing,
    reopen_read_only,
)
from neural_dap.trace.child.lifetime import Lifeline, die_with_parent, fork_ours
from neural_dap.trace.child.recorder import DISCARD, set_output_mode
from neural_dap.trace.child.watch import Watch
from neural_dap.trace.child.whatif import Edits

EVENT_SIZE = 12
CALL_SIZE = 12
HASH_EVERY = 1 << 16  # events per hashed range of records
# seconds a replay of threads waits, its window's last event recorded, for a next event to end it
WINDOW_END_GRACE = 0.05
_EXIT = os._exit  # the real one: the runner wraps os._exit (to flush a program's own exit)


def _own_threads() -> int:
    """The recorder's own threads now (the flusher, a live recording's command reader)."""
    return sum(1 for thread in threading.enumerate() if thread.name.startswith("neural-dap"))


def _alone(own_threads: int, own_children: set[int]) -> bool:
    """No thread of the program's runs and no process it started lives: only then is a fork a
    faithful copy (threads do not survive a fork; a replay would wait on, or talk to, the recording's
    children)."""
    try:
        import _thread

        if _thread._count() > own_threads:  # type: ignore[attr-defined]
            return False
    except (ImportError, AttributeError):
        pass
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as fh:
                if any(int(pid) not in own_children for pid in fh.read().split()):
                    return False
    except OSError:
        pass  # not Linux: threads only
    return True


def _kill_quietly(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


class Skeleton:
    """Checkpoints, limits and the worker side of materialisation, for one recording child.

    `tracer` is the engine: skeleton(hook, flush, hook_every, hook_at), capture(first, last),
    flush(), count().
    """

    is_user = staticmethod(lambda code: True)  # the recorder's judgement of the user's code (runner sets it)
    encode_value = staticmethod(repr)  # the recorder's encoding of a local's value (runner sets it)
    edits: Edits | None = None  # a what-if branch's values to set on the way (runner sets them)

    def __init__(self, cfg: dict, channel, tracer, events: list, finish) -> None:
        self.channel = channel
        self.tracer = tracer
        self.events = events  # what full capture appends to (in a worker: what it sends back)
        self.finish = finish  # finish(outcome, message): end the recording (limits)
        self.dir = cfg["checkpoint_dir"]
        self.journal_fd: int | None = None  # the journal (the runner opens it); a checkpoint's is read-only
        self.every_events = int(cfg.get("checkpoint_events", 1_000_000))
        self.every_seconds = float(cfg.get("checkpoint_seconds", 0.25))
        self.max_checkpoints = int(cfg.get("max_checkpoints", 24))
        self.owner = int(cfg.get("owner_pid", os.getppid()))  # the adapter: checkpoints end when it does
        lifeline = cfg.get("lifeline_fd")
        self.lifeline = Lifeline(None if lifeline is None else int(lifeline), self.owner)
        self.replay_seconds = max(10.0, 2 * channel.limits.wall_time)  # a worker that runs longer is stuck
        self.forked: set[int] = set()  # every checkpoint ever forked (pruned ones may linger as zombies)
        self.max_events = channel.limits.max_events
        self.wall_time = channel.limits.wall_time
        self.started = time.monotonic()
        self.next_count = 0
        self.next_time = self.started
        self.checkpoints: list[tuple[int, int]] = []  # (event index, pid)
        self.worker: dict | None = None  # in a worker: the request it serves
        self._finishing = threading.Lock()  # a worker's answer is being sent
        self.switched = False  # a second thread ran the program's code: every thread recorded in full since
        self.frontier: Any = None  # a live recording: where the program stops for the adapter (child/frontier.py)
        self.in_hook = False  # the hook runs (the main thread's signal waits for it: runner.py)
        # every thread as skeletons: (runs followed, runs, given up, why) of the schedule a replay follows
        self.following: Any = None
        self.collector = Collector(as_program)  # installed when the program starts (start())
        if cfg.get("record_files"):  # the adapter's files for the records (trace/skeleton.py's SkeletonLog)
            channel.record_files(*cfg["record_files"])

    # -- the recording process ----------------------------------------------------------------------
    def start(self) -> None:
        self.collector.install()
        self.next_count = self.every_events
        # (the event limit is kept to the event, not to the next HOOK_EVERY-th)
        self.tracer.skeleton(self.hook, self.flush, HOOK_EVERY, self._sooner(min(self.next_count, self.max_events)))

    def begin(self) -> None:
        """Tracing has started and no event has happened yet: the first checkpoint."""
        with plumbing():
            self.next_time = time.monotonic() + self.every_seconds
            self.checkpoint(0)
            self.channel.on_tick = self.poke

    def poke(self) -> None:
        """From the flusher thread: a checkpoint is due by time, so have the engine call the hook at
        its next event (it counts events only: a program that mostly waits would otherwise take none,
        and a replay of it would wait all over again)."""
        if self.worker is None and not self.switched and time.monotonic() >= self.next_time:
            try:
                self.tracer.skeleton(self.hook, self.flush, HOOK_EVERY, self.tracer.count() + 1)
            except Exception:
                pass

    def flush(self, events: bytes, calls: bytes, first: int) -> None:
        if self._order is not None:  # every thread's records (copies): two threads' flushes may cross
            self._in_order(first, events, calls)
            return
        self._write(first, events, calls)

    def _write(self, first: int, events, calls) -> None:
        if self.worker is not None:
            self._hash(events, first)
            return
        self.channel.write_records(first, events, calls)

    def records_from(self, first: int) -> None:
        """Every thread is recorded as skeletons from event `first` on (its records so far flushed):
        the C tracer hands each thread's flush a copy, and a flush is Python code, during which
        another thread may fill the buffer and flush the next records first."""
        self._next_first = first
        self._early: dict[int, tuple[bytes, bytes]] = {}  # chunks flushed ahead of their turn
        self._order = threading.Lock()

    _order: threading.Lock | None = None  # (set by records_from)

    def wait_written(self, count: int, seconds: float = 1.0) -> None:
        """(every thread as skeletons) Until the records before `count` are handed over in order:
        another thread's flush may hold a copy of an earlier chunk it has not written yet, and a
        stop said before its own record is there would not be found in the records."""
        if self._order is None:
            return
        deadline = time.monotonic() + seconds
        while self._next_first < count and time.monotonic() < deadline:
            time.sleep(0.001)

    def _in_order(self, first: int, events: bytes, calls: bytes) -> None:
        assert self._order is not None
        with self._order:
            self._writing = threading.get_ident()
            try:
                early = self._early
                early[first] = (events, calls)
                while self._next_first in early:
                    events, calls = early.pop(self._next_first)
                    self._write(self._next_first, events, calls)
                    self._next_first += len(events) // EVENT_SIZE
            finally:
                self._writing = None

    _writing: int | None = None  # the thread writing records in order now (`_in_order`)

    def busy(self) -> bool:
        """The recorder's hook runs, or the calling thread writes records in order (every thread as
        skeletons): a signal handled here must wait (flushing from its handler would write records
        again, or wait for ever on the order's lock it holds). Another thread writing them is no
        reason to: it lets the lock go."""
        return self.in_hook or self._writing == threading.get_ident()

    def hook(self, count: int) -> int:
        """Called by the engine at `hook_at` and every HOOK_EVERY events; returns the next `hook_at`. A
        what-if edit due here is made first (a checkpoint taken here holds the new value)."""
        self.in_hook = True
        try:
            with plumbing():
                return self._hook_with_edits(count)
        finally:
            self.in_hook = False

    def _hook_with_edits(self, count: int) -> int:
        self.collector.at(count)  # (the program's collections, at the same events in every replay)
        edits = self.edits
        if edits is None:
            return self._hook(count)
        worker = self.worker
        capturing = worker is not None and worker["from"] < count <= worker["to"] + 1
        edits.reached(count, self.events, capturing, tell=worker is None)
        return edits.sooner(self._hook(count))

    def _worker_next(self, count: int) -> int:
        """A worker's next hook: after its window's last event, or (a watch) after every event of it."""
        worker = self.worker
        assert worker is not None
        if worker["watch"] is not None:
            return max(count + 1, worker["from"] + 1)
        return worker["to"] + 1

    def _sooner(self, at: int) -> int:
        return at if self.edits is None else self.edits.sooner(at)

    def _hook(self, count: int) -> int:
        if self.worker is not None:
            watch = self.worker["watch"]
            if watch is not None and count > self.worker["from"]:
                # (the hook runs right after event count - 1 is recorded: the program stands there)
                watch.observe(count - 1, live.user_frames(self.is_user) if watch.frame is None else [])
            if count > self.worker["to"]:
                self._finish_worker(count)
            return self._worker_next(count)
        # (every thread recorded: a stop is the group's to make, right after its event, and a
        # reason set now is one pending for the event about to be recorded: not the hook's)
        if self.frontier is not None and self.frontier.cthreads is None:
            reason = self.tracer.stop_reason()
            if reason:  # a live stop: the program is held here until the adapter says go on
                if self.frontier.stop(count, reason) == "end":
                    self.tracer.flush()
                    self.finish("paused", "the debug session ended while the program ran")
                if self.worker is not None:  # (the checkpoint the stop took, made a worker: its window)
                    return self._worker_next(count)
                self.next_time = time.monotonic() + self.every_seconds
        now = time.monotonic()
        if count >= self.max_events:
            self.tracer.flush()
            self.finish("event_limit", f"the program passed the {self.max_events} event limit")
        if now - self.started > self.wall_time:
            self.tracer.flush()
            self.finish("timeout", f"the program ran past the {self.wall_time:g} s wall-time limit")
        if count >= self.next_count or now >= self.next_time:
            self.checkpoint(count)
            if self.worker is not None:  # this process is a worker now: run on through its window
                return self._worker_next(count)
            self.next_count = count + self.every_events
            self.next_time = time.monotonic() + self.every_seconds
        return min(self.next_count, self.max_events)

    def flush_journal(self) -> int | None:
        """Everything journaled so far into the file; the bytes it holds (None: no journal)."""
        if JOURNAL is None:
            return None
        with plumbing():
            return JOURNAL.flush()

    def checkpoint(self, count: int, at_stop: bool = False) -> None:
        """A copy of the program paused at event `count` (see the module's docstring); `at_stop`: a live
        stop's (the one before it may be older than the usual spacing)."""
        if self.switched:
            return  # a fork copies one thread: nothing after the switch is replayed
        if at_stop and self.checkpoints and self.checkpoints[-1][0] == count:
            return  # (one is there already)
        if count and not _alone(_own_threads(), self.forked):
            return  # the next one, or the one before, serves
        self.tracer.flush()  # the parent has every record up to here before the copy exists
        path = os.path.join(self.dir, f"cp-{count}.sock")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.bind(path)
            server.listen(4)
        except OSError:
            server.close()
            return
        pid = fork_ours()
        if pid == 0:
            self._serve(server, count)  # returns only in a worker
            return
        server.close()
        self.forked.add(pid)
        self.checkpoints.append((count, pid))
        self.channel.events.append(["cp", count, path, pid])
        self._prune()

    def _prune(self) -> None:
        """Keep at most `max_checkpoints`: the first, the latest, and evenly spread ones between."""
        while len(self.checkpoints) > self.max_checkpoints:
            gaps = [
                (self.checkpoints[k + 1][0] - self.checkpoints[k - 1][0], k)
                for k in range(1, len(self.checkpoints) - 1)
            ]
            _, k = min(gaps)
            count, pid = self.checkpoints.pop(k)
            _kill_quietly(pid)
            self.channel.events.append(["cpx", count])

    # -- the checkpoint process ---------------------------------------------------------------------
    def _serve(self, server: socket.socket, count: int) -> None:
        """A checkpoint: wait for requests; each one is served by a fresh fork (a worker)."""
        os.setsid()  # out of the recording's process group: it outlives the recording
        self.channel.closed = True  # never write to the recording's pipe
        # (the program's collections are the recorder's, at fixed events: child/collector.py; none
        # runs here, where one finalized object would close a number this process opens next)
        if self.journal_fd is not None:
            self.journal_fd = reopen_read_only(self.journal_fd)
        if JOURNAL is not None:
            # nothing of the program's is held: a peer sees end-of-file when the program closes a
            # socket, a port it closed can be bound again, a lock it released is free
            keep = [server.fileno(), *([self.journal_fd] if self.journal_fd is not None else [])]
            if self.lifeline.fd is not None:
                keep.append(self.lifeline.fd)
            JOURNAL.checkpoint(keep)
        else:
            try:
                os.close(self.channel.fd)  # (the parent reads the pipe to its end)
            except OSError:
                pass
        silence_output()
        lifeline = self.lifeline
        while True:
            ready = lifeline.wait([server.fileno()], 1.0)
            if ready is None:
                _EXIT(0)  # the adapter is gone
            if not ready:
                continue
            try:
                conn, _ = server.accept()
            except OSError:
                _EXIT(0)
            request = _read_request(conn)
            if request is None or request.get("quit"):
                conn.close()
                if request is not None:
                    _EXIT(0)
                continue
            pid = fork_ours()
            if pid == 0:
                server.close()
                self._become_worker(conn, request, count)
                return
            conn.close()
            if not lifeline.wait_for_child(pid):
                _EXIT(0)

    # -- a worker ---------------------------------------------------------------------------------
    def _become_worker(self, conn: socket.socket, request: dict, count: int) -> None:
        die_with_parent()  # the checkpoint: it ends when the adapter does
        first, last = int(request["from"]), int(request["to"])
        self.worker = {
            "conn": conn,
            "from": max(first, count),
            "to": max(last, first),
            "hashes": [],
            "range": None,
            "start": count,
            "live": request.get("live"),  # {"seconds", "memory_mb", "max_repr"}: stay as a live stop (child.live)
            # {"path": [root, [kind, key], ...]}: watch that location in the frame of event `from`
            # through `to`, and capture nothing (child/watch.py)
            "watch": Watch(request["watch"]["path"], self.encode_value) if request.get("watch") else None,
            # a file of the threads' schedule (trace/skeleton.py): a replay past where a second thread
            # started follows it (runner._switch_to_skeletons)
            "schedule": request.get("schedule") if isinstance(request.get("schedule"), str) else None,
            # ... and of who took each lock, in order (a replay takes them so: engines.CThreads.gate_locks)
            "locks": request.get("locks") if isinstance(request.get("locks"), str) else None,
        }
        silence_output()
        guard = self.channel.guard
        if guard is not None:  # the reprs' deadline: the recording's flusher did not survive the fork
            guard.thread = threading.get_ident()
            guard.busy, guard.others = 0, {}  # (the one thread a fork keeps runs no repr now)
            guard.watch(time.monotonic() + self.replay_seconds, lambda: _EXIT(0))
        del self.events[:]
        if self.frontier is not None:
            self.tracer.live(-1, -1, -1, False, None)  # a replay does not stop for the adapter
            self.frontier = None
        net = False
        if JOURNAL is not None and self.journal_fd is not None:
            # from here on, what the program asks of the world is answered from the journal (a
            # checkpoint of a what-if branch past its edit: the sandbox, as the branch ran), and
            # what would change the world is refused
            if JOURNAL.mode() in (MODE_RECORD, MODE_REPLAY):
                JOURNAL.replay(self.journal_fd)
                if type(request.get("journal_bytes")) is int:
                    JOURNAL.limit(request["journal_bytes"])  # (a live recording's, as its stop wrote it)
            net = JOURNAL.install_net()
        self.worker["net"] = net
        # stop right after the window (a live stop: at its event; the hook runs once that event is
        # recorded): a worker of the first checkpoint, taken before any hook ran, would otherwise run
        # on to the next HOOK_EVERY-th event, or to the end of a program that may never end
        if self.worker["watch"] is not None:  # the hook at every event of the stretch, no capture
            self.tracer.skeleton(self.hook, self.flush, HOOK_EVERY, self._sooner(self.worker["from"] + 1))
            return
        self.tracer.skeleton(self.hook, self.flush, HOOK_EVERY, self._sooner(self.worker["to"] + 1))
        self.tracer.capture(self.worker["from"], self.worker["to"])
        if self.worker["schedule"] is not None and not self.worker["live"]:
            # (started before the replay meets its second thread, as the guard's watcher is: the
            # group of every thread's tracers knows it for the recorder's by its name)
            threading.Thread(target=self._finish_once_reached, name="neural-dap-window-end", daemon=True).start()

    def _finish_once_reached(self) -> None:
        """(a replay of threads, in a thread of the recorder's) End the window once its last event is
        recorded, where no event follows it to call the hook: the window ends at the recording's
        latest event, and the program there waits (a server idle in its poll, a live program paused
        where every thread waits), as the recording's had stopped. The hook of a next event ends it
        first wherever one comes."""
        mark_thread()
        worker = self.worker
        assert worker is not None
        with plumbing():
            while self.tracer.count() <= worker["to"]:
                time.sleep(0.005)
            time.sleep(WINDOW_END_GRACE)
            self._finish_worker(worker["to"] + 1)

    def _hash(self, events: bytes, first: int) -> None:
        """Hash the records replayed before the window in aligned ranges (the last one ends where the
        window starts), as the parent hashes its own; the window itself is compared event by event,
        so a replay that diverges inside it still gives the states before the divergence."""
        worker = self.worker
        assert worker is not None
        offset = 0
        index = first
        # (a watch compares no captured events: every event it replays is hashed)
        window = worker["from"] if worker["watch"] is None else worker["to"] + 1
        while offset < len(events) and index < window:
            boundary = min((index // HASH_EVERY + 1) * HASH_EVERY, window)
            take = min(len(events) - offset, (boundary - index) * EVENT_SIZE)
            if worker["range"] is None:
                worker["range"] = [index, hashlib.blake2b(digest_size=16)]
            worker["range"][1].update(events[offset : offset + take])
            offset += take
            index += take // EVENT_SIZE
            if index == boundary:
                self._close_range(index)

    def _close_range(self, end: int) -> None:
        worker = self.worker
        assert worker is not None
        if worker["range"] is not None:
            start, digest = worker["range"]
            worker["hashes"].append([start, end, digest.hexdigest()])
            worker["range"] = None

    def _finish_worker(self, count: int, outcome: tuple | None = None) -> None:
        """Send what was captured and the hashes of what was replayed, then end this process. Once:
        in a replay of threads, one thread's hook may end the window while the main thread ends the
        program (two answers on one connection read as one corrupt document)."""
        worker = self.worker
        assert worker is not None
        with plumbing():
            if not self._finishing.acquire(blocking=False):
                while True:  # (the first one sends the answer and ends the process)
                    time.sleep(60)
        self.tracer.flush()
        self._close_range(count)
        answer = {
            "events": list(self.events),
            "hashes": worker["hashes"],
            "reached": count,
            "outcome": list(outcome) if outcome else None,
            "journal": _journal_report(worker.get("net", False)),
        }
        if self.following is not None:  # (a replay of threads: where it stopped following the recording, and why)
            followed, runs, given_up, why = self.following()
            answer["threads"] = {"followed": followed, "runs": runs, "given_up": given_up, "why": why}
        if worker["watch"] is not None:
            answer["watch"] = worker["watch"].series
        try:
            data = self.channel.encode_document(answer)
            conn = worker["conn"]
            if worker["live"] and outcome is None:  # paused at the event: a fork of this answers expressions
                frames = live.user_frames(self.is_user)
                live.serve(conn, data, frames, self.channel.encode_document, self.owner, worker["live"])
            else:
                conn.sendall(len(data).to_bytes(8, "little") + data)
            conn.close()
        finally:
            _EXIT(0)

    def program_ended(self, outcome: tuple) -> None:
        """The program ended (or raised, or exited) inside a worker's window: send what there is."""
        if self.worker is not None:
            self._finish_worker(self.tracer.count(), outcome)


def _journal_report(net: bool) -> dict:
    """What the adapter needs to trust this replay: where it stopped being one (the event count,
    and why), and whether the seccomp net was on."""
    if JOURNAL is None:
        return {"net": False}
    report: dict = {"net": net}
    diverged = JOURNAL.divergence()
    if diverged is not None:
        report["diverged_at"], report["why"] = diverged
    return report


def _read_request(conn: socket.socket) -> dict | None:
    data = b""
    conn.settimeout(10.0)
    try:
        while not data.endswith(b"\n"):
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        return json.loads(data)
    except (OSError, ValueError):
        return None


def silence_output() -> None:
    """A replay must not print the program's output again. The stream objects stay the ones the
    recording had (a program that asks them anything gets the same answers); they discard."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    set_output_mode(DISCARD)
