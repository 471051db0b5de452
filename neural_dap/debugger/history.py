"""Whole-run questions about values, calls and lines, over one recording (it knows no debugger:
`debugger/asking.py` asks it for a session, and DAP, the terminal through DAP and MCP use that).

Protocol-free and typed (msgspec Structs). Every answer is a `Page` (`start`, `count`, `total`), so a
caller knows what was left out and a long run costs only the page asked for: the events are found
first, vectorised over the recording's columns (`trace/queries.py`), and only the page's states are
materialised (a skeleton recording rebuilds states from checkpoints, a window at a time).

What a value's "change" is: the expression (a local, an attribute path `self.items`, an item
`d["k"]` / `xs[3]`, resolved through the recorded structured values) differs between two events of
the frame that reads it. A change is then dated where it was made (`History.within`): the statement
that made it, in the innermost recorded frame that ran it (a callee's `xs.append(7)` for a list its
caller holds under another name, a method's line for `self.items`), and the first event that shows
the new value (`Change.statement`, `Change.moment`). Binding the arguments shows at the call event,
made by the call site (old value None: not bound).

Which invocations: `value_history` covers every invocation of the frame's function (a user asking
"how did `total` evolve" in a recursive or often-called function wants all of them), each row
naming its invocation and which call of the function it is; `last_change` ("who set this") answers
for the frame's own invocation, the value the user is looking at.

How changes are found without rebuilding every state: a local can only be rebound by a line that
names it, and an object it holds can only be changed in place by code that reaches it. The
candidate events are therefore the invocation's events right after a line that names the root of
the expression or a name that may hold the same object (`ys = xs`), or during which other code ran,
plus the call events; a full recording adds every event whose recorded changes name it. Where the
value is immutable (a number, a string, a tuple of them), only the lines that *store* the name are
candidates until it is rebound (in a module, whose names are globals, any call may rebind them).
A skeleton answer checks at most `MAX_CHECKED` candidates per call; a page past that is refused
with a message, and the next call goes on from where the last one stopped (progress is kept).
"""

from __future__ import annotations

import ast
import threading
import time
import weakref
from typing import Any, Generic, TypeVar

import msgspec
import numpy as np

from neural_dap.core import reprs
from neural_dap.core.evaluator import Budget, evaluate
from neural_dap.core.state import State, Value
from neural_dap.core.world import WorldError
from neural_dap.debugger.breakpoints import interpolate
from neural_dap.trace.actions import CALL, EXCEPTION, LINE, last_equal, positions
from neural_dap.trace.eventlog import apply_changes, decode_repr, decode_value
from neural_dap.trace.execution import FullExecution, SkeletonExecution
from neural_dap.trace.queries import MAX_MATERIALISED_SPAN, QueryError, RecordingQueries
from neural_dap.trace.skeleton import DivergenceError

T = TypeVar("T")

MAX_CHECKED = MAX_MATERIALISED_SPAN  # candidates a skeleton checks in one call
COUNT_SECONDS = 0.3  # after a page, how long to go on counting the changes (an exact total where cheap)
WATCH_SPAN = 2_000_000  # events a replay watches between two events of a frame (~1 s a million)
LOG_BUDGET = Budget(steps=20_000, seconds=0.1)
_CHUNK = 4096
DETAIL_SPAN = 20_000  # a skeleton labels a line's executions with their locals when they lie this close


class Moment(msgspec.Struct, frozen=True):
    """A point of the run: its event index on the timeline (`Stop.index`) and where it is."""

    index: int
    path: str
    line: int
    function: str
    thread: int = 1  # the DAP id of the thread it ran in (the recorder's thread number + 1)


class Change(msgspec.Struct, frozen=True):
    """The expression's value changed from `old` to `new` (None: not bound: no such local, attribute
    or item). `statement` is the statement that changed it, in the innermost recorded frame that ran
    it (a callee's line for an object changed through another name; travelling there shows the value
    before); `moment` is the first event where the new value is visible (travelling there shows it
    after; a data breakpoint going forward stops there, one going back at the statement). `code` is
    the statement's source line; `note` says where the change was made by code the recording does
    not step into (a C function, a library) or could not be watched."""

    moment: Moment
    old: str | None
    new: str | None
    invocation: int = 0  # the recorder's invocation id of the frame the expression is read in
    call: int = 0  # which call of the function this invocation is (1: the first)
    statement: Moment | None = None
    code: str = ""
    note: str = ""
    argument: bool = False  # bound as an argument: `statement` is the call site that passed it


