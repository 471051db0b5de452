"""Skeleton recording with fork checkpoints: the same states, stops and answers as full capture, on
real code; long runs; a debuggee that does not replay the same way."""

from __future__ import annotations

import os
import random
import textwrap
from collections.abc import Callable

import msgspec
import numpy as np
import pytest

from neural_dap.core.actions import ACTION_KINDS, Action
from neural_dap.trace import skeleton as skeleton_module
from neural_dap.trace.child.channel import Channel
from neural_dap.trace.child.channel import Limits as ChildLimits
from neural_dap.trace.execution import FullExecution, SkeletonExecution
from neural_dap.trace.recorder import Limits, Program, record, record_skeleton
from neural_dap.trace.skeleton import (
    CALL,
    CALL_DTYPE,
    CAUGHT,
    EVENT_DTYPE,
    EXCEPTION,
    LIBRARY_CALL,
    LINE,
    RETURN,
    EventColumns,
    SkeletonLog,
    SkeletonTree,
)

from .conftest import EXAMPLES
from .dap_helpers import adapter, start, where
from .test_action_semantics import compare as compare_actions
from .test_recorder import _python


def _actions(rng: random.Random, points: list[tuple[str, int]]) -> list[Action]:
    """Every action; breakpoints at (path, line) pairs of the run, one of them sometimes moved to a
    line of another file (a breakpoint must stop only in its own file)."""
    out = []
    paths = sorted({p for p, _ in points})
    for kind in ACTION_KINDS:
        if kind in ("breakpoint", "inv_breakpoint"):
            targets = rng.sample(points, k=min(2, len(points)))
            if rng.random() < 0.3:
                targets[0] = (rng.choice(paths), rng.choice(points)[1])
            out.append(Action(kind, tuple(targets)))
        else:
            out.append(Action(kind))
    return out


def _compare(
    program: Program,
    rng: random.Random,
    sample: int | None = None,
    python: str | None = None,
    engine: str = "auto",
    also: Callable[[FullExecution, SkeletonExecution], object] | None = None,
) -> int:
    """Skeleton against full on `sample` events (all by default); `also` compares the same two
    recordings some other way (a sweep records each program once for every comparison)."""
    full = FullExecution(record(program, Limits(wall_time=10), python=python))
    skeleton = SkeletonExecution(record_skeleton(program, Limits(wall_time=10), python=python, engine=engine))
    try:
        if also is not None:
            also(full, skeleton)
        assert len(skeleton) == len(full), program.path
        indices = list(range(len(full)))
        if sample is not None and len(indices) > sample:
            indices = sorted(rng.sample(indices, sample))
        points = sorted({(s.path, s.line) for s in full.tree.states if s.event == "line"})
        for i in indices:
            assert skeleton.state(i) == full.state(i), (program.path, i)
            assert skeleton.frames(i) == full.frames(i), (program.path, i)
            for action in _actions(rng, points):
                assert skeleton.apply(i, action) == full.apply(i, action), (program.path, i, str(action))
                if action.targets:  # the breakpoint hits on the way, both ways
                    for end in (0, full.last):
                        assert skeleton.hits(i, end, action.targets) == full.hits(i, end, action.targets)
            assert skeleton.semantics.hit_number(i) == full.semantics.hit_number(i), (program.path, i)
        last = full.last
        assert skeleton.output(-1, last) == full.output(-1, last)
        assert skeleton.first_exception(0, last, frozenset({"raised"})) == full.first_exception(
            0, last, frozenset({"raised"})
        )
        assert skeleton.first_exception(0, last, frozenset({"uncaught"})) == full.first_exception(
            0, last, frozenset({"uncaught"})
        )
        return len(indices)
    finally:
        skeleton.close()


@pytest.mark.slow
@pytest.mark.parametrize("version", [None, "3.12"])
def test_both_recordings_agree_on_every_cruxeval_function(cruxeval_rows, tmp_path, version):
    """Skeleton and full recordings agree: on this interpreter (3.11: the settrace front end), and
    under 3.12 (the C tracer's sys.monitoring front end) where one is installed. On this interpreter
    the same recordings also go through test_action_semantics' comparison (every action against the
    breakpoints' definition, hit numbers): one sweep, each function recorded once per engine."""
    python = None if version is None else _python(version)
    if version is not None and python is None:
        pytest.skip(f"no python{version} on this machine")
    rng, semantics_rng = random.Random(0), random.Random(2)
    compared, semantics_compared = 0, 0

    def by_definition(full: FullExecution, skeleton: SkeletonExecution) -> None:
        nonlocal semantics_compared
        semantics_compared += compare_actions(full, skeleton, semantics_rng, sample=10)

    for row in cruxeval_rows:
        program = Program(str(tmp_path / f"{row['id']}.py"), source=row["code"], entry="f", entry_args=row["input"])
        compared += _compare(program, rng, sample=25, python=python, also=by_definition if version is None else None)
    assert compared > 3000
    assert version is not None or semantics_compared > 1000


