"""The recorder: faithful states of real runs, and a clear typed outcome for every misbehaviour."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from neural_dap.core.state import as_traced
from neural_dap.trace.recorder import Limits, Program, RecorderError, record


def run(source: str, entry: str | None = None, args: str = "", tmp_path: Path | None = None, **limits) -> object:
    return record(
        Program("/virtual/prog.py", source=textwrap.dedent(source), entry=entry, entry_args=args), Limits(**limits)
    )


def test_function_entry_records_call_lines_and_return_with_locals_before_each_line():
    rec = run(
        """
        def f(xs, key=None):
            total = 0
            for x in xs:
                total += x
            return total
        """,
        entry="f",
        args="[3, 1], key=None",
    )
    assert rec.outcome.kind == "finished"
    events = [(s.event, s.line) for s in rec.states]
    assert events == [
        ("call", 2),
        ("line", 3),
        ("line", 4),
        ("line", 5),
        ("line", 4),
        ("line", 5),
        ("line", 4),
        ("line", 6),
        ("return", 6),
    ]
    # a line state shows the values *before* the line runs
    assert rec.states[1].locals == {"xs": "[3, 1]", "key": "None"}
    assert rec.states[3].locals == {"xs": "[3, 1]", "key": "None", "total": "0", "x": "3"}
    assert rec.states[-1].value == "4"
    assert rec.return_value == "4"
    assert rec.states[2].source == "    for x in xs:"
    assert {s.function for s in rec.states} == {"f"}


def test_nested_calls_have_depth_invocations_and_exception_exits():
    rec = run(
        """
        def inner(n):
            if n > 1:
                raise ValueError("too big")
            return n

        def outer():
            a = inner(1)
            try:
                inner(5)
            except ValueError as e:
                msg = str(e)
            return a
        """,
        entry="outer",
    )
    states = list(rec.states)
    calls = [s for s in states if s.event == "call"]
    assert [(c.function, c.depth) for c in calls] == [("outer", 0), ("inner", 1), ("inner", 1)]
    assert len({c.invocation for c in calls}) == 3
    exits = [s for s in states if s.event in ("return", "exception")]
    assert [(s.function, s.event, s.value) for s in exits] == [
        ("inner", "return", "1"),
        ("inner", "exception", "ValueError('too big')"),
        ("outer", "return", "1"),
    ]
    handler = next(s for s in states if s.source.strip().startswith("except"))
    assert handler.caught == "ValueError('too big')"
    after = next(s for s in states if s.source.strip() == "return a")
    assert after.locals["msg"] == "'too big'" and "e" not in after.locals  # `e` is deleted after the handler


WRAPPED = """\
import os, subprocess, threading
names = ["_exit", "fork", "forkpty", "execv", "execve", "posix_spawn", "posix_spawnp", "system", "register_at_fork"]
shown = [repr(getattr(os, name)) for name in names]
shown += [repr(getattr(threading, n, None)) for n in ("_start_new_thread", "_start_joinable_thread")]
shown += [repr(subprocess._fork_exec), str(__import__("inspect").signature(os._exit))]
print(*shown, sep="\\n")
"""


@pytest.mark.parametrize("mode", ["full", "skeleton"])
def test_the_functions_the_recorder_wraps_look_as_they_do_without_it(tmp_path: Path, mode: str):
    """`os._exit`, `os.fork`, `os.execv`, threading's thread start, ...: the recording process wraps
    them, and a user opening `os` among a module's variables sees them as debugpy shows them
    (`<built-in function fork>`, its signature), not as the recorder's Python functions."""
    from neural_dap.trace.recorder import record_skeleton

    program = tmp_path / "wrapped.py"
    program.write_text(WRAPPED)
    plain = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, check=True).stdout
    if mode == "full":
        shown = record(Program(str(program))).stdout
    else:
        recording = record_skeleton(Program(str(program)), Limits())
        shown = recording.stdout
        recording.close()
    assert "<built-in function fork>" in plain and shown == plain


def test_script_mode_traces_module_and_argv_and_attributes_output_to_states(tmp_path: Path):
    prog = tmp_path / "script.py"
    prog.write_text("import sys\nname = sys.argv[1]\nprint('hi', name)\nx = len(name)\n")
    rec = record(Program(str(prog), argv=("bob",)))
    assert rec.outcome.kind == "finished"
    by_line = {s.line: s for s in rec.states if s.event == "line"}
    assert by_line[4].stdout == "hi bob\n"  # written while line 3 ran: shown at the next stop
    # the module's imported modules and dunders are recorded, as debugpy shows them (the dunders in a
    # group); a trace leaves them out (as_traced)
    assert {k: v for k, v in by_line[4].locals.items() if not k.startswith("__")} == {
        "sys": "<module 'sys' (built-in)>",
        "name": "'bob'",
    }
    assert by_line[4].locals["__name__"] == "'__main__'"
    assert as_traced(by_line[4]).locals == {"name": "'bob'"}
    assert rec.stdout == "hi bob\n"