def data_stop(change: Change, forward: bool) -> int:
    """Where a write data breakpoint stops for this change: going forward, after it (its moment);
    going back, at the statement that made it, before it ran (as gdb's reverse watch)."""
    if forward or change.statement is None:
        return change.moment.index
    return change.statement.index


class Call(msgspec.Struct, frozen=True):
    """One call of a function: its arguments (the call state's locals), how it ended, when."""

    function: str
    moment: Moment  # the call event
    returned: Moment | None  # the return or exception event; None: it had not ended when the recording did
    arguments: dict[str, str]
    value: str | None = None  # the return value (or the exception, if `raised`)
    raised: bool = False
    depth: int = 0
    invocation: int = 0
    call: int = 0  # 1 for the function's first call


class LogLine(msgspec.Struct, frozen=True):
    """A log message evaluated at one past execution of its line."""

    moment: Moment
    hit: int  # which execution of the line (1: the first)
    text: str


class Page(msgspec.Struct, Generic[T], frozen=True):
    """Items `start` .. `start + len(items)` of `total`. `total_exact` is false where counting every
    item would mean rebuilding much of the run (a skeleton's value changes, counted on for a moment
    after each page): `total` is then the number found so far, a lower bound, and the next page
    counts on from there."""

    items: list[T]
    start: int
    count: int  # as asked
    total: int
    total_exact: bool = True


def nearest_change(queries: RecordingQueries, specs: list[Any], index: int, forward: bool) -> tuple[Any, Change] | None:
    """The first change after event `index` (or the last one before it) of any data breakpoint's
    expression (`specs`: objects with expression, path and function), in any invocation."""
    history = history_of(queries)
    best: tuple[Any, Change] | None = None
    for spec in specs:
        track = history.track_of(spec.expression, spec.function, spec.path)
        if track is None:
            continue
        found = track.next_change(index) if forward else track.previous(index - 1, by_statement=True)
        if found is None:
            continue
        at = data_stop(found, forward)
        if best is None or (at < data_stop(best[1], forward) if forward else at > data_stop(best[1], forward)):
            best = (spec, found)
    return best


# -- the recording side (synchronous: run in a worker thread, under the debugger's lock) -------------


_HISTORIES: weakref.WeakKeyDictionary[RecordingQueries, History] = weakref.WeakKeyDictionary()
_HISTORIES_LOCK = threading.Lock()


def history_of(queries: RecordingQueries) -> History:
    with _HISTORIES_LOCK:
        found = _HISTORIES.get(queries)
        if found is None:
            found = _HISTORIES[queries] = History(queries)
        return found


