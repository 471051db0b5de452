"""Where a value came from: the chain of statements that carried it to an expression at a stop.

The first step is the statement that gave the expression its current value in the frame (what
`last_change` finds). While that statement is a plain copy, the chain follows what it copied, each
time asking the recording for the last change of the copied expression at that moment (one query a
step): `b = a` goes on to `a` in the same frame, `obj.x = b` (an attribute or item store whose
right-hand side is a name or an attribute path) goes on to `b`, and a parameter bound at a call goes
on to the caller's argument expression at the call line (`f(obj.x)`: `obj.x` in the caller). It stops
where the value was computed (arithmetic, a literal) or where it cannot honestly follow: a global, a
value made by code that was not recorded (library code, a builtin, a callback from a library), a
statement it does not understand. The last answer's `end` and `reason` say which.

It also goes into the calls that produced the value, as far as the recording lets it: a recorded
call's result is followed to that call's `return` statement (and on inside it; a computation
holding one recorded call, `n * fact(n - 1)`, into that call); an item of a tuple or list display
to that element (`return best, count` for `result[1]`); an item of a loop to the iterable it came
from; a value returned by code that was not recorded from exactly one variable (`sorted(rows)`,
`xs.pop()`, `sum(1 for _ in scores)`) to that variable; an object changed in place to where it was
made (`grid[0][0] = 1` to `grid = ...`); a parameter left to its default to the `def` line. Where
the chain ends at a computation, the statements that last set the names it reads are added as
"operand" steps (for an accumulator, `total += x`, also where it started), so the line that made
an input wrong is one step away.

Whether a statement is a plain copy is read from the recorded source of that line (the statement's
AST); nothing is executed. An item key that is a name (`xs[i] = b`) is read from the recorded
value of `i` at that moment, when it is a literal. At most `MAX_STEPS` steps are followed; travel to
the last one and ask again to go further.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, TypeVar

import msgspec
import numpy as np

from neural_dap.core.state import State
from neural_dap.core.world import WorldError
from neural_dap.debugger.history import Change, History, Moment, parse_path, resolve, source_of
from neural_dap.trace.actions import CALL, LINE, RETURN, first_equal, last_equal
from neural_dap.trace.queries import QueryError

T = TypeVar("T")

MAX_STEPS = 32
MAX_TEXT = 200  # a statement's text is cut here
MAX_SCAN = 100_000  # events of a callee searched back for the statement that set the value
MAX_OPERANDS = 4  # names of a computation whose setting is shown
MAX_SKIPS = 64  # in-place changes (or accumulator updates) passed over to find where an object was made

End = Literal["computed", "literal", "library", "global", "complex", "unknown", "unbound", "limit"]
StepKind = Literal["assigned", "argument", "call", "returned", "default", "operand"]


class OriginStep(msgspec.Struct, frozen=True):
    """One statement the value passed through: `expression` held `value` after it. `moment` is the
    statement's own event (travel there to see it about to run); for an argument, the caller's
    event at the call line. `kind`: "assigned" (the statement stored it), "argument" (bound as a
    parameter at the call), "call" (set inside a function this statement called: the next step is
    in that call), "returned" (the `return` of the call that produced it: the chain goes on in that
    call), "default" (a parameter's default value, at the `def` line), "operand" (where the chain
    ends at a computation: where one of the names it reads was last set; not followed further)."""

    expression: str
    value: str | None
    moment: Moment
    statement: str
    kind: StepKind


class Origin(msgspec.Struct, frozen=True):
    """The chain from the value at the stop (first) back to where it was computed (last), and why it
    ends there."""

    expression: str
    value: str | None
    steps: list[OriginStep]
    end: End
    reason: str


class _Next(NamedTuple):
    """What one step found: its steps (none, one, or a call's and the statement within it), and
    either the next expression to follow (in which invocation, at which event) or the end."""

    steps: tuple[OriginStep, ...]
    follow: tuple[str, int, int] | None = None
    end: End = "computed"
    reason: str = ""


def follow(history: History, expression: str, inv: int, at: int) -> Origin:
    """The origin of `expression` as invocation `inv` (a column number) sees it at event `at`."""
    return _Chain(history).run(expression.strip(), inv, at)


class _Chain:
    """One origin question: the source trees its steps parsed are kept while it is answered."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.cols = history.columns
        self._trees: dict[str, tuple[ast.Module, str] | None] = {}

    # -- the walk ----------------------------------------------------------------------------------
    def run(self, expression: str, inv: int, at: int) -> Origin:
        path = parse_path(expression)
        state = self.history.state(at)
        now = resolve(state, path)
        if now is None and path[0] not in state.locals and state.function != "<module>":
            reason = (
                f"`{path[0]}` is not a local of {state.function} here: a global or a builtin is followed in the "
                "frame of its module (at the bottom of the call stack), where it is one"
            )
            return Origin(expression, None, [], "unbound", reason)
        if now is None:
            return Origin(expression, None, [], "unbound", f"`{expression}` has no value here")
        steps: list[OriginStep] = []
        expr = expression
        for _ in range(4 * MAX_STEPS):  # each turn goes back in time; a generator's resume adds no step
            if len(steps) >= MAX_STEPS:
                return Origin(
                    expression,
                    now,
                    steps,
                    "limit",
                    f"followed {MAX_STEPS} steps: travel to the last one and ask again to go further",
                )
            try:
                found = self.step(expr, inv, at)
            except QueryError as exc:
                return Origin(expression, now, steps, "limit", str(exc))
            except WorldError as exc:  # a path this walk made that cannot be asked about (an odd item key)
                return Origin(expression, now, steps, "complex", str(exc))
            room = MAX_STEPS - len(steps)
            steps.extend(found.steps[:room])
            if len(found.steps) > room:
                continue  # the limit, said at the top of the loop
            if found.follow is None:
                return Origin(expression, now, steps, found.end, found.reason)
            expr, inv, at = found.follow
        return Origin(expression, now, steps, "limit", "followed the value as far as this question goes")

    def step(self, expr: str, inv: int, at: int) -> _Next:
        cols = self.cols
        change = self.history.track(expr, inv).previous(at, inv)
        function = cols.codes[int(cols.code_of[inv])][0]
        if change is None:
            return _Next(
                (),
                end="unknown",
                reason=f"`{expr}` was not set in this call of {function} (a variable of an enclosing "
                "function, or bound before the recording began)",
            )
        i = self.seen_at(change, inv)
        if int(cols.kinds[i]) != CALL:
            return self.assignment(expr, change.new, inv, i)
        continued = -1 if cols.resumes is None else int(cols.resumes[inv])
        if continued >= 0:  # a generator or coroutine resumed: its locals were kept while it was suspended
            end = int(cols.end_index[continued])
            if end >= 0 and resolve(self.history.state(end), parse_path(expr)) == change.new:
                return _Next((), (expr, continued, end))
            return _Next(
                (), end="complex", reason=f"`{expr}` was given a value while {function} was suspended (sent in)"
            )
        return self.argument(expr, change.new, inv, i)

    def seen_at(self, change: Change, inv: int) -> int:
        """The event of invocation `inv` from which it sees a change: history dates a change at the
        first event anywhere that shows it (often in the callee that made it); the chain follows
        the frame's own statements."""
        cols = self.cols
        i = change.moment.index
        if change.argument or int(cols.invs[i]) == inv:
            return i
        end = int(cols.end_index[inv])
        j = first_equal(cols.invs, inv, i, end + 1 if end >= 0 else len(cols.invs))
        return j if j >= 0 else i

    # -- a statement of the frame set it -----------------------------------------------------------
    def assignment(self, expr: str, value: str | None, inv: int, i: int) -> _Next:
        cols = self.cols
        s = last_equal(cols.invs, inv, int(cols.call_index[inv]), i)
        if s < 0 or int(cols.kinds[s]) != LINE:
            return _Next((), end="unknown", reason=f"`{expr}` changed at event {i} with no statement before it")
        return self.at_statement(expr, value, inv, s, i)

    def at_statement(self, expr: str, value: str | None, inv: int, s: int, i: int) -> _Next:
        """The statement run at event `s` gave `expr` its value (seen from event `i` on)."""
        path, line = self.history.moment(s).path, int(self.cols.lines[s])
        stmt, text = self.statement(path, line)
        step = OriginStep(expr, value, self.history.moment(s), text, "assigned")
        if stmt is None:
            return _Next((step,), end="unknown", reason=f"the source of {path}:{line} is not available")
        state = self.history.state(s)
        target = parse_path(expr)
        found = _assigned(stmt, target, state)
        if found is None:
            inside = self.descend(step, stmt, target, value, state, inv, s, i)
            return inside if inside is not None else self.in_place(step, stmt, expr, state, inv, s, i)
        how, node, suffix = found
        if how == "value" and suffix and isinstance(node, ast.Call):  # `obj = Box(b)`: obj.x set in __init__
            inside = self.descend(step, stmt, target, value, state, inv, s, i, made=suffix)
            if inside is not None:
                return inside
        if how == "augmented":
            return self.augmented(step, stmt, node, expr, state, inv, s, i)
        if how == "loop":
            return self.value_of(step, node, (), state, inv, s, i, lead=f"an item of the loop over `{_text(node)}`")
        if how == "caught":
            return _Next((step,), end="computed", reason="the exception caught here")
        if how == "imported":
            return _Next((step,), end="library", reason="a module imported here")
        if how == "defined":
            return _Next((step,), end="computed", reason="defined here")
        if how == "unpacked":
            return self.value_of(step, node, suffix, state, inv, s, i, lead=f"unpacked from `{_text(node)}`")
        return self.value_of(step, node, suffix, state, inv, s, i)

    def augmented(
        self, step: OriginStep, stmt: ast.stmt, node: ast.expr, expr: str, state: State, inv: int, s: int, i: int
    ) -> _Next:
        """`total += x`: the part added, where the chain can follow it into a recorded call
        (`total += price(item)`); else computed, with where the accumulator started and the names
        added as operand steps."""
        inner = self.into_calls(step, node, state, inv, s, i)
        if inner is not None:
            return inner
        reason = f"computed from its previous value: `{_text(stmt)}`"
        none: tuple[OriginStep, ...] = ()
        start = _quietly(lambda: self.accumulator_start(expr, inv, s), none)
        operands = self.operands(node, state, inv, s)
        return _Next((step, *start, *operands), end="computed", reason=reason)

    def descend(
        self,
        step: OriginStep,
        stmt: ast.stmt,
        target: tuple[Any, ...],
        value: str | None,
        state: State,
        inv: int,
        s: int,
        i: int,
        made: tuple[Any, ...] | None = None,
    ) -> _Next | None:
        """A function this statement called set the value (`obj.set(v)`, `fill(xs)`, or `Box(b)` whose
        `__init__` set `self.x`, `made` being the rest of the path after the new object): the same
        path as the callee names it (`self.x`), from the last statement of that call that stores it.
        Read from the source, not the values: a callee's last state may not show an attribute it set
        in place. None: no call can be matched so."""
        cols = self.cols
        children = np.flatnonzero(cols.parent == inv)
        began = cols.call_index[children]
        latest_first = children[(began > s) & (began < i)][::-1][:16]
        for k in latest_first.tolist():
            end = int(cols.end_index[k])
            function, path = cols.codes[int(cols.code_of[k])]
            definition = self.definition(path, function, int(cols.lines[int(cols.call_index[k])]))
            if end < 0 or definition is None:
                continue
            func, owner = definition
            for call in (n for n in ast.walk(stmt) if isinstance(n, ast.Call) and _calls(n, func, owner)):
                for param in _parameters(func):
                    how, node = _bound(call, func, owner, param)
                    if how == "new" and made:
                        rest: tuple[Any, ...] | None = made
                    elif how == "passed" and node is not None and made is None:
                        rest = _prefix(_path_of(node, state), target)
                    else:
                        continue
                    inner = None if rest is None else (param, *rest)
                    found = None if inner is None else self.store_in(k, inner, end)
                    if inner is None or found is None:
                        continue
                    within = self.at_statement(_render(inner), value, k, *found)
                    called = OriginStep(step.expression, step.value, step.moment, step.statement, "call")
                    return _Next((called, *within.steps), within.follow, within.end, within.reason)
        return None

    def store_in(self, k: int, inner: tuple[Any, ...], end: int) -> tuple[int, int] | None:
        """The last statement invocation `k` ran (up to event `end`, within `MAX_SCAN` events) that
        stores `inner` (`self.x = ...`) or changes it in place (`self.x.append(v)`, `self.x[0] = v`),
        read from the statements' source: (its event, the event after)."""
        cols = self.cols
        low = max(int(cols.call_index[k]), end - MAX_SCAN)
        own = (np.flatnonzero(cols.invs[low : end + 1] == k) + low).tolist()
        path = cols.codes[int(cols.code_of[k])][1]
        stores: dict[int, bool] = {}
        blank = State(event="line", line=0, source="", function="", depth=0, invocation=0)
        for n in range(len(own) - 1, -1, -1):
            j = own[n]
            if int(cols.kinds[j]) != LINE:
                continue
            line = int(cols.lines[j])
            if line not in stores:
                stmt, _ = self.statement(path, line)
                stores[line] = stmt is not None and (
                    _assigned(stmt, inner, blank) is not None or _mutates(stmt, inner, blank)
                )
            if stores[line]:
                return j, own[n + 1] if n + 1 < len(own) else end
        return None

    def in_place(self, step: OriginStep, stmt: ast.stmt, expr: str, state: State, inv: int, s: int, i: int) -> _Next:
        """The statement changed the value without storing it (a method that mutates it, a store into
        one of its items or attributes, a callee that kept a reference). What it put in is shown as
        operand steps; the chain goes on to where the object was made or bound, past the other
        changes in place (a list appended to in a loop: its `xs = []`)."""
        calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call)]
        unrecorded = " (by code that was not recorded)" if calls and not self.recorded_calls(inv, s, i) else ""
        operands = self.operands(stmt, state, inv, s, skip=parse_path(expr)[0])
        made = _quietly(lambda: self.made_at(expr, inv, s), None)
        if made is not None:
            return _Next((step, *operands), (expr, inv, made))
        return _Next((step, *operands), end="computed", reason=f"changed in place by this statement{unrecorded}")

    def made_at(self, expr: str, inv: int, s: int) -> int | None:
        """The event of the last change of `expr` before event `s` (in invocation `inv`) that bound
        it anew (a store of it, or the call that bound it as an argument), passing over changes in
        place; None: none within `MAX_SKIPS`."""
        cols = self.cols
        track = self.history.track(expr, inv)
        target = parse_path(expr)
        at = s
        for _ in range(MAX_SKIPS):
            change = track.previous(at, inv)
            if change is None:
                return None
            i = self.seen_at(change, inv)
            if int(cols.kinds[i]) == CALL:
                return i
            j = last_equal(cols.invs, inv, int(cols.call_index[inv]), i)
            if j < 0 or int(cols.kinds[j]) != LINE:
                return None
            stmt, _ = self.statement(self.history.moment(j).path, int(cols.lines[j]))
            if stmt is None:
                return None
            if _assigned(stmt, target, self.history.state(j)) is not None:
                return i
            at = j - 1
            if at < 0:
                return None
        return None

    def accumulator_start(self, expr: str, inv: int, s: int) -> tuple[OriginStep, ...]:
        """Where an accumulator updated at event `s` (`total += x`) was last set other than by such
        an update: `total = 0` (an operand step), or nothing."""
        track = self.history.track(expr, inv)
        at = s
        for _ in range(MAX_SKIPS):
            change = track.previous(at, inv)
            if change is None:
                return ()
            step = self.setting(expr, change.new, inv, self.seen_at(change, inv))
            if step is None:
                return ()
            stmt, _ = self.statement(step.moment.path, step.moment.line)
            if not isinstance(stmt, ast.AugAssign):
                return (step,)
            at = step.moment.index - 1
            if at < 0:
                return ()
        return ()

    def setting(self, expr: str, value: str | None, inv: int, i: int) -> OriginStep | None:
        """The statement whose change of `expr` shows at event `i`, as an operand step: the line that
        set it, or for a parameter, the call that passed it (its `def` line where it was left to its
        default)."""
        cols = self.cols
        if int(cols.kinds[i]) == CALL:
            return self.passed_at(expr, value, inv, i)
        j = last_equal(cols.invs, inv, int(cols.call_index[inv]), i)
        if j < 0 or int(cols.kinds[j]) != LINE:
            return None
        moment = self.history.moment(j)
        _, text = self.statement(moment.path, moment.line)
        return OriginStep(expr, value, moment, text, "operand")

    def passed_at(self, expr: str, value: str | None, inv: int, i: int) -> OriginStep | None:
        """A parameter bound at call event `i`, as an operand step: the caller's line that passed it,
        or the `def` line where the call left it to its default (not followed further)."""
        cols = self.cols
        caller = int(cols.parent[inv])
        c = last_equal(cols.invs, caller, int(cols.call_index[caller]), i) if caller >= 0 else -1
        if c < 0 or int(cols.kinds[c]) != LINE:
            return None
        function, callee_path = cols.codes[int(cols.code_of[inv])]
        site = self.history.moment(c)
        stmt, text = self.statement(site.path, site.line)
        definition = self.definition(callee_path, function, int(cols.lines[i]))
        if stmt is not None and definition is not None:
            func, owner = definition
            calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and _calls(n, func, owner)]
            if calls and _bound(calls[0], func, owner, parse_path(expr)[0])[0] == "default":
                parsed = self.tree(callee_path)
                header = _statement_text(func, parsed[1]) if parsed is not None else f"def {function}(...)"
                return OriginStep(expr, value, self.history.moment(i), header, "operand")
        return OriginStep(expr, value, site, text, "operand")

    def operands(self, node: ast.AST, state: State, inv: int, s: int, skip: str = "") -> tuple[OriginStep, ...]:
        """Where the local names a computation at event `s` reads were last set (at most
        `MAX_OPERANDS`, in the order they are read); an accumulator's update also brings where it
        started."""
        bound = {
            t.id
            for n in ast.walk(node)
            if isinstance(n, ast.comprehension)
            for t in ast.walk(n.target)
            if isinstance(t, ast.Name)
        }
        names: list[str] = []
        for n in ast.walk(node):
            if not (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)):
                continue
            if n.id in state.locals and n.id not in bound and n.id != skip and n.id not in names:
                names.append(n.id)
        steps: list[OriginStep] = []
        none: tuple[OriginStep, ...] = ()
        for name in names[:MAX_OPERANDS]:
            steps.extend(_quietly(functools.partial(self.operand, name, inv, s), none))
        return tuple(steps)

    def operand(self, name: str, inv: int, s: int) -> tuple[OriginStep, ...]:
        """Where `name` got the value it has at event `s`; for an accumulator, also where it started."""
        change = self.history.track(name, inv).previous(s, inv)
        step = self.setting(name, change.new, inv, self.seen_at(change, inv)) if change is not None else None
        if step is None:
            return ()
        stmt, _ = self.statement(step.moment.path, step.moment.line)
        if isinstance(stmt, ast.AugAssign) and step.moment.index > 0:
            return (step, *self.accumulator_start(name, inv, step.moment.index - 1))
        return (step,)

    def into_calls(
        self, step: OriginStep, node: ast.expr, state: State, inv: int, start: int, stop: int, skip: int = -1
    ) -> _Next | None:
        """A computation whose value depends on a call this statement made to recorded code
        (`n * fact(n - 1)`, `total += price(item)`): into the last such call. None: it holds no such
        call."""
        calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
        if not calls:
            return None
        k = self.child_call(inv, start, stop, {_callee_name(c.func) for c in calls}, skip)
        if k is None:
            return None
        name = self.cols.codes[int(self.cols.code_of[k])][0]
        call = next((c for c in reversed(calls) if _callee_name(c.func) == name), None)
        if call is None:
            return None
        # (the chain goes on into the call: the computation's other names are not where it ends)
        return self.returned(step, call, (), inv, start, stop, skip, lead=f"computed from `{_text(call)}`: ")

    def child_call(self, inv: int, start: int, stop: int, names: set[str], skip: int = -1) -> int | None:
        """The last call invocation `inv` made between two of its events to a function named in
        `names` (a class's name stands for its `__init__`), not a generator's resume; None: none."""
        cols = self.cols
        children = np.flatnonzero(cols.parent == inv)
        began = cols.call_index[children]
        picked = children[(began > start) & (began < stop) & (children != skip)]
        wanted = names | ({"__init__"} if any(n[:1].isupper() for n in names) else set())
        for k in picked[::-1][:256].tolist():
            if cols.resumes is not None and int(cols.resumes[k]) >= 0:
                continue  # a generator resumed: not what the call returned
            if cols.codes[int(cols.code_of[k])][0] in wanted:
                return int(k)
        return None

    def returned(
        self,
        step: OriginStep,
        node: ast.Call,
        suffix: tuple[Any, ...],
        inv: int,
        start: int,
        stop: int,
        skip: int = -1,
        lead: str = "",
    ) -> _Next | None:
        """The value `node` (a call of recorded code made between events `start` and `stop`) returned,
        followed into that call: its `return` statement, and on from there. None: no such recorded
        call (a library's, a generator's), or a constructor (the object it made)."""
        cols = self.cols
        name = _callee_name(node.func)
        k = self.child_call(inv, start, stop, {name}, skip)
        if k is None:
            return None
        function, path = cols.codes[int(cols.code_of[k])]
        definition = self.definition(path, function, int(cols.lines[int(cols.call_index[k])]))
        if function == "__init__" or (definition is not None and _suspends(definition[0])):
            return None
        end = int(cols.end_index[k])
        if end < 0:
            return _Next((step,), end="unknown", reason=f"{lead}{function} had not returned when the recording ended")
        if int(cols.kinds[end]) != RETURN:
            return None
        r = last_equal(cols.invs, k, int(cols.call_index[k]), end)
        if r < 0 or int(cols.kinds[r]) != LINE:
            return None
        moment = self.history.moment(r)
        stmt, text = self.statement(moment.path, moment.line)
        value = self.history.state(end).value if not suffix else step.value
        shown = _text(stmt.value) if isinstance(stmt, ast.Return) and stmt.value is not None else "None"
        back = OriginStep(shown, value, moment, text, "returned")
        if not isinstance(stmt, ast.Return):
            return _Next(
                (step, back),
                end="computed",
                reason=f"{lead}{function} ended without a `return` after line {moment.line}: it returned None",
            )
        if stmt.value is None:
            return _Next((step, back), end="literal", reason=f"{lead}a bare `return`: {function} returned None")
        inner = self.value_of(back, stmt.value, suffix, self.history.state(r), k, r, end, lead=lead.rstrip(": "))
        return _Next((step, *inner.steps), inner.follow, inner.end, inner.reason)

    def value_of(
        self,
        step: OriginStep,
        node: ast.expr,
        suffix: tuple[Any, ...],
        state: State,
        inv: int,
        start: int,
        stop: int,
        lead: str = "",
        skip: int = -1,
    ) -> _Next:
        """Where a right-hand side (or an argument) evaluated at event `start` leads: a plain name or
        attribute path is followed in the frame of invocation `inv`; an element of a display to that
        element; a recorded call into its `return`; a library call made from one variable to that
        variable; anything else ends the chain, with where its names were set as operand steps."""
        source = _path_of(node, state)
        if source is not None:
            root = source[0]
            function = self.cols.codes[int(self.cols.code_of[inv])][0]
            if root not in state.locals and function != "<module>":
                return _Next((step,), end="global", reason=f"`{root}` is a global or a builtin: not followed")
            return _Next((step,), (_render((*source, *suffix)), inv, start))
        element = _element(node, suffix)
        if element is not None:  # `return best, count` for result[1]: `count`
            return self.value_of(step, element[0], element[1], state, inv, start, stop, lead, skip)
        shown = _text(node)
        within = f"`{shown}`" if not suffix else f"`{shown}` (its {_render_suffix(suffix)} was set within)"
        said = f"{lead}: " if lead else ""
        if _literal(node):
            return _Next((step,), end="literal", reason=f"{said}a literal: {within}")
        if isinstance(node, ast.Call):
            inner = self.returned(step, node, suffix, inv, start, stop, skip, lead=said)
            if inner is not None:
                return inner
            name = _callee_name(node.func)
            called = self.recorded_calls(inv, start, stop, skip)
            if name in called or (name[:1].isupper() and "__init__" in called):
                return _Next((step,), end="computed", reason=f"{said}computed by a call: {within}")
            derived = _derived_path(node, state)
            if derived is not None:  # made by code that was not recorded from one variable: that variable
                return _Next((step,), (_render(derived), inv, start))
            return _Next((step,), end="library", reason=f"{said}returned by code that was not recorded: {within}")
        inner = self.into_calls(step, node, state, inv, start, stop, skip)
        if inner is not None:
            return inner
        operands = self.operands(node, state, inv, start)
        return _Next((step, *operands), end="computed", reason=f"{said}computed: {within}")

    # -- a parameter bound at a call ---------------------------------------------------------------
    def argument(self, expr: str, value: str | None, inv: int, i: int) -> _Next:
        cols = self.cols
        function, callee_path = cols.codes[int(cols.code_of[inv])]
        target = parse_path(expr)
        root, suffix = target[0], target[1:]
        caller = int(cols.parent[inv])
        c = last_equal(cols.invs, caller, int(cols.call_index[caller]), i) if caller >= 0 else -1
        if c < 0 or int(cols.kinds[c]) != LINE:
            return _Next(
                (),
                end="library",
                reason=f"`{root}` is an argument of {function}, called by code that was not recorded",
            )
        caller_path, line = self.history.moment(c).path, int(cols.lines[c])
        stmt, text = self.statement(caller_path, line)
        step = OriginStep(expr, value, self.history.moment(c), text, "argument")
        definition = self.definition(callee_path, function, int(cols.lines[i]))
        if stmt is None or definition is None:
            return _Next((step,), end="unknown", reason=f"the source of {function} or of its caller is not available")
        func, owner = definition
        calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and _calls(n, func, owner)]
        if not calls and _suspends(func):
            return _Next(
                (step,),
                end="complex",
                reason=f"{function} is a generator or coroutine: `{root}` was bound where it was created, "
                "not where it first ran (not followed)",
            )
        if not calls and function in _passed_names(stmt):  # map(f, xs), Thread(target=f), sorted(key=f)
            return _Next(
                (step,),
                end="library",
                reason=f"{function} was passed to code that was not recorded, which called it: "
                f"`{root}` is not matched to an argument",
            )
        if not calls:
            return _Next(
                (step,),
                end="complex",
                reason=f"{function} is not called by its name at this line (another name, a wrapper): "
                f"`{root}` is not matched to an argument",
            )
        bound = [_bound(call, func, owner, root) for call in calls]
        if any(b != bound[0] for b in bound[1:]):
            return _Next((step,), end="complex", reason=f"this line calls {function} more than once")
        how, node = bound[0]
        if how == "new":
            return _Next((step,), end="computed", reason=f"`{root}` is the new object made by `{_text(calls[0])}`")
        if how == "default" and node is not None:
            lead = f"the default value of `{root}`"
            parsed = self.tree(callee_path)
            header = _statement_text(func, parsed[1]) if parsed is not None else f"def {function}(...)"
            default = OriginStep(expr, value, self.history.moment(i), header, "default")  # at the def line
            if _literal(node):
                return _Next((step, default), end="literal", reason=f"{lead}: `{_text(node)}`")
            return _Next((step, default), end="computed", reason=f"{lead}: `{_text(node)}`")
        if how != "passed" or node is None:
            return _Next((step,), end="complex", reason=f"`{root}` is not matched to one argument of this call ({how})")
        state = self.history.state(c)
        return self.value_of(step, node, suffix, state, caller, c, i, lead=f"passed as `{root}`", skip=inv)

    # -- the recording and the source ----------------------------------------------------------------
    def recorded_calls(self, inv: int, start: int, stop: int, skip: int = -1) -> set[str]:
        """The functions invocation `inv` called (and the recording traced) between two of its events."""
        cols = self.cols
        children = np.flatnonzero(cols.parent == inv)
        began = cols.call_index[children]
        picked = children[(began > start) & (began < stop) & (children != skip)]
        return {cols.codes[int(cols.code_of[k])][0] for k in picked[:256].tolist()}

    def tree(self, path: str) -> tuple[ast.Module, str] | None:
        if path not in self._trees:
            source = source_of(self.history.execution, path)
            parsed: tuple[ast.Module, str] | None = None
            if source is not None:
                try:
                    parsed = (ast.parse(source), source)
                except SyntaxError:
                    parsed = None
            self._trees[path] = parsed
        return self._trees[path]

    def statement(self, path: str, line: int) -> tuple[ast.stmt | None, str]:
        """The innermost statement at `line` of `path`, and its text (a compound statement's header)."""
        parsed = self.tree(path)
        if parsed is None:
            return None, ""
        tree, source = parsed
        best: ast.stmt | None = None
        for node in ast.walk(tree):  # the latest-starting, then shortest, statement that spans the line
            if not (isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno)):
                continue
            if best is None or (node.lineno, -(node.end_lineno or 0)) >= (best.lineno, -(best.end_lineno or 0)):
                best = node
        if best is None:
            return None, ""
        return best, _statement_text(best, source)

    def definition(
        self, path: str, function: str, line: int
    ) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str] | None:
        """The def of `function` whose code starts at `line` (decorators included), and the class it
        is a method of ("" for none)."""
        parsed = self.tree(path)
        if parsed is None:
            return None
        owners: dict[int, str] = {}
        found: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        for node in ast.walk(parsed[0]):
            if isinstance(node, ast.ClassDef):
                for child in node.body:
                    owners[id(child)] = node.name
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
                found.append(node)
        exact = [f for f in found if min([f.lineno, *(d.lineno for d in f.decorator_list)]) == line]
        chosen = exact or (found if len(found) == 1 else [])
        if not chosen:
            return None
        return chosen[0], owners.get(id(chosen[0]), "")


