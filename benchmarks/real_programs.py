"""Real programs, not written for neural-dap, debugged the way their users debug them (issue 21).

Each program in `benchmarks/real_programs/` drives a package as its users drive it (a click CLI, a
pytest run, Markdown and reStructuredText conversions, a thread pool, an asyncio script, a
multiprocessing pool, a filter reading stdin, ...). For each one:

1. it runs plainly (`python driver.py ARGS`, same interpreter): wall time, stdout;
2. it is debugged through a real neural-dap adapter over stdio (recorded world): launch with a
   breakpoint at the driver's line marked `# breakpoint`, run to it (the recorded time: from the
   adapter's start, its `initialize`, to that stop, recording included), count the recorded events
   (`sessionSummary` "states": the tracer records the user's code only), then continue to the end,
   collecting the output events; stdout must equal the plain run's;
3. where debugpy can debug it too, the same breakpoint and a bounded plan of `stepIn` / `next`
   commands go to a real debugpy session (`neural_dap.reality.debugpy_peer`, launched as neural-dap
   is: a module program with debugpy's own `"module"` launch) and to neural-dap, and every stop is
   compared: function, line and locals, as `tests/test_debugpy_agreement.py` does.

Run: python benchmarks/real_programs.py [--only NAME ...] [--fast] [--steps N] [--limit SECONDS]

`tests/test_real_programs.py` runs the `fast` subset through the same functions.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from neural_dap.core.state import TRUNCATION_MARK
from neural_dap.dapwire.client import DapClient, DapError, adapter_command, spawn
from neural_dap.reality.debugpy_peer import DebugpyPeer, Snapshot

PROGRAMS_DIR = Path(__file__).resolve().parent / "real_programs"
MARK = "# breakpoint"
# the same hash seed everywhere (set reprs, dict orders built from sets), no .pyc files in the tree
ENV = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
# from the breakpoint: into whatever the line calls (debugpy's justMyCode stays in user code), then over
PLAN = ("stepIn",) * 12 + ("next",) * 18
REQUEST_TIMEOUT = 60.0


@dataclass(frozen=True)
class Program:
    name: str
    driver: str  # file in real_programs/ holding the `# breakpoint` line (and the program, unless `module`)
    package: str  # what the program drives
    args: tuple[str, ...] = ()
    module: str | None = None  # a module launch (`python -m MODULE ARGS`), run in `cwd`
    cwd: str | None = None  # relative to real_programs/ (default: that folder)
    stdin: str | None = None  # what the program reads on stdin (a debug launch gives it as a file: "stdin")
    env: tuple[tuple[str, str], ...] = ()
    not_compared: str = ""  # why debugpy's stops are not compared (empty: they are)
    fast: bool = False  # in the subset tests/test_real_programs.py runs
    # (check, what is missing) for each check the program is known to fail today; checks:
    # "breakpoint", "end", "output", "agreement". The table shows them; the test skips them.
    known: tuple[tuple[str, str], ...] = ()

    @property
    def comparable(self) -> bool:
        return not self.not_compared

    @property
    def path(self) -> Path:
        return PROGRAMS_DIR / self.driver

    @property
    def workdir(self) -> Path:
        return PROGRAMS_DIR / (self.cwd or ".")

    @property
    def line(self) -> int:
        for k, text in enumerate(self.path.read_text().splitlines(), start=1):
            if text.rstrip().endswith(MARK):
                return k
        raise ValueError(f"{self.driver} has no line marked {MARK!r}")

    @property
    def environment(self) -> dict[str, str]:
        return {**ENV, **dict(self.env)}


STDIN_TEXT = "the quick brown fox\njumps over the lazy dog\nthe dog sleeps\n"
PROGRAMS: tuple[Program, ...] = (
    Program(
        "click-greet",
        "click_greet.py",
        "click",
        ("--verbose", "greet", "--count", "2", "--shout", "Ada"),
        fast=True,
    ),
    Program(
        "click-inventory",
        "click_inventory.py",
        "click",
        ("--item", "apple=3", "--item", "pear=5", "--item", "apple=4", "--sort", "qty", "--min-qty", "4"),
    ),
    Program("markdown", "markdown_convert.py", "Markdown", fast=True),
    Program("docutils", "docutils_rst.py", "docutils"),
    Program("sqlparse", "sqlparse_format.py", "sqlparse", fast=True),
    Program("attrs", "attrs_models.py", "attrs", fast=True),
    Program("pyflakes", "pyflakes_check.py", "pyflakes"),
    Program(
        "pytest",
        "pytest_suite/test_shapes.py",
        "pytest",
        ("-qq",),
        module="pytest",
        cwd="pytest_suite",
        env=(("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1"),),
        fast=True,
    ),
    Program("tomllib", "tomllib_config.py", "tomllib (stdlib)"),
    Program("jinja2", "jinja2_report.py", "Jinja2"),
    Program(
        "json-csv",
        "json_csv_sales.py",
        "csv, json (stdlib)",
        fast=True,
    ),
    Program(
        "thread-pool",
        "thread_pool.py",
        "concurrent.futures (stdlib)",
        known=(
            (
                "agreement",
                "the four workers run at once: after the first step debugpy stops at the same breakpoint in"
                " another worker, as the threads happened to interleave in its run; they interleave otherwise"
                " in the recorded run (each stop, in its thread, is right for that run)",
            ),
        ),
    ),
    Program(
        "asyncio",
        "asyncio_tasks.py",
        "asyncio (stdlib)",
        fast=True,
    ),
    Program(
        "multiprocessing",
        "mp_pool.py",
        "multiprocessing (stdlib)",
        not_compared="debugpy sends `debugpyAttach` for each pool worker; the peer does not attach, and the pool waits",
    ),
    Program(
        "stdin-filter",
        "stdin_wc.py",
        "sys.stdin (stdlib)",
        stdin=STDIN_TEXT,
        not_compared="the debugpy peer launches without stdin",
    ),
    Program(
        "argparse", "argparse_todo.py", "argparse (stdlib)", ("--list", "home", "add", "buy milk", "--priority", "2")
    ),
    Program("logs-re", "logs_dataclasses_re.py", "re, dataclasses (stdlib)", fast=True),
    Program("difflib", "difflib_textwrap.py", "difflib, textwrap (stdlib)"),
    Program("tabulate", "tabulate_humanize.py", "tabulate, humanize"),
    Program("numpy-pandas", "numpy_pandas_views.py", "numpy, pandas, sqlite3, pydantic"),
    Program("pool-globals", "pool_globals.py", "concurrent.futures, threading.Timer (stdlib)"),
    Program("asyncio-failures", "asyncio_failures.py", "asyncio gather, cancel (stdlib)"),
    Program("heapq-callbacks", "heapq_callbacks.py", "heapq, functools (stdlib)"),
)


@dataclass
class Result:
    program: Program
    plain_s: float = 0.0
    plain_rc: int | None = None
    plain_stdout: str = ""
    launched: bool = False
    breakpoint_hit: bool = False
    first_stop: str = ""
    ended: bool = False
    events: int | None = None
    recorded_s: float = 0.0  # initialize (the adapter just started) to the first stop
    session_s: float = 0.0
    recorded_stdout: str = ""
    compared: int = 0  # stops compared with debugpy
    agreed: int = 0  # of those, same function, line and locals
    disagreements: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def output_equal(self) -> bool:
        return self.launched and self.ended and self.recorded_stdout == self.plain_stdout

    @property
    def checks(self) -> dict[str, bool]:
        """Each check of issue 21 (launch and errors count against all of them)."""
        ok = self.launched and not self.error
        return {
            "breakpoint": ok and self.breakpoint_hit,
            "end": ok and self.ended,
            "output": ok and self.output_equal,
            "agreement": not self.program.comparable or (ok and self.compared > 0 and self.agreed == self.compared),
        }

    @property
    def failed(self) -> list[str]:
        return [name for name, ok in self.checks.items() if not ok]

    @property
    def passed(self) -> bool:
        return not self.failed


# -- the plain run ---------------------------------------------------------------------------------


def plain_run(program: Program, limit: float) -> tuple[float, int | None, str]:
    argv = [sys.executable, *(["-m", program.module] if program.module else [str(program.path)]), *program.args]
    t = time.perf_counter()
    try:
        done = subprocess.run(
            argv,
            cwd=program.workdir,
            env={**os.environ, **program.environment},
            input=program.stdin if program.stdin is not None else "",
            capture_output=True,
            text=True,
            timeout=limit,
        )
    except subprocess.TimeoutExpired as exc:
        return time.perf_counter() - t, None, (exc.stdout or b"").decode(errors="replace")
    return time.perf_counter() - t, done.returncode, done.stdout


# -- the neural-dap session ------------------------------------------------------------------------


async def top(client: DapClient, thread: int = 1) -> tuple[str, int, str, dict[str, str]]:
    """(function, line, path, locals) of the top frame of `thread` (the one stopped in) now."""
    frames = (await client.call("stackTrace", {"threadId": thread}))["stackFrames"]
    scopes = (await client.call("scopes", {"frameId": frames[0]["id"]}))["scopes"]
    variables = (await client.call("variables", {"variablesReference": scopes[0]["variablesReference"]}))["variables"]
    path = (frames[0].get("source") or {}).get("path", "")
    return frames[0]["name"], frames[0]["line"], path, {v["name"]: v["value"] for v in variables}


def launch_arguments(program: Program) -> dict:
    launch: dict = {"args": list(program.args), "cwd": str(program.workdir), "env": program.environment}
    if program.module:
        launch["module"] = program.module
    else:
        launch["program"] = str(program.path)
    if program.stdin is not None:
        launch["stdin"] = str(_stdin_file(program.stdin))
    return launch


def _stdin_file(text: str) -> Path:
    """The program's input as the file a launch names (`"stdin"`), kept in the temporary folder."""
    import hashlib

    path = Path(tempfile.gettempdir()) / f"neural-dap-stdin-{hashlib.sha256(text.encode()).hexdigest()[:12]}.txt"
    if not path.exists():
        path.write_text(text)
    return path