class History:
    """Whole-run answers over one recording, with the indices they need kept between calls."""

    def __init__(self, queries: RecordingQueries) -> None:
        self.queries = queries
        self.execution = queries.execution
        self.semantics = queries.semantics
        self.columns = queries.semantics.columns
        self._tracks: dict[tuple[str, int], Track] = {}  # (expression, code) -> track
        self._own: dict[int, np.ndarray] = {}  # code -> the events of its invocations
        self._lines: dict[str, list[str]] = {}  # path -> its source lines

    def moment(self, i: int) -> Moment:
        cols = self.columns
        name, path = cols.codes[int(cols.code_of[cols.invs[i]])]
        return Moment(int(i), path, int(cols.lines[i]), name, self.semantics.thread(int(i)) + 1)

    def state(self, i: int) -> State:
        return self.execution.state(int(i))

    @property
    def skeleton(self) -> bool:
        return isinstance(self.execution, SkeletonExecution)

    def track(self, expression: str, inv: int) -> Track:
        code = int(self.columns.code_of[inv])
        key = (expression.strip(), code)
        found = self._tracks.get(key)
        if found is None:
            found = self._tracks[key] = Track(self, expression.strip(), code)
        return found

    def track_of(self, expression: str, function: str, path: str) -> Track | None:
        """The track of an expression in a function known by name and file (None: never called)."""
        codes = self.columns.codes
        code = next((k for k, (name, p) in enumerate(codes) if name == function and p == path), None)
        if code is None:
            return None
        key = (expression.strip(), code)
        found = self._tracks.get(key)
        if found is None:
            found = self._tracks[key] = Track(self, expression.strip(), code)
        return found

    def own_events(self, code: int) -> np.ndarray:
        """The events of every invocation of one code (its own, not its callees'), in run order."""
        found = self._own.get(code)
        if found is None:
            cols = self.columns
            invs = np.flatnonzero(cols.code_of == code)
            if len(invs) == 1:
                inv = int(invs[0])
                a = int(cols.call_index[inv])
                b = int(cols.end_index[inv]) if cols.end_index[inv] >= 0 else len(cols.invs) - 1
                found = positions(cols.invs[a : b + 1] == inv) + a
            else:
                found = positions(np.isin(cols.invs, invs))
            self._own[code] = found
        return found

    def line_text(self, path: str, line: int) -> str:
        """The source of one line, stripped ('' where the file is not at hand)."""
        lines = self._lines.get(path)
        if lines is None:
            lines = self._lines[path] = (source_of(self.execution, path) or "").splitlines()
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""

    def statement_of(self, j: int) -> int:
        """The statement whose running made event j's state differ from the state before it: the
        event before j where that is a line (or call) event; after a return or an exception exit,
        the line the frame below was running (it goes on once its callee is done)."""
        e = j - 1
        if e < 0:
            return j
        if int(self.columns.kinds[e]) in (LINE, CALL):
            return e
        stack = self.execution.tree.stack(e)  # type: ignore[attr-defined]  # innermost first: leaving, then below
        return int(stack[1]) if len(stack) > 1 else e

    def made(
        self,
        statement: int,
        moment: int,
        old: str | None,
        new: str | None,
        inv: int,
        note: str = "",
        argument: bool = False,
    ) -> Change:
        """A change of a value read in invocation `inv`, made by `statement`, visible from `moment`."""
        where = self.moment(statement)
        code = self.line_text(where.path, where.line)
        return Change(self.moment(moment), old, new, inv, self.call_ordinal(inv), where, code, note, argument)

    def within(
        self, inv: int, before: int, at: int, path: tuple[Any, ...], old: str | None, new: str | None
    ) -> list[Change]:
        """The changes of `path` (read in invocation `inv`) between its events `before` and `at`,
        each dated at the statement that made it. With nothing run in between, that is the statement
        at `before`; otherwise the stretch is watched (a skeleton replays it, reading the path from
        the frame at every event: child/watch.py) or, in a full recording, followed through the
        other frames' recorded changes."""
        if before < 0:  # the arguments bound at a call: the call site (where one is recorded) binds them
            stack = self.execution.tree.stack(at)  # type: ignore[attr-defined]
            site = int(stack[1]) if len(stack) > 1 and int(self.columns.kinds[stack[1]]) == LINE else at
            return [self.made(site, at, old, new, inv, argument=True)]
        if at == before + 1:
            return [self.made(before, at, old, new, inv)]
        try:
            watched = self._watched(before, at, path) if self.skeleton else None
            series = watched if watched is not None else self._followed(inv, before, at, path, old)
        except (QueryError, DivergenceError) as exc:
            return [self.made(before, at, old, new, inv, f"made while this statement ran; not watched: {exc}")]
        moments: list[int] = []
        values: list[str | None] = [old]
        for j, value in series:
            if value != values[-1]:
                moments.append(j)
                values.append(value)
        if not moments:  # (the watch saw the same text the states show differently): the coarse answer
            return [self.made(before, at, old, new, inv)]
        values[-1] = new  # (the first and the last as the states show them)
        return [
            self.made(self.statement_of(m), m, values[k], values[k + 1], inv, self._unrecorded(m))
            for k, m in enumerate(moments)
        ]

    def _unrecorded(self, moment: int) -> str:
        """A note where the change seen at `moment` was made inside library code (not recorded, as
        justMyCode asks) that the statement called: the event before it is the exit of a function
        that library code had called back."""
        before = moment - 1
        if before < 0 or int(self.columns.kinds[before]) in (LINE, CALL):
            return ""
        if self.semantics.called_by_library(before):
            return "made inside library code this statement called (not stepped into: justMyCode)"
        return ""

    def _watched(self, before: int, at: int, path: tuple[Any, ...]) -> list[tuple[int, str | None]]:
        if at - before > WATCH_SPAN:
            raise QueryError(f"{at - before} events ran between them, more than {WATCH_SPAN} are watched")
        steps = [list(step) for step in path[1:]]
        if any(not isinstance(key, (str, int, float, bool, type(None))) for _, key in steps):
            raise QueryError("a key that is not a string or a number is not watched")
        recording = self.execution.recording  # type: ignore[attr-defined]
        series = recording.watch(before, at, [path[0], *steps])
        return [(j, _watched_text(enc) if bound else None) for j, enc, bound in series[1:]]

    def _followed(
        self, inv: int, before: int, at: int, path: tuple[Any, ...], old: str | None
    ) -> list[tuple[int, str | None]]:
        """A full recording keeps every frame's changes, not objects: follow the value through the
        other frames' locals (and their attributes, by the same path) that held it and changed."""
        log = self.execution.recording.log  # type: ignore[attr-defined]
        series: list[tuple[int, str | None]] = []
        if old is None:  # bound by this frame's own statement: nothing to follow
            return series
        # the frame's own value right after each callee returned (the recorder diffs the caller
        # then): the stretches in which it changed
        local_reprs, encoded = log.locals_at(before)
        value: str | None = old
        since = before
        for index, changes in log.updates.get(inv, []):
            if not before <= index < at:
                continue
            apply_changes(local_reprs, encoded, changes)
            seen = resolve(log.make_state(before, local_reprs, {k: decode_value(v) for k, v in encoded.items()}), path)
            if seen != value:
                inner = self._through_aliases(inv, since, index + 1, path[1:], value)
                if not inner or inner[-1][1] != seen:
                    inner.append((index, seen))
                series.extend(inner)
                value = seen
            since = index
        return series

    def _through_aliases(
        self, inv: int, before: int, at: int, steps: tuple[Any, ...], value: str | None
    ) -> list[tuple[int, str | None]]:
        """Events in (before, at) where another frame's local holding `value` (or reaching it by the
        same attribute steps) changed: the value as other names changed it, by equal reprs."""
        cols = self.columns
        recorded = self.execution.recording.log.changes  # type: ignore[attr-defined]
        series: list[tuple[int, str | None]] = []
        for e in range(before + 1, at):
            changed = recorded[e]
            owner = int(cols.invs[e])
            if not changed or owner == inv:
                continue
            previous = last_equal(cols.invs, owner, int(cols.call_index[owner]), e)
            if previous < 0:
                continue
            here, there = self.state(e), self.state(previous)
            for name in changed[::2]:
                for candidate in ((name,), (name, *steps)) if steps else ((name,),):
                    was, now = resolve(there, candidate), resolve(here, candidate)
                    if was == value and now is not None and now != value:
                        series.append((e, now))
                        value = now
                        break
        return series

    def call_ordinal(self, inv: int) -> int:
        cols = self.columns
        same = np.flatnonzero(cols.code_of == cols.code_of[inv])
        return int(np.searchsorted(same, inv)) + 1

    # -- calls ----------------------------------------------------------------------------------------
    def call_events(self, function: str) -> tuple[np.ndarray, np.ndarray]:
        path, _, name = function.rpartition(":")
        return self.queries.call_events(name, path)

    def calls(self, function: str, start: int, count: int) -> Page[Call]:
        invs, _ = self.call_events(function)
        start, count = max(0, start), max(0, count)
        cols = self.columns
        items = []
        for inv in invs[start : start + count].tolist():
            begin, end = int(cols.call_index[inv]), int(cols.end_index[inv])
            first = self.state(begin)
            last = self.state(end) if end >= 0 else None
            items.append(
                Call(
                    function=first.function,
                    moment=self.moment(begin),
                    returned=self.moment(end) if end >= 0 else None,
                    arguments=dict(first.locals),
                    value=last.value if last is not None else None,
                    raised=end >= 0 and int(cols.kinds[end]) == EXCEPTION,
                    depth=first.depth,
                    invocation=first.invocation,
                    call=int(np.searchsorted(invs, inv)) + 1,
                )
            )
        return Page(items, start, count, len(invs))

    def line_executions(self, path: str, line: int, start: int, count: int) -> Page[tuple[Moment, int, str]]:
        hits = self.queries.hits(path, line)
        start, count = max(0, start), max(0, count)
        chosen = hits[start : start + count].tolist()
        cheap = not self.skeleton or (bool(chosen) and chosen[-1] - chosen[0] <= DETAIL_SPAN)
        items: list[tuple[Moment, int, str]] = []
        previous: dict[str, str] = {}
        for k, i in enumerate(chosen, start + 1):
            detail = ""
            if cheap:
                here = self.state(i).locals
                differ = [f"{n} = {v}" for n, v in here.items() if previous.get(n) != v][:2]
                detail = ", ".join(d if len(d) <= 40 else d[:39] + "\u2026" for d in differ)
                previous = dict(here)
            items.append((self.moment(i), k, detail))
        return Page(items, start, count, len(hits))

    # -- log points -----------------------------------------------------------------------------------
    def logpoint(self, path: str, line: int, message: str, start: int, count: int) -> Page[LogLine]:
        hits = self.queries.hits(path, line)
        start, count = max(0, start), max(0, count)
        items = []
        for k, i in enumerate(hits[start : start + count].tolist(), start + 1):
            names = dict(self.state(i).locals)
            text = interpolate(message, lambda e, names=names: evaluate(e, names, LOG_BUDGET))  # type: ignore[misc]
            items.append(LogLine(self.moment(i), k, text))
        return Page(items, start, count, len(hits))


