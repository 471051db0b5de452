"""The return values a debugger shows beside a frame's locals: `(return) f` (debugpy's
`showReturnValue`, on in VS Code's launches and in ours).

debugpy (pydevd) keeps them in the frame a function returned *into*, for that frame's whole life,
and adds one only while the user steps (a `continue` adds none):

  next     each function the stepping frame called directly that returned during the step (its
           `(return) f`, the latest value per name); once the stepping frame itself returns, the
           step goes on as a step in, and everything returning from then on counts as for stepIn
  stepIn   every function of the user's that returned during the step, into the frame that
           called it
  stepOut  the function stepped out of, into its caller

A generator or coroutine pausing (`yield`, `await`) is no return here (its final return is).

A function library code called returns into that code: none. On 3.11 an exception leaving a
function is a `return` to settrace, so pydevd shows `(return) f` as `None` there; on 3.12+ it is
not a return (PY_UNWIND). pydevd also shows the return values of the library's Python functions
that returned into the user's frames (3.11: those a step into passed through, `(return) findall`;
3.12+: every one the stepped line called, `(return) dumps`); a recording of the user's code has no
value for them, so they are left out (a known difference: docs/design-notes.md, eleventh round).

The values come from the recording (`RecordingQueries`); the debugger core keeps them per frame
across the session's steps (`ReturnValues`), each with the event it returned at, so a stop
travelled back to shows only those that had returned by then.

pydevd keeps the returned *object*, so a later stop shows it as it is then: `rows = [...]` then
`rows.sort()` shows `(return) <listcomp>` sorted (and empty while `sort` calls its key). A recording
keeps values, not objects; where the frame bound the returned value to a name (`rows = f()`: the
name holds it at the frame's next event), the value shown follows that name's value until a
statement of the frame binds the name anew (its storing lines, from the source), which is where
the object and the name part. Worlds that cannot say what a step
passed (a model predicting the next stop) show what the stepping policy saw: the return a step
passed on its way (`Stop.returned`).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np

from neural_dap.core.state import Frame, Value
from neural_dap.core.world import Stop
from neural_dap.debugger.history import name_lines, source_of
from neural_dap.debugger.shown import returning_name
from neural_dap.trace.actions import EXCEPTION, LINE, RETURN
from neural_dap.trace.queries import RecordingQueries

STEPS = frozenset({"next", "stepIn", "stepOut"})
# a step whose range holds more returns than this is not searched for its return values (a
# `next` over a loop the user's code runs a million times): the values shown stay as they were
_MAX_SCANNED = 2_000_000
# how far past a return its caller's next event is looked for (the name it bound the value to)
_MAX_BINDING_GAP = 100_000


class _Returned(msgspec.Struct, frozen=True):
    """One value a function returned into a frame."""

    event: int  # the return event
    value: str
    holder: str = ""  # the frame's local the value was bound to ("": none found)
    bound: int = -1  # the frame's event where `holder` first held it
    structured: Value | None = None  # its children, where the world sent them (the library's)


def _after_the_library(stop: Stop, cols: Any) -> int:
    """1 where `stop` stands for the moment library code returned into the user's caller (the last
    return of a function that code called, shown at the caller's call line: a sort key's, a
    scheduler's callback's): what the library returned there is recorded with the next event; else
    0. Not where a task's coroutine returned (`asyncio.run` returning): debugpy shows its value
    from the next stop on."""
    if not (stop.called_by_library and stop.state.terminal and not stop.library_calls_next):
        return 0
    return int(not _resumable(cols, int(cols.invs[stop.index])))


def _with_headers(queries: RecordingQueries, path: str, name: str) -> set[int]:
    """The lines of `with ... as name` headers in the file at `path`."""
    source = source_of(queries.execution, path)
    try:
        tree = ast.parse(source or "")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return set()
    return {
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, (ast.With, ast.AsyncWith))
        and any(isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name for item in node.items)
    }


def _resumable(cols: Any, inv: int) -> bool:
    """Invocation `inv` is a run of a generator or coroutine (as far as the recording says)."""
    resumes = cols.resumes
    return resumes is not None and 0 <= inv < len(resumes) and int(resumes[inv]) != -1


class ReturnValues:
    """The `(return)` values of the session's frames, as the steps so far made them."""

    def __init__(self) -> None:
        # the frame (recorder invocation id) -> name -> its returns, in event order
        self._frames: dict[int, dict[str, list[_Returned]]] = {}
        # (path, function, name) -> the lines binding the name anew (from the source)
        self._storing: dict[tuple[str, str, str], frozenset[int]] = {}
        # a generator's or coroutine's run -> its first run: one frame, whose values last across
        # its pauses (pydevd keeps them in the frame)
        self._first_runs: dict[int, int] = {}

    def clear(self) -> None:
        self._frames.clear()
        self._storing.clear()
        self._first_runs.clear()

    def add(
        self, queries: RecordingQueries, events: list[int], library: Sequence[tuple[int, int, str, str, Any]] = ()
    ) -> None:
        """Keep the values of these return events (states are built: a skeleton replays) and of
        these returns of the library's (`library_of`)."""
        for event in events:
            self._add(queries, event)
        for event, frame, name, value, structured in library:
            self._add_library(queries, event, frame, name, value, structured)

    def library_of(
        self, kind: str, before: Stop, after: Stop, queries: RecordingQueries, unwinds: bool
    ) -> list[tuple[int, int, str, str, Any]]:
        """The library's returns into the user's frames that the step `kind` from `before` to
        `after` shows, where the program ran it live: (event, frame, name, value, children).
        pydevd's rule on 3.12+ (`unwinds`): `next` those into the stepping frame (into any once
        that frame has returned), a step in or out every one; on 3.11 a step in every one, `next`
        and a step out those after the stepping frame returned (for `next`, not off a coroutine's
        or a task's return)."""
        returned = getattr(queries.execution, "library_returns", None)
        if kind not in STEPS or returned is None or after.index <= before.index:
            return []
        cols = queries.semantics.columns
        found = returned(before.index, after.index + _after_the_library(after, cols))
        if not found or kind == "stepIn" or (unwinds and kind == "stepOut"):
            return found
        stepping = self._stepping(before, cols)
        own_end = int(cols.end_index[stepping]) if 0 <= stepping < len(cols.end_index) else -1
        left = before.index < own_end <= after.index
        if not unwinds and kind == "next" and (_resumable(cols, stepping) or before.outer):
            left = False  # (3.11: `next` off a coroutine's, a task's, return traces no library: measured)
        # (once the stepping frame has returned, pydevd steps on as a step in)
        return [r for r in found if (unwinds and r[1] == stepping) or (left and r[0] > own_end)]

    @staticmethod
    def _stepping(before: Stop, cols: Any) -> int:
        stepping = int(cols.invs[before.index])
        if before.state.terminal and len(before.stack) > 1:
            stepping = int(cols.parent[stepping])  # (a stop at a return is shown in the caller)
        return stepping

    def returns_of(self, kind: str, before: Stop, after: Stop, queries: RecordingQueries, unwinds: bool) -> list[int]:
        """The return events of the step `kind` from `before` to `after` whose values are shown, the
        latest per function (from the recording's columns alone: cheap). `unwinds`: an exception
        leaving a function is no return (3.12+); on 3.11 it is one (shown as None)."""
        if kind not in STEPS or after.index <= before.index:
            return []
        cols = queries.semantics.columns
        last = len(cols.kinds) - 1
        start, end = before.index + 1, min(after.index, last)
        if start > end or end - start > _MAX_SCANNED:
            return []
        kinds = cols.kinds[start : end + 1]
        exits = (kinds == RETURN) if unwinds else ((kinds == RETURN) | (kinds == EXCEPTION))
        events = np.flatnonzero(exits) + start
        if len(events) == 0:
            return []
        invs = cols.invs[events]
        parents = cols.parent[invs]
        called_by_user = parents >= 0
        if cols.library is not None:
            called_by_user &= ~cols.library[invs].astype(bool)
        stepping = self._stepping(before, cols)
        if kind == "stepOut":  # (into a user's frame: one library code called returns into that code)
            counted = (invs == stepping) & called_by_user
        else:
            direct = parents == stepping
            if kind == "stepIn":
                counted = called_by_user
            else:  # next: once the stepping frame has returned, on as a step in (pydevd's)
                own = np.flatnonzero(invs == stepping)
                counted = direct & called_by_user
                if len(own):
                    counted |= called_by_user & (np.arange(len(events)) >= own[0])
        chosen = events[counted]
        semantics = queries.semantics
        # a skeleton says which exits were pauses, also of one that has not resumed yet (live)
        paused = getattr(queries.execution, "paused", None)
        latest: dict[int, int] = {}  # per code: its last return in the step (the value shown)
        for event, inv in zip(chosen.tolist(), cols.invs[chosen].tolist(), strict=True):
            if semantics.continued_by(inv) >= 0 or (paused is not None and paused(inv)):
                continue  # (a generator pausing at `yield` returns nothing)
            latest[int(cols.code_of[inv])] = event
        return sorted(latest.values())

    def _add(self, queries: RecordingQueries, event: int) -> None:
        execution = queries.execution
        frames = execution.frames(event)
        if len(frames) < 2:
            return
        state = execution.state(event)
        value = (state.value or "None") if state.event == "return" else "None"
        local = frames[0].locals
        if "__qualname__" in local and "__module__" in local:
            return  # a class body's end (pydevd shows none)
        name = f"(return) {returning_name(state.function, dict(local), state.path, state.line)}"
        caller = frames[1]
        self._keep(queries, caller.invocation, name, event, event, dict(caller.locals), value, None)

    def _add_library(
        self, queries: RecordingQueries, event: int, frame: int, name: str, value: str, structured: Value | None
    ) -> None:
        """A library function's value returned into `frame` just before `event`."""
        before = next((f for f in queries.execution.frames(event - 1) if f.invocation == frame), None)
        local = dict(before.locals) if before is not None else {}
        self._keep(queries, frame, f"(return) {name}", event, event - 1, local, value, structured)

    def _keep(
        self,
        queries: RecordingQueries,
        frame: int,
        name: str,
        event: int,
        returned_at: int,
        before: dict[str, str],
        value: str,
        structured: Value | None,
    ) -> None:
        """Keep `value` as frame `frame`'s `name` from `event` on (`returned_at`: the last event
        before the caller went on; `before`: the caller's locals then)."""
        holder, bound = self._holder(queries, returned_at, frame, before, value)
        shown = self._frames.setdefault(self._first_run(queries, frame), {}).setdefault(name, [])
        shown[:] = [kept for kept in shown if kept.event < event]  # (stepped again after a travel back)
        shown.append(_Returned(event, value, holder, bound, structured))

    def _first_run(self, queries: RecordingQueries, inv: int) -> int:
        """The first run of the generator or coroutine whose run `inv` is (`inv` itself for a
        function's frame), following each resumed run to the one it continues."""
        resumes = queries.semantics.columns.resumes
        if resumes is None:
            return inv
        path: list[int] = []
        current = inv
        while True:
            known = self._first_runs.get(current)
            if known is not None:
                first = known
                break
            before = int(resumes[current]) if 0 <= current < len(resumes) else -1
            if before < 0 or len(path) >= _MAX_SCANNED:
                first = current
                break
            path.append(current)
            current = before
        for run in path:
            self._first_runs[run] = first
        return first

    @staticmethod
    def _holder(
        queries: RecordingQueries, event: int, frame: int, before: dict[str, str], value: str
    ) -> tuple[str, int]:
        """The caller's local that holds the returned value at the caller's next event (`rows = f()`),
        and that event; ("", -1) where none took it."""
        invs = queries.semantics.columns.invs
        end = min(len(invs), event + 1 + _MAX_BINDING_GAP)
        found = np.flatnonzero(invs[event + 1 : end] == frame)
        if len(found) == 0:
            return "", -1
        bound = event + 1 + int(found[0])
        frames = queries.execution.frames(bound)
        if not frames or frames[0].invocation != frame:
            return "", -1
        after = frames[0].locals
        for local, text in after.items():
            if text == value and before.get(local) != value:
                return local, bound
        return "", -1

    def shown(self, stop: Stop, queries: RecordingQueries) -> Stop:
        """`stop` with the return values of each of its frames that had returned by then."""
        found: list[tuple[int, str, str, str, Value | None]] = []
        until = stop.index + _after_the_library(stop, queries.semantics.columns)
        for depth, frame in enumerate(stop.stack):
            for name, values in self._frames.get(self._first_run(queries, frame.invocation), {}).items():
                returned = next((r for r in reversed(values) if r.event <= until), None)
                if returned is not None:
                    holder = self._holding(returned, frame, stop.index, queries)
                    if holder:
                        found.append((depth, name, frame.locals[holder], holder, None))
                    else:
                        found.append((depth, name, returned.value, "", returned.structured))
        return msgspec.structs.replace(stop, returned=tuple(found))

    def _holding(self, returned: _Returned, frame: Frame, index: int, queries: RecordingQueries) -> str:
        """The frame's local that holds the returned object at event `index` (its value is the
        object's as it is then), while no statement of the frame has bound that name anew; "": none."""
        holder = returned.holder
        if not holder or returned.bound > index or holder not in frame.locals:
            return ""
        key = (frame.path, frame.function, holder)
        storing = self._storing.get(key)
        if storing is None:
            function = frame.function.rpartition(".")[2]
            lines = name_lines(queries.execution, frame.path, function, holder)[1]
            # (a `with ... as name` header runs again where the block exits (3.12+): no new binding;
            # entering it again is a new `__enter__` return, which replaces this value anyway)
            storing = self._storing[key] = frozenset(lines - _with_headers(queries, frame.path, holder))
        cols = queries.semantics.columns
        # the statements run from the binding on; the one at `index` has not run yet
        span = slice(returned.bound, min(index, len(cols.kinds)))
        ran = (cols.invs[span] == frame.invocation) & (cols.kinds[span] == LINE)
        if storing and bool(np.isin(cols.lines[span][ran], list(storing)).any()):
            return ""  # (the name was bound anew: the object is no longer named here)
        return holder
