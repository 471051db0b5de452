"""Which local names a stretch of a program can change: what a predicted local is checked against.

A predicted local written `..` claims its value did not change since the invocation's previous
frame; a local written with a value claims it did (or that it is new). Whether the code that ran in
between can change the name at all is a fact of the program, and it tells right claims from wrong
ones far better than the model's own probability of `..` does (the model is sure of `..` after
`total += x` about as often as after `print(total)`). `format.calibration` calibrates each claim
by whether the code that ran writes the name.

A statement writes a name when it binds it (assignment, augmented assignment, `for` / `with` /
`except` targets, `:=`, imports, `def`, `class`, `del`) or may mutate the object it names: the root
of an assigned attribute or subscript (`grid[i] = ...`, `self.total = ...`), the receiver of a
method call (`items.append(x)`), an argument of a call (`random.shuffle(xs)`), and the names a
function of the program declares `global`, wherever the statement calls something. Over-counting
only moves a claim to the doubtful kind; a name missed would make a wrong `..` look safe.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cached_property

from neural_dap.core.source import SourceInfo

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
# Builtins that change none of their arguments (`print(total)` leaves `total` as it was).
_PURE = frozenset(
    "abs all any ascii bin bool bytes callable chr dict divmod enumerate filter float format frozenset "
    "getattr hasattr hash hex id int isinstance issubclass iter len list map max min oct ord pow print "
    "range repr reversed round set slice sorted str sum tuple type zip".split()
)
# Methods that change neither their receiver nor their arguments (str, dict and list readers).
_READERS = frozenset(
    "capitalize copy count endswith find format get index isalnum isalpha isdigit islower isspace isupper "
    "items join keys lower lstrip partition replace rfind rindex rjust ljust rpartition rsplit rstrip split "
    "splitlines startswith strip title upper values zfill".split()
)
# Methods that change their receiver only (the value put in is not changed).
_MUTATORS = frozenset(
    "add append appendleft clear discard extend insert pop popleft remove setdefault sort update".split()
)


class ProgramWrites:
    """Names each statement of a program may write (None everywhere if the source does not parse)."""

    def __init__(self, source: SourceInfo) -> None:
        self.source = source

    @cached_property
    def _tree(self) -> ast.Module | None:
        try:
            return ast.parse(self.source.text)
        except (SyntaxError, ValueError):
            return None

    @cached_property
    def _globals(self) -> frozenset[str]:
        """Names some function declares `global`: any call may write them."""
        if self._tree is None:
            return frozenset()
        return frozenset(n for node in ast.walk(self._tree) if isinstance(node, ast.Global) for n in node.names)

    @cached_property
    def _by_line(self) -> dict[int, frozenset[str]]:
        """The line a statement (or a compound statement's header, an except clause) starts on ->
        the names it may write."""
        out: dict[int, set[str]] = defaultdict(set)
        if self._tree is None:
            return {}
        for node in ast.walk(self._tree):
            if isinstance(node, ast.stmt | ast.ExceptHandler):
                out[node.lineno] |= self._written(node)
        return {line: frozenset(names) for line, names in out.items()}

    def at(self, line: int) -> frozenset[str] | None:
        """What running the statement at `line` may write (None: unknown, no statement starts there)."""
        return self._by_line.get(line)

    def within(self, line: int) -> frozenset[str] | None:
        """What any statement of the function (or module, or class body) holding `line` may write: the
        code a jump (continue, a breakpoint, step out) may have run. None: unknown."""
        if self._tree is None:
            return None
        scope: ast.AST = self._tree
        for node in ast.walk(self._tree):
            holds = isinstance(node, _SCOPES) and node.lineno <= line <= (node.end_lineno or node.lineno)
            if holds and _inside(scope, node):
                scope = node
        names: set[str] = set()
        for statement in _own_statements(scope):
            names |= self._by_line.get(statement.lineno, frozenset())
        return frozenset(names)

    def _written(self, node: ast.stmt | ast.ExceptHandler) -> set[str]:
        names: set[str] = set()
        match node:
            case ast.Assign(targets=targets):
                for target in targets:
                    names |= _targets(target)
            case ast.AugAssign(target=target) | ast.AnnAssign(target=target):
                names |= _targets(target)
            case ast.For(target=target) | ast.AsyncFor(target=target):
                names |= _targets(target)
            case ast.With(items=items) | ast.AsyncWith(items=items):
                for item in items:
                    if item.optional_vars is not None:
                        names |= _targets(item.optional_vars)
            case ast.Delete(targets=targets):
                for target in targets:
                    names |= _targets(target)
            case ast.Import(names=aliases) | ast.ImportFrom(names=aliases):
                names |= {(a.asname or a.name).split(".")[0] for a in aliases}
            case ast.FunctionDef(name=name) | ast.AsyncFunctionDef(name=name) | ast.ClassDef(name=name):
                names.add(name)
            case ast.ExceptHandler(name=str() as name):
                names.add(name)
        calls = False
        for part in _header(node):
            for sub in _walk_here(part):
                if isinstance(sub, ast.NamedExpr):
                    names |= _targets(sub.target)
                elif isinstance(sub, ast.Call):
                    names |= _called(sub)
                    calls = True
        return names | (set(self._globals) if calls else set())


def _called(call: ast.Call) -> set[str]:
    """The variables a call may mutate: a method's receiver, and the arguments of anything but a
    builtin or a method known to leave them alone."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in _PURE:
        return set()
    names: set[str] = set()
    if isinstance(func, ast.Attribute):
        if func.attr in _READERS:
            return set()
        names |= _roots(func.value)
        if func.attr in _MUTATORS:
            return names
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        names |= _roots(arg)
    return names


def _header(node: ast.stmt | ast.ExceptHandler) -> list[ast.AST]:
    """The expressions a statement evaluates at its own line: a compound statement's header only."""
    match node:
        case ast.If(test=test) | ast.While(test=test):
            return [test]
        case ast.For(target=target, iter=it) | ast.AsyncFor(target=target, iter=it):
            return [target, it]
        case ast.With(items=items) | ast.AsyncWith(items=items):
            return [item.context_expr for item in items]
        case ast.FunctionDef() | ast.AsyncFunctionDef() | ast.ClassDef():
            return [*node.decorator_list]
        case ast.Try() | ast.TryStar() | ast.ExceptHandler():
            return [node.type] if isinstance(node, ast.ExceptHandler) and node.type is not None else []
        case ast.Match(subject=subject):
            return [subject]
    return [node]


def _walk_here(node: ast.AST):
    """ast.walk that does not enter lambdas or comprehensions' own scopes (their names are theirs)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for child in ast.iter_child_nodes(current):
            if not isinstance(child, ast.Lambda):
                stack.append(child)


def _targets(target: ast.AST) -> set[str]:
    """Names an assignment to `target` binds or mutates."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, ast.Tuple | ast.List):
        return set().union(*(_targets(e) for e in target.elts)) if target.elts else set()
    if isinstance(target, ast.Starred):
        return _targets(target.value)
    return _roots(target)


def _roots(expr: ast.AST) -> set[str]:
    """The variable an attribute / subscript chain starts from (`a` of `a.b[0].c`), or a bare name."""
    while isinstance(expr, ast.Attribute | ast.Subscript | ast.Starred):
        expr = expr.value
    return {expr.id} if isinstance(expr, ast.Name) else set()


def _inside(outer: ast.AST, inner: ast.AST) -> bool:
    """Is `inner` nested in `outer` (by lines: scopes nest by their line ranges)?"""
    if isinstance(outer, ast.Module):
        return True
    lo, hi = outer.lineno, outer.end_lineno or outer.lineno  # type: ignore[attr-defined]
    return lo <= inner.lineno and (inner.end_lineno or inner.lineno) <= hi and inner is not outer  # type: ignore[attr-defined]


def _own_statements(scope: ast.AST):
    """The statements (and except clauses) of a scope's body, not those of scopes nested in it
    (a nested def or class statement itself is the scope's: it binds the name)."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt | ast.ExceptHandler):
            yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))