# -- one expression's changes ---------------------------------------------------------------------------


class Candidates(msgspec.Struct):
    """The events where an expression may have changed, in run order, with for each the event it is
    compared with (-1 at a call: nothing was bound before), whether it may rebind the name, and its
    invocation."""

    events: np.ndarray
    before: np.ndarray
    store: np.ndarray
    invs: np.ndarray

    def of(self, inv: int) -> Candidates:
        picked = np.flatnonzero(self.invs == inv)
        return Candidates(self.events[picked], self.before[picked], self.store[picked], self.invs[picked])


class Track:
    """The changes of one expression in the invocations of one code."""

    def __init__(self, history: History, expression: str, code: int) -> None:
        self.history = history
        self.expression = expression
        self.path = parse_path(expression)
        self.root = self.path[0]
        self.plain = len(self.path) == 1
        self.code = code
        cols = history.columns
        self.function, self.file = cols.codes[code]
        self._candidates()
        self._lock = threading.Lock()
        # value_history's progress, kept between pages: changes found, the next candidate to check
        self.found: list[Change] = []
        self.next = 0
        self.mutable_now: dict[int, bool] = {}  # per invocation, while scanning forward from the start

    # -- the candidates -------------------------------------------------------------------------------
    def _candidates(self) -> None:
        history = self.history
        cols = history.columns
        own = history.own_events(self.code)
        touching, storing = name_lines(history.execution, self.file, self.function, self.root, aliases=True)
        kinds = cols.kinds[own]
        lines = cols.lines[own]
        invs = cols.invs[own]
        # each event's previous event of the same invocation: in run order the invocations of a
        # recursive function interleave (`sub = f(kid)` is followed by the inner call's events), so
        # the events are paired within each invocation, in an order by invocation, then by time
        order = np.lexsort((own, invs))
        previous = np.full(len(own), -1, dtype=np.int64)
        after_touch = np.zeros(len(own), dtype=bool)
        after_store = np.zeros(len(own), dtype=bool)
        if len(own) > 1:
            first, second = order[:-1], order[1:]
            paired = (invs[first] == invs[second]) & (kinds[first] == LINE)
            previous[second] = np.where(invs[first] == invs[second], own[first], -1)
            # a statement that named the value (or a name that may hold the same object), or one
            # during which other code ran (a callee may change it through any name)
            ran_code = own[second] - own[first] > 1
            after_touch[second] = paired & (np.isin(lines[first], list(touching)) | ran_code)
            after_store[second] = paired & np.isin(lines[first], list(storing))
        calls = kinds == CALL
        logged = np.zeros(len(own), dtype=bool)
        execution = history.execution
        if isinstance(execution, FullExecution):
            changes = execution.recording.log.changes
            root = self.root
            logged_events = [k for k in own.tolist() if (c := changes[k]) and root in c[::2]]
            logged = np.isin(own, logged_events)
        chosen = np.flatnonzero(after_touch | calls | logged)
        self.all = Candidates(
            events=own[chosen],
            before=np.where(calls[chosen], -1, previous[chosen]),
            # (a module's names are globals: a function it calls may rebind them)
            store=(after_store | calls | logged | (after_touch if self.function == "<module>" else False))[chosen],
            invs=invs[chosen],
        )

    # -- values ---------------------------------------------------------------------------------------
    def value(self, i: int) -> str | None:
        if i < 0:
            return None
        return resolve(self.history.state(i), self.path)

    def _check(self, c: Candidates, j: int) -> tuple[str | None, str | None]:
        return self.value(int(c.before[j])), self.value(int(c.events[j]))

    def _changes(self, c: Candidates, j: int, old: str | None, new: str | None) -> list[Change]:
        """The change found at candidate j, as the statements that made it (one, or several where
        callees changed the object more than once during one statement of this frame)."""
        return self.history.within(int(c.invs[j]), int(c.before[j]), int(c.events[j]), self.path, old, new)

    def _next_needed(self, c: Candidates, j: int, size: int, mutable: dict[int, bool], forward: bool) -> int:
        """The first candidate from j on (in the direction) that must be checked: one that may rebind
        the name, or one of an invocation whose value may be mutable. -1: none is left."""
        n = len(c.events)
        frozen_invs = [inv for inv, m in mutable.items() if not m] if self.plain else []
        if not frozen_invs:
            return j if 0 <= j < n else -1
        frozen = np.array(frozen_invs, dtype=c.invs.dtype)
        while 0 <= j < n:
            a, b = (j, min(n, j + size)) if forward else (max(0, j - size + 1), j + 1)
            hits = np.flatnonzero(c.store[a:b] | ~np.isin(c.invs[a:b], frozen))
            if len(hits):
                return a + int(hits[0] if forward else hits[-1])
            j = b if forward else a - 1
            size = min(size * 8, 1 << 22)
        return -1

    # -- forward: the history -------------------------------------------------------------------------
    def page(self, start: int, count: int) -> Page[Change]:
        start, count = max(0, start), max(0, count)
        c = self.all
        n = len(c.events)
        with self._lock:
            checked = 0
            while len(self.found) < start + count and self.next < n:
                j = self._next_needed(c, self.next, _CHUNK, self.mutable_now, True)
                if j < 0:
                    self.next = n
                    break
                if self.history.skeleton and checked >= MAX_CHECKED:
                    raise QueryError(
                        f"a skeleton recording rebuilds states to find changes: this page needs more than "
                        f"{MAX_CHECKED} candidate events checked; ask again to go on from event "
                        f"{int(c.events[j])} ({len(self.found)} changes found so far)"
                    )
                old, new = self._check(c, j)
                checked += 1
                self.mutable_now[int(c.invs[j])] = not immutable(new)
                if old != new:
                    self.found.extend(self._changes(c, j, old, new))
                self.next = j + 1
            self._count_on(c, time.monotonic() + COUNT_SECONDS)
            done = self.next >= n
            items = self.found[start : start + count]
            # not counted to the end: the changes found so far (a lower bound), never a guess
            return Page(items, start, count, len(self.found), done)

    def _count_on(self, c: Candidates, deadline: float) -> None:
        """Go on checking past the page for a while, so the total is exact where that is cheap: the
        candidates that only may change are skipped by the same rules as for a page."""
        n = len(c.events)
        while self.next < n and time.monotonic() < deadline:
            j = self._next_needed(c, self.next, _CHUNK, self.mutable_now, True)
            if j < 0:
                self.next = n
                return
            old, new = self._check(c, j)
            self.mutable_now[int(c.invs[j])] = not immutable(new)
            if old != new:
                self.found.extend(self._changes(c, j, old, new))
            self.next = j + 1

    def next_change(self, after: int, scope: int | None = None) -> Change | None:
        """The first change visible after event `after` (of invocation `scope`, or of any)."""
        return self._scan(after, True, scope)

    def previous(self, at: int, scope: int | None = None, by_statement: bool = False) -> Change | None:
        """The last change visible at or before event `at` (of invocation `scope`, or of any);
        `by_statement`: the last whose statement is at or before `at` (a data breakpoint going back)."""
        return self._scan(at, False, scope, by_statement)

    def _scan(self, at: int, forward: bool, scope: int | None, by_statement: bool = False) -> Change | None:
        c = self.all if scope is None else self.all.of(scope)
        n = len(c.events)
        j = int(np.searchsorted(c.events, at, side="right"))
        if not forward:
            # (a change seen after `at` may have been made by a statement at or before it)
            j = j if by_statement and j < n and int(c.before[j]) <= at else j - 1
        mutable: dict[int, bool] = {}
        if not forward and scope is not None and int(self.history.columns.invs[at]) == scope:
            mutable[scope] = not immutable(self.value(at))  # the value seen there: rebound since?
        checked = 0
        while 0 <= j < n:
            j = self._next_needed(c, j, 64, mutable, forward)
            if j < 0:
                return None
            if self.history.skeleton and checked >= MAX_CHECKED:
                raise QueryError(
                    f"a skeleton recording rebuilds states to find changes: no change of {self.expression!r} "
                    f"within {MAX_CHECKED} candidate events of event {at}"
                )
            old, new = self._check(c, j)
            checked += 1
            if old != new:
                changes = self._changes(c, j, old, new)
                if forward:
                    found = next((x for x in changes if x.moment.index > at), None)
                else:
                    found = next((x for x in reversed(changes) if _dated(x, by_statement) <= at), None)
                if found is not None:
                    return found
            mutable[int(c.invs[j])] = not immutable(new if forward else old)
            j = j + 1 if forward else j - 1
        return None