def test_both_recordings_agree_on_every_example():
    rng = random.Random(1)
    for path in sorted(EXAMPLES.glob("*.py")):
        if "missing" not in path.name:
            assert _compare(Program(str(path)), rng) > 10


def test_the_python_engines_record_the_same_skeleton():
    program = Program(str(EXAMPLES / "bubble_sort.py"))
    _compare(program, random.Random(2), engine="settrace")


@pytest.mark.parametrize("engine", ["cmonitoring", "monitoring"])
@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_the_sys_monitoring_engines_record_the_same_skeleton(version, engine):
    python = _python(version)
    if python is None:
        pytest.skip(f"no python{version} on this machine for the sys.monitoring engines")
    for name in ("bubble_sort.py", "recursion.py", "inventory.py", "exceptions.py"):
        _compare(Program(str(EXAMPLES / name)), random.Random(3), python=python, engine=engine)


FIRST_LINES = textwrap.dedent(
    """\
    import functools
    import sys


    def fib(n):
        if n < 2:
            return n
        return fib(n - 1) + fib(n - 2)


    def one(x): return x + 1


    def countdown(n):
        while n:
            n -= 1
        return n


    def each(xs):
        for x in xs:
            yield x


    def guarded(x):
        try:
            return 10 // x
        except ZeroDivisionError:
            return 0


    def outer(x):
        def inner():
            return x * 2
        return inner()


    def logged(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            result = function(*args, **kwargs)
            return result
        return wrapper


    @logged
    def square(x, by=1):
        y = x * x
        return y * by


    class Money:
        def __init__(self, cents):
            self.cents = cents

        def __add__(self, other):
            return Money(self.cents + other.cents)

        @property
        def euros(self):
            return self.cents // 100

        def __del__(self):
            seen.append(self.cents)


    class Box:
        size = 3

        def grow(self, by):
            self.size += by
            return self.size


    class Bigger(Box):
        def grow(self, by):
            return super().grow(by * 2)


    seen = []


    def missing(x):
        y = x
        return undefined_name(y)


    def relay(x):
        y = x
        return missing(y)


    def lookups(money, other):
        return len(seen) + (money + other).euros + max(money.euros, other.euros)


    def printed(xs):
        for x in xs:
            print(x, sep="")
        return sum(xs)


    def main():
        total = fib(6) + one(1) + countdown(3) + sum(each([1, 2]))
        total += guarded(0) + guarded(5) + outer(2) + square(3) + square(2, by=2)
        total += sum(map(one, [1, 2])) + sorted([3, 1], key=lambda v: -v)[0]
        total += lookups(Money(250), Money(150)) + printed([1, 2]) + len(seen)
        try:
            relay(1)
        except NameError:
            total += 1
        args = (4,)
        total += square(*args) + Bigger().grow(1)
        if hasattr(sys, "monitoring"):
            sys.monitoring.restart_events()  # (another tool's: every DISABLEd event comes again)
        total += fib(4) + Box().grow(2)
        return total
    """
)


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_the_c_tracers_first_lines_made_at_the_start_are_the_line_events_python_sees(version):
    """The C tracer makes a function's first line's event at its start, and a line that only reads
    until a call or a return at that event, where no other way leads to those lines
    (child/line_shortcuts.py): its records and states are those of the Python engine, which takes
    every LINE as it comes. In recursion, loops, try, closures, decorators, keyword and star calls,
    properties, operators' and finalizers' methods run by a line, super(), an exception raised at a
    line's first instruction, calls from library code, and after another tool restarts the events
    the tracer DISABLEd."""
    python = _python(version)
    if python is None:
        pytest.skip(f"no python{version} on this machine")
    program = Program("/virtual/first_lines.py", source=FIRST_LINES, entry="main")
    c_full = record(program, python=python, engine="cmonitoring")
    py_full = record(program, python=python, engine="monitoring")
    assert c_full.outcome.value == py_full.outcome.value == "86"
    assert [s.format_view() for s in c_full.states] == [s.format_view() for s in py_full.states]
    recordings = [record_skeleton(program, python=python, engine=e) for e in ("cmonitoring", "monitoring")]
    try:
        trees = [SkeletonExecution(r).tree for r in recordings]
        assert len(trees[0].kinds) == len(trees[1].kinds) > 150
        for column in ("kinds", "lines", "invs"):
            assert np.array_equal(getattr(trees[0], column), getattr(trees[1], column)), column
    finally:
        for r in recordings:
            r.close()


