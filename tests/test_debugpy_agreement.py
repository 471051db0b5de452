"""Forward stops and local values agree with a real debugpy session, step for step, on 3.11 and
3.12 (whose debugpy steps by sys.monitoring's rules), for the examples and for a threaded and an
asyncio program (breakpoints in a worker thread, `next` over `await` in interleaving tasks).

For each example program and each stepping plan, the same commands go to `python -m debugpy.adapter`
and to neural-dap (recorded world), both through a real DAP client; every stop must be at the same
function and line with the same locals, and a return shown in the caller must show the same value.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import anyio
import pytest

from neural_dap.reality.debugpy_peer import DebugpyPeer

from .conftest import EXAMPLES
from .dap_helpers import adapter, start, step, where

PLANS = {
    "step-in": ["stepIn"] * 150,
    "next": ["stepIn"] * 6 + ["next"] * 60,
    "mixed": (["stepIn"] * 4 + ["stepOut"] + ["next"] * 3 + ["stepIn"] * 2) * 12,
}
RUNNABLE = sorted(p.name for p in EXAMPLES.glob("*.py") if "missing" not in p.name)
VERSIONS = ["3.11", "3.12"]
# The whole sweep (every example x plan x interpreter) runs as a benchmark
# (benchmarks/debugpy_agreement.py, or NEURAL_DAP_SWEEP=full); the suite runs a sample that still
# takes every example, every plan and both interpreters: one example with every plan (on the two
# interpreters in turn), each other example with one plan on one interpreter, rotating through
# every pair.
FULL_SWEEP = os.environ.get("NEURAL_DAP_SWEEP") == "full"


def _sweep() -> list[tuple[str, str, str]]:
    every = [(e, p, v) for e in RUNNABLE for p in sorted(PLANS) for v in VERSIONS]
    if FULL_SWEEP:
        return every
    anchor = "bubble_sort.py" if "bubble_sort.py" in RUNNABLE else RUNNABLE[0]
    sample = [(anchor, p, VERSIONS[k % len(VERSIONS)]) for k, p in enumerate(sorted(PLANS))]
    others = [e for e in RUNNABLE if e != anchor]
    combos = [(p, v) for p in sorted(PLANS) for v in VERSIONS]
    sample += [(e, *combos[k % len(combos)]) for k, e in enumerate(others)]
    return sample


def _comparable(local: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Plain locals, and return values (debugpy shows an exception exit as `(return) f: None`).
    Dunder names (a class body's `__module__`, `__qualname__`) and functions, classes and modules
    (a class body's methods) are left out, and so are the groups themselves: debugpy files them
    under "special variables", "function variables" and "class variables" groups (as neural-dap
    does) that the peer does not open."""
    grouped = ("<function ", "<class ", "<module ")
    plain = {
        k: v
        for k, v in local.items()
        if not k.startswith("(")
        and not (k.startswith("__") and k.endswith("__"))
        and not v.startswith(grouped)
        and k not in ("special variables", "function variables", "class variables")
    }
    pseudo = {k: v for k, v in local.items() if k.startswith("(return) ")}
    return plain, pseudo


_CLASSES = re.compile(r"^\s*class\s+(\w+)", re.MULTILINE)
_LONG_ITER = re.compile(r"<[\w.]+, len\(\) = \d+>")


_OWN = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)", re.MULTILINE)
_COMPREHENSIONS = {"<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>", "<lambda>"}


def _held_returns(
    ours: dict[str, str], debugpys: dict[str, str], source: str, own_only: bool = False
) -> tuple[dict, dict]:
    """Both sides' `(return)` values, less two known differences: a class body's end after a step
    inside that body (debugpy's `(return) Item`; neural-dap shows none), and a value pydevd's
    SafeRepr abbreviates by how deep the object nests (`<Event, len() = 6>`: a namedtuple holding
    a list), which a recorded text does not say. `own_only`: the program's own functions' alone (a
    recording made first has no values of the library's: they are watched while a step runs)."""
    classes = {f"(return) {name}" for name in _CLASSES.findall(source)}
    dropped = classes | {k for k, v in debugpys.items() if _LONG_ITER.fullmatch(v)}
    if own_only:
        own = set(_OWN.findall(source)) | _COMPREHENSIONS
        dropped |= {k for k in debugpys if k.removeprefix("(return) ").rsplit(".", 1)[-1] not in own}
    return (
        {k: v for k, v in ours.items() if k not in dropped},
        {k: v for k, v in debugpys.items() if k not in dropped},
    )


@pytest.mark.slow
@pytest.mark.parametrize(("example", "plan", "version"), _sweep())
async def test_neural_dap_stops_where_debugpy_stops(example, plan, version):
    """debugpy steps differently on 3.12+ (sys.monitoring: `next` off a return stops in the caller
    at the call line): the same program under each interpreter, each compared with debugpy's."""
    from .test_child_real_world import _interpreter

    path = str(EXAMPLES / example)
    source = (EXAMPLES / example).read_text()
    python = _interpreter(version)
    peer = DebugpyPeer(path, python=python)
    launch: dict = {"program": path, "stopOnEntry": True}
    if python:
        launch["python"] = python
    compared = 0
    try:
        real = await peer.start()
        async with adapter() as c:
            await start(c, launch)
            for k, command in enumerate([None, *PLANS[plan]]):
                if command is not None:
                    real = await peer.step(command)
                    if real is None:
                        break
                    _reason, ours = await step(c, command)
                else:
                    ours = await where(c)
                name, line, local = ours
                plain, pseudo = _comparable(local)
                where_ = f"after {k} {plan} commands"
                assert (name, line) == (real.function, real.line), (
                    f"{where_}: neural-dap at {name}:{line}, debugpy at {real.function}:{real.line}"
                )
                assert plain == real.locals, f"{where_} at {name}:{line}"
                # the values calls returned into the frame while it stepped (a method's named with its
                # class: `(return) Box.get`), kept as debugpy keeps them
                mine, theirs = _held_returns(pseudo, real.returns, source)
                assert mine == theirs, f"{where_}: return values"
                compared += 1
    finally:
        await peer.close()
    assert compared >= 5  # (a plan that steps out of module code ends the program early)


# -- threads and asyncio -------------------------------------------------------------------------------

THREADED = """\
import threading


def work(n, out):
    total = 0
    for k in range(n):
        total += k
    out.append(total)


results = []
for i in range(2):
    t = threading.Thread(target=work, args=(3 + i, results), name=f"worker-{i}")
    t.start()
    t.join()
print(results)
"""

# a worker thread that runs on while the session steps in it (the live program, every thread held
# at each stop): steps in, over and out of its calls, and continues to the next round's breakpoint
WORKER = """\
import threading
import time


def work(n):
    total = 0
    for k in range(n):
        total += k
    return total


def serve(rounds, out):
    for r in range(rounds):
        out.append(work(r + 2))
        time.sleep(0.01)


results = []
t = threading.Thread(target=serve, args=(3, results), name="server")
t.start()
t.join()
print(results)
"""

ASYNCIO = """\
import asyncio


async def fetch(name, delay):
    await asyncio.sleep(delay)
    size = len(name)
    await asyncio.sleep(delay)
    return size * 2


async def main():
    first = await fetch("ab", 0)
    both = await asyncio.gather(fetch("xyz", 0.01), fetch("four", 0.03))
    return first, both


print(asyncio.run(main()))
"""

# tasks whose `await`s pause them while the others run: a `next` over an `await` goes on to that
# task's next line once it resumes, or stops at another task's breakpoint on the way (a live session
# stopped at the first line of the next task run, and, over a `return`, ran the program to its end)
TASKS = """\
import asyncio


async def worker(name, n):
    for i in range(n):
        x = i * 2
        await asyncio.sleep(0)
        x += 1
    return name, n


async def other(n):
    total = 0
    for i in range(n):
        total += i
        await asyncio.sleep(0)
    return total


async def main():
    results = await asyncio.gather(worker("a", 2), other(3), worker("b", 3))
    print(results)


asyncio.run(main())
"""

TWO_TASKS = """\
import asyncio


async def worker(n):
    for i in range(n):
        x = i * 2
        await asyncio.sleep(0)
        x += 1
    return n


async def main():
    results = await asyncio.gather(worker(2), worker(3))
    print(results)


asyncio.run(main())
"""

