"""Record a real execution: run a program in a child process under the tracer, collect its states.

The child (`neural_dap.trace.child`) streams compact events; this side rebuilds full `State`s. Every
way a debuggee can misbehave (loop forever, crash the interpreter, call sys.exit / os._exit, raise,
print megabytes, read stdin, hang in a __repr__) ends as a typed `Outcome`, with what was recorded
up to that point kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio.to_thread
import msgspec

from neural_dap.trace import journal
from neural_dap.trace.eventlog import EventLog, decode_repr
from neural_dap.trace.live_recording import LiveControl
from neural_dap.trace.program import (
    DEFAULT_LIMITS,
    WITHOUT_THE_WORKING_FOLDER,
    Limits,
    Outcome,
    OutcomeKind,
    Program,
)
from neural_dap.trace.recording import Recording

__all__ = [  # what the rest of neural-dap imports from here (the program types live in trace/program.py)
    "DEFAULT_LIMITS",
    "EventLog",
    "Limits",
    "Outcome",
    "OutcomeKind",
    "Program",
    "RecorderError",
    "Recording",
    "RecordingHandle",
    "record",
    "record_async",
    "record_skeleton",
]

_GRACE_SECONDS = 3.0
_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent.parent)
# The recording child's start. Not `python -m neural_dap.trace.child`: `-m` puts the working
# directory first on sys.path, and the child's own imports (json, threading, socket, ...) would then
# find a program's `json.py` or `random.py` there (and a checkout's `neural_dap` before the
# adapter's own). `-c` puts '' there, taken out before anything is imported; the package comes
# from PYTHONPATH, and the program gets the sys.path its own run would have (runner.py).
CHILD_BOOT = WITHOUT_THE_WORKING_FOLDER + "from neural_dap.trace.child.runner import main\nmain()\n"


class RecordingHandle:
    """A recording in progress, for another thread: `end_now()` ends it where the program is (the
    user paused it), keeping everything recorded so far, as the wall-time limit does."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.ended = False

    def started(self, pid: int) -> None:
        self.pid = pid
        if self.ended:  # asked before the process existed
            self.end_now()

    def end_now(self) -> bool:
        from neural_dap.trace.child.runner import END_SIGNAL

        self.ended = True
        if self.pid is None or END_SIGNAL is None:
            return False
        try:
            os.kill(self.pid, END_SIGNAL)
        except (ProcessLookupError, PermissionError):
            return False
        return True


class RecorderError(Exception):
    """The recorder itself could not start (not the debuggee failing: that is an Outcome)."""


# debugpy's launcher starts the program with frozen modules off (3.11+: microsoft/debugpy#861), so
# the standard library's modules are imported from their files (an older interpreter ignores it)
_AS_DEBUGPY_STARTS_IT = ("-X", "frozen_modules=off")


def record(
    program: Program,
    limits: Limits = DEFAULT_LIMITS,
    *,
    python: str | None = None,
    engine: str = "auto",
    trace_all: bool = False,
    threads: bool = False,
) -> Recording:
    """Run `program` in a child process under the tracer and return its states (full capture).

    The fast engines follow the thread that starts the program; when another thread runs the
    user's code, the same run goes on with every thread recorded (child/switch.py), each event
    tagged with its thread; `threads`: every thread from the start (the Python engines)."""
    return _record(program, limits, python=python, engine=engine, trace_all=trace_all, threads=threads)  # type: ignore[return-value]


