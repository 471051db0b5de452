"""The cwm dialect writes what Meta's Code World Model was trained on, byte for byte.

The reference writer below knows nothing of neural_dap.format: it is written from CWM's published
description (facebookresearch/cwm PROMPTING_GUIDE.md "Trace Prediction", demos/cwmdbg.py) and the
base-CWM generation quoted in issue 25, and driven by sys.settrace on real code (CPython 3.11, as
CWM's traces were made):

  <|begin_of_text|><|trace_context_start|>SOURCE<|frame_sep|>FRAME<|frame_sep|>...<|end_of_text|>
  SOURCE    the file as it is, `  # << START_OF_TRACE` after the entry line (cwmdbg sends the file
            unchanged; the comment marks where the trace starts)
  call/line <|call_sep|>/<|line_sep|> LOCALS <|action_sep|> SOURCE_LINE "\\n"
  return    <|return_sep|><|action_sep|> SOURCE_LINE "\\n" <|arg_sep|> json(repr(value))
  exception <|exception_sep|><|action_sep|> SOURCE_LINE "\\n" <|arg_sep|> json(repr(exception))
  one frame per settrace event of the program's own code, comprehension frames included (their own
  code objects on 3.11, `.0` their iterator), an exception's `exception` event in every frame it
  passes and the `return` (None) of each frame it leaves; `<|end_of_text|>` once the entry returns.
  LOCALS    json.dumps of f_locals in CPython's order, reprs without object addresses; a value equal
            to the same frame's value at its previous event is "..", except at a call event, which
            writes every value (cwmdbg's reader resolves ".." back to the scope's call frame only).
  A whole script (the module's frame) has no `call` line on 3.11 (settrace reports line 0): its
  trace starts at the module's first line event, which carries the marker.
Module-level names are what neural-dap's recorder shows (no dunders, modules, functions, classes):
CWM's description is silent there, so both sides take neural-dap's rule.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from neural_dap.core.actions import STEP_INTO
from neural_dap.core.flow import ProgramFlow
from neural_dap.core.source import SourceInfo
from neural_dap.core.state import State
from neural_dap.core.world import Entry
from neural_dap.format.settrace import as_settrace
from neural_dap.format.trace import TraceText, render_trace
from neural_dap.trace.recorder import Program, record
from neural_dap.world.entry import entry_state
from neural_dap.world.landing import frame_constraint

PATH = "/virtual/cwm_exact.py"
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_HIDDEN = (types.ModuleType, types.FunctionType, type, types.BuiltinFunctionType)


@dataclass
class Event:
    kind: str
    line: int
    code: str
    frame: int  # which frame object (a generator's resumes share it)
    depth: int
    locals: dict[str, str]
    value: str | None = None


@dataclass
class Recording:
    source: str
    events: list[Event] = field(default_factory=list)


def _repr(value: object) -> str:
    return _ADDRESS.sub("", repr(value))


def _visible(frame: types.FrameType) -> dict[str, str]:
    module = frame.f_code.co_name == "<module>"
    return {
        name: _repr(value)
        for name, value in frame.f_locals.items()
        if not (module and (name.startswith("__") or isinstance(value, _HIDDEN)))
    }


def run_traced(source: str, entry: str | None, args: tuple = (), kwargs: dict | None = None) -> Recording:
    """Run `entry(*args)` (or the whole script) under sys.settrace; record the program's events."""
    code = compile(source, PATH, "exec")
    namespace: dict = {"__name__": "__main__"}
    rec = Recording(source)
    frames: dict[int, int] = {}
    depth: list[int] = [0]
    started = [entry is None]

    def tracer(frame: types.FrameType, event: str, arg: object):
        if frame.f_code.co_filename != PATH:
            return None
        if not started[0]:
            if event != "call" or frame.f_code.co_name != entry:
                return tracer
            started[0] = True
        key = frames.setdefault(id(frame), len(frames))
        if event == "call":
            depth[0] += 1
        value = None
        if event == "return":
            value = _repr(arg)
        elif event == "exception":
            value = _repr(arg[1])  # type: ignore[index]
        rec.events.append(Event(event, frame.f_lineno, frame.f_code.co_name, key, depth[0] - 1, _visible(frame), value))
        if event == "return":
            depth[0] -= 1
        return tracer

    if entry is not None:
        exec(code, namespace)
    sys.settrace(tracer)
    try:
        if entry is None:
            exec(code, namespace)
        else:
            namespace[entry](*args, **(kwargs or {}))
    except Exception:
        pass  # an exception leaving the entry is part of the trace
    finally:
        sys.settrace(None)
    return rec


