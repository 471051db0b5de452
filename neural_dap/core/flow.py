"""Static control flow of a program: where execution can go next, read without running anything.

For every code object (the module, each class body, function, lambda and generator expression)
this computes, from its bytecode and AST:
  - which events can follow a `line` event at each line: the next line events (the next statement,
    a loop head, a branch target, an exception handler), a `return` at a line that returns, an
    `exception` at any line;
  - the first events after a `call`;
  - the names its scope can hold, in the order CPython lists them, and which can be deleted;
  - which code objects a statement may call.

A line event fires, as under `sys.settrace` on CPython 3.11, when execution reaches an instruction
of another line, or jumps backwards; so the successors of line L are found by walking the bytecode
from L's instructions until another line starts (or L starts again after a backward jump). The
program is compiled, never executed: this is what lets the neural world constrain a model's
predictions on code that cannot run. Sets are over-approximations (any line may raise), never
under: the tests check every recorded step of CRUXEval and the corpus lands inside them.
"""

from __future__ import annotations

import ast
import dis
import types
from dataclasses import dataclass, field
from functools import cached_property

from neural_dap.core.source import SourceInfo

Landing = tuple[str, int]  # (event, line)

_RETURNS = frozenset({"RETURN_VALUE", "RETURN_CONST"})
_RAISES = frozenset({"RAISE_VARARGS", "RERAISE"})
_YIELDS = frozenset({"YIELD_VALUE"})
_UNCONDITIONAL = frozenset(
    {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_ABSOLUTE", "JUMP", "JUMP_NO_INTERRUPT"}
)
_PROLOGUE = frozenset({"RESUME", "COPY_FREE_VARS", "MAKE_CELL", "RETURN_GENERATOR", "CACHE"})
_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)
_UNTRACED = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>"})  # not traced (inlined since 3.12)
CLASS_NAMESPACE = (
    "__module__",
    "__qualname__",
    "__doc__",
    "__annotations__",
    "__classcell__",
    "__firstlineno__",
    "__static_attributes__",
)


@dataclass(eq=False)  # one per code object: compared and hashed by identity
class CodeFacts:
    """What one code object can do, line by line."""

    name: str
    first_line: int  # co_firstlineno: where its `call` events are (a decorator line, when decorated)
    kind: str  # "module" | "class" | "function"
    lines: frozenset[int] = frozenset()  # lines that can have a line event
    entry: frozenset[Landing] = frozenset()  # what follows the call event
    successors: dict[int, frozenset[Landing]] = field(default_factory=dict)
    returns: frozenset[int] = frozenset()  # lines a return event can be at
    yields: frozenset[int] = frozenset()  # lines a generator suspends at (resumed with a call event there)
    names: tuple[str, ...] = ()  # what its scope can bind, in CPython's order for functions
    params: tuple[str, ...] = ()
    freevars: tuple[str, ...] = ()  # a closure's variables (in its locals from the call on)
    deletable: frozenset[str] = frozenset()  # names a `del` or the end of an `except ... as` unbinds
    last_line: int = 0

    @property
    def ordered(self) -> bool:
        """New locals appear in `names` order (fast locals); a module or class namespace is a dict."""
        return self.kind == "function"

    @cached_property
    def predecessors(self) -> dict[int, frozenset[int]]:
        out: dict[int, set[int]] = {}
        for line, landings in self.successors.items():
            for event, target in landings:
                if event == "line":
                    out.setdefault(target, set()).add(line)
        return {k: frozenset(v) for k, v in out.items()}

    def can_follow(self, line: int) -> frozenset[Landing]:
        return self.successors.get(line, frozenset()) | {("exception", line)}