def _quietly(question: Callable[[], T], otherwise: T) -> T:
    """An operand's or an object's setting is extra information: where the recording cannot answer
    it (a skeleton that would rebuild too many states, an odd key), the step goes without it."""
    try:
        return question()
    except (QueryError, WorldError):
        return otherwise


# -- statements: what a statement stored into a path ---------------------------------------------------


def _assigned(stmt: ast.stmt, target: tuple[Any, ...], state: State) -> tuple[str, ast.expr, tuple[Any, ...]] | None:
    """How `stmt` stored `target` (or a prefix of it: the rest is the suffix): ("value", the right-hand
    side, suffix), or "unpacked" (a part of a tuple not matched), "augmented", "loop", "caught",
    "imported", "defined". None: it does not store it (a change in place)."""
    pairs: list[tuple[ast.expr, ast.expr]] = []
    if isinstance(stmt, ast.Assign):
        pairs = [(t, stmt.value) for t in stmt.targets]
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        pairs = [(stmt.target, stmt.value)]
    elif isinstance(stmt, ast.AugAssign):
        if _prefix(_path_of(stmt.target, state), target) is not None:
            return "augmented", stmt.value, ()
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        if _stores(stmt.target, target, state):
            return "loop", stmt.iter, ()
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        pairs = [(item.optional_vars, item.context_expr) for item in stmt.items if item.optional_vars is not None]
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        if any((a.asname or a.name.split(".")[0]) == target[0] for a in stmt.names):
            return "imported", ast.Constant(None), ()
    elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.name == target[0]:
        return "defined", ast.Constant(None), ()
    elif isinstance(stmt, ast.Try) and any(h.name == target[0] for h in stmt.handlers):
        return "caught", ast.Constant(None), ()
    for node in ast.walk(stmt):  # an assignment expression anywhere in the statement
        if isinstance(node, ast.NamedExpr):
            pairs.append((node.target, node.value))
    for left, right in pairs:
        found = _match(left, right, target, state)
        if found is not None:
            return found
    return None