CONCURRENT = {
    # (program, breakpoint lines, commands): a worker's breakpoint, steps in the worker, continue to
    # the next hit and into the second worker
    "threads": (THREADED, (7,), ["next"] * 3 + ["continue"] + ["next"] * 2 + ["continue"] * 4),
    "worker": (
        WORKER,
        (7,),
        [
            *("next", "next", "stepOut", "next", "stepIn", "next", "continue", "stepOut", "stepIn", "stepIn"),
            *("next", "next", "next", "stepOut", "stepOut", "next"),
        ],
    ),
    # next over each `await`, in one coroutine and in two tasks whose suspensions interleave
    "asyncio": (ASYNCIO, (5,), ["next"] * 4 + ["continue"] + ["next"] * 3 + ["continue"] + ["next"] * 3),
    "tasks": (TASKS, (6,), ["next"] * 9 + ["continue"] + ["next"] * 4),
    # next off a task's `return`: on at the next line of the task that resumes (3.12+: not at its
    # `await`, as debugpy takes no PY_RESUME event)
    "task returns": (TWO_TASKS, (9,), ["next"] * 7),
}


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.11", "3.12"])
@pytest.mark.parametrize("program", sorted(CONCURRENT))
async def test_threads_and_coroutines_stop_where_debugpy_stops(tmp_path, program, version):
    """(asyncio on 3.12+ failed in a live session until checkpoints stopped running the program's
    at-fork functions: asyncio's resets the running loop in a child, so the stretch after a stop
    taken by stepping over an `await` replayed another way)"""
    from .test_child_real_world import _interpreter

    text, lines, commands = CONCURRENT[program]
    path = tmp_path / f"{program}_demo.py"
    path.write_text(text)
    python = _interpreter(version)
    peer = DebugpyPeer(str(path), breakpoints=lines, python=python)
    launch: dict = {"program": str(path), "stopOnEntry": False}
    if python:
        launch["python"] = python
    compared = 0
    try:
        real = await peer.start()
        async with adapter() as c:
            stopped = await start(c, launch, {str(path): [{"line": line} for line in lines]})
            thread = stopped["body"]["threadId"]
            for k, command in enumerate([None, *commands]):
                if command is not None:
                    real = await peer.step(command)
                    if real is None:
                        break
                    await c.call(command, {"threadId": thread})
                    stopped = await c.wait_event("stopped")
                    thread = stopped["body"]["threadId"]
                assert real is not None
                frames = (await c.call("stackTrace", {"threadId": thread}))["stackFrames"]
                scopes = (await c.call("scopes", {"frameId": frames[0]["id"]}))["scopes"]
                variables = (await c.call("variables", {"variablesReference": scopes[0]["variablesReference"]}))[
                    "variables"
                ]
                plain, _ = _comparable({v["name"]: v["value"] for v in variables})
                names = {t["id"]: t["name"] for t in (await c.call("threads"))["threads"]}
                here = f"after {k} commands ({command})"
                assert (frames[0]["name"], frames[0]["line"]) == (real.function, real.line), (
                    f"{here}: neural-dap at {frames[0]['name']}:{frames[0]['line']}, debugpy at "
                    f"{real.function}:{real.line}"
                )
                assert plain == real.locals, here
                assert names[thread] == real.thread, here
                compared += 1
    finally:
        await peer.close()
    assert compared >= 8


# -- calls made by library code ------------------------------------------------------------------------

# The user's functions called by library code that the module called: sched runs two callbacks, then
# returns to `s.run()`; functools.singledispatch's wrapper runs the registered function (which
# returns, or raises through the wrapper). debugpy steps off such a function's exit into the
# library's code (justMyCode) and stops where it returns to the module, at the call line, or first
# in the next callback; on 3.11 and 3.12 alike.
LIBRARY_CALLS = """\
import functools
import sched


def tick(log, name):
    log.append(name)
    return len(log)


@functools.singledispatch
def describe(x):
    return "thing"


@describe.register
def _(x: int):
    doubled = x * 2
    return doubled


@describe.register
def _(x: float):
    raise ValueError(x)


log = []
s = sched.scheduler()
s.enter(0, 1, tick, (log, "a"))
s.enter(0, 2, tick, (log, "b"))
s.run()
total = describe(3)
try:
    describe(1.5)
except ValueError:
    total = -total
print(log, total)
"""

LIBRARY_PLANS = {
    # (breakpoint lines, commands)
    "step-in": ((), ["stepIn"] * 30),
    "next": ((7, 17, 23), ["next"] * 16),
    "step-out": ((6, 17), ["stepOut"] * 6 + ["next"] * 4),
}


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.11", "3.12"])
@pytest.mark.parametrize("plan", sorted(LIBRARY_PLANS))
async def test_calls_by_library_code_stop_where_debugpy_stops(tmp_path, plan, version):
    lines, commands = LIBRARY_PLANS[plan]
    path = tmp_path / "library_calls.py"
    path.write_text(LIBRARY_CALLS)
    stops = await _stops_beside_debugpy(path, lines, commands, version, plan)
    # the stops that matter were made: back in the module at `s.run()` after the callbacks
    assert ("<module>", 30) in stops, stops


RETURNS_INTO_USER_CODE = """\
def f(a):
    return a + 1


def g(b):
    return b * 2


def p(x):
    return f(x)


def boom(a):
    raise ValueError(a)


def q(x):
    return boom(x)


x = f(1) + g(2)
y = p(x)
try:
    z = q(y)
except ValueError:
    z = 0
print(x, y, z)
"""


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.11", "3.12"])
async def test_next_off_a_return_goes_where_debugpy_goes(tmp_path, version):
    """`next` off a return into the user's code: on 3.11 pydevd's step over becomes a step into once
    its frame has returned (`f(1) + g(2)`: it stops in g; `return f(x)`: at p's return; an exception
    leaving boom and q: at q's exit, shown at its call line); on 3.12 it stops at each return."""
    path = tmp_path / "returns.py"
    path.write_text(RETURNS_INTO_USER_CODE)
    stops = await _stops_beside_debugpy(path, (2, 14), ["next"] * 12, version, "next")
    assert ("g", 6) in stops or version != "3.11", stops


THROWN_INTO = """\
def gen(k):
    try:
        yield k
    finally:
        print("end", k)


for k in range(2):
    g = gen(k)
    next(g)
    try:
        g.throw(KeyError(k))
    except KeyError:
        print("caught", k)
"""


@pytest.mark.slow
async def test_next_off_a_generator_an_exception_leaves_goes_to_the_callers_except(tmp_path):
    """`next` off a generator's `finally` that re-raises what `throw` put into it goes on to the
    caller's `except`, as debugpy does on 3.11. The recorder took that exit for a pause, and the
    next generator of the function (its frame at the same address) for its resume: the step
    landed in that other generator, skipping the caller's lines (found by a user trial)."""
    path = tmp_path / "thrown_into.py"
    path.write_text(THROWN_INTO)
    stops = await _stops_beside_debugpy(path, (5,), ["next"] * 3, "3.11", "thrown")
    assert stops[1:] == [("<module>", 13), ("<module>", 14), ("<module>", 8)]


CONTEXT_MANAGER_RERAISES = """\
import contextlib


@contextlib.contextmanager
def ctx():
    try:
        yield
    finally:
        x = 1


try:
    with ctx():
        raise KeyError("k")
except KeyError:
    pass
print("done")
"""


@pytest.mark.slow
async def test_next_that_takes_an_exception_out_of_a_context_manager_stops_as_user_unhandled(tmp_path):
    """On 3.11 a `finally` that re-raises reaches settrace as a return with nothing pending: the
    recorder took the generator's exit for a return, and a `next` from the `finally` stepped on
    where debugpy stops for "User Uncaught Exceptions" (the exception leaves the user's generator
    into contextlib). The exit is now the exception (its last instruction is RERAISE)."""
    from .dual import Plan, run

    path = tmp_path / "context_reraises.py"
    path.write_text(CONTEXT_MANAGER_RERAISES)
    plan = Plan(
        str(path), breakpoints=({"line": 9},), exception_filters=("uncaught", "userUnhandled"), commands=("next",)
    )
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    # (debugpy's text goes on with a note on where the trace is shown; its first word is the type)
    theirs_stops = [(v.reason, v.text.split(" ", 1)[0]) for v in theirs.views[:2]]
    assert [(v.reason, v.text) for v in ours.views[:2]] == theirs_stops
    assert ours.views[1].reason == "exception"


