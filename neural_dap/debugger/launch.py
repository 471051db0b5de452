"""What to debug, built once from what a user wrote: a file or a module, its arguments, folder,
environment (`env` over an `envFile`), interpreter and the keys neural-dap does not honour.

Every front end (DAP, the terminal, the MCP server) describes a launch with `LaunchRequest`; the
errors here are the ones a user reads, so each names the key and what to write instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import msgspec

from neural_dap.core.world import Entry, LaunchSpec

# debugpy's launch keys that this server reads but does not act on: a user who wrote one is told
# (once, at launch) rather than left to wonder why it had no effect.
NOT_HONOURED: dict[str, tuple[Any, str]] = {  # key: (the value that matches what neural-dap does, why)
    # (`console` and `redirectOutput` are read by dap/terminal.py)
    "django": (False, "no Django template debugging"),
    "jinja": (False, "no Jinja template debugging"),
    "gevent": (False, "no gevent support"),
    "sudo": (False, "the program runs as you"),
    "showReturnValue": (True, "return values are always shown, as `(return) f`"),
    "pyramid": (False, "no Pyramid support"),
    "autoReload": (None, "no auto-reload"),
    "logToFile": (False, "no log file"),
}


class LaunchError(ValueError):
    """A launch that cannot start, with the reason a user can act on."""


class LaunchRequest(msgspec.Struct, frozen=True, omit_defaults=True):
    program: str | None = None
    module: str | None = None
    args: tuple[str, ...] = ()
    cwd: str | None = None
    env: dict[str, str] = {}
    env_file: str | None = None
    entry: Entry | None = None
    world: str = "recorded"
    python: str | None = None
    python_args: tuple[str, ...] = ()
    stdin: str | None = None  # a file, read by the program as its standard input
    source: str | None = None  # the program's text, where it is not (only) on disk (an unsaved editor buffer)
    options: dict[str, Any] = {}  # the world's own keys, and anything else the client sent


class Launch(msgspec.Struct, frozen=True):
    spec: LaunchSpec
    notes: tuple[str, ...] = ()  # what the user should know: keys that had no effect


def build_launch(request: LaunchRequest) -> Launch:
    """The launch spec a world starts from, or a `LaunchError` saying what is wrong."""
    cwd = os.path.abspath(os.path.expanduser(request.cwd)) if request.cwd else os.getcwd()
    if request.cwd and not os.path.isdir(cwd):
        raise LaunchError(f"cwd {cwd} is not a folder")
    if request.program and request.module:
        raise LaunchError("launch takes 'program' or 'module', not both")
    if request.module:
        if request.entry is not None:
            raise LaunchError("'entry' calls a function of a 'program' file; a module launch runs the module")
        program = resolve_module(request.module, cwd, request.python)
    elif request.program:
        program = os.path.abspath(os.path.join(cwd, os.path.expanduser(request.program)))
        if request.source is None and not os.path.isfile(program):
            raise LaunchError(f"the program {program} does not exist")
    else:
        raise LaunchError("launch needs 'program' (the Python file to debug) or 'module' (e.g. \"pytest\")")
    stdin = None
    if request.stdin:
        stdin = os.path.abspath(os.path.join(cwd, os.path.expanduser(request.stdin)))
        if not os.path.isfile(stdin):
            raise LaunchError(f"stdin: {stdin} is not a file (the program's input is read from a file)")
    env = dict(read_env_file(request.env_file, cwd)) if request.env_file else {}
    env.update(request.env)  # debugpy's order: `env` overrides the file
    spec = LaunchSpec(
        program=program,
        args=tuple(request.args),
        module=request.module,
        python_args=tuple(request.python_args),
        stdin=stdin,
        cwd=cwd,
        env=env or None,
        entry=request.entry,
        source=request.source,
        world=request.world,
        python=request.python,
        options=request.options,
    )
    ignored = sorted(k for k, v in request.options.items() if k in NOT_HONOURED and v != NOT_HONOURED[k][0])
    notes = tuple(f"neural-dap ignores {k}={request.options[k]!r}: {NOT_HONOURED[k][1]}" for k in ignored)
    return Launch(spec, notes)


_MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")

# Run in the program's interpreter, in its folder: where `python -m MODULE` would find MODULE's code
# (a package runs its __main__). find_spec imports the parent packages, which the user asked to run.
_FIND_MODULE = """
import importlib.util, sys
sys.path.insert(0, '')
name = sys.argv[1]
spec = importlib.util.find_spec(name)
if spec is not None and spec.submodule_search_locations is not None:
    spec = importlib.util.find_spec(name + '.__main__')
print(spec.origin if spec is not None and spec.origin else '')
"""


def resolve_module(module: str, cwd: str, python: str | None) -> str:
    """The file `python -m module` runs, looked up by the interpreter that will run it."""
    if not _MODULE_NAME.fullmatch(module):
        raise LaunchError(f"'module' must be a dotted module name such as \"pytest\", not {module!r}")
    try:
        found = subprocess.run(
            [python or sys.executable, "-c", _FIND_MODULE, module],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=30,
            env={k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LaunchError(f"cannot look up module {module!r}: {exc}") from None
    origin = found.stdout.strip().splitlines()[-1] if found.stdout.strip() else ""
    if found.returncode != 0 or not origin or not os.path.isfile(origin):
        detail = found.stderr.strip().splitlines()[-1:] if found.stderr.strip() else []
        raise LaunchError(
            f"no module named {module!r} for {python or sys.executable} in {cwd}"
            + (f" ({detail[0]})" if detail else "")
        )
    return origin


_ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


def read_env_file(path: str, cwd: str) -> dict[str, str]:
    """A dotenv file, as VS Code's Python tools read one: KEY=VALUE lines, `export`, quotes, comments."""
    full = os.path.abspath(os.path.join(cwd, os.path.expanduser(path)))
    try:
        with open(full, encoding="utf-8") as fh:
            text = fh.read(1_000_000)
    except OSError as exc:
        raise LaunchError(f"cannot read envFile {full}: {exc.strerror or exc}") from None
    env: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _ENV_LINE.match(line)
        if match is None:
            raise LaunchError(f"envFile {full}, line {number}: expected KEY=VALUE, found {line.strip()[:60]!r}")
        env[match.group(1)] = _env_value(match.group(2))
    return env


def _env_value(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        inner = raw[1:-1]
        return inner.replace("\\n", "\n").replace('\\"', '"') if raw[0] == '"' else inner
    return raw.split(" #", 1)[0].rstrip()
