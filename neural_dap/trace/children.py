"""The Python child processes a recorded program started (`subProcess: true`), each of which recorded
itself into the session's children folder (trace/child/descendants.py): listing them, and opening
one as a recording of its own, for a child debug session.

A folder holds, per child, `PID.json` (what ran: command, folder, interpreter) and `PID.events`
(the recording child's event stream, as the adapter reads it from a pipe). A child session is
opened by path from a launch request; the path must be such a file in a folder this user made
with the name this module gives them (a launch request cannot make the adapter parse just any file).
"""

from __future__ import annotations

import json
import os
import stat
import tempfile

import msgspec

from neural_dap.trace.eventlog import EventLog
from neural_dap.trace.program import Outcome, Program
from neural_dap.trace.recording import Recording

_PREFIX = "neural-dap-children-"
_CHUNK = 1 << 20


class ChildProcess(msgspec.Struct, frozen=True):
    pid: int
    ppid: int
    command: tuple[str, ...]  # what the program ran, after the interpreter's options
    cwd: str
    python: str
    events: str  # the path of its recording
    count: int | None = None  # how many events it recorded (None: its recording did not end)

    @property
    def name(self) -> str:
        first = self.command[0]
        if first == "-c" and "forkserver" in " ".join(self.command[1:2]):  # (it imports the main module)
            return f"multiprocessing forkserver (pid {self.pid})"
        if first in ("-c", "--fork"):  # multiprocessing's spawn_main, or a forked Process
            return f"multiprocessing worker (pid {self.pid})"
        if first == "-m" and len(self.command) > 1:
            return f"-m {self.command[1]} (pid {self.pid})"
        return f"{os.path.basename(first)} (pid {self.pid})"


class ChildRecordingError(ValueError):
    pass


def new_children_folder() -> str:
    return tempfile.mkdtemp(prefix=_PREFIX)  # 0700


def forget_children(folder: str) -> None:
    """Remove what an earlier run of the program left (it is recorded again from the start)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass


def list_children(folder: str) -> list[ChildProcess]:
    """The children that recorded themselves, in the order they started."""
    found: list[tuple[float, ChildProcess]] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    for name in names:
        if not name.endswith(".json") or not name[:-5].isdigit():
            continue
        events = os.path.join(folder, name[:-5] + ".events")
        try:
            with open(os.path.join(folder, name), "rb") as fh:
                about = json.loads(fh.read(1 << 16))
            child = ChildProcess(
                pid=int(about["pid"]),
                ppid=int(about["ppid"]),
                command=tuple(str(c) for c in about["command"]),
                cwd=str(about["cwd"]),
                python=str(about["python"]),
                events=events,
                count=about.get("events") if isinstance(about.get("events"), int) else None,
            )
            started = float(about.get("started", 0.0))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if child.command and os.path.isfile(events):
            found.append((started, child))
    return [child for _, child in sorted(found, key=lambda item: item[0])]


def _checked(events: str) -> str:
    """`events` as a child's recording of this user's, or the reason it is not."""
    path = os.path.realpath(events)
    folder = os.path.dirname(path)
    if not os.path.basename(folder).startswith(_PREFIX) or not path.endswith(".events"):
        raise ChildRecordingError(f"{events} is not a child process's recording")
    for checked in (folder, path):
        info = os.lstat(checked)
        if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise ChildRecordingError(f"{checked} is not this user's own (owned by another, or writable by others)")
    return path


def open_child(events: str) -> Recording:
    """A child process's recording, to debug as any recording is."""
    path = _checked(events)
    about_path = path[: -len(".events")] + ".json"
    try:
        with open(about_path, "rb") as fh:
            about = json.loads(fh.read(1 << 16))
        command = [str(c) for c in about["command"]]
        cwd = str(about["cwd"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ChildRecordingError(f"cannot read what the child process ran ({about_path}): {exc}") from None
    program = _program(command, cwd)
    log = EventLog(program, program.path)
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            log.feed_frames(chunk)
    outcome = log.outcome or Outcome("crashed", "the child process ended before its recording did (it was killed?)")
    rec = Recording(program, log, outcome, fd_stdout="", fd_stderr="", seconds=0.0)
    if program.module:
        rec.module_file = program.path
    return rec


def _program(command: list[str], cwd: str) -> Program:
    if command[0] == "-m":
        return Program(os.path.join(cwd, "__main__.py"), argv=tuple(command[2:]), cwd=cwd, module=command[1])
    if command[0] == "--fork":  # a forked multiprocessing worker: the parent's program, from the worker's run
        return Program(command[1] if len(command) > 1 else "<fork>", cwd=cwd)
    if command[0] == "-c":
        return Program("<string>", argv=tuple(command[2:]), cwd=cwd, source=command[1] if len(command) > 1 else "")
    return Program(os.path.join(cwd, command[0]), argv=tuple(command[1:]), cwd=cwd)
