"""What the recorder runs and how a run ended: the program, the limits it runs under, its outcome.
Every front end describes a recording with these; the recorder and the event log read them."""

from __future__ import annotations

from typing import Literal

import msgspec

OutcomeKind = Literal[
    "finished",
    "raised",
    "exited",
    "timeout",
    "event_limit",
    "memory",
    "crashed",
    "error",
    "paused",
    "threads",
    "terminated",
]


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

# The first lines of a Python process the debugger starts with `-c` (the recording child; debugpy's
# adapter beside a session): `-c` puts '' (the working folder) first on sys.path, where a project's
# own `json.py` or `random.py` would shadow the standard library's for the debugger's own imports
WITHOUT_THE_WORKING_FOLDER = "import sys\nif sys.path[:1] == ['']:\n    del sys.path[0]\n"


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
    # a terminal console (dap/terminal_link.py): `stdin` is a FIFO of what the user types, this log
    # keeps the same bytes for replays, and the program's output is copied to the `output_copy` FIFO
    stdin_log: str | None = None
    output_copy: str | None = None
    # CPython 3.11 runs a list/set/dict comprehension in a frame of its own, and debugpy steps into
    # it; 3.12+ inline them (PEP 709). False: one step on every version (the same trace everywhere,
    # what datasets want); True: the frames as the interpreter has them (a debug session)
    comprehensions: bool = False
    # a debug session's recording, as debugpy would run the program: line events where debugpy stops
    # (its rule for a one-line loop's rounds differs by version: child/monitoring.py's
    # loop_line_rule), and the interpreter started as its launcher starts it (frozen modules off, so
    # `os` shows `<module 'os' from '...os.py'>`). False: one rule on every version, the interpreter
    # as it comes (a trace, a dataset, the reality a model's predictions are reconciled with)
    as_debugpy: bool = False
    # subProcess: the folder where the Python programs it starts record themselves (trace/children.py)
    children: str | None = None
    # run under the sandbox: reads of the world are real, changes to it are refused, but for the
    # files under a scratch folder of its own (its TMPDIR): a run the user did not ask to happen (the
    # language server's, a failing test run again)
    sandbox: bool = False


def run_again(program: Program) -> Program:
    """The program as a later recording of it runs (a what-if branch): what was typed into its
    terminal the first time is read from the log (nobody types it again; the terminal is gone)."""
    program = msgspec.structs.replace(program, children=None)  # its children ran in the first run
    if program.stdin_log is None:
        return program
    return msgspec.structs.replace(program, stdin=program.stdin_log, stdin_log=None, output_copy=None)


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
            "threads": "another thread ran the program's code: the recording of one thread ended",
            "event_limit": "the program was stopped at the event limit",
            "memory": "the program ran out of memory",
            "crashed": "the interpreter crashed",
            "error": "the program could not be run",
            "terminated": "the process was ended by a signal",
        }[self.kind]
        return f"{text}: {self.message}" if self.message else text