def _match(
    left: ast.expr, right: ast.expr, target: tuple[Any, ...], state: State
) -> tuple[str, ast.expr, tuple[Any, ...]] | None:
    if isinstance(left, (ast.Tuple, ast.List)):
        if (
            isinstance(right, (ast.Tuple, ast.List))
            and len(right.elts) == len(left.elts)
            and not any(isinstance(e, ast.Starred) for e in (*left.elts, *right.elts))
        ):
            for sub_left, sub_right in zip(left.elts, right.elts, strict=True):
                found = _match(sub_left, sub_right, target, state)
                if found is not None:
                    return found
            return None
        for k, element in enumerate(left.elts):  # `a, b = f()` for b: item 1 of what f returned
            if isinstance(element, ast.Starred):
                break
            rest = _prefix(_path_of(element, state), target)
            if rest is not None:
                return ("unpacked", right, (("[]", k), *rest))
        return ("unpacked", right, ()) if _stores(left, target, state) else None
    suffix = _prefix(_path_of(left, state), target)
    return None if suffix is None else ("value", right, suffix)


def _mutates(stmt: ast.stmt, target: tuple[Any, ...], state: State) -> bool:
    """Whether `stmt` changes `target` in place by its own text: a method called on it
    (`xs.append(v)`), or a store into one of its items or attributes (`xs[0] = v`, `del xs[0]`)."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base: ast.expr | None = node.func.value
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            base = node.value
        else:
            base = None
        if base is not None and _path_of(base, state) == target:
            return True
    return False


def _stores(node: ast.expr, target: tuple[Any, ...], state: State) -> bool:
    """Whether a store target (a name, a tuple of them, a starred one) stores `target` or a prefix of it."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return any(_stores(e, target, state) for e in node.elts)
    if isinstance(node, ast.Starred):
        return _stores(node.value, target, state)
    return _prefix(_path_of(node, state), target) is not None