# -- the reference writer (CWM's format, nothing of neural_dap.format) ------------------------------------


def reference_text(rec: Recording) -> str:
    lines = rec.source.split("\n")
    events = [e for e in rec.events if not (e.kind == "call" and e.code == "<module>")]  # no source line
    entry = events[0].line
    marked = list(lines)
    marked[entry - 1] += "  # << START_OF_TRACE"
    out = ["<|begin_of_text|><|trace_context_start|>", "\n".join(marked), "<|frame_sep|>"]
    previous: dict[int, dict[str, str]] = {}
    for e in events:
        text = lines[e.line - 1] + "\n"
        if e.kind in ("call", "line"):
            before = {} if e.kind == "call" else previous.get(e.frame, {})
            shown = {k: (".." if before.get(k) == v else v) for k, v in e.locals.items()}
            previous[e.frame] = dict(e.locals)
            token = "<|call_sep|>" if e.kind == "call" else "<|line_sep|>"
            out.append(f"{token}{json.dumps(shown)}<|action_sep|>{text}<|frame_sep|>")
        else:
            token = "<|return_sep|>" if e.kind == "return" else "<|exception_sep|>"
            out.append(f"{token}<|action_sep|>{text}<|arg_sep|>{json.dumps(e.value)}<|frame_sep|>")
    out.append("<|end_of_text|>")
    return "".join(out)


# -- what neural-dap writes for the same recorded execution ----------------------------------------------


def as_states(rec: Recording) -> list[State]:
    lines = rec.source.split("\n")
    out = []
    for e in rec.events:
        source = lines[e.line - 1] if e.line >= 1 else ""
        out.append(State(e.kind, e.line, source, e.code, e.depth, e.frame, e.locals, e.value, path=PATH))  # type: ignore[arg-type]
    return out


def neural_dap_text(rec: Recording) -> str:
    trace = render_trace(as_states(rec), "cwm", SourceInfo(rec.source, PATH), path=PATH)
    return trace.text() + "<|end_of_text|>"


# -- the corpus --------------------------------------------------------------------------------------------

COMPREHENSIONS = textwrap.dedent(
    """\
    def evens(occ):
        squares = {k: v * v for k, v in occ.items()}
        kinds = {v % 2 for v in squares.values()}
        return [x for _, x in occ.items() if x in kinds or x > 1]
    """
)
GENEXPR = textwrap.dedent(
    """\
    def total(xs):
        t = sum(y * 2 for y in xs)
        return t
    """
)
EXCEPTIONS = textwrap.dedent(
    """\
    def check(n):
        if n < 0:
            raise ValueError("negative")
        return n

    def safe(n):
        try:
            return check(n)
        except ValueError as e:
            return str(e)

    def outer(n):
        r = safe(n)
        return check(n) + len(r)
    """
)
HANDLED = textwrap.dedent(
    """\
    def parse(s):
        try:
            n = int(s)
        except ValueError:
            n = -1
        return n

    def parse_all(items):
        return sum(parse(s) for s in items)
    """
)
ARGS = textwrap.dedent(
    """\
    def spread(a, b=2, *args, kw, flag=False, **rest):
        out = [a, b, *args, kw, flag]
        return out + list(rest)

    def main():
        return spread(1, 5, 6, 7, kw=3, extra=1)
    """
)
GENERATORS = textwrap.dedent(
    """\
    def countdown(n):
        while n > 0:
            yield n
            n -= 1

    def use(n):
        seen = []
        for v in countdown(n):
            seen.append(v)
        return seen
    """
)
CLASSES = textwrap.dedent(
    """\
    class Acc:
        def __init__(self, start):
            self.total = start

        def add(self, v):
            self.total += v
            return self

    def run(xs):
        acc = Acc(0)
        for x in xs:
            acc.add(x)
        return acc.total
    """
)
SCRIPT = textwrap.dedent(
    """\
    def total(xs):
        return sum(xs)

    class Box:
        size = 3
        def area(self):
            return self.size ** 2

    values = [v * 2 for v in range(3)]
    result = total(values) + Box().area()
    try:
        total(None)
    except TypeError:
        result = -result
    """
)