def test_only_user_code_is_traced():
    rec = run(
        """
        import json, textwrap
        def f():
            data = json.dumps([1, 2])
            return textwrap.dedent('  x')
        """,
        entry="f",
    )
    assert {s.function for s in rec.states} == {"f"}
    assert rec.return_value == "'x'"


def test_reprs_are_bounded_and_marked_and_addresses_removed():
    rec = run(
        """
        class Box:
            def __init__(self):
                self.size = 3
        def f():
            big = 'x' * 5000
            box = Box()
            return len(big)
        """,
        entry="f",
        max_repr=100,
    )
    last = rec.states[-2].locals
    assert len(last["big"]) == 101 and last["big"].endswith("\u2026")
    assert last["box"] == "<__main__.Box object>"
    assert rec.states[-2].values["box"].children[0][0] == "size"


def test_the_addresses_of_asyncio_and_threading_objects_are_removed_and_a_strings_are_kept():
    """debugpy shows these reprs with the object's address, which differs from run to run: the
    recording shows them without it (reality/compare.py compares both sides so), wherever the
    address stands in the text, and a string that only looks like one keeps it."""
    rec = run(
        """
        import asyncio, threading, weakref
        class Box:
            pass
        def f():
            event = threading.Event()
            lock = asyncio.Lock()
            queue = asyncio.Queue()
            box = Box()
            ref = weakref.ref(box)
            note = ["jump at 0x1F'", "at 0x2A"]
            return 0
        """,
        entry="f",
    )
    last = rec.states[-2].locals
    assert last["event"] == "<threading.Event: unset>"
    assert last["lock"] == "<asyncio.locks.Lock object [unlocked]>"
    assert last["queue"].startswith("<Queue") and " at 0x" not in last["queue"]
    assert " at 0x" not in last["ref"] and last["ref"].startswith("<weakref")
    assert last["note"] == "[\"jump at 0x1F'\", 'at 0x2A']"


@pytest.mark.parametrize(
    "source, kind, words",
    [
        ("import time\ndef f():\n    time.sleep(60)\n", "timeout", "wall-time"),
        ("def f():\n    while True:\n        pass\n", "event_limit", "event limit"),
        ("def f():\n    i = 0\n    while True:\n        i += 1\n", "event_limit", "event limit"),
        ("import sys\ndef f():\n    sys.exit(3)\n", "exited", "sys.exit(3)"),
        ("import os\ndef f():\n    x = 1\n    os._exit(4)\n", "exited", "os._exit(4)"),
        ("def f():\n    raise KeyError('k')\n", "raised", "KeyError"),
        ("def f():\n    return input()\n", "raised", "EOFError"),
        (
            "import ctypes\ndef f():\n    x = 1\n    ctypes.string_at(0)\n",
            "crashed",
            "Segmentation fault in f at line 4",
        ),
        ("def f():\n    x = bytearray(10 ** 11)\n", "memory", "MemoryError"),
    ],
)
def test_misbehaving_debuggees_end_with_a_typed_outcome_and_keep_their_states(source, kind, words):
    rec = run(source, entry="f", wall_time=2.0, max_events=2000, memory_mb=1024)
    assert rec.outcome.kind == kind, rec.outcome
    assert words in rec.outcome.message
    if kind != "crashed":  # an instant crash leaves nothing flushed; see the test below
        assert len(rec.states) >= 1 and rec.states[0].event == "call"


def test_repr_that_raises_or_never_returns():
    rec = run(
        """
        class Bad:
            def __repr__(self):
                raise RuntimeError('no repr')
        def f():
            b = Bad()
            return 1
        """,
        entry="f",
    )
    assert rec.states[-2].locals["b"] == "<__main__.Bad object>"  # as debugpy shows it: object.__repr__
    rec = run(
        """
        class Slow:
            def __repr__(self):
                while True:
                    pass
        def f():
            s = Slow()
            return 1
        """,
        entry="f",
        wall_time=1.5,
    )
    # the repr has a deadline: the value shows as timed out and the program runs on
    assert rec.outcome.kind == "finished"
    assert rec.states[-1].locals["s"] == "<repr of Slow timed out after 0.1 s>"
    rec = run(rec.program.source, entry="f", wall_time=1.5, repr_seconds=0)  # no deadline: the wall time ends it
    assert rec.outcome.kind == "timeout"
    assert [s.line for s in rec.states][:2] == [6, 7]  # what was recorded before the hang is kept


