"""What every sys.monitoring engine shares (the C front end's Python side, the Python engine and the
Python skeleton engine): the events it turns on, registering and unregistering its callbacks, a free
tool id, and which backward jumps within one line are line events (a one-line loop's rounds).
Standard library only."""

from __future__ import annotations

import sys
from array import array

from neural_dap.trace.child.line_shortcuts import Shape

LOCAL_EVENTS = 0
if hasattr(sys, "monitoring"):
    _E = sys.monitoring.events
    LOCAL_EVENTS = _E.LINE | _E.PY_RETURN | _E.PY_YIELD | _E.PY_RESUME | _E.JUMP  # per user code object


def monitor(mon, tool: int, on_start, on_line, on_jump, on_return, on_unwind, on_handled) -> None:
    """Take `tool` and register a recording's callbacks: a start, resume or throw into the user's
    code starts an invocation (the callback enables LOCAL_EVENTS on that code, or DISABLEs it);
    returns and yields end one; an exception unwinds one."""
    mon.use_tool_id(tool, "neural-dap")
    register(mon, tool, on_start, on_line, on_jump, on_return, on_unwind, on_handled)
    E = mon.events
    mon.set_events(tool, E.PY_START | E.PY_RESUME | E.PY_THROW | E.PY_UNWIND | E.EXCEPTION_HANDLED)


def register(mon, tool: int, on_start, on_line, on_jump, on_return, on_unwind, on_handled) -> None:
    """Make these the callbacks of `tool` (taken already): `monitor`'s, or another engine's taking
    over from the one registered (the C tracer of every thread: engines.CThreads)."""
    E = mon.events
    for event, callback in (
        (E.PY_START, on_start),
        (E.PY_RESUME, on_start),
        (E.PY_THROW, on_start),
        (E.LINE, on_line),
        (E.JUMP, on_jump),
        (E.PY_RETURN, on_return),
        (E.PY_YIELD, on_return),
        (E.PY_UNWIND, on_unwind),
        (E.EXCEPTION_HANDLED, on_handled),
    ):
        mon.register_callback(tool, event, callback)


def unmonitor(mon, tool: int, enabled: set) -> None:
    """Turn every event `monitor` (and the callbacks) turned on off again, and free the tool."""
    mon.set_events(tool, 0)
    for code in list(enabled):  # (a copy: another thread may enable a code meanwhile)
        mon.set_local_events(tool, code, 0)
    mon.free_tool_id(tool)


def instruction_lines(code) -> array:
    """The line of each 2-byte instruction of `code` (-1: none). As bytes, the C tracer's table for
    the line of a start or an exit (what f_lineno would say, without a frame object)."""
    table = array("i", [-1]) * (len(code.co_code) // 2)
    for start, end, line in code.co_lines():
        if line is not None:
            for offset in range(start, end, 2):
                table[offset // 2] = line
    return table


def line_table(code, shortcuts: bool = True) -> bytes:
    """The C tracer's table of `code`: how many instructions (n), the line of each
    (`instruction_lines`), then the shortcuts of child/line_shortcuts.py: each instruction's
    deferred line (n more), the first line, and the deferred lines as flags from the lowest
    (lowest, whether any is made at a CALL, how many flags, a flag per line); `shortcuts` False:
    none."""
    shape = Shape(code, shortcuts)
    lines = instruction_lines(code)
    deferred = sorted({abs(v) for v in shape.deferred if v})
    lowest = deferred[0] if deferred else 0
    flags = array("i", [0]) * (deferred[-1] - lowest + 1 if deferred else 0)
    for line in deferred:
        flags[line - lowest] = 1
    head = array("i", [len(lines)])
    tail = array("i", [shape.first_line, lowest, int(shape.at_calls), len(flags)])
    return (head + lines + shape.deferred + tail + flags).tobytes()


def free_tool(mon) -> int:
    tool = next((t for t in (4, 3, 5, 2, 1) if mon.get_tool(t) is None), None)
    if tool is None:
        raise RuntimeError("no free sys.monitoring tool id")
    return tool


def loop_line_rule(as_debugpy: bool):
    """Which backward jumps within one line are line events, as `rule(line_tables, code, offset,
    target, disable)` -> the line, or `disable`.

    settrace (3.11) reports every round of a one-line loop as a line event; LINE (3.12+) reports
    none. A debug session (`as_debugpy`) stops where debugpy stops, which differs by version (its sys.monitoring
    front end, pydevd's `_jump_event`): on 3.12 every backward jump within one line is a line (a
    one-line `for`, an inlined comprehension, a generator expression), on 3.13+ none is (it
    registers no JUMP callback there). Any other recording (a trace, a dataset, the reality of a
    model's predictions) keeps one rule on every version, so a trace is the same on each: generator expressions
    only, which are frames everywhere (inlined comprehensions stay one step, as their separate,
    untraced frames are on 3.11).
    """
    if not as_debugpy:
        return genexpr_loop_line
    if sys.version_info[:2] == (3, 12):
        return debugpy_loop_line
    return _no_loop_line


def _no_loop_line(line_tables: dict, code, offset: int, target: int, disable):
    return disable


def debugpy_loop_line(line_tables: dict, code, offset: int, target: int, disable):
    """pydevd's rule on 3.12: a backward jump whose two ends its own line lookup puts on one line
    (`co_lines` ranges taken with their end included, the first that holds an offset) is a line
    event. Where that lookup says one line but the true lines differ, pydevd's event and the LINE
    event it then skips make one line event at the target, which LINE alone makes here."""
    if target > offset:
        return disable
    tables = line_tables.get(code)
    if tables is None:
        tables = line_tables[code] = (instruction_lines(code), _pydevd_lines(code))
    true_lines, pydevd_lines = tables
    line = true_lines[target // 2]
    if line < 0 or line != true_lines[offset // 2] or pydevd_lines[offset // 2] != pydevd_lines[target // 2]:
        return disable
    return line


def _pydevd_lines(code) -> array:
    """The line pydevd's FuncCodeInfo.get_line_of_offset gives each instruction (-1: none): the
    first `co_lines` range with `start <= offset <= end`."""
    table = array("i", [-1]) * (len(code.co_code) // 2 + 1)
    for start, end, line in code.co_lines():
        if start is None or end is None or line is None:
            continue
        for offset in range(start, min(end, 2 * (len(table) - 1)) + 1, 2):
            if table[offset // 2] == -1:
                table[offset // 2] = line
    return table


def genexpr_loop_line(line_tables: dict, code, offset: int, target: int, disable):
    """The line of a JUMP that settrace reports as a line event, or `disable`.

    settrace reports a backward jump within one line as a new line event (a one-line loop); LINE
    does not. Mirror that (as CPython's own settrace emulation does) for generator expressions,
    which are frames on every version; inlined comprehensions (3.12+) stay one step, as their
    separate, untraced frames are on 3.11.
    """
    if target > offset or code.co_name != "<genexpr>":
        return disable
    table = line_tables.get(code)
    if table is None:
        table = line_tables[code] = instruction_lines(code)
    line = table[target // 2]
    if line < 0 or line != table[offset // 2]:
        return disable
    return line