CORPUS = {
    "comprehensions": (COMPREHENSIONS, "evens", ({"a": 1, "b": 2, "c": 3},)),
    "generator expression": (GENEXPR, "total", ([1, 2, 3],)),
    "exception caught by the caller": (EXCEPTIONS, "safe", (-1,)),
    "exception leaving the entry": (EXCEPTIONS, "outer", (-2,)),
    "no exception": (EXCEPTIONS, "outer", (2,)),
    "exception handled where it is raised": (HANDLED, "parse_all", (["1", "x"],)),
    "*args and keyword-only": (ARGS, "main", ()),
    "generator": (GENERATORS, "use", (3,)),
    "classes": (CLASSES, "run", ([1, 2],)),
    "whole script": (SCRIPT, None, ()),
}


@pytest.mark.parametrize("name", list(CORPUS))
def test_the_cwm_dialect_writes_what_the_reference_writer_writes_byte_for_byte(name):
    source, entry, args = CORPUS[name]
    rec = run_traced(source, entry, args)
    assert neural_dap_text(rec) == reference_text(rec)


def test_a_comprehension_runs_in_its_own_frame_with_its_iterator():
    rec = run_traced(COMPREHENSIONS, "evens", ({"a": 1, "b": 2},))
    text = neural_dap_text(rec)
    assert (
        '<|call_sep|>{".0": "<dict_itemiterator object>"}<|action_sep|>'
        "    squares = {k: v * v for k, v in occ.items()}\n" in text
    )
    assert '<|line_sep|>{".0": "..", "k": "\'b\'", "v": "2"}<|action_sep|>    squares' in text
    assert '<|return_sep|><|action_sep|>    kinds = {v % 2 for v in squares.values()}\n<|arg_sep|>"{0, 1}"' in text


def test_a_generator_expression_keeps_its_iterator():
    text = neural_dap_text(run_traced(GENEXPR, "total", ([1],)))
    assert '<|call_sep|>{".0": "<list_iterator object>"}<|action_sep|>    t = sum(y * 2 for y in xs)\n' in text


def test_an_exception_leaving_a_function_returns_none_and_raises_in_the_caller():
    text = neural_dap_text(run_traced(EXCEPTIONS, "safe", (-1,)))
    raised = (
        '<|exception_sep|><|action_sep|>        raise ValueError("negative")\n'
        + "<|arg_sep|>\"ValueError('negative')\""
    )
    left = '<|return_sep|><|action_sep|>        raise ValueError("negative")\n<|arg_sep|>"None"'
    in_caller = "<|exception_sep|><|action_sep|>        return check(n)\n<|arg_sep|>\"ValueError('negative')\""
    assert raised + "<|frame_sep|>" + left + "<|frame_sep|>" + in_caller + "<|frame_sep|><|line_sep|>" in text


def test_a_whole_script_starts_at_its_first_statement_not_with_a_call_of_its_first_function():
    text = neural_dap_text(run_traced(SCRIPT, None))
    assert "def total(xs):  # << START_OF_TRACE\n" in text
    assert text.split("<|frame_sep|>")[1] == "<|line_sep|>{}<|action_sep|>def total(xs):\n"
    assert "<|call_sep|>{}<|action_sep|>def total(xs):" not in text


