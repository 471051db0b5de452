"""The program's own trace and profile functions, and its own sys.monitoring tools: the C tracer's
line shortcuts (child/line_shortcuts.py) are for programs that have none.

A shortcut makes a line's event at another moment than its LINE: a function's first line at its
start, a deferred line at its call or return. Nothing of the program runs in between, except what
another tool of the program runs at that LINE: its own `sys.settrace` function (`line` events
there), a profile function, a coverage tool of its own. What that changes would show after the
line's event, not at it (tests/test_recorder.py: a trace function that records its events). So the
first time the program installs one (a function, not None; a tool id), the shortcuts end for the
rest of the recording, and the LINEs they DISABLEd are turned on again (`restart_events`).
Deterministic: a replay meets the same call at the same event.

A C extension that sets a trace function in C (`PyEval_SetTrace`: coverage's C tracer) is not
seen: its tracer keeps its own data, which the program's variables do not show.
Standard library only, but for the C tracer's switch.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable

from neural_dap.trace.child.dressed import like

_OURS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep  # neural_dap/

# the functions that install a trace or profile function (a function, not None, installs one)
_INSTALLERS = (
    (sys, "settrace"),
    (sys, "setprofile"),
    (threading, "settrace"),
    (threading, "setprofile"),
    (threading, "settrace_all_threads"),
    (threading, "setprofile_all_threads"),
)


def watch(shortcuts_off: Callable[[], None]) -> Callable[[], None]:
    """Wrap the functions that install a trace or profile function or take a sys.monitoring tool:
    the program's first such call (not the recorder's own) calls `shortcuts_off` first. Returns
    what puts the originals back."""
    done = [False]

    def off() -> None:
        if not done[0]:
            done[0] = True
            shortcuts_off()
            monitoring = getattr(sys, "monitoring", None)
            if monitoring is not None:
                monitoring.restart_events()  # (the LINEs the shortcuts DISABLEd fire again)

    def theirs() -> bool:
        return not sys._getframe(2).f_code.co_filename.startswith(_OURS)

    restore = []
    for module, name in _INSTALLERS:
        original = getattr(module, name, None)
        if original is None:
            continue
        restore.append((module, name, original))
        setattr(module, name, like(original, _installer(original, theirs, off)))
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        original = monitoring.use_tool_id
        restore.append((monitoring, "use_tool_id", original))
        monitoring.use_tool_id = like(original, _tool_taker(original, theirs, off))

    def unwatch() -> None:
        for module, name, original in restore:
            setattr(module, name, original)

    return unwatch


def _installer(original: Callable, theirs: Callable[[], bool], off: Callable[[], None]) -> Callable:
    def install(*args, **kwargs):
        function = args[0] if args else next(iter(kwargs.values()), None)
        # (threading's own bootstrap installs the recorder's hook in each new thread: not theirs)
        if function is not None and not _ours(function) and theirs():
            off()
        return original(*args, **kwargs)

    return install


def _ours(function) -> bool:
    code = getattr(function, "__code__", None) or getattr(getattr(function, "__func__", None), "__code__", None)
    return code is not None and code.co_filename.startswith(_OURS)


def _tool_taker(original: Callable, theirs: Callable[[], bool], off: Callable[[], None]) -> Callable:
    def use_tool_id(*args, **kwargs):
        if theirs():
            off()
        return original(*args, **kwargs)

    return use_tool_id


__all__ = ["watch"]