def _prefix(path: tuple[Any, ...] | None, target: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The rest of `target` after `path`, where `path` is a prefix of it (None: it is not)."""
    if path is None or len(path) > len(target) or target[: len(path)] != path:
        return None
    return target[len(path) :]


def _path_of(node: ast.expr, state: State) -> tuple[Any, ...] | None:
    """`obj.items[i]` -> ("obj", (".", "items"), ("[]", 3)) with i's recorded value (a literal), as
    `parse_path` spells an expression; None for anything that is not such a location."""
    steps: list[Any] = []
    while True:
        if isinstance(node, ast.Attribute):
            steps.append((".", node.attr))
            node = node.value
        elif isinstance(node, ast.Subscript):
            key = _key(node.slice, state)
            if key is None:
                return None
            steps.append(("[]", key[0]))
            node = node.value
        elif isinstance(node, ast.Name):
            return (node.id, *reversed(steps))
        else:
            return None


def _key(node: ast.expr, state: State) -> tuple[Any] | None:
    """An item's key: a literal, or a name whose recorded value is one (read, never run)."""
    try:
        return (ast.literal_eval(node),)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, ast.Name) and node.id in state.locals:
        try:
            return (ast.literal_eval(state.locals[node.id]),)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
    return None


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _render_suffix(suffix: tuple[Any, ...]) -> str:
    """The rest of a path as text: `.x`, `['k']`, `[0].name` (an attribute's dot dropped in front)."""
    text = _render(("", *suffix))
    return text[1:] if text.startswith(".") else text