def test_a_workers_repr_past_its_deadline_is_cut_there_and_the_main_thread_runs_on():
    """Every thread's reprs share one deadline keeper: a worker's repr that runs past it is cut in
    the worker, and nothing lands in the main thread (it once did, whoever made the repr: a server's
    main loop, in `serve_forever`, raised it and the program ended mid-request)."""
    rec = run(
        """
        import threading
        import time

        class Slow:
            def __repr__(self):
                while True:
                    pass

        def work():
            s = Slow()
            return 1

        def f():
            worker = threading.Thread(target=work)
            worker.start()
            waits = 0
            while worker.is_alive():
                waits += 1
                time.sleep(0.001)
            return "main ran on"
        """,
        entry="f",
        wall_time=20,
    )
    assert rec.outcome.kind == "finished", rec.outcome
    assert rec.return_value == "'main ran on'"
    worker = [s.locals["s"] for s in rec.states if s.function == "work" and "s" in s.locals]
    assert worker and worker[-1] == "<repr of Slow timed out after 0.1 s>"


def test_megabytes_of_output_are_capped_and_the_recording_survives():
    rec = run(
        "def f():\n    for i in range(300):\n        print('x' * 10000)\n    return 7\n", entry="f", max_output=50_000
    )
    assert rec.outcome.kind == "finished" and rec.return_value == "7"
    assert 50_000 <= len(rec.stdout) < 51_000 and "output beyond" in rec.stdout


def test_a_missing_program_or_entry_is_a_clear_error(tmp_path: Path):
    with pytest.raises(RecorderError, match="no such program"):
        record(Program(str(tmp_path / "nope.py")))
    rec = run("x = 1\n", entry="g")
    assert rec.outcome.kind == "error" and "no function 'g'" in rec.outcome.message
    rec = run("def f(:\n", entry="f")
    assert rec.outcome.kind == "error" and "SyntaxError" in rec.outcome.message


def test_entry_args_accept_keywords_and_non_literals():
    rec = run("def f(a, b=0, *, c):\n    return (a, b, c)\n", entry="f", args="[1], c=set(), b=-2")
    assert rec.return_value == "([1], -2, set())"