async def start_session(client: DapClient, program: Program) -> dict:
    """initialize, launch, the breakpoint, configurationDone: the first stopped event (or an end)."""
    await client.call(
        "initialize",
        {"adapterID": "neural-dap", "clientID": "real-programs", "linesStartAt1": True, "pathFormat": "path"},
    )
    await client.wait_event("initialized")
    launch = await client.send_request("launch", launch_arguments(program))
    await client.call(
        "setBreakpoints", {"source": {"path": str(program.path)}, "breakpoints": [{"line": program.line}]}
    )
    await client.call("configurationDone")
    response = await client.response(launch, "launch", timeout=REQUEST_TIMEOUT)
    if not response.get("success"):
        raise DapError("launch", response.get("message") or "failed", response)
    return await client.wait_event({"stopped", "terminated", "exited"}, timeout=REQUEST_TIMEOUT)


async def run_to_end(client: DapClient) -> bool:
    """No breakpoints, then continue until the program ends (the stop at the end, then terminated)."""
    for _ in range(8):
        await client.call("continue", {"threadId": 1})
        message = await client.wait_event({"stopped", "terminated", "exited"}, timeout=REQUEST_TIMEOUT)
        if message["event"] != "stopped":
            return True
    return False


def comparable_locals(local: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Plain locals and `(return) f` values, without debugpy's groups and what it files under them
    (as tests/test_debugpy_agreement.py compares them: the peer does not open them)."""
    grouped = ("<function ", "<class ", "<module ")
    groups = ("special variables", "function variables", "class variables")
    plain = {
        k: v
        for k, v in local.items()
        if not k.startswith("(")
        and not (k.startswith("__") and k.endswith("__"))
        and not v.startswith(grouped)
        and k not in groups
    }
    pseudo = {k: v for k, v in local.items() if k.startswith("(return) ")}
    return plain, pseudo


_ANY_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def same_value(ours: str | None, theirs: str | None) -> bool:
    """Equal, or equal as far as debugpy shows it: debugpy elides long strings (`'abc...xyz'`) and
    deep containers (`[...]`, `{...}`), and a string it cut may change its quotes; such a value
    agrees when ours has the parts debugpy shows, in order, at the same ends. neural-dap cuts a repr
    at `maxRepr` (1000 characters) with `…`: such a value agrees when it starts as debugpy's does."""
    if ours == theirs:
        return True
    if ours is not None and theirs is not None and _ANY_ADDRESS.sub("", ours) == _ANY_ADDRESS.sub("", theirs):
        return True  # the same object in two processes: only its address differs
    if ours is None or theirs is None or "..." not in theirs:
        return False
    ours, theirs = ours.replace('"', "'").replace("\\'", "'"), theirs.replace('"', "'").replace("\\'", "'")
    pieces = theirs.split("...")
    if ours.endswith(TRUNCATION_MARK):  # both cut: compare what both show of the start
        shown = min(len(ours) - 1, len(pieces[0]))
        return shown > 0 and ours[:shown] == pieces[0][:shown]
    if not (ours.startswith(pieces[0]) and ours.endswith(pieces[-1])):
        return False
    at = len(pieces[0])
    for piece in pieces[1:-1]:
        at = ours.find(piece, at)
        if at < 0:
            return False
        at += len(piece)
    return at <= len(ours) - len(pieces[-1])


def compare(ours: tuple[str, int, str, dict[str, str]], real: Snapshot) -> str:
    """'' when the stops agree, else what differs."""
    name, line, path, local = ours
    if (name, line) != (real.function, real.line):
        theirs = Path(real.frames[0][2]).name if real.frames else "?"
        return f"neural-dap at {Path(path).name} {name}:{line}, debugpy at {theirs} {real.function}:{real.line}"
    plain, pseudo = comparable_locals(local)
    keys = sorted(set(plain) | set(real.locals))
    diff = [k for k in keys if not same_value(plain.get(k), real.locals.get(k))]
    if diff:
        shown = "; ".join(f"{k}: ours {plain.get(k)!r:.60} debugpy {real.locals.get(k)!r:.60}" for k in diff[:3])
        return f"at {name}:{line} locals differ ({shown})"
    # every `(return) f` both ways (a method's named with its class, as debugpy names it: `Box.get`;
    # the library's too), but a value pydevd abbreviates by how deep the object nests (`<Event,
    # len() = 6>`), which a recorded text does not say
    for key in sorted(set(pseudo) | set(real.returns)):
        value, theirs = pseudo.get(key), real.returns.get(key)
        if theirs is not None and _LONG_ITER.fullmatch(theirs):
            continue
        if not same_value(value, theirs):
            return f"at {name}:{line} {key}: ours {value!r:.60} debugpy {theirs!r:.60}"
    return ""


_LONG_ITER = re.compile(r"<[\w.]+, len\(\) = \d+>")


def stopped_thread(message: dict) -> int:
    return int((message.get("body") or {}).get("threadId", 1))


async def compare_with_debugpy(
    client: DapClient, program: Program, result: Result, steps: int, thread: int = 1
) -> None:
    """The same breakpoint in a debugpy session, then the plan, stop by stop. A stop at another
    place ends the comparison (the two are no longer at the same point); locals that differ are
    counted and the comparison goes on."""
    # launched as neural-dap launches it (a module program with debugpy's own `"module"` launch), the
    # breakpoint set before the program starts
    peer = DebugpyPeer(
        str(program.path),
        args=program.args,
        cwd=str(program.workdir),
        env=program.environment,
        timeout=REQUEST_TIMEOUT,
        breakpoints=(program.line,),
        module=program.module,
    )
    try:
        real = await peer.start()
        if real is None:
            result.disagreements.append("debugpy ended without reaching the breakpoint")
            return
        ours = await top(client, thread)
        for k, command in enumerate([None, *PLAN[:steps]]):
            if command is not None:
                real = await peer.step(command)
                if real is None:
                    break  # the program ended under debugpy
                await client.call(command, {"threadId": thread})
                stopped = await client.wait_event({"stopped", "terminated", "exited"}, timeout=REQUEST_TIMEOUT)
                if stopped["event"] != "stopped":
                    result.compared += 1
                    result.disagreements.append(f"after {k} steps ({command}): neural-dap ended, debugpy did not")
                    break
                thread = stopped_thread(stopped)
                ours = await top(client, thread)
            result.compared += 1
            difference = compare(ours, real)
            if not difference:
                result.agreed += 1
                continue
            result.disagreements.append(f"after {k} steps ({command or 'breakpoint'}): {difference}")
            if difference.startswith("neural-dap at"):
                break
    finally:
        await peer.close()


async def debug_session(program: Program, result: Result, steps: int) -> None:
    async with spawn(adapter_command(), timeout=REQUEST_TIMEOUT, stderr=subprocess.DEVNULL) as client:
        t = time.perf_counter()
        first = await start_session(client, program)
        result.recorded_s = time.perf_counter() - t
        result.launched = True
        summary = await client.call("sessionSummary")
        result.events = summary.get("states")
        if first["event"] == "stopped":
            name, line, path, _ = await top(client, stopped_thread(first))
            reason = first["body"].get("reason", "")
            result.first_stop = f"{reason} at {name}:{line}"
            result.breakpoint_hit = (
                reason == "breakpoint" and line == program.line and Path(path).resolve() == program.path.resolve()
            )
            if result.breakpoint_hit and program.comparable and steps > 0:
                await compare_with_debugpy(client, program, result, steps, stopped_thread(first))
            await client.call("setBreakpoints", {"source": {"path": str(program.path)}, "breakpoints": []})
            result.ended = await run_to_end(client)
        else:
            result.first_stop = first["event"]
            result.ended = True
        result.recorded_stdout = "".join(
            (e.get("body") or {}).get("output", "")
            for e in client.events_named("output")
            if (e.get("body") or {}).get("category") == "stdout"
        )
        result.session_s = time.perf_counter() - t
        await client.request("disconnect", {"terminateDebuggee": True}, timeout=5)


async def run_program(program: Program, steps: int = len(PLAN), limit: float = 120.0) -> Result:
    """The plain run, the neural-dap session (and debugpy's), within `limit` seconds."""
    result = Result(program)
    result.plain_s, result.plain_rc, result.plain_stdout = await anyio.to_thread.run_sync(plain_run, program, limit)
    try:
        with anyio.fail_after(limit):
            await debug_session(program, result, steps)
    except Exception as exc:  # recorded in the table, not raised: one program's failure is a row
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        if isinstance(exc, TimeoutError):
            result.error = f"over the {limit:g} s limit"
        else:
            result.error = f"{type(exc).__name__}: {exc}"
    return result


# -- the table -------------------------------------------------------------------------------------


def _yes(flag: bool) -> str:
    return "yes" if flag else "**no**"


def row(result: Result) -> str:
    p = result.program
    ratio = f"{result.recorded_s / result.plain_s:.1f}x" if result.plain_s and result.recorded_s else "-"
    if not p.comparable:
        agreement = "not compared"
    elif result.compared:
        agreement = f"{result.agreed}/{result.compared}"
        if result.agreed != result.compared:
            agreement = f"**{agreement}**"
    else:
        agreement = "**none**"
    notes = []
    if result.error:
        notes.append(result.error)
    if not result.breakpoint_hit:
        notes.append(f"first stop: {result.first_stop or 'none'}")
    if result.launched and result.ended and not result.output_equal:
        notes.append("stdout differs")
    notes.extend(result.disagreements[:1])
    if p.not_compared:
        notes.append(f"not compared: {p.not_compared}")
    known = dict(p.known)
    unknown = [check for check in result.failed if check not in known]
    if unknown:
        notes.append(f"unexpected failure of {', '.join(unknown)}")
    status = "pass" if result.passed else "**FAIL**"
    events = f"{result.events:,}" if result.events is not None else "-"
    cells = [
        f"{p.name} ({p.package})",
        events,
        f"{result.plain_s:.2f} s",
        f"{result.recorded_s:.2f} s" if result.launched else "-",
        ratio,
        _yes(result.breakpoint_hit),
        _yes(result.ended),
        _yes(result.output_equal),
        agreement,
        status,
        "; ".join(notes).replace("|", "\\|"),
    ]
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| program | events | plain | recorded (initialize to breakpoint) | ratio | breakpoint | end | stdout equal"
    " | stops agreeing with debugpy | status | notes |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


async def main(names: list[str], fast: bool, steps: int, limit: float) -> int:
    chosen = [p for p in PROGRAMS if (not names or p.name in names) and (not fast or p.fast)]
    print(HEADER, flush=True)
    failed = 0
    results = []
    for program in chosen:
        result = await run_program(program, steps, limit)
        results.append(result)
        failed += not result.passed
        print(row(result), flush=True)
    print(f"\n{len(chosen) - failed} of {len(chosen)} pass; Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print("\nKnown failures (what neural-dap lacks today):\n")
    for result in results:
        known = dict(result.program.known)
        for check in result.failed:
            if check in known:
                print(f"- {result.program.name} ({check}): {known[check]}")
    return 1 if failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=[], help="program names")
    parser.add_argument("--fast", action="store_true", help="only the subset the tests run")
    parser.add_argument("--steps", type=int, default=len(PLAN), help="stepping commands compared with debugpy")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds per program")
    options = parser.parse_args()
    sys.exit(anyio.run(main, options.only, options.fast, options.steps, options.limit))