class ProgramFlow:
    """The control-flow facts of one program text (compiled once; cache it per program)."""

    def __init__(self, source: SourceInfo, *, settrace_frames: bool = False) -> None:
        """`settrace_frames`: every frame sys.settrace reports on CPython 3.11, as CWM's traces have
        them: comprehensions in frames of their own, and `.0`, a comprehension's or generator
        expression's iterator, among its locals. Without it, as neural-dap's recorder shows a run
        (comprehensions are inlined since 3.12, so it leaves them out; `.0` is never shown)."""
        self.source = source
        self.settrace_frames = settrace_frames
        self.codes: list[CodeFacts] = []
        self.tree: ast.Module | None = None
        self._statements: dict[int, ast.AST] = {}
        self._calls: dict[int, frozenset[Landing]] = {}
        try:
            self.tree = ast.parse(source.text)
            module = compile(self.tree, source.filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        scopes = _ast_scopes(self.tree)
        self._index_statements(self.tree)
        stack = [(module, "module")]
        while stack:
            code, kind = stack.pop()
            for const in code.co_consts:
                if isinstance(const, types.CodeType):
                    stack.append((const, _kind_of(const, scopes)))
            if code.co_name in _UNTRACED and not settrace_frames:
                continue
            self.codes.append(_facts(code, kind, scopes, hidden_dot=not settrace_frames))
        self.codes.sort(key=lambda c: (c.first_line, c.name))

    @property
    def available(self) -> bool:
        return self.tree is not None and bool(self.codes)

    # -- finding code objects -------------------------------------------------------------------------
    def code_for(self, function: str, line: int, event: str = "line") -> CodeFacts | None:
        """The code object a state of `function` at `line` belongs to (None where unknown)."""
        named = [c for c in self.codes if c.name == function]
        if event == "call":
            exact = [c for c in named if c.first_line == line]
            if exact:
                return exact[0]
            resumed = [c for c in named if line in c.yields or line in c.lines]
            return resumed[0] if resumed else (named[0] if len(named) == 1 else None)
        holding = [c for c in named if line in c.lines or c.first_line == line]
        if holding:
            return min(holding, key=lambda c: c.last_line - c.first_line)
        return named[0] if len(named) == 1 else None

    def root(self, function: str, line: int) -> CodeFacts | None:
        return self.code_for(function, line, "call")

    def call_sites(self, code: CodeFacts) -> list[tuple[CodeFacts, int]]:
        """(code object, line) of every statement that may call `code` (or resume it, a generator)."""
        starts = {code.first_line} | set(code.yields)
        out = []
        for caller in self.codes:
            for line in sorted(caller.lines):
                if any(first in starts for _, first in self.calls_from(line)):
                    out.append((caller, line))
        return out

    def code_at_line(self, line: int) -> list[CodeFacts]:
        """Code objects that can have a line event at `line` (a breakpoint there stops in them)."""
        return [c for c in self.codes if line in c.lines]

    # -- what a statement calls ------------------------------------------------------------------------
    def _index_statements(self, tree: ast.Module) -> None:
        """line -> the innermost statement (or compound statement's header) that line belongs to."""
        for node in ast.walk(tree):
            if not isinstance(node, ast.stmt):
                continue
            end = _header_end(node)
            for line in range(_start(node), end + 1):
                current = self._statements.get(line)
                if current is None or _span(node) <= _span(current):
                    self._statements[line] = node

    def calls_from(self, line: int) -> frozenset[Landing]:
        """The call events a statement at `line` can cause (calls of functions of this program)."""
        found = self._calls.get(line)
        if found is None:
            found = self._calls[line] = self._calls_from(line)
        return found

    def _calls_from(self, line: int) -> frozenset[Landing]:
        statement = self._statements.get(line)
        if statement is None:
            return frozenset()
        parts = _header_nodes(statement)
        names: set[str] = set()
        first, last = _start(statement), _header_end(statement)
        iterates = False
        for part in parts:
            for node in ast.walk(part):
                if isinstance(node, ast.Name):
                    names.add(node.id)
                elif isinstance(node, ast.Attribute):
                    names.add(node.attr)
                elif isinstance(node, (ast.Call, ast.comprehension)):
                    iterates = True
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            iterates = True
        out: set[Landing] = set()
        classes = {c.name for c in self.codes if c.kind == "class"}
        for code in self.codes:
            if code.kind == "module":
                continue
            if code.kind == "class":
                if isinstance(statement, ast.ClassDef) and code.name == statement.name and code.first_line == first:
                    out.add(("call", code.first_line))
                continue
            if code.name.startswith("<"):  # a lambda or generator expression written in this statement
                if first <= code.first_line <= last:
                    out.add(("call", code.first_line))
                    out |= {("call", y) for y in code.yields}
                continue
            dunder = code.name.startswith("__") and code.name.endswith("__")
            if (
                code.name in names
                or dunder
                or (names & classes and code.name in ("__init__", "__new__", "__post_init__"))
            ):
                out.add(("call", code.first_line))
            if code.yields and (iterates or code.name in names):
                out |= {("call", y) for y in code.yields}  # a generator resumed from here
        return frozenset(out)


# -- bytecode ---------------------------------------------------------------------------------------


def _line(instruction: dis.Instruction) -> int | None:
    positions = getattr(instruction, "positions", None)
    line = positions.lineno if positions is not None else None
    if line is None:
        line = (
            instruction.starts_line
            if isinstance(instruction.starts_line, int) and not isinstance(instruction.starts_line, bool)
            else None
        )
    return line if line else None


class _Walker:
    def __init__(self, code: types.CodeType) -> None:
        self.instructions = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
        self.index = {ins.offset: k for k, ins in enumerate(self.instructions)}
        self.lines = [_line(ins) for ins in self.instructions]
        self.handlers: dict[int, list[int]] = {}
        try:
            entries = dis.Bytecode(code).exception_entries  # type: ignore[attr-defined]  # 3.11+, not in typeshed
        except AttributeError:  # before 3.11: no exception table (and no support here)
            entries = []
        for entry in entries:
            for k, ins in enumerate(self.instructions):
                if entry.start <= ins.offset < entry.end:
                    self.handlers.setdefault(k, []).append(self.index.get(entry.target, -1))

    def next_of(self, k: int) -> list[tuple[int, bool]]:
        """(instruction, reached by a backward jump) that can follow instruction k."""
        ins = self.instructions[k]
        name = ins.opname
        out: list[tuple[int, bool]] = []
        if name in _RETURNS or name in _RAISES:
            pass
        elif ins.opcode in _JUMPS and isinstance(ins.argval, int):
            target = self.index.get(ins.argval)
            if target is not None:
                out.append((target, ins.argval <= ins.offset))
            if name not in _UNCONDITIONAL and k + 1 < len(self.instructions):
                out.append((k + 1, False))
        elif k + 1 < len(self.instructions):
            out.append((k + 1, False))
        for handler in self.handlers.get(k, ()):
            if handler >= 0:
                out.append((handler, False))
        return out

    def walk(self, starts: list[tuple[int, bool]], current: int | None) -> tuple[set[Landing], set[int]]:
        """Landings reached from `starts` while still on line `current`; also the lines of the
        yields passed (a generator suspends there)."""
        landings: set[Landing] = set()
        yields: set[int] = set()
        seen: set[int] = set()
        todo = list(starts)
        while todo:
            k, backward = todo.pop()
            line = self.lines[k]
            if line is not None and (current is None or line != current or backward):
                landings.add(("line", line))
                continue
            if k in seen:
                continue
            seen.add(k)
            name = self.instructions[k].opname
            at = line or current
            if name in _RETURNS and at:
                landings.add(("return", at))
            if name in _YIELDS and at:
                landings.add(("return", at))
                yields.add(at)
                continue  # suspended: it goes on with a new call event
            todo.extend(self.next_of(k))
        return landings, yields


def _facts(code: types.CodeType, kind: str, scopes: dict, hidden_dot: bool = True) -> CodeFacts:
    walker = _Walker(code)
    instructions = walker.instructions
    start = 0
    while start < len(instructions) and instructions[start].opname in _PROLOGUE:
        start += 1
    if (
        kind != "module"
        and start < len(instructions)
        and instructions[start].opname == "POP_TOP"
        and any(i.opname == "RETURN_GENERATOR" for i in instructions[:start])
    ):
        start += 1
        while start < len(instructions) and instructions[start].opname in _PROLOGUE:
            start += 1  # a generator's RESUME follows the POP_TOP (3.11)
    by_line: dict[int, list[int]] = {}  # the body's instructions by line (the prologue runs before the call event)
    for k in range(start, len(instructions)):
        line = walker.lines[k]
        if line is not None:
            by_line.setdefault(line, []).append(k)
    entry, entry_yields = walker.walk([(start, False)], None) if start < len(instructions) else (set(), set())
    successors: dict[int, frozenset[Landing]] = {}
    yields: set[int] = set(entry_yields)
    for line, ks in by_line.items():
        starts = [nxt for k in ks for nxt in walker.next_of(k)]
        landings, passed = walker.walk(starts, line)
        # a return or yield instruction of the line itself ends it at once
        for k in ks:
            name = instructions[k].opname
            if name in _RETURNS:
                landings.add(("return", line))
            if name in _YIELDS:
                landings.add(("return", line))
                passed.add(line)
        successors[line] = frozenset(landings)
        yields |= passed
    # after a yield, execution resumes (a new call event at the yield's line) where it stopped
    returns = {ln for landings in [entry, *successors.values()] for ev, ln in landings if ev == "return"}
    lines = frozenset(by_line)
    scope = scopes.get((code.co_name, code.co_firstlineno))
    if kind == "function":
        names = (
            tuple(code.co_varnames)
            + tuple(n for n in code.co_cellvars if n not in code.co_varnames)
            + tuple(code.co_freevars)
        )
        if hidden_dot:  # `.0`, a comprehension's iterator, is not shown (neural-dap's recorder)
            names = tuple(n for n in names if not n.startswith("."))
        params = code.co_varnames[
            : code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
        ]
    elif kind == "class":
        names = CLASS_NAMESPACE + tuple(n for n in (scope.bound if scope else ()) if n not in CLASS_NAMESPACE)
        params = ()
    else:
        names = tuple(scope.bound) if scope else ()
        params = ()
    deletable = frozenset(scope.deleted) if scope else frozenset()
    return CodeFacts(
        name=code.co_name,
        first_line=code.co_firstlineno,
        kind=kind,
        lines=lines,
        entry=frozenset(entry),
        successors=successors,
        returns=frozenset(returns),
        yields=frozenset(yields),
        names=names,
        params=tuple(params),
        freevars=tuple(code.co_freevars) if kind == "function" else (),
        deletable=deletable,
        last_line=max(by_line, default=code.co_firstlineno),
    )


# -- the AST: scopes and statements ----------------------------------------------------------------


@dataclass
class _Scope:
    bound: list[str] = field(default_factory=list)  # in order of first appearance
    deleted: set[str] = field(default_factory=set)

    def bind(self, name: str) -> None:
        if name not in self.bound:
            self.bound.append(name)


def _ast_scopes(tree: ast.Module) -> dict[tuple[str, int], _Scope]:
    """(code name, first line) -> the names bound directly in that scope (module and class bodies
    need this; functions have their code object's own tables). Key of the module: ("<module>", 1)."""
    out: dict[tuple[str, int], _Scope] = {}

    def visit_body(body: list[ast.stmt], scope: _Scope) -> None:
        for stmt in body:
            visit(stmt, scope)

    def targets(node: ast.AST, scope: _Scope) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                scope.bind(sub.id)
                if isinstance(sub.ctx, ast.Del):
                    scope.deleted.add(sub.id)

    def visit(node: ast.AST, scope: _Scope) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope.bind(node.name)
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            inner = out.setdefault((node.name, first), _Scope())
            for arg in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
                inner.bind(arg.arg)
            visit_body(node.body, inner)
            return
        if isinstance(node, ast.ClassDef):
            scope.bind(node.name)
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            visit_body(node.body, out.setdefault((node.name, first), _Scope()))
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                scope.bind((alias.asname or alias.name).split(".")[0])
            return
        if isinstance(node, ast.ExceptHandler) and node.name:
            scope.bind(node.name)
            scope.deleted.add(node.name)
        if isinstance(
            node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Delete)
        ):
            for field_name in ("targets", "target", "items"):
                value = getattr(node, field_name, None)
                if value is not None:
                    for item in value if isinstance(value, list) else [value]:
                        targets(
                            item.optional_vars if isinstance(item, ast.withitem) and item.optional_vars else item, scope
                        )
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.NamedExpr):
                targets(child.target, scope)
            if isinstance(child, (ast.stmt, ast.ExceptHandler)):
                visit(child, scope)
            elif isinstance(child, ast.expr):
                for sub in ast.walk(child):
                    if isinstance(sub, ast.NamedExpr):
                        targets(sub.target, scope)

    module = out.setdefault(("<module>", 1), _Scope())
    visit_body(tree.body, module)
    return out