def record_skeleton(
    program: Program,
    limits: Limits = DEFAULT_LIMITS,
    *,
    python: str | None = None,
    engine: str = "auto",
    checkpoint_events: int = 1_000_000,
    checkpoint_seconds: float = 0.25,
    max_checkpoints: int = 24,
    recording: RecordingHandle | None = None,
    what_if: list[dict] | None = None,
    journal_of: str | None = None,
    live: LiveControl | None = None,
    thread_skeletons: bool = False,
    thread_schedule: bytes | None = None,
    schedule_patience: float = 5.0,
    thread_locks: bytes | None = None,
):
    """Run `program` recording only its skeleton, with checkpoints to materialise states from
    (see `trace.skeleton`). Returns a `SkeletonRecording`; close it to end its checkpoints.
    `thread_skeletons`: from a second thread on, every thread is recorded as skeleton records too
    (`SkeletonLog.runs` says whose), not in full; `thread_schedule`: and follows that schedule
    (`SkeletonLog.schedule()` of an earlier recording of it), as a replay will, giving it up where
    no thread can go on for `schedule_patience` seconds (`SkeletonLog.followed`), and, given
    `thread_locks` (`SkeletonLog.locks()`), takes the program's locks in that recording's order:
    recording threads at interpreter speed (docs/design-notes.md, issue 37's fifteenth and sixteenth
    rounds).
    `what_if`: values to set on the way, {"at", "name", "value", "function"} (child/whatif.py);
    `journal_of`: the first run's journal, which a what-if branch reads up to its first edit;
    `live`: the program is debugged while it runs (trace/live_recording.py): this returns when it
    has ended, its stops go to `live` meanwhile."""
    from neural_dap.trace.skeleton import new_folder

    if (thread_schedule is not None or thread_locks is not None) and not thread_skeletons:
        raise ValueError("a thread schedule is followed by a recording of threads as skeletons (thread_skeletons=True)")
    if journal.library() is None:
        raise journal.JournalUnavailable(
            "a skeleton recording is replayed, and replays need the journal library (neural_dap/trace/_journal),"
            " which is not built here (Linux only)"
        )
    folder = new_folder()
    record_files = [os.path.join(folder, "events.bin"), os.path.join(folder, "calls.bin")]
    for path in record_files:  # empty, before the child starts writing them (child/channel.py)
        open(path, "wb").close()
    extra = {
        "mode": "skeleton",
        "checkpoint_dir": folder,
        "journal_path": os.path.join(folder, "journal.bin"),
        "record_files": record_files,  # (the child writes its records there: trace/skeleton.py's SkeletonLog)
        "checkpoint_events": checkpoint_events,
        "checkpoint_seconds": checkpoint_seconds,
        "max_checkpoints": max_checkpoints,
        "owner_pid": os.getpid(),
    }
    if what_if:
        extra["what_if"] = what_if
    if journal_of:
        extra["journal_replay"] = journal_of
    if live is not None:
        extra["command_fd"] = live.command_read
    if thread_skeletons:
        extra["thread_skeletons"] = True
    if thread_schedule is not None:
        extra["thread_schedule"] = _written(os.path.join(folder, "schedule.bin"), thread_schedule)
        extra["schedule_patience"] = schedule_patience
    if thread_locks is not None:
        extra["thread_locks"] = _written(os.path.join(folder, "locks.bin"), thread_locks)
    try:
        return _record(
            program, limits, python=python, engine=engine, extra=extra, folder=folder, handle=recording, live=live
        )
    except BaseException:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        raise


def _written(path: str, data: bytes) -> str:
    """`path`, with `data` written to it (a file the recording child reads)."""
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def _record(program: Program, limits: Limits, **kwargs):
    """One run of `program` in a recording child (see `_record_once`); a sandboxed run's scratch
    folder goes with it."""
    scratch: list[str] = []
    try:
        return _record_once(program, limits, scratch=scratch, **kwargs)
    finally:
        for folder in scratch:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)