METHODS = """\
class Box:
    def __init__(self, v):
        self.v = v

    def get(self):
        return self.v

    @classmethod
    def make(cls, v):
        return cls(v)


class Crate(Box):
    pass


b = Crate.make(5)
v = b.get()
print(v)
"""


@pytest.mark.slow
async def test_a_methods_return_value_is_named_with_its_class_as_in_debugpy(tmp_path):
    """debugpy names a method's return value with the class of its `self` (`(return) Crate.get`
    for an inherited method, `(return) Crate.make` for a classmethod); neural-dap named it
    `(return) get`, and the reconciled world looked it up under that name and found nothing."""
    path = tmp_path / "methods.py"
    path.write_text(METHODS)
    stops = await _stops_beside_debugpy(path, (10, 6), ["stepOut", "continue", "stepOut"], "3.11", "methods")
    assert stops[1] == ("<module>", 17) and stops[3] == ("<module>", 18)


async def _stops_beside_debugpy(
    path, lines: tuple[int, ...], commands: list[str], version: str, plan: str, **launch_keys
) -> list[tuple[str, int]]:
    """The same breakpoints and commands in neural-dap and in a real debugpy, each stop asserted to
    agree (place, locals, the `(return)` values); returns the stops made."""
    from .test_child_real_world import _interpreter

    python = _interpreter(version)
    peer = DebugpyPeer(str(path), breakpoints=lines, python=python)
    launch: dict = {"program": str(path), "stopOnEntry": not lines, **launch_keys}
    if python:
        launch["python"] = python
    stops = []
    try:
        real = await peer.start()
        async with adapter() as c:
            await start(c, launch, {str(path): [{"line": line} for line in lines]})
            for k, command in enumerate([None, *commands]):
                if command is not None:
                    real = await peer.step(command)
                    if real is None:
                        break
                    _reason, ours = await step(c, command)
                else:
                    ours = await where(c)
                assert real is not None
                name, line, local = ours
                plain, pseudo = _comparable(local)
                here = f"after {k} {plan} commands"
                assert (name, line) == (real.function, real.line), (
                    f"{here}: neural-dap at {name}:{line}, debugpy at {real.function}:{real.line}"
                )
                assert plain == real.locals, here
                # the values calls returned into the frame while it stepped, as debugpy keeps them
                # (a method's named with its class: `(return) Box.get`)
                # (a recording made first, `live` false, has no values of the library's)
                own_only = launch_keys.get("live") is False
                mine, theirs = _held_returns(pseudo, real.returns, path.read_text(), own_only)
                assert mine == theirs, f"{here}: return values"
                stops.append((name, line))
    finally:
        await peer.close()
    return stops


# -- conditions and log points on the program's objects (issue 38, item 1) ---------------------------

OBJECT_CONDITIONS = """\
import sqlite3

import pandas as pd


class Rect:
    __slots__ = ("w", "h")

    def __init__(self, w, h):
        self.w = w
        self.h = h

    def __repr__(self):
        return f"Rect({self.w}x{self.h})"

    def area(self):
        return self.w * self.h


def grow(rect):
    rect.w += 1
    return rect.area()


df = pd.DataFrame({"city": ["Oslo", "Lima", "Rome"], "pop": [0.7, 10.0, 2.8]})
total = 0.0
for _, row in df.iterrows():
    total += row["pop"]

rects = [Rect(1, 2), Rect(2, 3), Rect(3, 4)]
areas = [grow(r) for r in rects]

db = sqlite3.connect(":memory:")
cursor = db.execute("select 'Dune' as title, 1965 as year")
for record in cursor:
    print(record)
print(total, areas, 1 / len(rects))
"""


@pytest.mark.slow
async def test_conditions_and_log_points_on_objects_stop_where_debugpy_stops(tmp_path):
    """Item access on a pandas row, an attribute of a `__slots__` object, a C object's attribute and
    a method call: each condition is decided on the real objects (debugpy stops at the one hit it
    holds at, and so must neural-dap), a log point prints real values, and a condition that raises
    (ZeroDivisionError on the first hits) does not stop, with its error shown, as in debugpy 1.8."""
    pytest.importorskip("pandas")
    from .dual import Plan, run

    path = tmp_path / "objects.py"
    path.write_text(OBJECT_CONDITIONS)
    plan = Plan(
        str(path),
        breakpoints=(
            {"line": 28, "condition": "row['city'] == 'Lima'"},
            {"line": 21, "condition": "rect.w == 2"},
            {"line": 22, "logMessage": "w={rect.w} area={rect.area()} of {rect}"},
            {"line": 36, "condition": "cursor.description[0][0] == 'title' and 1 / (record[1] - 1965) > 0"},
            {"line": 37, "condition": "str(record[0]).upper() == 'DUNE'"},
        ),
        commands=("continue",) * 6,
        expand=0,
    )
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    where = [(v.reason, v.stack) for v in theirs.views]
    assert [(v.reason, v.stack) for v in ours.views][: len(where)] == where
    assert [s for s, _ in where] == ["breakpoint"] * 3, where
    assert ours.views[len(where)].reason == "end"  # (neural-dap stops at the end: time travel goes on)
    printed = ["w=2 area=4 of Rect(2x2)\n", "w=3 area=9 of Rect(3x3)\n", "w=4 area=16 of Rect(4x4)\n"]
    # (debugpy sends log points on another channel than the program's output: a log point's text can
    # land inside a line the program printed, as in "('Dune', 1965)w=3 area=9 ...", seen under load)
    assert re.findall(r"w=\d+ area=\d+ of Rect\(\d+x\d+\)\n", theirs.stdout) == printed
    assert [c.split(": ", 1)[1] for c in ours.console if c.startswith("console: w=")] == printed
    errors = [c for c in ours.console if "conditional breakpoint" in c]
    assert errors and "ZeroDivisionError" in errors[0]


# -- every thread sees its module's globals (issue 38, item 3) ----------------------------------------

POOL_GLOBALS = """\
import threading
from concurrent.futures import ThreadPoolExecutor

LIMIT = 3
results = {}


def work(n):
    total = 0
    for k in range(n):
        total += k
    results[n] = total
    return total


with ThreadPoolExecutor(max_workers=1) as pool:
    done = list(pool.map(work, [2, 3, 4]))
timer = threading.Timer(0.01, lambda: results.setdefault("timer", LIMIT))
timer.start()
timer.join()
print(done, results)
"""


IMPORTS = """\
import os
import json as js
from collections import Counter
from os import path


def count(words):
    import string
    seen = Counter(words)
    return len(seen) + len(string.digits)


data = ["a", "b", "a"]
print(count(data), js.dumps(data), path.sep)
"""


@pytest.mark.slow
async def test_a_modules_variables_list_its_imported_modules_as_debugpys_do(tmp_path):
    """debugpy lists a module's imported modules among its variables (Locals and Globals), and a
    function's too: `os = <module 'os' from '...'>`, `js`, `path`; its functions, classes and
    dunders in its groups. neural-dap listed none of them. (debugpy runs the program with runpy,
    whose `__builtins__` is the builtins dict and `__package__` ''; neural-dap's program sees the
    interpreter's own, as in a plain run.)"""
    from .dual import Plan, differences, run

    path = tmp_path / "imports.py"
    path.write_text(IMPORTS)
    plan = Plan(
        str(path),
        breakpoints=({"line": 14}, {"line": 10}),
        commands=("continue",),
        scopes=("Locals", "Globals"),
        expand=0,
        groups=True,
    )
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    runpy_own = ("special variables: __builtins__ ", "special variables: __package__ ")
    assert [d for d in differences(ours, theirs) if not any(part in d for part in runpy_own)] == []
    assert {"os", "js", "path", "data"} <= {v.name for v in ours.views[0].variables["Locals"]}
    assert "string" in {v.name for v in ours.views[1].variables["Locals"]}  # (a function's: as before)