def test_a_launch_binds_varargs_after_keyword_only_parameters_as_cpython_lists_them():
    rec = run_traced(ARGS, "main", ())
    real = next(e for e in rec.events if e.kind == "call" and e.code == "spread")
    launched = entry_state(SourceInfo(ARGS, PATH), PATH, Entry("spread", "1, 5, 6, 7, kw=3, extra=1"))
    assert list(launched.locals.items()) == list(real.locals.items())
    assert list(launched.locals) == ["a", "b", "kw", "flag", "args", "rest"]


@pytest.mark.parametrize("name", list(CORPUS))
def test_the_cwm_reader_reads_every_frame_back_as_it_happened(name):
    source, entry, args = CORPUS[name]
    states = as_states(run_traced(source, entry, args))
    info = SourceInfo(source, PATH)
    rendered = render_trace(states, "cwm", info, path=PATH)
    reader = TraceText("cwm", info, rendered.entry_line, path=PATH, entry_function=states[0].function)
    reader.append(states[0])
    lines = source.split("\n")
    for i in range(1, len(states)):
        if not rendered.frames[i]:
            continue  # not written (a module's call)
        parsed = reader.parse("".join(rendered.frames[i][:-1]), STEP_INTO)
        assert isinstance(parsed, State), i
        real = states[i]
        assert (parsed.event, parsed.line, parsed.value) == (real.event, real.line, real.value), i
        assert parsed.depth == real.depth, i  # in the frame it really is (a return after an exception too)
        assert parsed.source == lines[real.line - 1]
        if real.event in ("call", "line"):
            assert parsed.locals == real.locals, i
        reader.append(parsed)
    # the reader's call stack is the real one: every invocation it opened was closed by a return
    assert len(reader.tracker.stack) == 1


def refused_frames(source: str, states: list[State]) -> list[tuple[int, str]]:
    """The frames of a cwm trace that the decoding constraint (as the cwm world builds it after each
    step) refuses, or that land elsewhere than they are; the end must be allowed after the last."""
    info = SourceInfo(source, PATH)
    flow = ProgramFlow(info, settrace_frames=True)
    rendered = render_trace(states, "cwm", info, path=PATH)
    trace = TraceText("cwm", info, rendered.entry_line, path=PATH, entry_function=states[0].function)
    seen = trace.append(states[0])
    refused = []
    for i in range(1, len(states)):
        if not trace.writes(states[i]):
            seen = trace.append(states[i])
            continue
        constraint = frame_constraint(flow, trace, seen, STEP_INTO)
        n = len(trace.frames)
        seen = trace.append(states[i])
        text = "".join(trace.frames[n][:-1])
        if constraint is None or not constraint.accepts(text):
            refused.append((i, text))
        elif (states[i].event, states[i].line) not in constraint.landed(text):
            refused.append((i, "lands elsewhere: " + text))
    end = frame_constraint(flow, trace, seen, STEP_INTO)
    if end is None or not end.accepts("<|end_of_text|>"):
        refused.append((len(states), "<|end_of_text|>"))
    return refused


@pytest.mark.parametrize("name", list(CORPUS))
def test_the_decoding_constraint_accepts_every_frame_cwm_writes(name):
    source, entry, args = CORPUS[name]
    assert refused_frames(source, as_states(run_traced(source, entry, args))) == []


def test_cruxeval_dev_is_written_as_cwm_writes_it_and_every_frame_is_allowed(cruxeval_rows):
    checked = with_comprehensions = 0
    for row in cruxeval_rows:
        try:
            args = ast.literal_eval(f"({row['input']},)")
        except (ValueError, SyntaxError):
            continue  # an input that is not a literal
        rec = run_traced(row["code"], "f", args)
        if len(rec.events) > 400:
            continue
        assert neural_dap_text(rec) == reference_text(rec), row["id"]
        states = as_states(rec)
        assert refused_frames(row["code"], states) == [], row["id"]
        checked += 1
        with_comprehensions += any(s.function in ("<listcomp>", "<setcomp>", "<dictcomp>") for s in states)
    assert checked > 350 and with_comprehensions > 10