def _dated(change: Change, by_statement: bool) -> int:
    if by_statement and change.statement is not None:
        return change.statement.index
    return change.moment.index


def _watched_text(enc: object) -> str:
    """A watched value as the states show it (an object with its recorded fields)."""
    if type(enc) is list and enc:
        return shown(decode_value(enc))
    return decode_repr(enc)


def immutable(text: str | None) -> bool:
    """Whether a value (as repr text) cannot change in place: a number, a string, None, a tuple of them."""
    if text is None:
        return True
    value = reprs.parse_repr(text)
    return _immutable(value)


def _immutable(value: object) -> bool:
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return True
    if isinstance(value, (tuple, frozenset)):
        return all(_immutable(v) for v in value)
    return False


# -- expressions: a local, an attribute path, an item --------------------------------------------------


def parse_path(expression: str) -> tuple[Any, ...]:
    """`self.items["k"][0]` -> ("self", (".", "items"), ("[]", "k"), ("[]", 0)). Only a local and
    attribute or literal-key steps are accepted: anything else is not a location that can change."""
    try:
        node = ast.parse(expression.strip(), mode="eval").body
    except SyntaxError:
        raise WorldError(f"{expression!r} is not an expression") from None
    steps: list[Any] = []
    while True:
        if isinstance(node, ast.Attribute):
            steps.append((".", node.attr))
            node = node.value
        elif isinstance(node, ast.Subscript):
            try:
                key = ast.literal_eval(node.slice)
            except ValueError:
                raise WorldError(
                    f"{expression!r}: an item's key must be a literal (xs[3], d['k']), not {ast.unparse(node.slice)}"
                ) from None
            steps.append(("[]", key))
            node = node.value
        elif isinstance(node, ast.Name):
            return (node.id, *reversed(steps))
        else:
            raise WorldError(
                f"{expression!r} is not a local, an attribute path or an item (x, self.items, d['k'], xs[3])"
            )


