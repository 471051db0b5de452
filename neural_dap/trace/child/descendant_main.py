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


def main() -> None:
    spec_path, command = sys.argv[1], sys.argv[2:]
    # sys.path is what `python -c` made it, with BOOT's entry first in place of the '' it puts there
    # (or, under -P, before the rest): the runner replaces that first entry with the program's own, as
    # `python script.py` or `-m` would have set it, and nothing is imported from the working folder
    # before then
    folder = os.path.dirname(spec_path)
    try:
        with open(spec_path) as fh:
            spec = json.load(fh)
        cfg = dict(spec)
        cfg.update(_what_runs(command))
        cfg.update(threads=True, descendant=True, wall_time=1e9, children=folder)
        events_fd = os.open(os.path.join(folder, f"{os.getpid()}.events"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        from neural_dap.trace.child.channel import Limits
        from neural_dap.trace.child.forked import describe
        from neural_dap.trace.child.runner import record_here

        started = describe(folder, command)
    except Exception:  # (the session's folder went, an import failed): the program runs, unrecorded
        _run_unrecorded(command)

    record_here(
        cfg,
        Limits(cfg),
        events_fd,
        exit_code=_exit_code,
        finished=lambda sent: describe(folder, command, started, sent),
    )


def _run_unrecorded(command: list[str]) -> None:
    """The command as it was given, in place of this process: `python [options] COMMAND...`."""
    given = list(getattr(sys, "orig_argv", [sys.executable]))
    options = given[1 : given.index("-c")] if "-c" in given else []
    os.execv(sys.executable, [given[0], *options, *command])


def _what_runs(command: list[str]) -> dict:
    if command[0] == "-m":
        return {"module": command[1], "argv": command[2:], "path": os.path.join(os.getcwd(), "__main__.py")}
    if command[0] == "-c":
        return {"source": command[1], "argv": command[2:], "path": "<string>", "dash_c": True}
    return {"path": os.path.abspath(command[0]), "argv": command[1:], "argv0": command[0]}


def _exit_code(outcome: tuple) -> int:
    kind, code = outcome[0], outcome[2]
    if isinstance(code, int):
        return code
    return 0 if kind == "finished" else 1
