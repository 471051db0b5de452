"""A Python child process of the debuggee, recording itself (`subProcess: true`; see descendants.py).

Run as `python [options] -c BOOT SPEC COMMAND...` where COMMAND is what the program asked for
(`script args`, `-m module args`, `-c code args`). The program runs in this process, as it would
have, with the standard streams, file descriptors and environment it was given; its events go to
`PID.events` in the children folder, with `PID.json` saying what ran. The process ends with the
program's own exit code. Standard library only.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time


def main() -> None:
    spec_path, command = sys.argv[1], sys.argv[2:]
    with open(spec_path) as fh:
        spec = json.load(fh)
    folder = os.path.dirname(spec_path)
    cfg = dict(spec)
    cfg.update(_what_runs(command))
    cfg.update(threads=True, descendant=True, wall_time=1e9, children=folder)
    events_fd = os.open(os.path.join(folder, f"{os.getpid()}.events"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    _describe(folder, command)
    from neural_dap.trace.child.channel import Limits
    from neural_dap.trace.child.runner import record_here

    record_here(cfg, Limits(cfg), events_fd, exit_code=_exit_code)


def _what_runs(command: list[str]) -> dict:
    if command[0] == "-m":
        return {"module": command[1], "argv": command[2:], "path": os.path.join(os.getcwd(), "__main__.py")}
    if command[0] == "-c":
        return {"source": command[1], "argv": command[2:], "path": "<string>", "dash_c": True}
    return {"path": os.path.abspath(command[0]), "argv": command[1:]}


def _describe(folder: str, command: list[str]) -> None:
    about = {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "command": command,
        "cwd": os.getcwd(),
        "python": sys.executable,
        "started": time.time(),
    }
    part = os.path.join(folder, f"{os.getpid()}.json.part")
    with open(part, "w") as fh:
        json.dump(about, fh)
    os.replace(part, part[: -len(".part")])


def _exit_code(outcome: tuple) -> int:
    kind, code = outcome[0], outcome[2]
    if isinstance(code, int):
        return code
    return 0 if kind == "finished" else 1


def discard_past_the_limit(events: list) -> None:
    """The recording reached its event limit: the program runs on (a child's parent waits for it),
    what the tracer still records is dropped."""

    def drop() -> None:
        while True:
            del events[:]
            time.sleep(0.1)

    threading.Thread(target=drop, name="neural-dap-dropper", daemon=True).start()