def resolve(state: State, path: tuple[Any, ...]) -> str | None:
    """The expression's value (as repr text) at one state, None where it does not exist."""
    root = path[0]
    text = state.locals.get(root)
    if text is None:
        return None
    structured: Value | None = state.values.get(root)
    parsed: object = reprs.parse_repr(text) if structured is None else None
    for kind, key in path[1:]:
        if structured is not None:
            child = _child(structured, kind, key)
            if child is None:
                return None
            structured = child
            if not child.children:  # a leaf: go on over its parsed repr (a container's items)
                parsed, structured = reprs.parse_repr(child.repr), None
            continue
        try:
            if kind == ".":
                parsed = parsed.attribute(key) if isinstance(parsed, reprs.ObjectRepr) else None
                if parsed is None:
                    return None
            else:
                parsed = parsed[key]  # type: ignore[index]
        except (KeyError, IndexError, TypeError, AttributeError):
            return None
    if structured is not None:
        return shown(structured)
    return reprs.show(parsed)


def shown(value: Value) -> str:
    """An object's repr with its recorded fields, so a change of a field is a change of the object:
    `<Bag object> (items=[0, 1], count=2)`."""
    if not value.children:
        return value.repr
    fields = ", ".join(f"{name}={child.repr}" for name, child in value.children)
    return f"{value.repr} ({fields}{', ...' if value.more else ''})"


