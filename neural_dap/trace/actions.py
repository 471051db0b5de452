"""The meaning of every debugger action, defined once, over a recording's columns.

Both recordings describe an execution by the same columns: per event its kind, line and
invocation; per invocation its first and terminal events, its caller and its code (function and
path). The full recording builds them from its states (`trace.tree.StateTree`), the skeleton has
them as numpy arrays already (`trace.skeleton.SkeletonTree`); both hand them to `ActionSemantics`,
which is the only place that says where an action leads.

| action             | from event i, go to ...                                                     |
|--------------------|-----------------------------------------------------------------------------|
| step_into          | the next event (of the same thread)                                         |
| step_over          | the next event of the same invocation (of the caller, from a terminal)      |
| step_return        | the terminal event of the invocation (of the caller's, from a terminal;     |
|                    | from the exit of one library code runs, the next event of the user's frame  |
|                    | under that code: `<module>` once `asyncio.run` returns)                     |
| breakpoint(T)      | the next `line` event at one of the (path, line) targets T, else the last   |
| continue           | the last event (the end of the traced scope)                                |
| inv_step_into      | the previous event (of the same thread)                                     |
| inv_step_over      | the previous event of the same invocation (of the caller, from a call)      |
| inv_step_return    | the call event of the invocation (of the caller's, from a call)             |
| inv_breakpoint(T)  | the previous `line` event at one of T, else the first event                 |
At the first or last event an action that cannot move stays where it is. The steps stay in the
thread of event i (an invocation runs in one thread, so only step_into needs to say so); a step
that runs off the end of its thread's events goes on as continue does; breakpoints and continue
stop in any thread. A target matches a line
event when the lines are equal and the paths are equal, or the target's path is empty (a
single-file context: the neural world model, the trace format).

Runs go past 10^7 events, so nothing here loops over events in Python: breakpoint targets get a
sorted index of their line events (built once per (path, line), then binary searched), and the
steps search the invocation column in growing slices (a step's answer is usually near).
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable, Iterable

import msgspec
import numpy as np

from neural_dap.core.actions import Action, Target

KINDS = ("call", "line", "return", "exception")
CALL, LINE, RETURN, EXCEPTION = 0, 1, 2, 3
KIND_CODES = {kind: code for code, kind in enumerate(KINDS)}

_FIRST_SLICE = 256  # events searched first by a step; each further slice is 8 times larger
_MAX_SLICE = 1 << 22
_CHUNK = 1 << 20  # events indexed at a time
_LINE_INDEXES = 64  # (path, line) indexes kept: breakpoints and queries are few


class Columns(msgspec.Struct, frozen=True):
    """An execution as the actions need it. Invocations are numbered 0..m-1 (`invs` holds that
    number, not the recorder's invocation id), so per-invocation columns are plain arrays."""

    kinds: np.ndarray  # per event: CALL, LINE, RETURN or EXCEPTION (uint8)
    lines: np.ndarray  # per event: its line (int32)
    invs: np.ndarray  # per event: its invocation's number
    call_index: np.ndarray  # per invocation: its first event (its call, in a whole recording)
    end_index: np.ndarray  # per invocation: its last terminal event, -1 where it never ended
    parent: np.ndarray  # per invocation: its caller's number, -1 for none
    code_of: np.ndarray  # per invocation: the index of its code in `codes`
    codes: tuple[tuple[str, str], ...]  # per code: (function name, path)
    thread_of: np.ndarray | None = None  # per invocation: its thread's number; None: one thread
    # per invocation: the invocation a resumed generator or coroutine continues (-1: none); None: none do
    resumes: np.ndarray | None = None
    # per invocation: library code called it, not its caller's frame (bool); None: none was
    library: np.ndarray | None = None


def positions(mask: np.ndarray) -> np.ndarray:
    """np.flatnonzero as int32 where the indices fit (half the memory of int64 for the millions of
    line events a long run has), a chunk at a time so no int64 array of them all is ever made."""
    if len(mask) >= 1 << 31:
        return np.flatnonzero(mask)
    parts = [np.flatnonzero(mask[k : k + _CHUNK]).astype(np.int32) + k for k in range(0, len(mask), _CHUNK)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)


def first_where(matches: Callable[[int, int], np.ndarray], start: int, stop: int) -> int:
    """The first k in [start, stop) where `matches(lo, hi)` (a boolean mask of events lo..hi-1) is
    true, else -1: slices grow from small, so a near answer costs little and a far one one pass."""
    size = _FIRST_SLICE
    while start < stop:
        end = min(stop, start + size)
        found = np.flatnonzero(matches(start, end))
        if len(found):
            return start + int(found[0])
        start, size = end, min(size * 8, _MAX_SLICE)
    return -1


def last_where(matches: Callable[[int, int], np.ndarray], start: int, stop: int) -> int:
    """The last k in [start, stop) where `matches` is true, else -1 (searching backwards)."""
    size = _FIRST_SLICE
    while start < stop:
        begin = max(start, stop - size)
        found = np.flatnonzero(matches(begin, stop))
        if len(found):
            return begin + int(found[-1])
        stop, size = begin, min(size * 8, _MAX_SLICE)
    return -1


def first_equal(values: np.ndarray, value: int, start: int, stop: int) -> int:
    """The first k in [start, stop) with values[k] == value, else -1."""
    return first_where(lambda lo, hi: values[lo:hi] == value, start, stop)


def last_equal(values: np.ndarray, value: int, start: int, stop: int) -> int:
    """The last k in [start, stop) with values[k] == value, else -1 (searching backwards)."""
    return last_where(lambda lo, hi: values[lo:hi] == value, start, stop)


class ActionSemantics:
    """Where each action leads from each event, and where the breakpoints of a run are hit."""

    def __init__(self, columns: Columns) -> None:
        self.columns = columns
        self.n = len(columns.kinds)
        self.paths: tuple[str, ...] = tuple(sorted({path for _, path in columns.codes}))
        self._path_ids = {path: k for k, path in enumerate(self.paths)}
        self._line_indexes: OrderedDict[tuple[str, int], np.ndarray] = OrderedDict()
        self._continuations: np.ndarray | None = None  # per invocation: the one that continues it

    @functools.cached_property
    def path_of(self) -> np.ndarray:
        """Per invocation: the index of its path in `paths` (made when first asked: a recording's
        end waited for it, a pass over every invocation)."""
        columns = self.columns
        code_paths = np.array([self._path_ids[path] for _, path in columns.codes], dtype=np.int32)
        return code_paths[columns.code_of] if len(columns.code_of) else np.zeros(0, dtype=np.int32)

    def __len__(self) -> int:
        return self.n

    @property
    def last(self) -> int:
        return self.n - 1

    def kind(self, i: int) -> int:
        return int(self.columns.kinds[i])

    def path(self, i: int) -> str:
        """The path of event i's code."""
        return self.paths[int(self.path_of[self.columns.invs[i]])]

    # -- the actions -----------------------------------------------------------------------------
    def apply(self, i: int, action: Action) -> int:
        kind = action.kind
        if kind == "step_into":
            return self.step_into(i)
        if kind == "inv_step_into":
            return self.inv_step_into(i)
        if kind == "step_over":
            return self.step_over(i)
        if kind == "inv_step_over":
            return self.inv_step_over(i)
        if kind == "step_return":
            return self.step_return(i)
        if kind == "inv_step_return":
            return self.inv_step_return(i)
        if kind == "breakpoint":
            found = self.next_hit(i, action.targets)
            return self.last if found is None else found
        if kind == "inv_breakpoint":
            found = self.previous_hit(i, action.targets)
            return 0 if found is None else found
        if kind == "continue":
            return self.last
        raise ValueError(f"unknown action {kind}")

    def thread(self, i: int) -> int:
        """The number of event i's thread (0 where the program ran one)."""
        thread_of = self.columns.thread_of
        return 0 if thread_of is None else int(thread_of[self.columns.invs[i]])

    def step_into(self, i: int) -> int:
        if self.columns.thread_of is None:
            return min(i + 1, self.last)
        found = self._in_thread(self.thread(i), i + 1, self.n, forward=True)
        return found if found >= 0 else self.last

    def inv_step_into(self, i: int) -> int:
        if self.columns.thread_of is None:
            return max(i - 1, 0)
        found = self._in_thread(self.thread(i), 0, i, forward=False)
        return found if found >= 0 else 0

    def _in_thread(self, thread: int, start: int, stop: int, *, forward: bool) -> int:
        """The first (or last) event in [start, stop) of `thread`, else -1."""
        thread_of, invs = self.columns.thread_of, self.columns.invs
        assert thread_of is not None

        def matches(lo: int, hi: int) -> np.ndarray:
            return thread_of[invs[lo:hi]] == thread

        return first_where(matches, start, stop) if forward else last_where(matches, start, stop)

    def next_of_thread(self, thread: int, i: int) -> int:
        """The first event of `thread` after event i, else -1."""
        if self.columns.thread_of is None:
            return i + 1 if thread == 0 and i + 1 < self.n else -1
        return self._in_thread(thread, i + 1, self.n, forward=True)

    def last_of_thread(self, thread: int, i: int) -> int:
        """The latest event of `thread` at or before event i, else -1."""
        if self.columns.thread_of is None:
            return i if thread == 0 else -1
        return self._in_thread(thread, 0, i + 1, forward=False)

    def _owner_forward(self, i: int) -> int:
        """Whose events step_over / step_return move through from event i (-1: nobody's)."""
        inv = int(self.columns.invs[i])
        return int(self.columns.parent[inv]) if self.kind(i) >= RETURN else inv

    def _owner_backward(self, i: int) -> int:
        inv = int(self.columns.invs[i])
        return int(self.columns.parent[inv]) if self.kind(i) == CALL else inv

    def step_over(self, i: int) -> int:
        inv = int(self.columns.invs[i])
        if self.kind(i) == RETURN and self.continued_by(inv) >= 0:
            return self._resumed(self.continued_by(inv))  # from a suspension: where it resumes
        owner = self._owner_forward(i)
        if owner < 0:  # (the exit of a task's coroutine: on in the user's frame under the event loop)
            return self._under_the_library(i)
        end = int(self.columns.end_index[owner])
        stop = end + 1 if end >= i else self.n  # nothing of the owner's comes after its end
        found = first_equal(self.columns.invs, owner, i + 1, stop)
        if found < 0:
            return self.last
        if found == end and self.kind(found) == RETURN and self.continued_by(owner) >= 0:
            # over an `await` (a `yield`) that suspends the coroutine: on at its next line, once resumed
            return self._resumed(self.continued_by(owner))
        return found

    def inv_step_over(self, i: int) -> int:
        inv = int(self.columns.invs[i])
        if self.kind(i) == CALL and self._resumes(inv) >= 0:
            return self._suspended_at(self._resumes(inv))  # from a resume: back where it suspended
        owner = self._owner_backward(i)
        if owner < 0:
            return 0
        start = int(self.columns.call_index[owner])
        found = last_equal(self.columns.invs, owner, start, i)
        if found == start and self._resumes(owner) >= 0:
            return self._suspended_at(self._resumes(owner))  # back over the `await`, to its line
        return found if found >= 0 else 0

    # -- generators and coroutines: one frame, an invocation per run between suspensions ------------
    def _resumes(self, inv: int) -> int:
        """The invocation `inv` continues (a resumed generator or coroutine), else -1."""
        resumes = self.columns.resumes
        return -1 if resumes is None else int(resumes[inv])

    def resumes_here(self, i: int) -> bool:
        """Event i is where a generator or coroutine resumes (its call event, at the suspending line)."""
        return self.kind(i) == CALL and self._resumes(int(self.columns.invs[i])) >= 0

    def continued_by(self, inv: int) -> int:
        """The invocation that continues `inv` after it suspended, else -1."""
        if self.columns.resumes is None:
            return -1
        if self._continuations is None:
            resumes = self.columns.resumes
            continuations = np.full(len(resumes), -1, dtype=np.int64)
            resumed = np.flatnonzero(resumes >= 0)
            continuations[resumes[resumed]] = resumed
            self._continuations = continuations
        return int(self._continuations[inv])

    def _resumed(self, inv: int) -> int:
        """The first event of resumed invocation `inv` after its resume (its call event, at the
        `await` line): the next line, or where it suspends again at once (then on, to its resume)."""
        seen = 0
        while True:
            start = int(self.columns.call_index[inv])
            end = int(self.columns.end_index[inv])
            found = first_equal(self.columns.invs, inv, start + 1, end + 1 if end >= 0 else self.n)
            if found < 0:
                return start
            later = self.continued_by(inv)
            if found != end or self.kind(found) != RETURN or later < 0 or seen > 1000:
                return found
            inv, seen = later, seen + 1

    def _suspended_at(self, inv: int) -> int:
        """The last event of `inv` before it suspended (the `await` line), else its call event."""
        start = int(self.columns.call_index[inv])
        end = int(self.columns.end_index[inv])
        found = last_equal(self.columns.invs, inv, start, end if end >= 0 else self.n)
        if found == start and self._resumes(inv) >= 0:
            return self._suspended_at(self._resumes(inv))
        return found if found >= 0 else start

    def step_return(self, i: int) -> int:
        owner = self._owner_forward(i)
        if owner < 0:
            return self._under_the_library(i)
        end = int(self.columns.end_index[owner])
        return end if end >= i else self.last

    def _under_the_library(self, i: int) -> int:
        """From the exit of an invocation nobody traced called (an event loop's task, a generator a
        library resumes): the next event of the user's frame under the library code that runs it
        (`<module>` where `asyncio.run` returns), as debugpy's step out returns only into the
        user's frames on the real stack; the last event where there is none (a thread's function,
        a test pytest runs)."""
        columns = self.columns
        root = int(columns.invs[i])
        calls, ends = columns.call_index, columns.end_index
        open_ = (calls < calls[root]) & ((ends < 0) | (ends > i))
        if columns.thread_of is not None:
            open_ &= columns.thread_of == columns.thread_of[root]
        candidates = np.flatnonzero(open_)
        if not len(candidates):
            return self.last
        under = int(candidates[np.argmax(calls[candidates])])
        end = int(ends[under])
        found = first_equal(columns.invs, under, i + 1, end + 1 if end >= 0 else self.n)
        return found if found >= 0 else self.last

    def inv_step_return(self, i: int) -> int:
        owner = self._owner_backward(i)
        return 0 if owner < 0 else int(self.columns.call_index[owner])

    # -- calls made by library code ------------------------------------------------------------------
    def called_by_library(self, i: int) -> bool:
        """Event i's invocation was called by library code (click running the user's command, a
        scheduler running a callback), which its traced caller called: it returns into that code."""
        library = self.columns.library
        return library is not None and bool(library[self.columns.invs[i]])

    def library_calls_next(self, i: int) -> bool:
        """After event i (an exit), library code calls the user's code again before it returns to
        the traced caller: the next event of the thread is a call library code made."""
        j = self.step_into(i)
        return j > i and self.kind(j) == CALL and self.called_by_library(j)

    def library_called_before(self, i: int) -> bool:
        """Event i is a call library code made right after a function it called had exited (a
        sort key's second call after its first): the mirror of `library_calls_next`."""
        if self.kind(i) != CALL or not self.called_by_library(i):
            return False
        j = self.inv_step_into(i)
        return j < i and self.kind(j) in (RETURN, EXCEPTION) and self.called_by_library(j)

    # -- breakpoints -------------------------------------------------------------------------------
    def line_index(self, path: str, line: int) -> np.ndarray:
        """The `line` events at (path, line) in run order (any file's for an empty path), built by
        one pass over the columns the first time it is asked for, then kept."""
        key = (path, line)
        index = self._line_indexes.get(key)
        if index is not None:
            self._line_indexes.move_to_end(key)
            return index
        cols = self.columns
        if path and path not in self._path_ids:
            index = np.zeros(0, dtype=np.int32)
        else:
            index = positions((cols.lines == line) & (cols.kinds == LINE))
            if path:
                index = index[self.path_of[cols.invs[index]] == self._path_ids[path]]
        index.flags.writeable = False  # handed out by queries: shared, never to be changed
        self._line_indexes[key] = index
        while len(self._line_indexes) > _LINE_INDEXES:
            self._line_indexes.popitem(last=False)
        return index

    def _indexes(self, targets: Iterable[Target]) -> list[np.ndarray]:
        return [self.line_index(path, line) for path, line in set(targets)]

    def next_hit(self, i: int, targets: Iterable[Target]) -> int | None:
        """The first line event at a target after event i."""
        best: int | None = None
        for index in self._indexes(targets):
            k = int(np.searchsorted(index, i, side="right"))
            if k < len(index) and (best is None or int(index[k]) < best):
                best = int(index[k])
        return best

    def previous_hit(self, i: int, targets: Iterable[Target]) -> int | None:
        """The last line event at a target before event i."""
        best: int | None = None
        for index in self._indexes(targets):
            k = int(np.searchsorted(index, i, side="left")) - 1
            if k >= 0 and (best is None or int(index[k]) > best):
                best = int(index[k])
        return best

    def hits(self, start: int, end: int, targets: Iterable[Target]) -> list[int]:
        """Line events at the targets strictly after `start` up to `end`, in the walking direction."""
        if start == end:
            return []
        lo, hi = (start + 1, end) if end > start else (end, start - 1)
        parts = [
            index[np.searchsorted(index, lo, side="left") : np.searchsorted(index, hi, side="right")]
            for index in self._indexes(targets)
        ]
        if not parts:
            return []
        found = np.unique(np.concatenate(parts)).tolist() if len(parts) > 1 else parts[0].tolist()
        return found if end > start else found[::-1]

    def hit_number(self, i: int) -> int | None:
        """How many times event i's (path, line) has run up to and including event i (1 the first
        time): a fact of the run, whichever way the user walked to it. None if i is not a line event."""
        if not 0 <= i < self.n or self.kind(i) != LINE:
            return None
        index = self.line_index(self.path(i), int(self.columns.lines[i]))
        return int(np.searchsorted(index, i, side="right"))

    def nth_hit(self, target: Target, n: int) -> int | None:
        """The event of the n-th run (from 1) of a target's line, if it ran that often."""
        index = self.line_index(*target)
        return int(index[n - 1]) if 1 <= n <= len(index) else None

    def next_line_event(self, i: int, *, forward: bool) -> int | None:
        """The nearest `line` event after (or before) event i, of any line."""
        kinds = self.columns.kinds
        found = first_equal(kinds, LINE, i + 1, self.n) if forward else last_equal(kinds, LINE, 0, i)
        return found if found >= 0 else None
