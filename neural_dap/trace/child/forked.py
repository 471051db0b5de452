"""A process the program started that records itself (`subProcess: true`): a multiprocessing
worker forked from a traced process, recorded from its own run (`record_call`), and what every such
recording writes beside its events (`describe`: `PID.json`). The entry point of a child started by
`python` is `descendant_main.py`; how its command is rewritten to get there, `descendants.py`.

Standard library only.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from neural_dap.trace.child.lifetime import die_if_signalled, keep_events_when_terminated, register_at_fork_of_ours


def follow_forked_workers(spec: dict, main_path: str) -> None:
    """In a process the program forked: if it is a multiprocessing worker (the fork start method,
    the default on Linux before 3.14), its run (`BaseProcess._bootstrap`) records itself as a child
    process, from an empty stack: the frames it was forked in never resume in it. A bare `os.fork()`
    goes on untraced (it resumes in the middle of the user's frames, which a recording cannot start in)."""
    process = sys.modules.get("multiprocessing.process")
    if process is None:
        return
    original = process.BaseProcess._bootstrap  # type: ignore[attr-defined]

    def _bootstrap(self, *args, **kwargs):
        process.BaseProcess._bootstrap = original  # type: ignore[attr-defined]  # its own forks are its own
        return record_call(spec, ["--fork", main_file(main_path)], lambda: original(self, *args, **kwargs))

    process.BaseProcess._bootstrap = _bootstrap  # type: ignore[attr-defined]


def main_file(default: str) -> str:
    """The user's main file in this process: a forkserver's workers run the functions of the main
    module it imported as `__mp_main__` (the server's own program is `-c` code)."""
    for name in ("__mp_main__", "__main__"):
        path = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(path, str) and os.path.isfile(path):
            return os.path.abspath(path)
    return default


def record_call(spec: dict, command: list[str], run):
    """Record `run()` in this process as a child process's recording; returns what it returns."""
    from neural_dap.trace.child.channel import Channel, Limits
    from neural_dap.trace.child.engines import choose_engine
    from neural_dap.trace.child.recorder import _CAPTURES, PASS, TEE, Recorder, set_output_mode
    from neural_dap.trace.child.threads import ThreadTable

    folder = spec["folder"]
    cfg = {**spec, "path": command[1], "threads": True, "descendant": True, "wall_time": 1e9, "children": folder}
    try:
        events_fd = os.open(os.path.join(folder, f"{os.getpid()}.events"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        started = describe(folder, command)
    except OSError:
        return run()  # the session's folder is gone: run as it would, unrecorded
    channel = Channel(events_fd, Limits(cfg))
    channel.exit = lambda _code: discard_past_the_limit(channel.events)  # type: ignore[assignment, return-value]

    keep_events_when_terminated(channel, lambda sent: describe(folder, command, started, sent))  # a pool's way
    rec = Recorder(cfg, channel)
    name, engine = choose_engine("auto", rec, threads=ThreadTable(rec.events.append))
    for capture in _CAPTURES:  # its output is recorded, and still written where it goes
        capture.recorder = rec
    set_output_mode(TEE)
    owner = os.getpid()

    def forked() -> None:  # a fork the worker makes is not the worker: it never writes to its file
        if os.getpid() != owner and not channel.closed:
            channel.closed = True
            engine.stop()
            set_output_mode(PASS)
            try:
                os.close(events_fd)
            except OSError:
                pass

    register_at_fork_of_ours(after_in_child=forked)
    channel.events.append(["engine", name, sys.version.split()[0]])
    channel.start()
    outcome: tuple = ("finished", "", 0, None)
    engine.start()
    try:
        result = run()
        if isinstance(result, int) and result:
            outcome = ("exited", f"the worker ended with exit code {result}", result, None)
        return result
    except BaseException as exc:
        outcome = ("raised", f"{type(exc).__name__}: {exc}"[:500], 1, None)
        raise
    finally:
        engine.stop()
        channel.finish(*outcome)
        describe(folder, command, started, channel.sent)
        die_if_signalled(channel)


def describe(folder: str, command: list[str], started: float | None = None, events: int | None = None) -> float:
    """`PID.json`: what ran; once the recording is whole, how many events it has too (a child that
    ran none of the user's code is not offered as a session). Returns when it started."""
    when = started if started is not None else time.time()
    about: dict = {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "command": command,
        "cwd": os.getcwd(),
        "python": sys.executable,
        "started": when,
    }
    if events is not None:
        about["events"] = events
    part = os.path.join(folder, f"{os.getpid()}.json.part")
    try:
        with open(part, "w") as fh:
            json.dump(about, fh)
        os.replace(part, part[: -len(".part")])
    except OSError:
        pass  # the session's folder is gone
    return when


def discard_past_the_limit(events: list) -> None:
    """The recording reached its event limit: the program runs on (a child's parent waits for it),
    what the tracer still records is dropped."""

    def drop() -> None:
        while True:
            del events[:]
            time.sleep(0.1)

    threading.Thread(target=drop, name="neural-dap-dropper", daemon=True).start()