def _child(value: Value, kind: str, key: Any) -> Value | None:
    names = {key} if kind == "." else {repr(key), str(key), f"[{key!r}]", f"[{key}]"}
    for name, child in value.children:
        if name in names:
            return child
    return None


def name_lines(execution: Any, path: str, function: str, name: str, aliases: bool = False) -> tuple[set[int], set[int]]:
    """The lines of `function` in `path` whose statements name `name` (touching), and those that
    bind or delete it (storing). The whole file where the function is the module. `aliases`: also
    the lines naming a name that may hold the same object (`ys = xs`, `for row in rows`, `with ... as
    f` over an expression naming it), transitively: they may change it in place."""
    source = source_of(execution, path)
    if source is None:
        return set(), set()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(), set()
    scopes: list[ast.AST] = []
    if function == "<module>":
        scopes = [tree]
    else:
        scopes = [
            n
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == function
        ]
    touching: set[int] = set()
    storing: set[int] = set()
    statements = [stmt for scope in scopes for stmt in _statements(scope)]
    names = _aliases(statements, name) if aliases else {name}
    for stmt in statements:
        for part in _headers(stmt):
            for node in ast.walk(part):
                for each in names:
                    hit, store = _names(node, each)
                    if hit:
                        first = getattr(part, "lineno", None) or stmt.lineno
                        last = getattr(part, "end_lineno", None) or first
                        lines = set(range(first, last + 1))
                        touching |= lines
                        if store and each == name:
                            storing |= lines
    return touching, storing