@pytest.mark.parametrize("version", [None, "3.12", "3.13"])
def test_a_window_rebuilt_deep_in_a_recursion_starts_with_every_callers_locals(tmp_path, version):
    """A window that starts deep in a recursion snapshots the frames already on the stack; under
    sys.monitoring the C tracer finds those frames only then (walking out from the running one,
    where every frame of the recursion has the same code)."""
    python = None if version is None else _python(version)
    if version is not None and python is None:
        pytest.skip(f"no python{version} on this machine")
    path = tmp_path / "walk.py"
    path.write_text(
        textwrap.dedent(
            """\
            def walk(node, depth):
                total = node
                if depth < 8:
                    for child in range(2):
                        total += walk(node * 2 + child, depth + 1)
                return total

            print(walk(1, 0))
            """
        )
    )
    program = Program(str(path))
    full = FullExecution(record(program, Limits(wall_time=10), python=python))
    skeleton = SkeletonExecution(record_skeleton(program, Limits(wall_time=10), python=python))
    try:
        deep = [i for i in range(len(full)) if full.state(i).depth == 8]
        i = deep[len(deep) * 3 // 4]
        window = skeleton.recording.window_for(i)
        assert window.offset > 0 and len(window.snapshots) >= 8  # the window began with the recursion deep
        invs = skeleton.tree.invs[: window.offset]
        for inv, (local_reprs, _values, line) in window.snapshots.items():
            latest = int(np.flatnonzero(invs == inv)[-1])  # the frame's last event before the window
            expected = full.state(latest)
            assert line == expected.line, (inv, line, expected.line)
            assert {k: local_reprs.get(k) for k in expected.locals} == expected.locals, (inv, local_reprs)
        assert _compare(program, random.Random(4), sample=60, python=python) == 60
    finally:
        skeleton.close()


def test_a_long_run_records_its_skeleton_and_rebuilds_far_states(tmp_path):
    path = tmp_path / "long.py"
    path.write_text(
        "def work(n):\n    total = 0\n    for i in range(n):\n        total += i % 7\n    return total\n\n"
        "print(work(300_000))\n"
    )
    rec = record_skeleton(Program(str(path)), Limits(max_events=5_000_000, wall_time=60), checkpoint_events=100_000)
    execution = SkeletonExecution(rec)
    try:
        assert rec.outcome.kind == "finished" and len(execution) == 600_009
        assert len(rec.checkpoints) >= 6  # by events (every 100k) and by time
        late = execution.apply(0, Action.at_lines("breakpoint", [5]))
        assert execution.state(late).locals["total"] == str(sum(i % 7 for i in range(300_000)))
        middle = execution.state(300_001)
        assert (middle.function, middle.line, middle.locals["i"]) == ("work", 3, "149997")  # 7 + 2 * 149997
        assert execution.output(late, execution.last) == (("stdout", "899997\n"),)
        assert rec.diverged_at is None and rec.materialisations == 2
        pids = [pid for _, pid in rec.log.checkpoints.values()]
    finally:
        execution.close()
    for pid in pids:  # no checkpoint outlives its recording
        with pytest.raises(ProcessLookupError):
            for _ in range(50):
                os.kill(pid, 0)
                import time

                time.sleep(0.05)


def test_a_program_that_rewrites_its_own_state_file_replays_what_it_read_and_writes_it_once(tmp_path):
    counter = tmp_path / "counter"
    path = tmp_path / "changing.py"
    path.write_text(
        textwrap.dedent(f"""\
        import os
        path = {str(counter)!r}
        n = int(open(path).read()) if os.path.exists(path) else 0
        open(path, "w").write(str(n + 1))
        total = 0
        for i in range(n + 3):
            total += i
        print(total)
        """)
    )
    rec = record_skeleton(Program(str(path)), Limits(wall_time=20))
    execution = SkeletonExecution(rec)
    try:
        states = [execution.state(i) for i in range(len(execution))]  # every one replayed
        assert rec.diverged_at is None
        assert states[-1].locals["n"] == "0" and states[-1].locals["total"] == "3"  # what the run read
        assert counter.read_text() == "1"  # written once: replays touch nothing
    finally:
        execution.close()


async def test_a_session_on_a_long_run_travels_both_ways(tmp_path):
    path = tmp_path / "long.py"
    path.write_text(
        "def work(n):\n    total = 0\n    for i in range(n):\n        total += i % 7\n    return total\n\n\n"
        "result = work(500_000)\nprint('done', result)\n"
    )
    async with adapter() as c:
        stopped = await start(c, {"program": str(path), "stopOnEntry": True}, breakpoints={str(path): [{"line": 5}]})
        assert stopped["body"]["reason"] == "entry"
        await c.call("continue", {"threadId": 1})
        assert (await c.wait_event("stopped"))["body"]["reason"] == "breakpoint"
        function, line, local = await where(c)
        assert (function, line, local["i"]) == ("work", 5, "499999")
        frame = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"][0]["id"]
        assert (await c.call("evaluate", {"expression": "total % 1000", "frameId": frame}))["result"] == str(
            sum(i % 7 for i in range(500_000)) % 1000
        )
        await c.call("stepBack", {"threadId": 1})
        await c.wait_event("stopped")
        _, line, local = await where(c)
        assert (line, local["i"]) == (3, "499999")  # the loop head that found the range exhausted
        await c.call("reverseContinue", {"threadId": 1})
        assert (await c.wait_event("stopped"))["body"]["reason"] == "entry"
        summary = await c.call("sessionSummary")
        # a live session: recorded up to the breakpoint and the event after it (the program still
        # runs there); the rest (return, print, the module's end) comes when it goes on
        assert summary["recording"] == "skeleton" and summary["states"] == 1_000_007


# the user's functions called by the standard library (sched's callbacks, singledispatch's registered
# function, heapq's key), directly (twice), from a comprehension, from a call site that called a
# builtin first, and by a builtin (sorted's key: no frame between); one line calls twice directly
# and then through library code (the C tracer's CALL shortcut must not take the second for the first)
LIBRARY_CALLS = """
import functools
import heapq
import sched


def tick(log, name):
    log.append(name)
    return len(log)


@functools.singledispatch
def describe(x):
    return "thing"


@describe.register
def _(x: int):
    return x * 2


def twice(x):
    return x * 2


def main():
    log = []
    s = sched.scheduler()
    s.enter(0, 1, tick, (log, "a"))
    s.enter(0, 2, tick, (log, "b"))
    s.run()
    doubled = [twice(x) for x in (1, 2)]
    for f in (abs, twice):
        f(-1)
    total = describe(3) + twice(sum(doubled)) + sorted([2, 1], key=twice)[0]
    return total + twice(1) + heapq.nsmallest(1, [3], key=twice)[0]
"""
BY_LIBRARY = [
    ("main", False),
    ("tick", True),
    ("tick", True),
    ("twice", False),
    ("twice", False),
    ("twice", False),
    ("_", True),
    ("twice", False),
    ("twice", False),
    ("twice", False),
    ("twice", False),
    ("twice", True),
]


def _called_by_library(execution) -> list[tuple[str, bool]]:
    """(function, called by library code) of each call of the program's functions, in order."""
    semantics = execution.semantics
    columns = semantics.columns
    out = []
    for i in np.flatnonzero(columns.kinds == 0):
        name = columns.codes[int(columns.code_of[int(columns.invs[i])])][0]
        if name in ("main", "tick", "twice", "_"):
            out.append((name, semantics.called_by_library(int(i))))
    return out


@pytest.mark.parametrize(
    ("version", "engine"),
    [(None, "ctrace"), (None, "settrace"), ("3.12", "cmonitoring"), ("3.12", "monitoring"), ("3.13", "cmonitoring")],
)
def test_every_engine_records_which_calls_library_code_made(version, engine):
    """Both recordings, from every engine, mark the calls library code made (and no other call):
    stepping off such a function's return stops where that code returns to the caller."""
    python = _python(version) if version else None
    if version and python is None:
        pytest.skip(f"no python{version} on this machine")
    program = Program("/virtual/prog.py", source=LIBRARY_CALLS, entry="main")
    full = FullExecution(record(program, python=python, engine=engine))
    assert _called_by_library(full) == BY_LIBRARY
    skeleton = SkeletonExecution(record_skeleton(program, python=python, engine=engine))
    try:
        assert _called_by_library(skeleton) == BY_LIBRARY
    finally:
        skeleton.close()
    # every thread recorded (the Python engines) and 3.11's comprehension frames (a debug session's)
    threaded = FullExecution(record(msgspec.structs.replace(program, comprehensions=True), python=python, threads=True))
    assert _called_by_library(threaded) == BY_LIBRARY


def _frames_through(channel_records: Callable[[Channel], None], tmp_path) -> tuple[bytes, SkeletonLog]:
    """What a recording child's channel sends when `channel_records(channel)` writes records, and
    the adapter's log after reading it."""
    read_fd, write_fd = os.pipe()
    log = SkeletonLog(str(tmp_path))  # (makes the two record files, empty, as record_skeleton does)
    channel = Channel(write_fd, ChildLimits({}))
    channel_records(channel)
    os.close(write_fd)
    wire = b""
    while chunk := os.read(read_fd, 1 << 16):
        wire += chunk
    os.close(read_fd)
    log.feed_frames(wire)
    log.sync()
    return wire, log


def test_records_go_into_the_adapters_files_and_only_their_count_through_the_pipe(tmp_path):
    """The child writes its skeleton records straight into the adapter's files and tells it how
    many (a 21-byte notice for 3 records here): every record arrives, in order, and a notice that
    skips records marks the log corrupt rather than reading garbage."""
    events = np.array([(0, 1, CALL, b""), (0, 2, LINE, b""), (0, 2, RETURN, b"")], dtype=EVENT_DTYPE).tobytes()
    calls = np.array([(0, -1, -1)], dtype=CALL_DTYPE).tobytes()  # one call record

    def write(channel: Channel) -> None:
        channel.record_files(str(tmp_path / "events.bin"), str(tmp_path / "calls.bin"))
        channel.write_records(0, events[:24], calls)
        channel.write_records(2, events[24:], b"")

    wire, log = _frames_through(write, tmp_path)
    assert wire[:1] == b"r" and len(wire) == 2 * 21
    assert log.count == 3 and not log.corrupt and log.calls_bytes == 12
    assert (tmp_path / "events.bin").read_bytes() == events
    assert (tmp_path / "calls.bin").read_bytes() == calls

    def gap(channel: Channel) -> None:
        channel.record_files(str(tmp_path / "events.bin"), str(tmp_path / "calls.bin"))
        channel.write_records(1, events[:12], b"")

    assert _frames_through(gap, tmp_path)[1].corrupt


def test_records_come_through_the_pipe_where_the_files_cannot_be_written(tmp_path):
    """A child that cannot open the adapter's files (gone, another mount, no permission) sends the
    records through the pipe as before: nothing is lost."""
    events = np.array([(0, 1, CALL, b""), (0, 2, LINE, b"")], dtype=EVENT_DTYPE).tobytes()

    def write(channel: Channel) -> None:
        channel.record_files(str(tmp_path / "gone" / "events.bin"), str(tmp_path / "gone" / "calls.bin"))
        channel.write_records(0, events, b"")

    wire, log = _frames_through(write, tmp_path)
    assert wire[:1] == b"b"
    assert log.count == 2 and not log.corrupt
    assert (tmp_path / "events.bin").read_bytes() == events


def _random_run(rng: random.Random, n: int) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """A well-formed skeleton of n events as the child records them: calls (some made by library
    code, some resuming an earlier invocation, some at line 0), lines (some right after a caught
    exception), returns and exceptions."""
    events: list[tuple[int, int, int]] = []
    calls: list[tuple[int, int, int]] = []
    stack: list[int] = []
    last: dict[int, int] = {}  # an invocation's latest event
    while len(events) < n:
        r = rng.random()
        if not stack or (r < 0.3 and len(stack) < 30):
            inv = len(calls)
            calls.append(
                (rng.randrange(6), last[stack[-1]] if stack else -1, rng.randrange(inv) if inv and r < 0.02 else -1)
            )
            kind, line = CALL | (LIBRARY_CALL if stack and rng.random() < 0.1 else 0), rng.choice((0, 1, 7, 30))
            stack.append(inv)
        elif r < 0.75:
            inv, kind, line = stack[-1], LINE | (CAUGHT if rng.random() < 0.05 else 0), rng.randint(1, 50)
        else:
            inv, kind, line = stack.pop(), rng.choice((RETURN, RETURN, EXCEPTION)), rng.randint(0, 50)
        last[inv] = len(events)
        events.append((inv, line, kind))
    return events, calls


@pytest.mark.parametrize("indexer", ["c", "numpy"])
def test_the_tree_indexed_batch_by_batch_is_the_tree_of_the_whole_run(tmp_path, monkeypatch, indexer):
    """The adapter indexes each batch of records as its notice comes (skeleton.EventColumns), the
    call records sometimes behind the events: the stacks, steps and breakpoints a session reads
    must be those of the whole run indexed at once, and a tree made mid-way must not see ends
    that come after it. The same by the C pass and by numpy's."""
    monkeypatch.setattr(skeleton_module, "_CHUNK", 7)  # (batches split into several chunks too)
    if indexer == "numpy":
        monkeypatch.setattr(skeleton_module, "_records_index", None)
    elif skeleton_module._records_index is None:
        pytest.skip("the C pass (neural_dap/trace/_records) is not built here")
    rng = random.Random(37)
    events, calls = _random_run(rng, 3000)
    events_path, calls_path = tmp_path / "events.bin", tmp_path / "calls.bin"
    events_path.write_bytes(np.array([(i, ln, k, b"") for i, ln, k in events], dtype=EVENT_DTYPE).tobytes())
    calls_path.write_bytes(np.array(calls, dtype=CALL_DTYPE).tobytes())
    kinds = np.array([k for _, _, k in events])
    invs = np.array([i for i, _, _ in events])
    calls_by = np.cumsum((kinds & 0x3F) == CALL)  # call records that may have come with events 0..k
    starts = np.flatnonzero((kinds & 0x3F) == CALL)
    ends = np.full(len(calls), -1)
    for k in np.flatnonzero((kinds & 0x3F) >= RETURN):
        ends[invs[k]] = k

    columns = EventColumns(str(events_path), 64, str(calls_path))  # (it grows past 64 events)
    codes = {c: (f"f{c}", "/program.py", 1) for c in range(5)}  # (code 5 is never named)
    count = read_calls = 0
    early = None
    while count < len(events):
        count = min(len(events), count + rng.randint(1, 400))
        read_calls = max(read_calls, int(calls_by[count - 1]) - rng.randint(0, 20))  # (behind the events)
        columns.extend(count, read_calls)
        open_then = ends[: calls_by[count - 1]] >= count  # (invocations that end after this moment)
        if early is None and count > 1500 and read_calls < calls_by[count - 1] and open_then.any():
            # a tree while the records go on (a live stop's), some call records not read yet
            early = (SkeletonTree(columns, count, read_calls, codes), count, read_calls)
    columns.extend(len(events), len(calls))
    tree = SkeletonTree(columns, len(events), len(calls), codes)

    assert tree.call_index.tolist() == starts.tolist()
    assert tree.end_index.tolist() == ends.tolist()
    assert tree.depth.tolist() == [
        int(np.sum((kinds[:p] & 0x3F) == CALL) - np.sum((kinds[:p] & 0x3F) >= RETURN)) for p in starts
    ]
    assert tree.parent.tolist() == [int(invs[c]) if c >= 0 else -1 for _, c, _ in calls]
    assert tree.resumes.tolist() == [r for _, _, r in calls]
    assert tree.library is not None and tree.library.tolist() == [bool(kinds[p] & LIBRARY_CALL) for p in starts]
    assert tree.caught_flags.tolist() == [k >= CAUGHT for k in kinds]
    assert tree.lines.tolist() == [ln for _, ln, _ in events]
    cols = tree.semantics.columns
    assert [cols.codes[c] for c in cols.code_of.tolist()] == [codes.get(c, ("", ""))[:2] for c, _, _ in calls]

    assert early is not None
    tree, count, read_calls = early
    invocations = int(calls_by[count - 1])
    assert len(tree) == count and len(tree.call_index) == invocations
    assert tree.end_index.tolist() == [e if e < count else -1 for e in ends[:invocations]]  # (none seen later)
    named = tree.semantics.columns
    assert [named.codes[c] for c in named.code_of.tolist()] == [
        codes.get(c, ("", ""))[:2] if k < read_calls else ("", "") for k, (c, _, _) in enumerate(calls[:invocations])
    ]