GROUPED = """\
import functools


def outer(n):
    def inner(x):
        return x + 1

    class Local:
        pass

    square = lambda v: v * v  # noqa: E731
    key = len
    cached = functools.lru_cache(maxsize=None)(inner)
    part = functools.partial(inner, 2)
    bound = [].append
    __magic__ = 5
    _private = inner
    total = inner(n) + square(n) + part()
    return total


print(outer(3))
"""


@pytest.mark.slow
async def test_a_frames_functions_classes_and_dunders_are_grouped_as_debugpy_groups_them(tmp_path):
    """debugpy files a frame's routines (functions, lambdas, builtins, bound methods, an lru_cache
    wrapper) under "function variables", its classes under "class variables" and its `__dunders__`
    under "special variables", above the other names; a `_name` stays inline whatever it holds, and
    a partial is no routine. neural-dap listed them all inline."""
    from .dual import Plan, differences, run

    path = tmp_path / "grouped.py"
    path.write_text(GROUPED)
    plan = Plan(str(path), breakpoints=({"line": 19},), scopes=("Locals",), expand=0, groups=True)
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    assert differences(ours, theirs) == []
    shown = [v.name for v in ours.views[0].variables["Locals"]]
    assert shown[:3] == ["special variables", "function variables", "class variables"], shown
    assert "inner" not in shown and "_private" in shown and "part" in shown


NESTED = """\
conf = {"db": {"hosts": [{"name": "a", "port": 1}], "retry": (1, (2, (3,)))}, "tags": set()}
rows = [[[1, 2], [3]], [[4]], list(range(25))]
wide = list(range(70))
quotes = ["it's " * 40, 'say "hi" ' * 20]
empty = set()
print(len(conf), len(rows))
"""


@pytest.mark.slow
async def test_nested_containers_and_the_consoles_none_read_as_in_debugpy(tmp_path):
    """debugpy shows pydevd's SafeRepr, not repr(): containers three deep read `{...}`, 59 items at
    the top and 19 one level down, a long string inside a container cut in the middle, an empty
    set `{}`; and the console answers nothing for None. neural-dap showed repr() whole, and None."""
    from .dual import Plan, differences, run

    path = tmp_path / "nested.py"
    path.write_text(NESTED)
    plan = Plan(str(path), breakpoints=({"line": 6},), expand=1, evaluate=("conf", "rows[0]", "None", "quotes"))
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    assert differences(ours, theirs) == []
    values = {v.name: v.value for v in ours.views[0].variables["Locals"]}
    assert values["rows"].startswith("[[[...], [...]], [[...]], [0, 1, 2,") and values["empty"] == "{}"
    assert ours.views[0].evaluated["None"] == ""


AFTER_A_THREAD = """\
import threading

t = threading.Thread(target=print, args=("hi",))
t.start()
t.join()
items = [1, (2, 3)]
empty = []
no = {}
pair = {"a": [1]}
done = True
"""


@pytest.mark.slow
async def test_containers_open_as_in_debugpy_once_a_program_has_run_a_thread(tmp_path):
    """A program that has run a thread is travelled in its recording (no process to ask): its lists,
    tuples and dicts open with debugpy's last `len()` child, and an empty one opens too. They had
    neither (found by a user trial)."""
    from .dual import Plan, run

    path = tmp_path / "after_a_thread.py"
    path.write_text(AFTER_A_THREAD)
    plan = Plan(str(path), breakpoints=({"line": 11},), expand=2, expand_names=("items", "empty", "no", "pair"))
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")

    def opened(session) -> dict:
        def tree(var) -> object:
            return (var.value, [(c.name, tree(c)) for c in var.children or []])

        return {v.name: tree(v) for v in session.views[0].variables["Locals"] if v.name in plan.expand_names}

    assert opened(ours) == opened(theirs)
    assert opened(ours)["empty"] == ("[]", [("len()", ("0", []))])


@pytest.mark.slow
async def test_a_worker_thread_shows_and_evaluates_its_globals_as_debugpy_does(tmp_path):
    """At a breakpoint in a pool's worker: Locals and Globals, the globals as they are at that moment
    (the dict the workers fill, while the main thread waits in `pool.map`), and module names
    evaluate there, as in debugpy (one worker: both runs interleave the same way)."""
    from .dual import Plan, run

    path = tmp_path / "pool_globals.py"
    path.write_text(POOL_GLOBALS)
    plan = Plan(
        str(path),
        breakpoints=({"line": 12},),
        commands=("continue",) * 3,
        scopes=("Locals", "Globals"),
        evaluate=("results", "LIMIT + n", "sorted(results.values())"),
        expand=0,
    )
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    assert len(theirs.views) == 3
    for k, (a, b) in enumerate(zip(ours.views, theirs.views, strict=False)):
        assert (a.thread, a.stack, a.scopes) == (b.thread, b.stack, b.scopes), k
        assert a.thread.startswith("ThreadPoolExecutor") and a.scopes == ["Locals", "Globals"]
        assert a.evaluated == b.evaluated, k
        for scope in ("Locals", "Globals"):
            shown = {v.name: v.value for v in b.variables[scope] if v.type not in ("function", "type")}
            assert {v.name: v.value for v in a.variables[scope]} == shown, (k, scope)
    assert [v.evaluated["results"] for v in ours.views[:3]] == ["{}", "{2: 1}", "{2: 1, 3: 3}"]


# -- the Variables view (issue 38, item 2) --------------------------------------------------------------

VIEWS = Path(__file__).resolve().parent.parent / "benchmarks" / "real_programs" / "numpy_pandas_views.py"
# what differs between any two runs, debugpy's own included: pandas' caches fill in the order things
# are read, and a set's items are named by their ids
UNSTABLE = ("_cache", "_accessors", "_internal_names_set", "_interleaved_dtype")


@pytest.mark.slow
async def test_the_variables_view_opens_as_debugpys_does(tmp_path):
    """Every value at the stop, opened two levels deep in both: numpy arrays (items, dtype, shape,
    min, max), a DataFrame (its columns and attributes), inherited `__slots__` and a property, a
    list holding an object whose repr raises, sqlite3 rows, a connection and a cursor (C objects),
    a pydantic ValidationError, a 5000-item list (`more`), a 300-key dict and a 5000-character
    string: the same names, values, types and children as debugpy's."""
    pytest.importorskip("pandas")
    pytest.importorskip("pydantic")
    from .dual import Plan, differences, run

    line = next(k for k, text in enumerate(VIEWS.read_text().splitlines(), 1) if text.endswith("# breakpoint"))
    plan = Plan(str(VIEWS), breakpoints=({"line": line},), expand=2, scopes=("Locals",))
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    found = [d for d in differences(ours, theirs) if not any(name in d for name in UNSTABLE)]
    assert found == [], "\n".join(found[:20])
    shown = {v.name: v for v in ours.views[0].variables["Locals"]}
    assert [c.name for c in shown["arr"].children or []] == ["[0:200] ", "dtype", "max", "min", "shape", "size"]
    assert {"city", "columns", "dtypes", "shape"} <= {c.name for c in shown["df"].children or []}
    assert {c.name: c.value for c in shown["rect"].children or []} == {"area": "12", "h": "4", "w": "3"}
    assert shown["items"].value == "[<__main__.Bad object>, 3]" and shown["items"].children
    assert len(shown["text"].value) == 5002 and len(shown["keys"].children or []) == 301
    assert [c.name for c in shown["many"].children or []][-2:] == ["more", "len()"]


# -- callbacks library code calls (issue 38, item 4) -----------------------------------------------------

CALLBACKS = """\
import functools
import heapq


def weight(item):
    score = item[1] * 2
    return score


def logged(func):
    @functools.wraps(func)
    def wrapper(*args):
        value = func(*args)
        return value

    return wrapper


@functools.lru_cache(maxsize=None)
@logged
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def top(items):
    best = heapq.nlargest(2, items, key=weight)
    return best


data = [("a", 3), ("b", 1), ("c", 5)]
result = top(data)
ranked = sorted(data, key=weight)
print(result, ranked, fib(4))
"""