def _python(version: str) -> str | None:
    """An interpreter of that version that really runs (a pyenv shim may only print an error)."""
    candidates = sorted((Path.home() / ".pyenv" / "versions").glob(f"{version}.*/bin/python"))
    if shutil.which(f"python{version}"):
        candidates.append(Path(shutil.which(f"python{version}")))
    for cand in candidates:
        try:
            out = subprocess.run(
                [str(cand), "-c", "import sys; print(sys.version)"], capture_output=True, text=True, timeout=20
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout.startswith(version):
            return str(cand)
    return None


@pytest.mark.parametrize("engine", ["cmonitoring", "monitoring"])
@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_sys_monitoring_engines_record_the_same_states(version, engine):
    """The sys.monitoring engines (the C tracer's callbacks, and the Python ones) record what settrace does."""
    python = _python(version)
    if python is None:
        pytest.skip(f"no python{version} on this machine")
    source = textwrap.dedent(
        """
        import threading

        def helper(n):
            if n > 2:
                raise ValueError(n)
            return n * 2

        def numbers():
            try:
                yield 1
            except KeyError:
                return 2

        def f(xs):
            results = []
            # threading's own code and a builtin: no thread runs the program's code (test_threads has those)
            thread = threading.Thread(target=results.clear); thread.start(); thread.join(); del thread
            g = numbers()
            first = next(g)
            try:
                g.throw(KeyError)  # resumes the generator: a call, as settrace reports it
            except StopIteration as stop:
                second = stop.value
            out = []
            for x in xs:
                try:
                    out.append(helper(x))
                except ValueError:
                    out.append(-1)
            total = sum(v for v in out if v > 0)
            return out, total, first, second
        """
    )
    program = Program("/virtual/prog.py", source=source, entry="f", entry_args="[1, 2, 3]")
    new = record(program, python=python, engine=engine)
    old = record(program, engine="settrace")
    assert new.engine == engine and new.python.startswith(version)
    assert [s.format_view() for s in new.states] == [s.format_view() for s in old.states]


def test_a_crash_after_some_work_keeps_the_states_recorded_before_it():
    rec = run(
        """
        import ctypes, time
        def f():
            total = 0
            for i in range(200):
                total += i
            time.sleep(0.1)
            ctypes.string_at(0)
        """,
        entry="f",
    )
    assert rec.outcome.kind == "crashed" and "line 8" in rec.outcome.message
    assert len(rec.states) > 400 and rec.states[-1].locals["total"] == "19900"


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_a_value_sent_into_a_generator_shows_at_its_next_line(version):
    """A generator resumes in the middle of its `x = yield total` line: x is stored after the
    resume, with no new line event until the next line, where x shows (3.12+ skips the diff at a
    frame's first line after its call: never after a resume)."""
    from .test_child_real_world import _interpreter

    program = Program(
        "/virtual/gen.py",
        source=textwrap.dedent(
            """\
            def gen():
                total = 0
                while True:
                    x = yield total
                    total += x


            def main():
                g = gen()
                next(g)
                return g.send(5) + g.send(7)
            """
        ),
        entry="main",
    )
    rec = record(program, python=_interpreter(version))
    at_five = [s.locals for s in rec.states if s.function == "gen" and s.event == "line" and s.line == 5]
    assert at_five == [{"total": "0", "x": "5"}, {"total": "5", "x": "7"}]


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_what_the_programs_own_trace_function_does_at_a_first_line_shows_there(version):
    """On 3.12+ the program's own `sys.settrace` function runs beside the recorder, and before it at
    each line: what it changes at a frame's first line shows at that line (found by a review: a
    skip of the first line's diff, since dropped, showed the call's values there)."""
    from .test_child_real_world import _interpreter

    program = Program(
        "/virtual/own_trace.py",
        source=textwrap.dedent(
            """\
            import sys

            box = []


            def tracer(frame, event, arg):
                if frame.f_code.co_name == "f":
                    box.append(event)
                    return tracer


            def f(b):
                n = len(b)
                return n


            sys.settrace(tracer)
            f(box)
            sys.settrace(None)
            """
        ),
    )
    rec = record(program, python=_interpreter(version))
    first = next(s for s in rec.states if s.function == "f" and s.event == "line")
    assert first.locals["b"] == "['call', 'line']"


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_what_the_programs_own_monitoring_tool_does_at_a_line_shows_there(version):
    """The program's own sys.monitoring tool runs at each LINE too, after the recorder's: each line
    shows what it did at the lines before, as a LINE of every line shows it; the C tracer makes no
    line's event at a call or a start once the program has a tool (child/own_tracers.py), where
    `print(n)`'s would show the tool's work at that very line."""
    from .test_child_real_world import _interpreter

    program = Program(
        "/virtual/own_tool.py",
        source=textwrap.dedent(
            """\
            import sys

            box = []


            def seen(code, line):
                if code.co_name == "f":
                    box.append(line)


            def f(b):
                n = len(b)
                print(n)
                return n


            mon = sys.monitoring
            mon.use_tool_id(2, "the program's")
            mon.register_callback(2, mon.events.LINE, seen)
            mon.set_local_events(2, f.__code__, mon.events.LINE)
            f(box)
            mon.set_local_events(2, f.__code__, 0)
            mon.free_tool_id(2)
            """
        ),
    )
    rec = record(program, python=_interpreter(version))
    lines = [(s.line, s.locals["b"]) for s in rec.states if s.function == "f" and s.event == "line"]
    assert lines == [(12, "[]"), (13, "[12]"), (14, "[12, 13]")]  # (its LINE callback runs after ours)


@pytest.mark.parametrize("version", ["3.11", "3.12"])
def test_a_program_that_dies_of_an_exception_prints_the_interpreters_traceback(tmp_path, version):
    """As `python program.py` prints it on stderr (debugpy shows it in the debug console), from the
    program's own frames: before, only the debugger's one-line notice said how the program ended."""
    from .test_child_real_world import _interpreter

    path = tmp_path / "crash.py"
    path.write_text('def f(d):\n    return d["b"]\n\n\nprint("before")\nf({"a": 1})\n')
    rec = record(Program(str(path)), python=_interpreter(version))
    plain = subprocess.run([_interpreter(version) or sys.executable, str(path)], capture_output=True, text=True)
    assert rec.outcome.kind == "raised" and rec.stdout == "before\n"
    assert rec.stderr == plain.stderr and rec.stderr.startswith("Traceback (most recent call last):\n")
    assert "neural_dap" not in rec.stderr
