"""Record a real execution: run a program in a child process under the tracer, collect its states.

The child (`neural_dap.trace.child`) streams compact events; this side rebuilds full `State`s. Every
way a debuggee can misbehave (loop forever, crash the interpreter, call sys.exit / os._exit, raise,
print megabytes, read stdin, hang in a __repr__) ends as a typed `Outcome`, with what was recorded
up to that point kept.
"""

from __future__ import annotations

import gc
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal, overload

import anyio.to_thread
import msgspec

from neural_dap.core.state import State, Value

OutcomeKind = Literal["finished", "raised", "exited", "timeout", "event_limit", "memory", "crashed", "error", "paused"]
_GRACE_SECONDS = 3.0
_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent.parent)


class Limits(msgspec.Struct, frozen=True):
    max_events: int = 200_000
    wall_time: float = 10.0  # seconds
    max_repr: int = 1000  # characters of one repr
    max_output: int = 1_000_000  # characters of stdout + stderr kept
    memory_mb: int = 4096  # address-space cap of the child; 0 for none
    max_children: int = 50  # children of one value in the variables tree
    max_processes: int = 16  # processes the debuggee may start (fork, subprocess, os.system)
    repr_seconds: float = 0.1  # one repr of a value may take this long; then it shows as timed out


DEFAULT_LIMITS = Limits()


class Program(msgspec.Struct, frozen=True, omit_defaults=True):
    """What to run: a script with argv, one function of it called with literal argument text, or a
    module as `python -m MODULE argv...` runs it (then `path` only names a fallback main file: the
    child resolves the module in `cwd`, and the recording's `main_path` is the module's file)."""

    path: str
    source: str | None = None  # run this text as if it were the file at `path`
    argv: tuple[str, ...] = ()
    entry: str | None = None  # function name
    entry_args: str = ""  # e.g. "[3, 1], key=None"
    literal_args: bool = False  # entry_args must be Python literals (text that came from a model)
    cwd: str | None = None
    env: dict[str, str] | None = None
    module: str | None = None  # run `python -m module *argv` (in cwd); the user's code is what lies in cwd
    # what is traced: "folder" the program's folder (the cwd for a module), "mine" every file that is
    # not the standard library's or an installed package's (debugpy's justMyCode), "all" libraries too
    trace: Literal["folder", "mine", "all"] = "folder"
    python_args: tuple[str, ...] = ()  # interpreter options (`-X dev`, `-W error`, `-O`)
    stdin: str | None = None  # a file the program reads as its standard input (else it reads EOF)


class Outcome(msgspec.Struct, frozen=True, omit_defaults=True):
    kind: OutcomeKind
    message: str = ""
    exit_code: int | None = None
    value: str | None = None  # repr of the entry function's return value, or of the exception

    @property
    def ok(self) -> bool:
        return self.kind in ("finished", "raised", "exited")

    def describe(self) -> str:
        text = {
            "finished": "the program finished",
            "raised": "the program raised an uncaught exception",
            "exited": "the program exited",
            "timeout": "the program was stopped at the wall-time limit",
            "paused": "the program was paused while it was recorded",
            "event_limit": "the program was stopped at the event limit",
            "memory": "the program ran out of memory",
            "crashed": "the interpreter crashed",
            "error": "the program could not be run",
        }[self.kind]
        return f"{text}: {self.message}" if self.message else text


class Recording:
    """One recorded execution. `states` are built on demand from the compact event log."""

    def __init__(
        self, program: Program, log: EventLog, outcome: Outcome, fd_stdout: str, fd_stderr: str, seconds: float
    ) -> None:
        self.program = program
        self.log = log
        self.outcome = outcome
        self._fd_stdout = fd_stdout  # written to the file descriptors directly, not through sys.stdout
        self._fd_stderr = fd_stderr
        self.seconds = seconds
        self.states: StateList = StateList(log)
        self.module_file: str | None = None  # a module launch: the file `python -m` ran

    @property
    def stdout(self) -> str:
        """Everything the program wrote, also before tracing began."""
        self.log.materialize()
        return "".join(self.log.all_stdout) + self._fd_stdout

    @property
    def stderr(self) -> str:
        self.log.materialize()
        return "".join(self.log.all_stderr) + self._fd_stderr

    @property
    def sources(self) -> dict[str, str]:
        """path -> source text of every traced file."""
        self.log.materialize()
        return self.log.sources

    @property
    def engine(self) -> str:
        self.log.materialize()
        return self.log.engine

    @property
    def python(self) -> str:
        self.log.materialize()
        return self.log.python

    @property
    def wire_bytes(self) -> int:
        return self.log.wire_bytes

    @property
    def main_path(self) -> str:
        if self.program.module:
            self.log.materialize()
            return self.log.main_file or self.module_file or os.path.abspath(self.program.path)
        return os.path.abspath(self.program.path)

    @property
    def return_value(self) -> str | None:
        """repr of the traced scope's final return value (the entry function's, for a call)."""
        log = self.log
        log.materialize()
        if log.kinds and log.kinds[-1] == "return" and log.invocations[log.invs[-1]].depth == 0:
            return log.values.get(len(log.kinds) - 1)
        return None


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


