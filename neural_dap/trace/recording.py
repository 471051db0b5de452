"""One recorded execution as data: its program, its event log and how it ended (the states are
built on demand). Made by `recorder.py` (a recording child) and `children.py` (a child process's
own recording); read by the executions (`execution.py`)."""

from __future__ import annotations

import os

from neural_dap.trace.eventlog import EventLog, StateList
from neural_dap.trace.program import Outcome, Program


class Recording:
    """One recorded execution. `states` are built on demand from the compact event log."""

    def __init__(
        self, program: Program, log: EventLog, outcome: Outcome, fd_stdout: str, fd_stderr: str, seconds: float
    ) -> None:
        self.program = program
        self.log = log
        self.outcome = outcome
        self.fd_stdout = fd_stdout  # written to the file descriptors directly, not through sys.stdout
        self.fd_stderr = fd_stderr
        self.seconds = seconds
        self.states: StateList = StateList(log)
        self.module_file: str | None = None  # a module launch: the file `python -m` ran

    @property
    def stdout(self) -> str:
        """Everything the program wrote, also before tracing began."""
        self.log.materialize()
        return "".join(self.log.all_stdout) + self.fd_stdout

    @property
    def stderr(self) -> str:
        self.log.materialize()
        return "".join(self.log.all_stderr) + self.fd_stderr

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
    def refused(self) -> tuple[int, str] | None:
        """(count, the first) of the changes to the world the sandbox refused, if any."""
        self.log.materialize()
        return self.log.refused

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


__all__ = ["Recording"]