def _element(node: ast.expr, suffix: tuple[Any, ...]) -> tuple[ast.expr, tuple[Any, ...]] | None:
    """The element of a tuple, list or dict display that an item path starts with: (`count`, rest)
    for `(best, count)` and `[1]`; None where the node is no such display or the key is not in it."""
    if not suffix or suffix[0][0] != "[]":
        return None
    key = suffix[0][1]
    if isinstance(node, (ast.Tuple, ast.List)) and isinstance(key, int) and not isinstance(key, bool):
        if any(isinstance(e, ast.Starred) for e in node.elts) or not -len(node.elts) <= key < len(node.elts):
            return None
        return node.elts[key], suffix[1:]
    if isinstance(node, ast.Dict):
        for k, v in zip(node.keys, node.values, strict=True):
            if k is not None and _literal(k) and ast.literal_eval(k) == key:
                return v, suffix[1:]
    return None


# values that are code, not data: a call on them (json.loads) is not derived from them
_NOT_DATA = ("<module ", "<function ", "<class ", "<built-in ", "<bound method ")


def _derived_path(call: ast.Call, state: State) -> tuple[Any, ...] | None:
    """The one variable a call of code that was not recorded made its value from: the receiver of
    a method (`xs.pop()`, `line.strip()`), else the one argument that is a variable (`sorted(rows,
    key=...)`, `len(xs)`) or the iterable of a comprehension passed to it (`sum(1 for _ in xs)`).
    None where there is none or more than one."""

    def data(path: tuple[Any, ...] | None) -> bool:
        text = state.locals.get(path[0]) if path is not None else None
        return text is not None and not text.startswith(_NOT_DATA)

    if isinstance(call.func, ast.Attribute):
        receiver = _path_of(call.func.value, state)
        if data(receiver):
            return receiver
    found: list[tuple[Any, ...]] = []
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        arg = arg.value if isinstance(arg, ast.Starred) else arg
        if isinstance(arg, (ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)):
            paths = [_path_of(g.iter, state) for g in arg.generators]
        else:
            paths = [_path_of(arg, state)]
        found.extend(p for p in paths if p is not None and data(p) and p not in found)
    return found[0] if len(found) == 1 else None