CALLBACK_PLANS = {
    # (breakpoint lines, commands): out of a sort key's first call back to the user's caller (the
    # library's other calls of it run through), or to a breakpoint in a later call; next through
    # the calls; into a decorated, cached recursion and out of it
    "step-out": ((26,), ["stepIn", "stepOut", "stepOut", "next", "stepIn", "stepOut", "next", "stepIn", "stepOut"]),
    "step-out-to-breakpoint": ((6,), ["stepOut"] * 4 + ["next"] * 2),
    "next": ((26,), ["stepIn"] + ["next"] * 9),
    "cached-recursion": ((22,), ["stepOut"] * 3 + ["next"] * 3 + ["stepIn"] * 4),
}


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.11", "3.12"])
@pytest.mark.parametrize("plan", sorted(CALLBACK_PLANS))
async def test_callbacks_library_code_calls_step_as_in_debugpy(tmp_path, plan, version):
    lines, commands = CALLBACK_PLANS[plan]
    path = tmp_path / "callbacks.py"
    path.write_text(CALLBACKS)
    stops = await _stops_beside_debugpy(path, lines, commands, version, plan)
    assert len(stops) >= 5, stops


@pytest.mark.slow
async def test_callbacks_step_out_as_in_debugpy_in_a_recording_made_first(tmp_path):
    """The same with the program recorded to its end first (`"live": false`): what follows a
    callback's exit is known there, not found by running on."""
    lines, commands = CALLBACK_PLANS["step-out"]
    path = tmp_path / "callbacks.py"
    path.write_text(CALLBACKS)
    stops = await _stops_beside_debugpy(path, lines, commands, "3.11", "step-out", live=False)
    assert ("top", 26) in stops[2:], stops  # back in the caller once the library is done


async def test_step_back_through_callbacks_mirrors_next(tmp_path):
    """`stepBack` from a sort key's second call goes to the last line of its first, as `next` went
    the other way: every stop of a run of `next`s, in reverse."""
    path = tmp_path / "callbacks.py"
    path.write_text(CALLBACKS)
    async with adapter() as c:
        await start(c, {"program": str(path)}, {str(path): [{"line": 26}]})
        forward = [await where(c)]
        _reason, here = await step(c, "stepIn")
        forward.append(here)
        for _ in range(5):
            forward.append((await step(c, "next"))[1])
        backward = [forward[-1]]
        for _ in range(len(forward) - 1):
            backward.append((await step(c, "stepBack"))[1])
    assert [(f, line) for f, line, _ in backward] == [(f, line) for f, line, _ in reversed(forward)]
    assert [v for _, _, v in backward] == [v for _, _, v in reversed(forward)]


@pytest.mark.slow
async def test_async_stacks_keep_the_frames_under_the_event_loop(tmp_path):
    """A coroutine the event loop runs is shown on the real stack, as debugpy shows it: `fetch` ←
    `main` ← `<module>` (under `asyncio.run`), and a gathered task's `fetch` ← `<module>`."""
    from .dual import Plan, run

    path = tmp_path / "asyncio_demo.py"
    path.write_text(ASYNCIO)
    _text, lines, commands = CONCURRENT["asyncio"]
    plan = Plan(
        str(path),
        breakpoints=tuple({"line": line} for line in lines),
        commands=tuple(commands),
        expand=0,
        launch=(("live", False),),
    )
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    stacks = [v.stack for v in theirs.views]
    assert [v.stack for v in ours.views][: len(stacks)] == stacks
    assert ("<module>", 17) in stacks[0] and all(s[-1] == ("<module>", 17) for s in stacks)


ASYNC_FAILURES = """\
import asyncio


async def fetch(name, delay):
    await asyncio.sleep(delay)
    if name == "bad":
        raise ValueError(f"cannot fetch {name}")
    return name.upper()


async def slow():
    await asyncio.sleep(1)
    return "slow"


async def main():
    results = await asyncio.gather(fetch("a", 0.01), fetch("b", 0.02), return_exceptions=True)
    print(results)
    task = asyncio.create_task(slow())
    await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        print("cancelled")
    try:
        await fetch("bad", 0)
    except ValueError as exc:
        print("caught", exc)


asyncio.run(main())
"""


@pytest.mark.slow
@pytest.mark.parametrize("filters", ["raised", "userUnhandled"])
async def test_asyncio_exceptions_stop_where_debugpy_stops(tmp_path, filters):
    """Under "Raised Exceptions" debugpy stops at a cancelled task's CancelledError and where it
    reaches the awaiting frame (the `await` line), and at a ValueError and where it reaches its
    caller; never at the StopIteration an `await` resumes with. Under "User Uncaught Exceptions"
    a cancellation leaving its task for the loop is no stop."""
    from .dual import Plan, run

    path = tmp_path / "async_failures.py"
    path.write_text(ASYNC_FAILURES)
    plan = Plan(str(path), commands=("continue",) * 8, exception_filters=(filters,), stop_on_entry=True, expand=0)
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    shown = [(v.reason, v.stack, v.text) for v in theirs.views]
    assert [(v.reason, v.stack, v.text) for v in ours.views][: len(shown)] == shown
    assert ours.views[len(shown)].reason == "end"
    if filters == "raised":
        assert [s[2] for s in shown[1:]] == ["CancelledError", "CancelledError", "ValueError", "ValueError"]
        assert shown[2][1][0] == ("main", 23) and shown[4][1][0] == ("main", 27)  # the `await` lines
    else:
        assert len(shown) == 1  # the entry


THREAD_FAILURES = """\
import threading


def risky(n):
    if n % 2:
        raise ValueError(f"odd {n}")
    return n


def work(out):
    for n in range(4):
        try:
            out.append(risky(n))
        except ValueError as exc:
            out.append(str(exc))
    raise RuntimeError("worker done badly")


results = []
t = threading.Thread(target=work, args=(results,), name="worker")
t.start()
t.join()
print(results)
"""


@pytest.mark.slow
async def test_an_exception_that_ends_a_thread_stops_where_debugpy_stops(tmp_path):
    """debugpy's "Uncaught Exceptions" stops where an exception that ends a worker thread was raised
    (threading prints it and the program runs on); the program runs live with every thread held at
    each stop (neural-dap stopped nowhere: only an exception that ended the program was uncaught)."""
    from .dual import Plan, run

    path = tmp_path / "thread_failures.py"
    path.write_text(THREAD_FAILURES)
    plan = Plan(
        str(path), breakpoints=({"line": 11},), commands=("continue",) * 8, exception_filters=("uncaught",), expand=0
    )
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    shown = [(v.reason, v.thread, v.stack, v.text) for v in theirs.views]
    assert [(v.reason, v.thread, v.stack, v.text) for v in ours.views][: len(shown)] == shown
    assert shown[-1][:3] == ("exception", "worker", [("work", 16)])
    assert "RuntimeError" in shown[-1][3]
    assert ours.views[len(shown)].reason == "end"


BLANK_LINES = """\
import os


def work(n):
    total = 0

    for k in range(n):
        total += k
        # a comment

    return total


class Box:
    size = 1

    def grow(self):
        return self.size + 1



x = work(3)
# comment

print(x, Box().grow(), os.sep)
"""


async def _verified_lines(client, path: str, lines: list[int]) -> list[int | None]:
    """Where each requested breakpoint is verified, once the program has started (debugpy says so
    with `breakpoint` events then)."""
    await client.call("initialize", {"adapterID": "agreement", "linesStartAt1": True, "pathFormat": "path"})
    seq = await client.send_request(
        "launch", {"program": path, "console": "internalConsole", "stopOnEntry": True, "justMyCode": True}
    )
    await client.wait_event("initialized")
    body = await client.call("setBreakpoints", {"source": {"path": path}, "breakpoints": [{"line": n} for n in lines]})
    await client.call("configurationDone")
    await client.response(seq, "launch")
    await client.wait_event("stopped")
    await anyio.sleep(0.5)
    changed = {e["body"]["breakpoint"]["id"]: e["body"]["breakpoint"] for e in client.events_named("breakpoint")}
    out = []
    for bp in body["breakpoints"]:
        bp = changed.get(bp.get("id"), bp)
        out.append(bp.get("line") if bp.get("verified") else None)
    await client.request("disconnect", {"terminateDebuggee": True})
    return out


