"""The values the library's Python functions return into the user's frames while a live step runs:
debugpy's `(return) dumps`, `(return) findall`, `(return) _GeneratorContextManager.__enter__`.
Standard library only.

A recording traces the user's code, so a library function's return is no event of it. pydevd
shows those values while it steps (3.12+: every Python function of the library that returned into
the frame the user steps, or into any of the user's frames for a step in or out; 3.11: those its
step in traced); the debugger core keeps the ones its rule for the step counts
(debugger/returns.py). They are watched only while the program runs a step for the adapter (a
`continue` pays nothing), in the recording's own thread, and never in a copy that replays: a
replay runs the same code without them (so a step replayed from the past shows only the user's
returns).

How: on 3.12+ a sys.monitoring tool of its own takes PY_RETURN while a step runs (the recorder's
tool has PY_RETURN on the user's code only); on 3.11 the C tracer's settrace function hears every
frame's return already and passes on those of untraced frames returning into the innermost traced
one (`Tracer.foreign_returns`). Each value's text is made where it returns, in the sandbox, by the
recorder's bounded repr, and nothing of the program is kept: an object kept until the stop would
live longer than in the recording's replays (a finalizer of the user's code running later is a
different run). The debugger follows a value bound to a name from there (debugger/returns.py).
A value goes as the recorder encodes a local (its text, or a structure with its children: it
opens in the Variables view). One exception: what a `__new__` returns is an object its `__init__`
has not set up yet (its repr then fails or says nothing: `<pathlib.PosixPath object>`); it is kept
to the stop and shown as it is there, as debugpy shows it. The class's `__init__` runs next and
the caller nearly always keeps the object, so keeping it changes no lifetime that matters.
"""

from __future__ import annotations

import os
import sys
from _thread import get_ident
from collections.abc import Callable
from typing import Any

from neural_dap.trace.child.journal import plumbing, sandboxed
from neural_dap.trace.child.lifetime import register_at_fork_of_ours
from neural_dap.trace.child.monitoring import free_tool

# a generator's or coroutine's code: what it hands back on the way is a pause (debugpy shows none)
_RESUMABLE = 0x20 | 0x80 | 0x200  # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR
_COROUTINE = 0x80
# the recorder's own code (its stdout `Capture.write` that the program's `print` calls): never the
# program's library
_OURS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
KEPT = 256  # the latest per frame and name; a step that makes more keeps its latest ones


class ForeignReturns:
    """While `begin` .. `end`: the latest value each library function returned into each frame of
    the user's, as [invocation, name, text, event] (`event`: the first event recorded after it)."""

    def __init__(
        self,
        engine: Any,
        is_user: Callable[[Any], bool],
        encode: Callable[[object], object],
        judged: dict | None = None,
    ) -> None:
        self.engine = engine
        self.is_user = is_user
        self.judged = judged if judged is not None else {}  # id(code) -> is_user(code), as the recorder keeps it
        self.encode = encode  # a value -> its text, or its structure (the recorder's `encode_object`)
        # (frame, name) -> (the value's encoding, or a `__new__`'s object in a 1-tuple: see the
        # docstring; the event)
        self.kept: dict[tuple[int, str], tuple[object, int]] = {}
        self.on = False
        self.tool: int | None = None
        self.thread = get_ident()
        # a copy made while a step runs (a checkpoint, a fork of the program's) watches nothing: a
        # checkpoint's replays must run as the recording ran (and os.getpid is journaled)
        register_at_fork_of_ours(after_in_child=self._forget)

    def begin(self) -> None:
        if self.on:
            return
        self.kept.clear()
        self.thread = get_ident()
        if hasattr(sys, "monitoring"):
            mon = sys.monitoring
            try:
                tool = free_tool(mon)
                mon.use_tool_id(tool, "neural-dap returns")
            except (RuntimeError, ValueError):
                return  # (every tool id taken: the program's own tools come first)
            self.tool = tool
            mon.register_callback(tool, mon.events.PY_RETURN, self._on_return)
            mon.set_events(tool, mon.events.PY_RETURN)
        else:
            tracer = getattr(self.engine, "tracer", self.engine)
            if not hasattr(tracer, "foreign_returns"):
                return  # (the Python engines: no values of the library's)
            tracer.foreign_returns(self._from_settrace)
        self.on = True

    def end(self) -> list[list]:
        if not self.on:
            return []
        self._off()
        with sandboxed():
            found = [
                [inv, name, self.encode(kept[0]) if type(kept) is tuple else kept, event]
                for (inv, name), (kept, event) in self.kept.items()
            ]
        self.kept.clear()
        return found

    def _forget(self) -> None:
        if self.on:
            self._off()
            self.kept.clear()

    def _off(self) -> None:
        self.on = False
        if self.tool is not None:
            mon = sys.monitoring  # type: ignore[attr-defined]
            mon.set_events(self.tool, 0)
            mon.register_callback(self.tool, mon.events.PY_RETURN, None)
            mon.free_tool_id(self.tool)
            self.tool = None
        else:
            tracer = getattr(self.engine, "tracer", self.engine)
            tracer.foreign_returns(None)

    def _on_return(self, code: Any, _offset: int, value: object) -> None:
        """PY_RETURN (3.12+), in every thread and every code: a library function returning into the
        user's frame, in the recording's thread and process."""
        if not self.on or get_ident() != self.thread or self._user(code):
            return
        frame = sys._getframe(1)
        back = frame.f_back
        if back is None or not self._user(back.f_code):
            return
        invocations = self.engine.invocations()
        if invocations:
            self._keep(frame, value, invocations[-1])

    def _user(self, code: Any) -> bool:
        known = self.judged.get(id(code))
        if known is None:
            with plumbing():  # (the program's context: a judge's file checks must not be journaled)
                known = self.is_user(code)
        return bool(known)

    def _from_settrace(self, frame: Any, value: object, inv: int) -> None:
        back = frame.f_back
        if back is not None and back.f_code.co_flags & _COROUTINE:
            return  # (pydevd's settrace shows none in a coroutine's frame: measured on 3.11)
        self._keep(frame, value, inv)

    def _keep(self, frame: Any, value: object, inv: int) -> None:
        code = frame.f_code
        filename = code.co_filename
        # (no file: importlib's frozen `_find_and_load`, a dataclass's generated `__init__`: pydevd
        # skips those frames)
        if code.co_flags & _RESUMABLE or filename.startswith(("<", _OURS)):
            return
        with sandboxed():
            name = _returning_name(code, frame)
            text: object = (value,) if code.co_name == "__new__" else self.encode(value)
        key = (int(inv), name)
        self.kept.pop(key, None)
        self.kept[key] = (text, int(self.engine.count()))
        if len(self.kept) > KEPT:
            del self.kept[next(iter(self.kept))]


def _returning_name(code: Any, frame: Any) -> str:
    """pydevd's name for a return value (`get_clsname_for_code`): a method's with the class of its
    first argument (the class itself for a classmethod) where that class's attribute of the name is
    this very code; a function's alone."""
    name = code.co_name
    if not code.co_varnames:
        return name
    try:
        local = frame.f_locals
        first = code.co_varnames[0]
        if first not in local:
            return name
        owner = local[first]
        kind = owner if isinstance(owner, type) else type(owner)
        method = getattr(kind, name, None)
        if getattr(method, "__code__", None) is code:
            return f"{kind.__name__}.{name}"
    except Exception:  # (a user's descriptor may raise anything)
        pass
    return name