def record(
    program: Program,
    limits: Limits = DEFAULT_LIMITS,
    *,
    python: str | None = None,
    engine: str = "auto",
    trace_all: bool = False,
) -> Recording:
    """Run `program` in a child process under the tracer and return its states (full capture)."""
    return _record(program, limits, python=python, engine=engine, trace_all=trace_all)  # type: ignore[return-value]


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
):
    """Run `program` recording only its skeleton, with checkpoints to materialise states from
    (see `trace.skeleton`). Returns a `SkeletonRecording`; close it to end its checkpoints."""
    from neural_dap.trace.skeleton import new_folder

    folder = new_folder()
    extra = {
        "mode": "skeleton",
        "checkpoint_dir": folder,
        "checkpoint_events": checkpoint_events,
        "checkpoint_seconds": checkpoint_seconds,
        "max_checkpoints": max_checkpoints,
        "owner_pid": os.getpid(),
    }
    try:
        return _record(program, limits, python=python, engine=engine, extra=extra, folder=folder, handle=recording)
    except BaseException:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        raise


def _record(
    program: Program,
    limits: Limits,
    *,
    python: str | None,
    engine: str,
    trace_all: bool = False,
    extra: dict | None = None,
    folder: str | None = None,
    handle: RecordingHandle | None = None,
):
    started = time.monotonic()
    path = os.path.abspath(program.path)
    if program.module:
        # the child resolves the module (in its interpreter, its cwd) and reports the file it ran;
        # until then (and if it never reports) the file this interpreter would find stands in
        path = _module_file(program.module, program.cwd) or path
    elif program.source is None and not os.path.isfile(path):
        raise RecorderError(f"no such program: {program.path}")
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
        "own_path": _PACKAGE_PARENT,
        "owner_pid": os.getpid(),
        "lifeline_fd": lifeline,
        **msgspec.structs.asdict(limits),
        **(extra or {}),
    }
    env = dict(os.environ)
    env.update(program.env or {})
    # what the program itself sees of these is what it was given: the child puts them back
    cfg["environ"] = {name: env.get(name) for name in ("PYTHONPATH", "PYTHONHASHSEED")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    # the same program records the same states every time (set iteration order of strings)
    env.setdefault("PYTHONHASHSEED", "0")
    env.pop("PYTHONSTARTUP", None)
    try:
        proc = subprocess.Popen(
            [python or sys.executable, *program.python_args, "-m", "neural_dap.trace.child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=[write_fd, lifeline],
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

        skeleton = SkeletonLog(folder)
        streams = _collect(proc, read_fd, started + limits.wall_time + _GRACE_SECONDS, skeleton.feed_frames)
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
            recording.outcome = Outcome(kind, message or "", exit_code, None if value is None else _decode_repr(value))
        elif skeleton.corrupt:
            recording.outcome = Outcome(
                "crashed", "the recorder's event stream was corrupted (did the program write to its file descriptors?)"
            )
        else:
            recording.outcome = _outcome_without_end(proc.returncode, streams, limits, None)
        return recording
    log = EventLog(program, path)
    # batches are decoded as they arrive, on this core, while the child runs on the other
    streams = _collect(proc, read_fd, started + limits.wall_time + _GRACE_SECONDS, log.feed_frames)
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


def _module_file(module: str, cwd: str | None) -> str | None:
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


def _collect(proc: subprocess.Popen, events_fd: int, deadline: float, on_events) -> _Streams:
    """Read the event pipe and the child's own stdout/stderr until all close or the deadline.

    `on_events` gets each chunk of the event pipe as soon as it is read.
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
            elif kept[name] < cap:
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


_CHECKPOINT = 32  # every 32nd state of an invocation keeps a full copy of its locals


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


class _Invocation:
    __slots__ = ("checkpoints", "depth", "first_line", "function", "lines", "locals", "path", "states", "values")

    def __init__(self, function: str, path: str, depth: int, first_line: int, lines: list[str]) -> None:
        self.function = function
        self.path = path
        self.depth = depth
        self.first_line = first_line
        self.lines = lines  # the source lines of its file
        self.states: list[int] = []  # indices of its states
        self.locals: dict[str, str] = {}  # as of its latest state (mutated while recording)
        self.values: dict[str, list] = {}  # encoded structured values, likewise
        self.checkpoints: dict[int, tuple[dict[str, str], dict[str, list]]] = {}


class EventLog:
    """The compact form of a recording: per state its kind, line, invocation and changed locals.

    Only what changed is kept; every `_CHECKPOINT`-th state of an invocation also keeps a copy of
    its locals, so any state can be rebuilt with a few dictionary updates.
    """

    def __init__(self, program: Program, main_path: str) -> None:
        self.program = program
        self.main_path = main_path
        self.kinds: list[str] = []
        self.lines: list[int] = []
        self.invs: list[int] = []
        self.changes: list[list | None] = []
        self.values: dict[int, str] = {}
        self.caught: dict[int, str] = {}
        self.stdout_at: dict[int, str] = {}
        self.stderr_at: dict[int, str] = {}
        self.codes: dict[int, tuple[str, str, int]] = {}
        self.invocations: dict[int, _Invocation] = {}
        self.sources: dict[str, str] = {}
        self.source_lines: dict[str, list[str]] = {}
        self.pending_out: list[str] = []
        self.pending_updates: dict[int, list] = {}
        self.updates: dict[int, list[tuple[int, list]]] = {}  # invocation -> (state index, changes)
        self.pending_err: list[str] = []
        self.all_stdout: list[str] = []
        self.all_stderr: list[str] = []
        self.outcome: Outcome | None = None
        self.engine = ""
        self.python = ""
        self.main_file: str | None = None
        self.corrupt = False
        self.wire_bytes = 0
        self._buffer = bytearray()
        self._unread: list[tuple[bytes, bytes]] = []  # (format, payload) of batches not indexed yet
        self.offset = 0  # a materialised window: the event index of its first state
        self.snapshots: dict[
            int, tuple[dict[str, str], dict[str, list], int]
        ] = {}  # invocation -> locals at the window's start

    def __len__(self) -> int:
        self.materialize()
        return len(self.kinds)

    # -- reading the wire ------------------------------------------------------------------------
    def feed_frames(self, chunk: bytes) -> None:
        """Frames: format byte, 4-byte little-endian length, payload (see child.Channel)."""
        self.wire_bytes += len(chunk)
        self._buffer += chunk
        if len(self._buffer) - 5 < int.from_bytes(self._buffer[1:5], "little"):
            return  # the frame is not complete yet (no copying while a large one arrives)
        data = bytes(self._buffer)
        pos = 0
        while len(data) - pos >= 5 and not self.corrupt:
            kind = data[pos : pos + 1]
            size = int.from_bytes(data[pos + 1 : pos + 5], "little")
            if len(data) - pos - 5 < size:
                break
            payload = data[pos + 5 : pos + 5 + size]
            pos += 5 + size
            if kind in (b"M", b"J"):  # the final record: the outcome is needed at once
                batch = self._decode(kind.lower(), payload)
                if batch is not None:
                    self.feed(batch)  # only sets the outcome: the events before it wait for a reader
            elif kind in (b"m", b"j"):
                self._unread.append((kind, payload))  # decoded and indexed on first use
            else:
                self.corrupt = True
        self._buffer = bytearray(data[pos:])

    def materialize(self) -> None:
        """Index the events received so far (done on first use, not while the program runs)."""
        if not self._unread:
            return
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            self._index()
        finally:
            if gc_was_enabled:
                gc.enable()

    def _decode(self, kind: bytes, payload: bytes) -> list | None:
        try:
            return msgspec.msgpack.decode(payload) if kind == b"m" else msgspec.json.decode(payload)
        except (msgspec.DecodeError, ValueError, TypeError):
            self.corrupt = True
            return None

    def _index(self) -> None:
        # batches hold ~10^5 small lists: the cyclic GC scanning them while they are made would
        # cost more than making them (none can form a cycle), so the caller turns it off
        unread, self._unread = self._unread, []
        for kind, payload in unread:
            batch = self._decode(kind, payload)
            if batch is None:
                break
            try:
                self.feed(batch)
            except (ValueError, TypeError, KeyError, IndexError):
                self.corrupt = True
                break

    def feed(self, batch: list) -> None:
        for event in batch:
            tag = event[0]
            if tag == "l":
                self._state(event[1], "line", event[2], event[3])
                if event[4] is not None:
                    self.caught[len(self.kinds) - 1] = event[4]
            elif tag == "c":
                self._call(event)
            elif tag == "s":
                self._snapshot(event)
            elif tag == "r" or tag == "x":
                inv = self.invocations[event[1]]
                self._state(event[1], "return" if tag == "r" else "exception", event[2] or inv.first_line, None)
                self.values[len(self.kinds) - 1] = _decode_repr(event[3])
            elif tag == "u":
                # a callee returned and changed objects its caller holds: the caller's next state
                # carries the change, and stops before it show it through `updates`
                inv_id, changes = event[1], event[2]
                self.pending_updates.setdefault(inv_id, []).extend(changes)
                self.updates.setdefault(inv_id, []).append((len(self.kinds) - 1, changes))
            elif tag == "o":
                self.pending_out.append(event[1])
                self.all_stdout.append(event[1])
            elif tag == "e":
                self.pending_err.append(event[1])
                self.all_stderr.append(event[1])
            elif tag == "k":
                _, cid, name, filename, first = event
                self.codes[cid] = (name, filename, first)
                self._load_source(filename)
            elif tag == "engine":
                self.engine, self.python = event[1], event[2]
            elif tag == "end":
                _, kind, message, exit_code, value = event[:5]
                self.outcome = Outcome(kind, message, exit_code, None if value is None else _decode_repr(value))
                if len(event) > 5 and event[5]:
                    self.main_file = str(event[5])  # a module launch: the file the child ran

    def _load_source(self, filename: str) -> None:
        if filename in self.sources:
            return
        if filename == self.main_path and self.program.source is not None:
            text = self.program.source
        else:
            try:
                text = Path(filename).read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
        self.sources[filename] = text
        self.source_lines[filename] = text.splitlines()

    def _snapshot(self, event: list) -> None:
        """A frame already on the stack where a materialised window begins: its locals there."""
        _, inv_id, cid, line, depth, changes = event
        name, path, first = self.codes[cid]
        inv = self.invocations[inv_id] = _Invocation(name, path, depth, first, self.source_lines.get(path, []))
        if changes:
            _apply_in_place(inv.locals, inv.values, changes)
        self.snapshots[inv_id] = (dict(inv.locals), dict(inv.values), line)

    def snapshot_view(self, inv_id: int, until: int) -> tuple[dict[str, str], dict]:
        """A frame known only by its snapshot: its locals at the window's start, plus what callees
        that returned since changed (up to state `until`)."""
        local_reprs, encoded, _ = self.snapshots[inv_id]
        local_reprs, encoded = dict(local_reprs), dict(encoded)
        for index, changes in self.updates.get(inv_id, []):
            if index <= until:
                _apply_in_place(local_reprs, encoded, changes)
        return local_reprs, {k: _decode_value(v) for k, v in encoded.items()}

    def _call(self, event: list) -> None:
        _, inv_id, cid, line, depth, changes = event
        name, path, first = self.codes[cid]
        self.invocations[inv_id] = _Invocation(name, path, depth, first, self.source_lines.get(path, []))
        self._state(inv_id, "call", line or first, changes)  # a module's call event says line 0

    def _state(self, inv_id: int, kind: str, line: int, changes: list | None) -> None:
        if inv_id in self.pending_updates:
            changes = self.pending_updates.pop(inv_id) + (changes or [])
        index = len(self.kinds)
        self.kinds.append(kind)
        self.lines.append(line)
        self.invs.append(inv_id)
        self.changes.append(changes)
        inv = self.invocations[inv_id]
        if changes:
            _apply_in_place(inv.locals, inv.values, changes)
        position = len(inv.states)
        inv.states.append(index)
        if position % _CHECKPOINT == 0:
            inv.checkpoints[index] = (dict(inv.locals), dict(inv.values))
        if self.pending_out:
            self.stdout_at[index] = "".join(self.pending_out)
            self.pending_out.clear()
        if self.pending_err:
            self.stderr_at[index] = "".join(self.pending_err)
            self.pending_err.clear()

    # -- rebuilding states -----------------------------------------------------------------------
    def locals_at(self, index: int) -> tuple[dict[str, str], dict[str, list]]:
        self.materialize()
        inv = self.invocations[self.invs[index]]
        position = bisect_left(inv.states, index)
        base = position - position % _CHECKPOINT
        local_reprs, values = inv.checkpoints[inv.states[base]]
        local_reprs, values = dict(local_reprs), dict(values)
        for k in range(base + 1, position + 1):
            changes = self.changes[inv.states[k]]
            if changes:
                _apply_in_place(local_reprs, values, changes)
        return local_reprs, values

    def make_state(self, index: int, local_reprs: dict[str, str], values: dict[str, Value]) -> State:
        inv_id = self.invs[index]
        inv = self.invocations[inv_id]
        line = self.lines[index]
        lines = inv.lines
        return State(
            self.kinds[index],  # type: ignore[arg-type]
            line,
            lines[line - 1] if 0 < line <= len(lines) else "",
            inv.function,
            inv.depth,
            inv_id,
            local_reprs,
            self.values.get(index),
            inv.path,
            self.stdout_at.get(index, ""),
            self.stderr_at.get(index, ""),
            values,
            self.caught.get(index),
        )

    def caller_view(
        self, inv_id: int, since: int, until: int, local_reprs: dict[str, str], values: dict
    ) -> tuple[dict[str, str], dict]:
        """A caller's locals at state `until`, from its own latest state `since` plus what the
        callees that returned in between changed."""
        self.materialize()
        updates = self.updates.get(inv_id)
        if not updates:
            return local_reprs, values
        start = bisect_left(updates, (since, []))
        relevant = [c for index, c in updates[start:] if since <= index <= until]
        if not relevant:
            return local_reprs, values
        local_reprs, encoded = dict(local_reprs), dict[str, list]()
        for changes in relevant:
            _apply_in_place(local_reprs, encoded, changes)
        merged = {k: v for k, v in values.items() if k in local_reprs and k not in encoded}
        merged.update({k: _decode_value(v) for k, v in encoded.items()})
        return local_reprs, merged

    def state(self, index: int) -> State:
        local_reprs, values = self.locals_at(index)
        return self.make_state(index, local_reprs, {k: _decode_value(v) for k, v in values.items()})


class StateList(Sequence[State]):
    """The states of a recording, built on demand (and cheaply in order, when iterated)."""

    def __init__(self, log: EventLog) -> None:
        self._log = log

    def __len__(self) -> int:
        return len(self._log)

    @overload
    def __getitem__(self, index: int) -> State: ...
    @overload
    def __getitem__(self, index: slice) -> list[State]: ...
    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._log.state(i) for i in range(*index.indices(len(self)))]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("state index out of range")
        return self._log.state(index)

    def __iter__(self) -> Iterator[State]:
        log = self._log
        running: dict[int, tuple[dict[str, str], dict[str, Value]]] = {}
        for index in range(len(log)):
            inv_id = log.invs[index]
            local_reprs, values = running.get(inv_id, ({}, {}))
            changes = log.changes[index]
            if changes:
                local_reprs, values = dict(local_reprs), dict(values)
                for i in range(0, len(changes), 2):
                    name, enc = changes[i], changes[i + 1]
                    values.pop(name, None)
                    if type(enc) is list and not enc:
                        local_reprs.pop(name, None)
                    elif type(enc) is list:
                        values[name] = _decode_value(enc)
                        local_reprs[name] = values[name].repr
                    else:
                        local_reprs[name] = _decode_repr(enc)
            running[inv_id] = (local_reprs, values)
            yield log.make_state(index, local_reprs, values)


def _apply_in_place(local_reprs: dict[str, str], values: dict[str, list], changes: list) -> None:
    for i in range(0, len(changes), 2):
        name, enc = changes[i], changes[i + 1]
        if type(enc) is list:
            if enc:
                local_reprs[name] = str(enc[0])
                values[name] = enc
            else:
                local_reprs.pop(name, None)
                values.pop(name, None)
        else:
            local_reprs[name] = _decode_repr(enc)
            if values:
                values.pop(name, None)


def _decode_repr(enc) -> str:
    kind = type(enc)
    if kind is str:
        return enc
    if kind is int:
        return str(enc)
    if enc is True:
        return "True"
    if enc is False:
        return "False"
    if enc is None:
        return "None"
    if kind is list and enc:
        return str(enc[0])
    return repr(enc)


def _decode_value(enc: list) -> Value:
    text, type_name, children, more = enc
    return Value(
        repr=text,
        type=type_name,
        children=tuple(
            (str(name), _decode_value(c) if type(c) is list else Value(_decode_repr(c))) for name, c in children
        ),
        more=int(more),
    )