@pytest.mark.slow
async def test_breakpoints_on_lines_without_code_move_where_debugpy_moves_them(tmp_path):
    """Every line of a program, blank lines and comments in a loop, below a function, between a
    class and the module's code and past the end: each is verified at debugpy's line (the line
    with code before it)."""
    import subprocess
    import sys

    from neural_dap.dapwire.client import adapter_command, spawn

    path = tmp_path / "blank_lines.py"
    path.write_text(BLANK_LINES)
    lines = list(range(1, 31))
    async with spawn(adapter_command(), timeout=60, stderr=subprocess.DEVNULL) as ours:
        mine = await _verified_lines(ours, str(path), lines)
    command = [sys.executable, "-m", "debugpy.adapter"]
    async with spawn(command, timeout=60, stderr=subprocess.DEVNULL) as theirs:
        debugpys = await _verified_lines(theirs, str(path), lines)
    assert mine == debugpys
    assert mine[11] == 11 and mine[20] == 18  # below `work`: its return; above the module's code: `grow`'s


GENERATOR = """\
def numbers(n):
    for k in range(n):
        yield k * 2
    return "done"


total = 0
for value in numbers(3):
    total += value
print(total)
"""


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.11", "3.12"])
async def test_step_in_off_a_yield_goes_to_the_consumers_line_as_in_debugpy(tmp_path, version):
    """A generator pausing at `yield` is no return to stop at (no stop on the consumer's `for`
    line): stepIn goes on to the consumer's next line, as debugpy's does."""
    path = tmp_path / "generator.py"
    path.write_text(GENERATOR)
    stops = await _stops_beside_debugpy(path, (3,), ["stepIn"] * 10, version, "step-in")
    assert stops[:2] == [("numbers", 3), ("<module>", 9)], stops


@pytest.mark.slow
async def test_a_hit_condition_beside_a_condition_stops_as_in_debugpy(tmp_path):
    """debugpy stops where the hit condition is met whatever the condition says, and elsewhere where
    the condition holds (pydevd's `handle_breakpoint_condition`): `i == 1` or the 4th hit."""
    from .dual import Plan, run

    path = tmp_path / "hits.py"
    path.write_text("total = 0\nfor i in range(6):\n    total += i\nprint(total)\n")
    plan = Plan(
        str(path), breakpoints=({"line": 3, "condition": "i == 1", "hitCondition": "4"},), commands=("continue",) * 3
    )
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")

    def shown(session):
        return [(v.reason, {x.name: x.value for x in v.variables["Locals"]}["i"]) for v in session.views]

    assert shown(theirs) == [("breakpoint", "1"), ("breakpoint", "3")]
    assert shown(ours)[:2] == shown(theirs)


TASKS = """\
import asyncio


async def producer(q, limit):
    for value in range(limit):
        await q.put(value * 10)
        await asyncio.sleep(0)
    await q.put(None)


async def consumer(q, seen):
    while True:
        item = await q.get()
        if item is None:
            break
        doubled = item * 2
        seen.append(doubled)


async def main():
    q = asyncio.Queue(maxsize=1)
    seen = []
    await asyncio.gather(asyncio.create_task(producer(q, 3)), asyncio.create_task(consumer(q, seen)))
    print("seen", seen)


asyncio.run(main())
"""


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.11", "3.12"])
async def test_step_out_of_a_task_goes_on_where_debugpy_goes_on(tmp_path, version):
    """stepOut of a task's coroutine (its caller is the event loop): debugpy returns only into the
    user's frames on the real stack, to `<module>` once `asyncio.run` returns; neural-dap stopped in
    the other task (`producer`), the next line of the user's code anywhere."""
    from .dual import Plan, run
    from .test_child_real_world import _interpreter

    path = tmp_path / "tasks.py"
    path.write_text(TASKS)
    plan = Plan(
        str(path),
        breakpoints=({"line": 17, "condition": "doubled == 0"},),
        commands=("stepOut", "stepOut"),
        python=_interpreter(version),
    )
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    assert [v.stack for v in theirs.views] == [[("consumer", 17), ("<module>", 27)], [("<module>", 27)]]
    assert [v.stack for v in ours.views] == [v.stack for v in theirs.views]
    assert ours.views[-1].reason == "end"  # (there: the program's end, a stop of its own)
    assert ours.stdout == theirs.stdout == "seen [0, 20, 40]\n"


HANDLERS = """\
def risky(n):
    try:
        if n % 2:
            raise RuntimeError(f"odd {n}")
        return n * 10
    finally:
        marker = n + 1
        return marker  # noqa: B012


def load(key):
    table = {"a": 1}
    try:
        return table[key]
    except KeyError:
        fallback = -1
        return fallback


print([risky(i) for i in range(2)], load("b"))
"""


@pytest.mark.slow
async def test_a_step_from_an_exception_stop_goes_to_the_handlers_first_line_as_in_debugpy(tmp_path):
    """An exception stop ("raised") is made at the line that caught the exception and shown where
    the exception came from; `next` from it skipped that line (a finally's, an except's): it ran,
    unseen. Now the step goes to it, as debugpy's does."""
    from .dual import Plan, run

    path = tmp_path / "handlers.py"
    path.write_text(HANDLERS)
    plan = Plan(str(path), exception_filters=("raised",), commands=("next", "next", "continue", "next", "next"))
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    where = [(v.reason, v.stack[0]) for v in theirs.views]
    assert where == [
        ("exception", ("risky", 4)),
        ("step", ("risky", 7)),
        ("step", ("risky", 8)),
        ("exception", ("load", 14)),
        ("step", ("load", 15)),
        ("step", ("load", 16)),
    ]
    assert [(v.reason, v.stack[0]) for v in ours.views][: len(where)] == where
    assert [v.variables for v in ours.views][: len(where)] == [v.variables for v in theirs.views]


ONE_LINE_LOOPS = """\
def main():
    total = 0
    for x in [1, 2, 3]: total += x
    squares = [x * x for x in range(3)]
    return total, squares


main()
"""


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
async def test_a_one_line_loop_stops_as_often_as_debugpy_stops_there(tmp_path, version):
    """A breakpoint on a one-line loop (a `for` with its body on the line, an inlined
    comprehension): debugpy stops at each round on 3.11 (settrace's line event at a backward jump)
    and 3.12 (its JUMP callback), once on 3.13 (it has none). neural-dap stopped once on 3.12."""
    from .dual import Plan, run
    from .test_child_real_world import _interpreter

    python = _interpreter(version)
    path = tmp_path / "loops.py"
    path.write_text(ONE_LINE_LOOPS)
    plan = Plan(str(path), breakpoints=({"line": 3},), commands=("continue",) * 6, python=python)
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    theirs_at = [(v.stack[0], v.variables) for v in theirs.views]
    assert len(theirs_at) == (1 if version == "3.13" else 4)  # (what debugpy does, pinned)
    assert [(v.stack[0], v.variables) for v in ours.views if v.reason != "end"] == theirs_at


CONSUMED_GENERATOR = """\
def numbers():
    for x in [1, 2, 3]:
        yield x


def main():
    items = list(numbers())
    print(items)
    total = sum(x * x for x in items)
    return total


main()
"""


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.11", "3.12"])  # (settrace's rule and sys.monitoring's)
async def test_step_out_of_a_generator_runs_to_its_return_as_in_debugpy(tmp_path, version):
    """stepOut at a `yield`: the generator has not returned, and debugpy runs on until it does
    (shown in its consumer), or a breakpoint stops it on the next round. neural-dap stopped at the
    pause, in the consumer, with the generator still running."""
    from .dual import Plan, run
    from .test_child_real_world import _interpreter

    python = _interpreter(version)
    path = tmp_path / "generator.py"
    path.write_text(CONSUMED_GENERATOR)
    # once with the breakpoint hit once (the step out runs through the other rounds), once with it
    # hit on every round (the step out stops at the next round's breakpoint)
    for breakpoint in ({"line": 3, "hitCondition": "1"}, {"line": 3}):
        plan = Plan(str(path), breakpoints=(breakpoint,), commands=("stepOut", "next", "next"), python=python)
        ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
        theirs_at = [v.stack for v in theirs.views]
        if "hitCondition" in breakpoint:
            assert theirs_at[1] == [("main", 7), ("<module>", 13)]  # (the generator ran to its end)
        assert [v.stack for v in ours.views][: len(theirs_at)] == theirs_at
        # (the values where the step out ends; later stops differ by debugpy's habit of showing a
        # `(return)` value at every stop after it)
        assert [v.variables for v in ours.views][:2] == [v.variables for v in theirs.views][:2]