RECORDABLE = {  # neural-dap's recorder leaves comprehension frames and `.0` out: programs without them
    name: CORPUS[name]
    for name in ("exception caught by the caller", "exception leaving the entry", "no exception", "generator")
} | {
    "*args and keyword-only": (ARGS, "spread", (1, 5, 6, 7)),
    "classes": (CLASSES, "run", ([1, 2],)),
    "exception handled where it is raised": (HANDLED, "parse", ("x",)),
    "whole script": (SCRIPT.replace("[v * 2 for v in range(3)]", "list(range(0, 6, 2))"), None, ()),
}


@pytest.mark.parametrize("name", list(RECORDABLE))
def test_a_run_recorded_by_neural_dap_is_written_as_cwm_writes_it(name):
    source, entry, args = RECORDABLE[name]
    kwargs = {"kw": 3, "extra": 1} if entry == "spread" else {}
    reference = reference_text(run_traced(source, entry, args, kwargs))
    arg_text = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
    rec = record(Program(PATH, source=source, entry=entry, entry_args=arg_text))
    states = as_settrace(list(rec.states))
    trace = render_trace(states, "cwm", SourceInfo(source, PATH), path=PATH)
    assert trace.text() + "<|end_of_text|>" == reference


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="comprehensions run in frames of their own only on 3.11")
@pytest.mark.parametrize("name", [n for n, (source, _, _) in CORPUS.items() if "comp" in source or " for " in source])
def test_a_recording_with_comprehension_frames_is_written_as_cwm_writes_it(name):
    """A debug session records 3.11's comprehension frames and their `.0` (as debugpy shows them):
    that recording is CWM's trace too."""
    source, entry, args = CORPUS[name]
    reference = reference_text(run_traced(source, entry, args))
    arg_text = ", ".join(map(repr, args))
    rec = record(Program(PATH, source=source, entry=entry, entry_args=arg_text, comprehensions=True))
    trace = render_trace(as_settrace(list(rec.states)), "cwm", SourceInfo(source, PATH), path=PATH)
    assert trace.text() + "<|end_of_text|>" == reference


def _trace_cli(tmp_path, source: str, entry: str | None, args: tuple, *options: str) -> str:
    """What `neural-dap trace FILE [--entry ...] --format cwm` prints (the command users run)."""
    path = tmp_path / "program.py"
    path.write_text(source)
    call = ["--entry", entry, "--args", ", ".join(map(repr, args))] if entry is not None else []
    out = subprocess.run(
        [sys.executable, "-m", "neural_dap", "trace", str(path), *call, "--format", "cwm", *options],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.rstrip("\n")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="comprehensions run in frames of their own only on 3.11")
@pytest.mark.parametrize("name", [n for n, (source, _, _) in CORPUS.items() if "comp" in source or " for " in source])
def test_neural_dap_trace_format_cwm_writes_what_cwm_writes(tmp_path, name):
    """`neural-dap trace --format cwm` is CWM's format: on 3.11 a comprehension has its own frame and
    `.0`, byte for byte what the reference writer and a cwm debug session write."""
    source, entry, args = CORPUS[name]
    assert _trace_cli(tmp_path, source, entry, args) == reference_text(run_traced(source, entry, args))


def test_a_traced_comprehension_shows_its_iterator_and_inlines_where_the_interpreter_does(tmp_path):
    source = "def f(xs):\n    ys = [x * 2 for x in xs if x > 1]\n    return ys\n"
    text = _trace_cli(tmp_path, source, "f", ([1, 2, 3],))
    if sys.version_info < (3, 12):
        assert '<|call_sep|>{".0": "<list_iterator object>"}<|action_sep|>    ys = [x * 2' in text
        assert '<|line_sep|>{".0": "..", "x": "3"}' in text
    # one step on request (the json format's default), and on 3.12+, which inline comprehensions
    flat = _trace_cli(tmp_path, source, "f", ([1, 2, 3],), "--no-comprehension-frames")
    assert '".0"' not in flat and '<|line_sep|>{"xs": "..", "ys": "[4, 6]"}' in flat
    for python312 in sorted((Path.home() / ".pyenv" / "versions").glob("3.12.*/bin/python"))[:1]:
        inlined = _trace_cli(tmp_path, source, "f", ([1, 2, 3],), "--python", str(python312))
        assert inlined == flat