def _record_once(
    program: Program,
    limits: Limits,
    *,
    scratch: list[str],
    python: str | None,
    engine: str,
    trace_all: bool = False,
    threads: bool = False,
    extra: dict | None = None,
    folder: str | None = None,
    handle: RecordingHandle | None = None,
    live: LiveControl | None = None,
):
    started = time.monotonic()
    path = os.path.abspath(program.path)
    if program.module:
        # the child resolves the module (in its interpreter, its cwd) and reports the file it ran;
        # until then (and if it never reports) the file this interpreter would find stands in
        path = module_file(program.module, program.cwd) or path
    elif program.source is None and not os.path.isfile(path):
        raise RecorderError(f"no such program: {program.path}")
    if threads and program.stdin_log and program.stdin:
        _start_over_in_the_terminal(program.stdin, program.stdin_log, program.output_copy)
    if program.children:  # a run before this one (stopped by a second thread) may have left children's
        from neural_dap.trace.children import forget_children

        forget_children(program.children)
    read_fd, write_fd = os.pipe()
    _widen_pipe(write_fd)
    lifeline = _lifeline()
    cfg = {
        "path": path,
        "source": program.source,
        "argv": list(program.argv),
        "entry": program.entry,
        "entry_args": program.entry_args,
        "literal_args": program.literal_args,
        "cwd": program.cwd,
        "module": program.module,
        "events_fd": write_fd,
        "engine": engine,
        "trace_all": trace_all or program.trace != "folder",
        "trace_libraries": program.trace == "all",
        "stdin_path": program.stdin,
        "stdin_log": program.stdin_log,
        "output_copy": program.output_copy,
        "threads": threads,
        "comprehensions": program.comprehensions,
        "as_debugpy": program.as_debugpy,
        "children": program.children,
        "own_path": _PACKAGE_PARENT,
        "owner_pid": os.getpid(),
        "lifeline_fd": lifeline,
        **msgspec.structs.asdict(limits),
        **(extra or {}),
    }
    env = dict(os.environ)
    env.update(program.env or {})
    if program.sandbox:
        # the only files a sandboxed run may change: its own temporary folder (removed after it)
        scratch.append(tempfile.mkdtemp(prefix="neural-dap-scratch-"))
        cfg["sandbox"] = scratch[-1]
        env["TMPDIR"] = scratch[-1]
    # what the program itself sees of these is what it was given: the child puts them back
    cfg["environ"] = {name: env.get(name) for name in ("PYTHONPATH", "PYTHONHASHSEED")}
    # the journal library, in the recording child only (it restores LD_PRELOAD before the program runs)
    cfg["environ"]["LD_PRELOAD"] = journal.preload(env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    # the same program records the same states every time (set iteration order of strings)
    env.setdefault("PYTHONHASHSEED", "0")
    env.pop("PYTHONSTARTUP", None)
    options = (*(_AS_DEBUGPY_STARTS_IT if program.as_debugpy else ()), *program.python_args)
    try:
        proc = subprocess.Popen(
            [python or sys.executable, *options, "-c", CHILD_BOOT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=[write_fd, lifeline, *([live.command_read] if live is not None else [])],
            env=env,
            start_new_session=True,  # so a kill reaches everything the debuggee started
        )
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        raise RecorderError(f"cannot start {python or sys.executable}: {exc}") from exc
    finally:
        if "proc" in locals():
            os.close(write_fd)
    if handle is not None:
        handle.started(proc.pid)
    try:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(cfg).encode())
        proc.stdin.close()
    except BrokenPipeError:
        pass
    if folder is not None:
        from neural_dap.trace.skeleton import SkeletonLog, SkeletonRecording

        skeleton = SkeletonLog(folder, limits.max_events + 1, limit=limits.max_events)
        feed = skeleton.feed_frames
        deadline = started + limits.wall_time + _GRACE_SECONDS
        if live is not None:  # (a live recording has no wall time: the session ends it)
            os.close(live.command_read)
            live.started(proc.pid, skeleton)
            deadline = float("inf")

            def feed(chunk: bytes) -> None:
                with live.changed:
                    skeleton.feed_frames(chunk)
                    live.changed.notify_all()

        with _copy(program) as copy:
            streams = _collect(proc, read_fd, deadline, feed, copy)
        skeleton.close()
        if program.module and skeleton.outcome is not None and len(skeleton.outcome) > 4 and skeleton.outcome[4]:
            path = str(skeleton.outcome[4])  # the module's file, as the child resolved it
        recording = SkeletonRecording(
            skeleton,
            path,
            time.monotonic() - started,
            streams.stdout.decode("utf-8", "replace"),
            streams.stderr.decode("utf-8", "replace"),
            program,
        )
        if skeleton.outcome is not None:
            kind, message, exit_code, value = (list(skeleton.outcome) + [None] * 4)[:4]
            if kind == "error" and message == journal.NO_JOURNAL:
                recording.close()
                raise journal.JournalUnavailable(
                    f"{message} ({python or sys.executable}): it is recorded in full instead"
                )
            recording.outcome = Outcome(kind, message or "", exit_code, None if value is None else decode_repr(value))
        elif skeleton.corrupt:
            recording.outcome = Outcome(
                "crashed", "the recorder's event stream was corrupted (did the program write to its file descriptors?)"
            )
        else:
            recording.outcome = _outcome_without_end(proc.returncode, streams, limits, None)
        return recording
    log = EventLog(program, path)
    # batches are decoded as they arrive, on this core, while the child runs on the other
    with _copy(program) as copy:
        streams = _collect(proc, read_fd, started + limits.wall_time + _GRACE_SECONDS, log.feed_frames, copy)
    outcome = log.outcome or _outcome_without_end(proc.returncode, streams, limits, log)
    full = Recording(
        program,
        log,
        outcome,
        fd_stdout=streams.stdout.decode("utf-8", "replace"),
        fd_stderr=streams.stderr.decode("utf-8", "replace"),
        seconds=time.monotonic() - started,
    )
    full.module_file = path if program.module else None
    return full


def _start_over_in_the_terminal(fifo: str, log: str, output_copy: str | None) -> None:
    """A terminal console's program recorded again (every thread, after a first recording met a
    second one): it reads what was typed again from the start, and the terminal says why the
    program's output starts over."""
    from neural_dap.trace import typed_input
    from neural_dap.trace.child.terminal import OutputCopy

    typed_input.rewind(fifo, log)
    copy = OutputCopy.open(output_copy)
    if copy is not None:
        copy.write(
            "\n[neural-dap: the program started a second thread: it runs again from the start, recorded"
            " with every thread, and reads what you typed again]\n"
        )
        copy.close()


@contextlib.contextmanager
def _copy(program: Program) -> Iterator[Callable[[bytes], None] | None]:
    """Where the program's fd-level output (its children's, os.write) is copied as it arrives: its
    terminal console, if it has one."""
    from neural_dap.trace.child.terminal import OutputCopy

    copy = OutputCopy.open(program.output_copy)
    try:
        yield copy.write_bytes if copy is not None else None
    finally:
        if copy is not None:
            copy.close()


def module_file(module: str, cwd: str | None) -> str | None:
    """The file `python -m module` would run, found without importing anything (a package's
    `__init__` is not run, so a package that extends its own __path__ is not followed): the
    recording's main file until the child reports the one it really ran."""
    from importlib.machinery import PathFinder

    search: list[str] = [os.path.abspath(cwd or os.getcwd()), *(p for p in sys.path[1:] if p)]
    spec = None
    for part in module.split("."):
        spec = PathFinder.find_spec(part, search)
        if spec is None:
            return None
        search = list(spec.submodule_search_locations or [])
    if spec is not None and spec.submodule_search_locations is not None:
        spec = PathFinder.find_spec("__main__", list(spec.submodule_search_locations))  # `python -m package`
    return spec.origin if spec is not None and spec.origin and os.path.isfile(spec.origin) else None


async def record_async(program: Program, limits: Limits = DEFAULT_LIMITS, **kwargs) -> Recording:
    """`record` without blocking the event loop."""
    return await anyio.to_thread.run_sync(lambda: record(program, limits, **kwargs))


_LIFELINE: list[int] = []  # [read end, write end, the pid that made them]


def _lifeline() -> int:
    """The read end of a pipe whose write end only this process holds (it is not inheritable): a
    recording's checkpoints outlive the recording child and watch it, to end the moment this
    process ends, however it ends (see child.lifetime)."""
    if not _LIFELINE or _LIFELINE[2] != os.getpid():  # made anew in a forked copy of the adapter
        read, write = os.pipe()
        _LIFELINE[:] = [read, write, os.getpid()]
    return _LIFELINE[0]


class _Streams(msgspec.Struct):
    stdout: bytes
    stderr: bytes
    killed: bool


_PIPE_BYTES = 1 << 20


def _widen_pipe(fd: int) -> None:
    """A 1 MiB event pipe (Linux; 64 KiB by default): the recording child hands over its skeleton
    records in batches of about that size, and with a narrow pipe it would wait on the adapter
    reading each 64 KiB of them."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)  # type: ignore[attr-defined]
    except (ImportError, AttributeError, OSError):
        pass  # another platform, or a lower limit (/proc/sys/fs/pipe-max-size): the default works


def _collect(proc: subprocess.Popen, events_fd: int, deadline: float, on_events, on_output=None) -> _Streams:
    """Read the event pipe and the child's own stdout/stderr until all close or the deadline.

    `on_events` gets each chunk of the event pipe as soon as it is read; `on_output` (if any) each
    chunk of stdout/stderr (a terminal console shows what the program's own children write).
    """
    assert proc.stdout is not None and proc.stderr is not None
    names = {events_fd: "events", proc.stdout.fileno(): "stdout", proc.stderr.fileno(): "stderr"}
    chunks: dict[str, list[bytes]] = {name: [] for name in names.values()}
    kept = dict.fromkeys(chunks, 0)
    cap = 4 << 20  # fd-level output beyond this is read and dropped
    sel = selectors.DefaultSelector()
    for fd in names:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    killed = False
    open_fds = set(names)
    while open_fds:
        if events_fd not in open_fds and proc.poll() is not None and not killed:
            # the recorder has finished: what still holds stdout/stderr open is something the
            # debuggee started; read what is there for a moment, then end it with the group
            deadline = min(deadline, time.monotonic() + 0.5)
        left = deadline - time.monotonic()
        if left <= 0:
            if killed:
                break  # what was in the pipes after the kill has been read
            _kill(proc)
            killed = True
            deadline = time.monotonic() + 2.0
            continue
        for key, _ in sel.select(timeout=min(left, 0.5)):
            try:
                chunk = os.read(key.fd, _PIPE_BYTES)
            except BlockingIOError:
                continue
            name = names[key.fd]
            if not chunk:
                sel.unregister(key.fd)
                open_fds.discard(key.fd)
            elif name == "events":
                on_events(chunk)
            else:
                if on_output is not None:
                    on_output(chunk)
                if kept[name] < cap:
                    chunks[name].append(chunk)
                    kept[name] += len(chunk)
    sel.close()
    os.close(events_fd)
    try:
        proc.wait(timeout=2.0)
    except subprocess.TimeoutExpired:
        _kill(proc)
        killed = True
        proc.wait()
    _kill(proc)  # whatever the debuggee started dies with its process group
    proc.stdout.close()
    proc.stderr.close()
    return _Streams(b"".join(chunks["stdout"]), b"".join(chunks["stderr"]), killed)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass


def _outcome_without_end(returncode: int | None, streams: _Streams, limits: Limits, log: EventLog | None) -> Outcome:
    if log is not None and log.corrupt:
        return Outcome(
            "crashed", "the recorder's event stream was corrupted (did the program write to its file descriptors?)"
        )
    if streams.killed:
        return Outcome("timeout", f"the program did not stop within {limits.wall_time:g} s and was killed")
    stderr = streams.stderr.decode("utf-8", "replace")
    if log is not None:
        log.materialize()
    fatal = _fatal_error(stderr, (set(log.sources) | {log.main_path}) if log is not None else set())
    if fatal:
        return Outcome("crashed", f"the interpreter crashed: {fatal}", exit_code=returncode)
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return Outcome("crashed", f"the interpreter was killed by {name}", exit_code=returncode)
    tail = stderr.strip().splitlines()[-3:]
    detail = f": {' / '.join(tail)}" if tail else ""
    return Outcome(
        "crashed",
        f"the interpreter exited with code {returncode} before the recording ended{detail}",
        exit_code=returncode,
    )


_FATAL = re.compile(r"Fatal Python error: (?P<what>[^\n]+)")
_FAULT_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<name>\S+)')


def _fatal_error(stderr: str, user_paths: set[str]) -> str | None:
    """What faulthandler reported, and where in the user's code: 'Segmentation fault in f at line 4'."""
    m = _FATAL.search(stderr)
    if not m:
        return None
    what = m.group("what").rstrip()
    for frame in _FAULT_FRAME.finditer(stderr[m.end() :]):
        if frame.group("path") in user_paths:
            return f"{what} in {frame.group('name')} at line {frame.group('line')} of {frame.group('path')}"
    return what