RETURNS = """\
def plain(n):
    return n + 1


def main():
    b = plain(1)
    print(b)


main()
"""


@pytest.mark.slow
async def test_a_step_over_a_return_shows_its_value_in_the_caller_as_debugpy_does(tmp_path):
    """`next` over `return n + 1`: on 3.11 debugpy steps on to the caller's next line and shows
    `(return) plain = 2` there, after the locals (on 3.12 it stops at the return, shown in the
    caller). neural-dap showed no return value on 3.11."""
    from .dual import Plan, run
    from .test_child_real_world import _interpreter

    path = tmp_path / "returns.py"
    path.write_text(RETURNS)
    # (3.11 only: on 3.12+ the step stops at the return itself, which other tests compare)
    plan = Plan(str(path), breakpoints=({"line": 2},), commands=("next", "next"), python=_interpreter("3.11"))
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    shown = [[(var.name, var.value) for var in v.variables["Locals"]] for v in theirs.views]
    assert shown[1] == [("b", "2"), ("(return) plain", "2")]
    assert [v.stack for v in ours.views][:2] == [v.stack for v in theirs.views][:2]
    assert [[(var.name, var.value) for var in v.variables["Locals"]] for v in ours.views][:2] == shown[:2]


@pytest.mark.slow
async def test_a_step_out_of_a_long_generator_stops_at_a_pause_and_says_why(tmp_path):
    """Each round of a step out through a generator's pauses is two actions: past 32 rounds it
    stops at the latest pause, and the console says the generator has not returned yet (a step out
    of a generator of 5000 items took over a minute)."""
    from .dual import Plan, run

    path = tmp_path / "long.py"
    path.write_text("def gen(n):\n    for x in range(n):\n        yield x\n\n\nprint(len(list(gen(5000))))\n")
    plan = Plan(str(path), breakpoints=({"line": 3, "hitCondition": "1"},), commands=("stepOut",))
    with anyio.fail_after(30):
        ours = await run(plan, "neural-dap")
    assert [v.stack[0] for v in ours.views][:2] == [("gen", 3), ("<module>", 6)]
    assert any("paused at `yield` 32 times" in line for line in ours.console), ours.console


LOCAL_MODULES = """\
def main():
    import os
    import collections as col
    sep = os.sep
    return sep, col


main()
"""


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.11", "3.13"])
async def test_a_module_in_a_frame_shows_as_debugpy_shows_it(tmp_path, version):
    """debugpy starts the program with frozen modules off (3.11+), so `os` is `<module 'os' from
    '.../os.py'>` in its Variables; a recording showed `<module 'os' (frozen)>`."""
    from .dual import Plan, run
    from .test_child_real_world import _interpreter

    path = tmp_path / "modules.py"
    path.write_text(LOCAL_MODULES)
    plan = Plan(str(path), breakpoints=({"line": 5},), python=_interpreter(version))
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    shown = {var.name: var.value for var in theirs.views[0].variables["Locals"]}
    assert shown["os"].startswith("<module 'os' from ") and shown["os"].endswith("os.py'>")
    assert {var.name: var.value for var in ours.views[0].variables["Locals"]} == shown


STEPPED_RETURNS = """\
class Box:
    def get(self):
        return 7


def f(x):
    return x + 1


def gen(n):
    for i in range(n):
        yield f(i)


def boom():
    raise ValueError("x")


def main():
    a = f(1)
    b = f(a) + Box().get() + len([a])
    t = sum(gen(3))
    u = [f(i) for i in range(2)]
    try:
        boom()
    except ValueError:
        pass
    v = f(f(a))
    return v


main()
for k in range(2):
    main()
"""


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
async def test_the_values_calls_returned_stay_beside_the_locals_as_in_debugpy(tmp_path, version):
    """debugpy keeps a `(return) f` for each function that returned into the frame while the user
    stepped (the latest per name, for the frame's whole life; a method's with its class; a
    generator's and a 3.11 comprehension's; an exception leaving `boom` as `None` on 3.11 only),
    none for what a `continue` ran. neural-dap showed one only right after a step off a return."""
    from .dual import Plan, run
    from .test_child_real_world import _interpreter

    path = tmp_path / "stepped.py"
    path.write_text(STEPPED_RETURNS)
    commands = ("next",) * 10 + ("continue", "next", "stepIn", "stepOut", "next", "stepIn", "next")
    plan = Plan(str(path), breakpoints=({"line": 20},), commands=commands, python=_interpreter(version))
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    shown = [[(var.name, var.value) for var in v.variables["Locals"]] for v in theirs.views]
    assert ("(return) Box.get", "7") in shown[2] and ("(return) f", "3") in shown[2]
    assert (("(return) boom", "None") in shown[7]) == (version == "3.11")
    assert not any(name.startswith("(return)") for name, _ in shown[11])  # (the next call's first stop)
    assert [v.stack for v in ours.views][: len(theirs.views)] == [v.stack for v in theirs.views]
    assert [[(var.name, var.value) for var in v.variables["Locals"]] for v in ours.views][: len(shown)] == shown


CHANGED_AFTER_RETURN = """\
def make(n):
    return [n, n + 1]


def main():
    rows = make(3)
    rows.append(9)
    rows.sort(key=lambda r: -r)
    other = make(1)
    other = [0]
    other.append(2)
    return rows, other


main()
"""


@pytest.mark.slow
async def test_a_returned_object_changed_later_shows_as_it_is_now_as_in_debugpy(tmp_path):
    """debugpy keeps the returned object: `rows = make(3)` then `rows.append(9)` shows `(return)
    make` with the 9, and empty while `sort` calls its key; once the name is bound to another
    object, the value stays the object's. neural-dap showed the value as it was returned."""
    from .dual import Plan, run

    path = tmp_path / "changed.py"
    path.write_text(CHANGED_AFTER_RETURN)
    plan = Plan(str(path), breakpoints=({"line": 6},), commands=("next", "next", "stepIn", "stepOut") + ("next",) * 4)
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    shown = [[(var.name, var.value) for var in v.variables["Locals"]] for v in theirs.views]
    assert ("(return) make", "[3, 4, 9]") in shown[2]
    assert ("(return) make", "[1, 2]") in shown[-1] and ("other", "[0, 2]") in shown[-1]
    assert [[(var.name, var.value) for var in v.variables["Locals"]] for v in ours.views][: len(shown)] == shown


PROPERTY_RETURNS = """\
import functools


class Rect:
    def __init__(self, w, h):
        self.w = w
        self.h = h

    @property
    def area(self):
        return self.w * self.h

    @functools.cached_property
    def side(self):
        return max(self.w, self.h)

    def double(self):
        return 2 * self.w


def main():
    r = Rect(3, 4)
    a = r.area
    b = r.double()
    c = r.side + 1
    return a, b, c


main()
"""


@pytest.mark.slow
async def test_a_propertys_return_value_is_named_without_its_class_as_in_debugpy(tmp_path):
    """pydevd names a method's return value with its class only where the class's attribute of
    that name is the method's code: a property's getter (`(return) area`), a cached property's, any
    decorated method's is named alone; neural-dap wrote `(return) Rect.area`."""
    from .dual import Plan, run

    path = tmp_path / "props.py"
    path.write_text(PROPERTY_RETURNS)
    plan = Plan(str(path), breakpoints=({"line": 23},), commands=("next", "next", "next", "next"))
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    shown = [[(var.name, var.value) for var in v.variables["Locals"]] for v in theirs.views]
    assert ("(return) area", "12") in shown[1] and ("(return) Rect.double", "6") in shown[2]
    assert [[(var.name, var.value) for var in v.variables["Locals"]] for v in ours.views][: len(shown)] == shown


