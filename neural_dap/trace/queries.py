"""Questions asked of a whole recording, not of one stop: where a line ran, where a local changed,
when a function was called. An optional capability of exact worlds (`RecordedWorld.queries`), for
hit counts, data breakpoints, the language server and other front ends.

Event indices are the recording's (`Stop.index`); invocations are the recorder's ids
(`State.invocation`, `Frame.invocation`). Line and call questions are answered from the columns
both recordings share (`trace.actions.ActionSemantics`), without building states. A local's
changes need its values: the full recording has every state; the skeleton rebuilds the states
of the events asked about from checkpoints (materialised windows), so it answers over a range of
at most `MAX_MATERIALISED_SPAN` events and refuses a longer one rather than take minutes.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from neural_dap.core.state import State
from neural_dap.trace.actions import ActionSemantics, last_equal
from neural_dap.trace.execution import Execution, FullExecution, SkeletonExecution

# A skeleton rebuilds ~10^4-10^5 states a second: a longer range is refused, not silently slow.
MAX_MATERIALISED_SPAN = 200_000


class QueryError(ValueError):
    """A query this recording cannot answer (a range too long to rebuild, an event out of range)."""


class RecordingQueries:
    """Queries over one recorded execution (full or skeleton)."""

    def __init__(self, execution: Execution) -> None:
        self.execution = execution
        self.semantics: ActionSemantics = execution.semantics

    def hits(self, path: str, line: int) -> np.ndarray:
        """The events at which (path, line) ran, in run order (read-only; an empty path: any file)."""
        return self.semantics.line_index(path, line)

    def hit_number(self, index: int) -> int | None:
        """How many times event `index`'s (path, line) has run up to and including it (1 the first
        time); None for an event that is not a line event."""
        return self.semantics.hit_number(index)

    def nth_hit(self, path: str, line: int, n: int) -> int | None:
        """The event of the n-th run (counted from 1) of (path, line), None if it ran fewer times."""
        return self.semantics.nth_hit((path, line), n)

    def calls(self, function: str, path: str = "") -> list[tuple[int, int | None]]:
        """(call event, terminal event) of every invocation of `function` (of that file, if `path` is
        given), in run order; the terminal is None for a call that had not returned when the
        recording ended."""
        semantics = self.semantics
        cols = semantics.columns
        codes = [k for k, (name, code_path) in enumerate(cols.codes) if name == function and path in ("", code_path)]
        if not codes:
            return []
        chosen = np.flatnonzero(np.isin(cols.code_of, codes))
        starts = cols.call_index[chosen].tolist()
        ends = cols.end_index[chosen].tolist()
        return [(int(s), int(e) if e >= 0 else None) for s, e in zip(starts, ends, strict=True)]

    def call_events(self, function: str, path: str = "") -> tuple[np.ndarray, np.ndarray]:
        """Vectorised `calls`: the invocation numbers of every call of `function` (of that file, if
        `path` is given) in run order, and their terminal events (-1: not ended)."""
        cols = self.semantics.columns
        codes = [k for k, (name, code_path) in enumerate(cols.codes) if name == function and path in ("", code_path)]
        if not codes:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        chosen = np.flatnonzero(np.isin(cols.code_of, codes))
        return chosen, cols.end_index[chosen]

    def changes(self, name: str, invocation: int | None = None, start: int = 0, end: int | None = None) -> list[int]:
        """The events from `start` to `end` (inclusive; default: the last) at which local `name`'s
        value (its repr) differs from its value at the previous event of the same invocation:
        where it is first bound (a call's arguments at the call event), rebound, changed in place
        (also by a callee) or deleted. A line event shows the locals before its line runs, so the
        change shows at the event after the statement that made it, where a debugger stops for a
        data breakpoint. `invocation`: only that invocation's events."""
        last = self.semantics.last
        end = last if end is None else end
        if not 0 <= start <= end <= last:
            raise QueryError(f"the range {start}..{end} is not within the recording's events 0..{last}")
        if isinstance(self.execution, SkeletonExecution) and end - start + 1 > MAX_MATERIALISED_SPAN:
            raise QueryError(
                f"a skeleton recording rebuilds states to find changes: ask for at most "
                f"{MAX_MATERIALISED_SPAN} events at a time, not {end - start + 1}"
            )
        state = self.execution.state
        cols = self.semantics.columns
        previous: dict[int, str | None] = {}  # invocation number -> the value at its latest event seen
        found: list[int] = []
        for k in self._candidates(name, start, end):
            inv = int(cols.invs[k])
            here = state(k)
            if invocation is not None and here.invocation != invocation:
                continue
            if inv not in previous:
                previous[inv] = self._value_before(inv, k, name)
            value = here.locals.get(name)
            if value != previous[inv]:
                found.append(k)
            previous[inv] = value
        return found

    def _candidates(self, name: str, start: int, end: int) -> Iterable[int]:
        """The events whose value of `name` may differ from the invocation's previous event: in a
        full recording those whose recorded changes name it (a state's locals are its previous
        ones plus its changes, callees' updates included), in a skeleton every event."""
        execution = self.execution
        if isinstance(execution, FullExecution):
            changes = execution.recording.log.changes
            return [k for k in range(start, end + 1) if (c := changes[k]) and name in c[::2]]
        return range(start, end + 1)

    def _value_before(self, inv: int, k: int, name: str) -> str | None:
        """The local's value at the invocation's latest event before event k (None: not bound)."""
        cols = self.semantics.columns
        before = last_equal(cols.invs, inv, int(cols.call_index[inv]), k)
        if before < 0:
            return None
        state: State = self.execution.state(before)
        return state.locals.get(name)
