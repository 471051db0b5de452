"""Where a value came from: the chain of statements that carried it to an expression at a stop.

The first step is the statement that gave the expression its current value in the frame (what
`last_change` finds). While that statement is a plain copy, the chain follows what it copied, each
time asking the recording for the last change of the copied expression at that moment (one query a
step): `b = a` goes on to `a` in the same frame, `obj.x = b` (an attribute or item store whose
right-hand side is a name or an attribute path) goes on to `b`, and a parameter bound at a call goes
on to the caller's argument expression at the call line (`f(obj.x)`: `obj.x` in the caller). It stops
where the value was computed (a call, arithmetic, a literal) or where it cannot honestly follow: a
global, a value made by code that was not recorded (library code, a builtin, a callback from a
library), a statement it does not understand. The last answer's `end` and `reason` say which.

Whether a statement is a plain copy is read from the recorded source of that line (the statement's
AST); nothing is executed. An item key that is a name (`xs[i] = b`) is read from the recorded
value of `i` at that moment, when it is a literal. At most `MAX_STEPS` steps are followed; travel to
the last one and ask again to go further.
"""

from __future__ import annotations

import ast
from typing import Any, Literal, NamedTuple

import msgspec
import numpy as np

from neural_dap.core.state import State
from neural_dap.core.world import WorldError
from neural_dap.debugger.history import History, Moment, _source, parse_path, resolve
from neural_dap.trace.actions import CALL, LINE, last_equal
from neural_dap.trace.queries import QueryError

MAX_STEPS = 32
MAX_TEXT = 200  # a statement's text is cut here
MAX_SCAN = 100_000  # events of a callee searched back for the statement that set the value

End = Literal["computed", "literal", "library", "global", "complex", "unknown", "unbound", "limit"]
StepKind = Literal["assigned", "argument", "call"]


class OriginStep(msgspec.Struct, frozen=True):
    """One statement the value passed through: `expression` held `value` after it. `moment` is the
    statement's own event (travel there to see it about to run); for an argument, the caller's
    event at the call line. `kind`: "assigned" (the statement stored it), "argument" (bound as a
    parameter at the call), "call" (set inside a function this statement called: the next step is
    in that call)."""

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
        i = change.moment.index
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
            return inside if inside is not None else self.in_place(step, stmt, inv, s, i)
        how, node, suffix = found
        if how == "value" and suffix and isinstance(node, ast.Call):  # `obj = Box(b)`: obj.x set in __init__
            inside = self.descend(step, stmt, target, value, state, inv, s, i, made=suffix)
            if inside is not None:
                return inside
        if how == "augmented":
            return _Next((step,), end="computed", reason=f"computed from its previous value: `{_text(stmt)}`")
        if how == "loop":
            return _Next((step,), end="complex", reason=f"an item of the loop over `{_text(node)}`: not followed")
        if how == "caught":
            return _Next((step,), end="computed", reason="the exception caught here")
        if how == "imported":
            return _Next((step,), end="library", reason="a module imported here")
        if how == "defined":
            return _Next((step,), end="computed", reason="defined here")
        if how == "unpacked":
            return self.value_of(step, node, (), state, inv, s, i, lead=f"unpacked from `{_text(node)}`")
        return self.value_of(step, node, suffix, state, inv, s, i)

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
        stores `inner` (`self.x = ...`), read from the statements' source: (its event, the event after)."""
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
                stores[line] = stmt is not None and _assigned(stmt, inner, blank) is not None
            if stores[line]:
                return j, own[n + 1] if n + 1 < len(own) else end
        return None

    def in_place(self, step: OriginStep, stmt: ast.stmt, inv: int, s: int, i: int) -> _Next:
        """The statement changed the value without storing it (a method that mutates it, a store into
        one of its items or attributes, a callee that kept a reference)."""
        calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call)]
        unrecorded = " (by code that was not recorded)" if calls and not self.recorded_calls(inv, s, i) else ""
        return _Next((step,), end="computed", reason=f"changed in place by this statement{unrecorded}")

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
        attribute path is followed in the frame of invocation `inv`; anything else ends the chain."""
        source = _path_of(node, state)
        if source is not None:
            root = source[0]
            function = self.cols.codes[int(self.cols.code_of[inv])][0]
            if root not in state.locals and function != "<module>":
                return _Next((step,), end="global", reason=f"`{root}` is a global or a builtin: not followed")
            return _Next((step,), (_render((*source, *suffix)), inv, start))
        shown = _text(node)
        within = f"`{shown}`" if not suffix else f"`{shown}` (its {_render(('', *suffix))[1:]} was set within)"
        lead = f"{lead}: " if lead else ""
        if _literal(node):
            return _Next((step,), end="literal", reason=f"{lead}a literal: {within}")
        if isinstance(node, ast.Call):
            name = _callee_name(node.func)
            called = self.recorded_calls(inv, start, stop, skip)
            if name in called or (name[:1].isupper() and "__init__" in called):
                return _Next((step,), end="computed", reason=f"{lead}computed by a call: {within}")
            return _Next((step,), end="library", reason=f"{lead}returned by code that was not recorded: {within}")
        return _Next((step,), end="computed", reason=f"{lead}computed: {within}")

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
            if _literal(node):
                return _Next((step,), end="literal", reason=f"{lead}: `{_text(node)}`")
            return _Next((step,), end="computed", reason=f"{lead}: `{_text(node)}`")
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
            source = _source(self.history.execution, path)
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
        return ("unpacked", right, ()) if _stores(left, target, state) else None
    suffix = _prefix(_path_of(left, state), target)
    return None if suffix is None else ("value", right, suffix)


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