LIBRARY_RETURNS = """\
import json
import re
from contextlib import contextmanager


@contextmanager
def opened(n):
    yield n * 2


def main():
    data = {"a": [1, 2]}
    text = json.dumps(data)
    words = re.findall(r"\\w+", text)
    with opened(3) as k:
        total = k + len(words)
    back = json.loads(text)
    return total, back


main()
"""


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.11", "3.12"])
async def test_the_values_library_functions_return_are_shown_as_in_debugpy(tmp_path, version):
    """debugpy shows what the library's Python functions return into the frame being stepped:
    on 3.12+ after every `next` (`(return) dumps`, `(return) findall`, a `with` block's
    `_GeneratorContextManager.__enter__` and `__exit__`), on 3.11 those a step in passed
    (`(return) loads`). A recording of the user's code had no value for them."""
    from .dual import Plan, run
    from .test_child_real_world import _interpreter

    path = tmp_path / "library.py"
    path.write_text(LIBRARY_RETURNS)
    commands = ("next",) * 6 + ("stepIn", "stepIn")
    plan = Plan(str(path), breakpoints=({"line": 12},), commands=commands, python=_interpreter(version))
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    shown = [[(var.name, var.value) for var in v.variables["Locals"]] for v in theirs.views]
    if version == "3.11":
        assert ("(return) loads", "{'a': [1, 2]}") in shown[7]
    else:
        assert ("(return) findall", "['a', '1', '2']") in shown[3]
        assert ("(return) _GeneratorContextManager.__exit__", "False") in shown[6]
        # (an object no local holds opens too: the `@contextmanager`'s `_GeneratorContextManager`)
        helper = next(var for var in ours.views[4].variables["Locals"] if var.name == "(return) helper")
        assert helper.expandable and any(child.name == "gen" for child in helper.children or ())
    assert [[(var.name, var.value) for var in v.variables["Locals"]] for v in ours.views][: len(shown)] == shown


NEW_RETURNS = """\
from pathlib import Path


def main():
    here = Path("/tmp")
    there = here / "x.txt"
    return there.name


main()
"""


@pytest.mark.slow
async def test_what_a_librarys_new_returns_shows_as_the_object_it_became_as_in_debugpy(tmp_path):
    """On 3.12+ `Path("/tmp")` shows `(return) PosixPath.__new__`: what `__new__` returned before its
    `__init__` ran, as debugpy shows it at the stop, `PosixPath('/tmp')`. Its text made where it
    returned was `<pathlib.PosixPath object>` (the repr of an object not set up yet)."""
    from .dual import Plan, run
    from .test_child_real_world import _interpreter

    path = tmp_path / "paths.py"
    path.write_text(NEW_RETURNS)
    plan = Plan(str(path), breakpoints=({"line": 5},), commands=("next", "next"), python=_interpreter("3.12"))
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    shown = [[(var.name, var.value) for var in v.variables["Locals"]] for v in theirs.views]
    assert ("(return) PosixPath.__new__", "PosixPath('/tmp')") in shown[1]
    assert [[(var.name, var.value) for var in v.variables["Locals"]] for v in ours.views][: len(shown)] == shown


LIBRARY_THREAD = """\
import http.server
import threading
import urllib.request


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def main():
    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="server", daemon=True)
    thread.start()
    port = server.server_address[1]
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/").read()
    size = len(body)
    server.shutdown()
    return size


print(main())
"""


@pytest.mark.slow
async def test_a_thread_in_library_code_is_listed_as_debugpy_lists_it(tmp_path):
    """A thread that runs only library code (a server's `serve_forever`) is one of debugpy's
    threads, with no frame of the user's; neural-dap listed only threads that had run the user's
    code, and one whose function had returned into library code (after `do_GET` answered) stood
    at that function's return."""
    from .dual import Plan, run

    path = tmp_path / "served.py"
    path.write_text(LIBRARY_THREAD)
    plan = Plan(str(path), breakpoints=({"line": 20}, {"line": 22}), commands=("next", "continue"), all_threads=True)
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    assert [v.others for v in theirs.views] == [{"server": []}] * 3
    assert [v.others for v in ours.views] == [v.others for v in theirs.views]


RUN_AND_PRINT = """\
import asyncio


async def main():
    total = 1
    return total


result = asyncio.run(main())
print(result)
"""


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
@pytest.mark.parametrize("commands", [("next", "next", "next"), ("next", "stepOut", "next")])
async def test_a_step_off_the_tasks_return_stops_where_asyncio_run_returns_as_in_debugpy(tmp_path, version, commands):
    """On 3.12+ debugpy stops where `asyncio.run` returns into `<module>`, shown at its line (before
    `result` is bound), then at the next line; on 3.11 `next` goes straight to the next line and a
    step out stops there too. neural-dap went to the next line (and from a stop at the task's
    return, to the end)."""
    from .dual import Plan, run
    from .test_child_real_world import _interpreter

    path = tmp_path / "run_and_print.py"
    path.write_text(RUN_AND_PRINT)
    plan = Plan(str(path), breakpoints=({"line": 5},), commands=commands, python=_interpreter(version))
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    shown = [(v.reason, v.stack) for v in theirs.views]
    if commands[1] == "next":  # (a step out stops there on 3.11 too)
        assert (("step", [("<module>", 9)]) in shown) == (version != "3.11")
    assert [(v.reason, v.stack) for v in ours.views][: len(shown)] == shown
    # (the values too, `(return) run` with them: the library's value, watched while the step ran)
    mine = [[(x.name, x.value) for x in v.variables["Locals"]] for v in ours.views]
    assert mine[: len(shown)] == [[(x.name, x.value) for x in v.variables["Locals"]] for v in theirs.views]


CLEANUPS = """\
from contextlib import contextmanager


class Guard:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@contextmanager
def managed():
    yield 1


def in_with():
    with Guard():
        raise KeyError("k")


def in_cm():
    with managed():
        raise IndexError("i")


def in_finally():
    try:
        raise ValueError("v")
    finally:
        note = "cleanup"


for f in (in_with, in_cm, in_finally):
    try:
        f()
    except Exception as exc:
        last = exc
print(last)
"""


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.11", "3.12"])
async def test_raised_stops_once_where_a_cleanup_lets_the_exception_go_on(tmp_path, version):
    """With "Raised Exceptions" on, an exception that a `finally` body or a `with` statement lets
    run its cleanup stops where it was raised and where it is caught, as in debugpy; neural-dap
    stopped again where the frame re-raised it after the cleanup (3.12+, and a coroutine's
    `finally` on 3.11: a cancelled task's)."""
    from .dual import Plan, run
    from .test_child_real_world import _interpreter

    path = tmp_path / "cleanups.py"
    path.write_text(CLEANUPS)
    plan = Plan(str(path), exception_filters=("raised",), commands=("continue",) * 8, python=_interpreter(version))
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    shown = [(v.reason, v.stack) for v in theirs.views]
    assert len(shown) == 7  # (raised and caught in each; in `managed` too, thrown in at its `yield`)
    assert [(v.reason, v.stack) for v in ours.views][: len(shown)] == shown


CANCELLED = """\
import asyncio


async def sleeper():
    try:
        await asyncio.sleep(10)
    finally:
        note = "cleanup"


async def main():
    task = asyncio.create_task(sleeper())
    await asyncio.sleep(0.01)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        outcome = "cancelled"
    return outcome


print(asyncio.run(main()))
"""


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
async def test_raised_stops_once_for_a_cancelled_task_as_in_debugpy(tmp_path, version):
    """A task cancelled in its `await`: "Raised Exceptions" stops where the `CancelledError` comes
    into the task's frame and into the awaiting one, as debugpy does. neural-dap stopped again
    after the task's `finally` (every version), and on 3.13 twice in each frame (the `await` takes
    the thrown exception in, then the handler around it: two events that catch it)."""
    from .dual import Plan, run
    from .test_child_real_world import _interpreter

    path = tmp_path / "cancelled.py"
    path.write_text(CANCELLED)
    plan = Plan(str(path), exception_filters=("raised",), commands=("continue",) * 4, python=_interpreter(version))
    ours, theirs = await run(plan, "neural-dap"), await run(plan, "debugpy")
    shown = [(v.reason, v.stack) for v in theirs.views]
    assert shown == [("exception", [("sleeper", 6), ("<module>", 22)]), ("exception", [("main", 16), ("<module>", 22)])]
    assert [(v.reason, v.stack) for v in ours.views][: len(shown) + 1] == [*shown, ("end", [("<module>", 22)])]