def _kind_of(code: types.CodeType, scopes: dict) -> str:
    if code.co_name == "<module>":
        return "module"
    # a class body's code takes no arguments and binds __module__ / __qualname__ first
    if (
        code.co_argcount == 0
        and "__qualname__" in code.co_names
        and "__module__" in code.co_names
        and not code.co_varnames
    ):
        return "class"
    return "function"


def _start(node: ast.AST) -> int:
    """A statement's first line: its first decorator's, for a decorated def or class."""
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno] + [d.lineno for d in decorators])  # type: ignore[attr-defined]


def _span(node: ast.AST) -> int:
    return _header_end(node) - _start(node)


def _header_nodes(node: ast.AST) -> list[ast.AST]:
    """The parts of a statement that run on its own lines (a compound statement's header only)."""
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [node.target, node.iter]
    if isinstance(node, (ast.While, ast.If)):
        return [node.test]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return list(node.items)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [*node.decorator_list, node.args]
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *node.keywords]
    if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
        return []
    if isinstance(node, ast.Match):
        return [node.subject]
    return [node]


def _header_end(node: ast.AST) -> int:
    parts = _header_nodes(node)
    if (
        isinstance(
            node,
            (
                ast.For,
                ast.AsyncFor,
                ast.While,
                ast.If,
                ast.With,
                ast.AsyncWith,
                ast.FunctionDef,
                ast.AsyncFunctionDef,
                ast.ClassDef,
                ast.Try,
                ast.Match,
            ),
        )
        or type(node).__name__ == "TryStar"
    ):
        ends = [getattr(p, "end_lineno", None) or node.lineno for p in parts]  # type: ignore[attr-defined]
        return max([node.lineno, *ends])  # type: ignore[attr-defined]
    return getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