def _aliases(statements: list[ast.stmt], name: str) -> set[str]:
    """`name` and the names bound from an expression naming it (or one of those), in these statements."""
    names: set[str] = {name}
    bindings: list[tuple[ast.AST, ast.AST]] = []
    for stmt in statements:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign):
                bindings.extend((target, node.value) for target in node.targets)
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                bindings.append((node.target, node.value))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                bindings.append((node.target, node.iter))
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                bindings.append((node.optional_vars, node.context_expr))
    grew = True
    while grew:
        grew = False
        for target, value in bindings:
            if not any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(value)):
                continue
            for bound in ast.walk(target):
                if isinstance(bound, ast.Name) and bound.id not in names:
                    names.add(bound.id)
                    grew = True
    return names


def source_of(execution: Any, path: str) -> str | None:
    recording = getattr(execution, "recording", None)
    sources = getattr(recording, "sources", None) or {}
    if sources.get(path):
        return sources[path]
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def _statements(scope: ast.AST) -> list[ast.stmt]:
    """The statements run by this scope's code (nested functions and classes are other codes);
    `except E as name` counts as a statement binding name at its line."""
    out: list[ast.stmt] = []
    todo = list(getattr(scope, "body", []))
    while todo:
        stmt = todo.pop()
        out.append(stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(stmt, field, []) or []:
                if isinstance(child, ast.stmt):
                    todo.append(child)
                elif isinstance(child, ast.ExceptHandler):
                    todo.extend(child.body)
                    if child.name:
                        out.append(_binding(child.name, child.lineno))
                elif isinstance(child, ast.match_case):
                    todo.extend(child.body)
    return out


def _binding(name: str, line: int) -> ast.stmt:
    target = ast.Name(id=name, ctx=ast.Store(), lineno=line, end_lineno=line)
    return ast.Assign(targets=[target], value=ast.Constant(None), lineno=line, end_lineno=line)


def _headers(stmt: ast.stmt) -> list[ast.AST]:
    """The parts of a statement that run at its own lines (a compound statement's body does not)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [_binding(stmt.name, stmt.lineno), *stmt.decorator_list]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.target, stmt.iter]
    if isinstance(stmt, (ast.While, ast.If)):
        return [stmt.test]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return list(stmt.items)
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        return []
    if isinstance(stmt, ast.Match):
        return [stmt.subject] + [c.pattern for c in stmt.cases]
    return [stmt]


def _names(node: ast.AST, name: str) -> tuple[bool, bool]:
    """(names it, binds or deletes it) for one AST node."""
    if isinstance(node, ast.Name) and node.id == name:
        return True, not isinstance(node.ctx, ast.Load)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        bound = any((a.asname or a.name.split(".")[0]) == name for a in node.names)
        return bound, bound
    if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
        return True, True
    if type(node).__name__ in ("MatchAs", "MatchStar") and getattr(node, "name", None) == name:
        return True, True
    return False, False


__all__ = [
    "Call",
    "Change",
    "History",
    "LogLine",
    "Moment",
    "Page",
    "Track",
    "data_stop",
    "history_of",
    "nearest_change",
    "parse_path",
    "resolve",
    "source_of",
]
