"""Recorded states as sys.settrace reports them: the events of CWM's traces.

neural-dap's recorder writes an exception once, where it leaves a function (an `exception` state
that ends the invocation), and marks a handled one on the state after it (`caught`). CPython 3.11's
settrace, which CWM's traces were made with, reports more: an `exception` event in every frame the
exception passes (at the raising line, or at the line that called the raising function), a handler
going on in that frame, and a `return` (value None) in each frame the exception leaves. This puts
those events back, so the cwm dialect writes what CWM was trained on. What the recorder does not
record at all (comprehension frames, `.0`) cannot be put back here.
"""

from __future__ import annotations

import msgspec

from neural_dap.core.state import State

_NONE = repr(None)


def as_settrace(states: list[State]) -> list[State]:
    """The settrace events of a recorded run. Idempotent: settrace-shaped states come back as they are."""
    out: list[State] = []
    last_line: dict[int, State] = {}  # invocation -> its latest call / line state
    for k, state in enumerate(states):
        before = out[-1] if out else None
        if state.caught is not None and not _raised_in(before, state.invocation):
            where = last_line.get(state.invocation)
            if where is not None:  # handled here: first the exception in this frame, at its line then
                out.append(_exception_at(where, state.caught))
        out.append(state)
        if state.event in ("call", "line"):
            last_line[state.invocation] = state
        if state.event == "exception" and _leaves(state, states[k + 1] if k + 1 < len(states) else None):
            out.append(msgspec.structs.replace(state, event="return", value=_NONE, stdout="", stderr="", caught=None))
            nxt = states[k + 1] if k + 1 < len(states) else None
            caller = last_line.get(nxt.invocation) if nxt is not None else None
            if nxt is not None and caller is not None and nxt.caught is None and nxt.event != "exception":
                out.append(_exception_at(caller, state.value or ""))  # passed on unseen (rare): still raised there
    return out


def _leaves(state: State, nxt: State | None) -> bool:
    """A recorded exception ends its invocation unless settrace's own `return` or a handler follows."""
    return nxt is None or nxt.invocation != state.invocation


def _raised_in(state: State | None, invocation: int) -> bool:
    return state is not None and state.event == "exception" and state.invocation == invocation


def _exception_at(where: State, value: str) -> State:
    return State(
        "exception",
        where.line,
        where.source,
        where.function,
        where.depth,
        where.invocation,
        dict(where.locals),
        value=value,
        path=where.path,
    )