def _render(path: tuple[Any, ...]) -> str:
    """The expression text of a path, as `parse_path` reads it back."""
    out = str(path[0])
    for kind, key in path[1:]:
        out += f".{key}" if kind == "." else f"[{key!r}]"
    return out


# -- calls: which argument a parameter was bound to ----------------------------------------------------


def _callee_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _calls(call: ast.Call, func: ast.FunctionDef | ast.AsyncFunctionDef, owner: str) -> bool:
    """Whether `call` calls `func` by name (a constructor call names the class of its `__init__`)."""
    name = _callee_name(call.func)
    return name == func.name or (func.name == "__init__" and bool(owner) and name == owner)


def _passed_names(stmt: ast.stmt) -> set[str]:
    """The names a statement uses other than as the function of a call: `map(f, xs)` passes `f`."""
    called = {id(n.func) for n in ast.walk(stmt) if isinstance(n, ast.Call)}
    out: set[str] = set()
    for node in ast.walk(stmt):
        if id(node) in called:
            continue
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
    return out


def _suspends(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A generator or a coroutine: its arguments are bound when it is made, before its first run."""
    return isinstance(func, ast.AsyncFunctionDef) or any(
        isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in ast.walk(func)
    )


def _parameters(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = func.args
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


def _bound(
    call: ast.Call, func: ast.FunctionDef | ast.AsyncFunctionDef, owner: str, param: str
) -> tuple[str, ast.expr | None]:
    """What `call` passed as `param` of `func`: ("passed", the argument), ("default", the default),
    ("new", None) for the object a constructor made, or a reason it cannot tell."""
    args = func.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    static = any(_callee_name(d) == "staticmethod" for d in func.decorator_list)
    if owner and not static and positional:
        if func.name == "__init__" and isinstance(call.func, ast.Name):
            if param == positional[0]:
                return "new", None
            positional = positional[1:]
        elif isinstance(call.func, ast.Attribute) and _callee_name(call.func) == func.name:
            if param == positional[0]:
                return "passed", call.func.value  # obj.method(...): self is obj
            positional = positional[1:]
    for keyword in call.keywords:
        if keyword.arg == param:
            return "passed", keyword.value
    if param in positional:
        k = positional.index(param)
        given = call.args[: k + 1]
        if any(isinstance(a, ast.Starred) for a in given):
            return "passed through *args", None
        if k < len(call.args):
            return "passed", call.args[k]
        if any(kw.arg is None for kw in call.keywords):
            return "passed through **kwargs", None
        defaults = args.defaults
        first_default = len(positional) - len(defaults)
        if k >= first_default:
            return "default", defaults[k - first_default]
        return "not passed", None
    if param in (a.arg for a in args.kwonlyargs):
        if any(kw.arg is None for kw in call.keywords):
            return "passed through **kwargs", None
        k = [a.arg for a in args.kwonlyargs].index(param)
        default = args.kw_defaults[k]
        return ("default", default) if default is not None else ("not passed", None)
    return "a *args or **kwargs parameter", None


# -- text -------------------------------------------------------------------------------------------------


def _text(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "\u2026"


def _statement_text(stmt: ast.stmt, source: str) -> str:
    """A statement as written, on one line; a compound statement's header only."""
    lines = source.splitlines()
    body = getattr(stmt, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.AST) and hasattr(body[0], "lineno"):
        last = max(stmt.lineno, body[0].lineno - 1)
        text = " ".join(line.strip() for line in lines[stmt.lineno - 1 : last])
    else:
        segment = ast.get_source_segment(source, stmt) or ast.unparse(stmt)
        text = " ".join(line.strip() for line in segment.splitlines())
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "\u2026"


__all__ = ["MAX_STEPS", "Origin", "OriginStep", "follow"]
