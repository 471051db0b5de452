"""Python child processes recorded too (`subProcess: true`, debugpy's key): every way the standard
library starts a program (`subprocess`, `os.posix_spawn`'s users, multiprocessing's spawn and
forkserver start methods) ends in `_posixsubprocess.fork_exec`; a command that runs a Python program
is rewritten there so the new interpreter records itself (`descendant_main`), writing its events to a
file in the session's children folder, while it runs exactly as itself: its own stdin, stdout,
stderr, file descriptors, exit code. The adapter offers each recording as a child debug session
(DAP `startDebugging`).

What is not a program of the user's is left alone: `python -c CODE` (multiprocessing's resource
tracker and forkserver) except multiprocessing's `spawn_main`, which runs the user's code; `python`
reading a program from stdin; the REPL. Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable

from neural_dap.trace.child.dressed import like

_PYTHON = re.compile(r"python[0-9.]*[a-z]?(\.exe)?$")
_VERSIONED = re.compile(r"^python3\.(\d+)[a-z]?$")
# interpreter options that take a value as the next argument (`-W error`, `-X dev`)
_TAKES_VALUE = frozenset("WXQ")
# multiprocessing's `-c` programs that run the user's code: a spawned worker, and the forkserver
# (its own code is not the user's, the workers it forks are: each records its run, as a fork does)
_MULTIPROCESSING = ("from multiprocessing.spawn import spawn_main", "from multiprocessing.forkserver import main")

# what the rewritten child runs as `-c` (its first argument: the spec file; the original command
# follows). The '' that `-c` puts first on sys.path goes: the recorder's imports must not find a
# `json.py` of the working folder, and the program gets the path its own command gives it.
BOOT = (
    "import sys; sys.path[:1] = [{own!r}] if sys.path[:1] == [''] else [{own!r}, *sys.path[:1]];"
    " from neural_dap.trace.child.descendant_main import main; main()"
)


def split_python_command(argv: list[str]) -> tuple[list[str], list[str]] | None:
    """(interpreter options, what runs: `[script, *args]`, `['-m', module, *args]` or
    `['-c', code, *args]`) for a command that runs a Python program; None for anything else."""
    if not argv or not _PYTHON.search(os.path.basename(argv[0])) or not _recordable_python(argv[0]):
        return None
    options: list[str] = []
    k = 1
    while k < len(argv):
        arg = argv[k]
        if arg in ("-m", "-c"):
            return (options, argv[k:]) if k + 1 < len(argv) else None
        if arg == "--":
            return (options, argv[k + 1 :]) if k + 1 < len(argv) else None
        if arg == "-" or not arg.startswith("-"):
            return (options, argv[k:]) if arg != "-" else None
        if arg.startswith("--"):  # --version, --help: no program
            return None
        options.append(arg)
        if arg[-1] in _TAKES_VALUE and len(arg) == 2:  # `-W error`: the value is the next argument
            if k + 1 >= len(argv):
                return None
            options.append(argv[k + 1])
            k += 1
        elif any(c in "mc" for c in arg[1:]):  # `-um module`, `-Bc code`: a flag group ending in m / c
            return None  # rare: left alone rather than misread
        k += 1
    return None


def _recordable_python(name: str) -> bool:
    """An interpreter our recorder runs in: this one, or a CPython 3.10+ (a venv's python is a link to
    one). Another (a Python 2 still on PATH) runs its program unrecorded."""
    found = name if os.sep in name else shutil.which(name)
    if not found:
        return False
    real = os.path.realpath(found)
    if real == os.path.realpath(sys.executable):
        return True
    version = _VERSIONED.search(os.path.basename(real))
    return version is not None and int(version.group(1)) >= 10


def records(rest: list[str]) -> bool:
    """Whether this program is the user's: a script, a module, or multiprocessing's workers."""
    if rest[0] == "-c":
        return len(rest) > 1 and rest[1].startswith(_MULTIPROCESSING)
    return True


def rewritten(argv: list[str], spec: str, own_path: str) -> list[str] | None:
    split = split_python_command(argv)
    if split is None or not records(split[1]):
        return None
    options, rest = split
    return [argv[0], *options, "-c", BOOT.format(own=own_path), spec, *rest]


def follow_python_children(folder: str, spec: Callable[[], dict], own_path: str, live: Callable[[], bool]) -> None:
    """From now on, the Python programs this process starts record themselves (see the module's
    doc) in `folder`, as `spec()` says (written once, at the first child: a module launch knows its
    roots only once it runs); `live()` is false in a replay of the program (a checkpoint's worker),
    which must not make a second recording of a child the first run already recorded."""
    spec_path = os.path.join(folder, "spec.json")

    def command(argv, executable):
        """The command to start instead of `argv`: the same, or the program recording itself
        (`executable`: the file that will run, which `argv[0]` need not name)."""
        if not live():
            return argv
        try:
            text = [os.fsdecode(a) for a in argv]
            if executable is not None and not _recordable_python(os.fsdecode(executable)):
                return argv
        except (TypeError, ValueError):
            return argv
        new = rewritten(text, spec_path, own_path) if text else None
        return new if new is not None and _write_spec(spec_path, spec) else argv

    try:
        import _posixsubprocess

        fork_exec = _posixsubprocess.fork_exec
        _posixsubprocess.fork_exec = like(
            fork_exec,
            lambda args, executables, *rest: fork_exec(command(args, _first_existing(executables)), executables, *rest),
        )
    except (ImportError, AttributeError):
        pass
    # subprocess starts some programs with os.posix_spawn instead (more of them from 3.13)
    for name in ("posix_spawn", "posix_spawnp"):
        spawn = getattr(os, name, None)
        if spawn is not None:
            setattr(os, name, _spawning(spawn, command))


def _first_existing(executables):
    """The candidate the exec will run: the first that exists (a PATH search tries them in order)."""
    for candidate in executables or ():
        if os.path.exists(candidate):
            return candidate
    return None


def _spawning(spawn, command):
    def posix_spawn(path, argv, *args, **kwargs):
        found = path if os.sep in os.fsdecode(path) else shutil.which(os.fsdecode(path))
        return spawn(path, command(argv, found), *args, **kwargs)

    posix_spawn.__name__ = spawn.__name__
    return like(spawn, posix_spawn)


def _write_spec(path: str, spec: Callable[[], dict]) -> bool:
    if os.path.exists(path):
        return True
    part = f"{path}.{os.getpid()}"  # written whole, then renamed: a child never reads half of it
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(spec(), fh)
        os.replace(part, path)
    except OSError:
        return False  # the folder is gone (the session ended): the child runs unrecorded
    return True
