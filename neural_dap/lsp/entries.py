"""What to run in a document: entry calls of its functions, or the whole script.

An entry comes from a comment on a function's `def` line (`# neural-dap: f([3, 1, 2])`, optionally
`-> 6` for the value it should return), from the function's doctest examples (`>>> f(...)` and the
expected output on the next line), or from a command. The document is parsed with `ast` (it is
never run here); argument text stays text: the recorded world evaluates it inside the debuggee and
the neural world reads it.
"""

from __future__ import annotations

import ast
import re

import msgspec

COMMENT_RE = re.compile(r"#\s*neural-dap:\s*(?P<calls>.+)$")
# one call in a comment: NAME(ARGS) [-> RESULT]; several are separated by " ; "
DOCTEST_RE = re.compile(r"^\s*>>>\s*(?P<call>[A-Za-z_]\w*\(.*\))\s*$")


class EntryCall(msgspec.Struct, frozen=True, omit_defaults=True):
    """One call to run: `function(args)`; `returns` is the value it should give, where known."""

    function: str
    args: str
    returns: str | None = None
    line: int = 0  # 1-based line of the function's `def`, where lenses and input hints go
    origin: str = "command"  # "comment", "doctest" or "command"

    @property
    def label(self) -> str:
        return f"{self.function}({self.args})"

    @property
    def key(self) -> str:
        return self.label


class FunctionInfo(msgspec.Struct, frozen=True):
    name: str
    line: int  # of the `def` (after decorators)
    end_line: int
    params: tuple[str, ...]  # in order, for writing a found input as a call
    entries: tuple[EntryCall, ...] = ()


class DocumentPlan(msgspec.Struct, frozen=True):
    """The functions of a document and whether it does something when run as a script."""

    functions: tuple[FunctionInfo, ...] = ()
    script: bool = False  # top-level code beyond definitions, imports and constants
    syntax_error: str | None = None

    def function(self, name: str) -> FunctionInfo | None:
        return next((f for f in self.functions if f.name == name), None)

    @property
    def entries(self) -> tuple[EntryCall, ...]:
        return tuple(e for f in self.functions for e in f.entries)


class EntryError(ValueError):
    """Text that is not a call of one of the document's functions."""


def parse_call(text: str, line: int = 0, origin: str = "command") -> EntryCall:
    """`f(1, [2])` or `f(1, [2]) -> 3` as an EntryCall (parsed by `ast`, never evaluated)."""
    call_text, arrow, returns = text.partition("->")
    call_text = call_text.strip()
    try:
        tree = ast.parse(call_text, mode="eval")
    except SyntaxError:
        raise EntryError(f"{call_text!r} is not a call such as f([3, 1, 2])") from None
    node = tree.body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise EntryError(f"{call_text!r} is not a call of a function by name, such as f([3, 1, 2])")
    args = call_text[call_text.index("(") + 1 : call_text.rindex(")")].strip()
    result = returns.strip() if arrow else None
    return EntryCall(node.func.id, args, result or None, line, origin)


def plan_document(source: str) -> DocumentPlan:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return DocumentPlan(syntax_error=f"line {exc.lineno}: {exc.msg}")
    lines = source.splitlines()
    functions = []
    script = False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append(_function(node, lines))
        elif not _is_definition(node, first=node is tree.body[0]):
            script = True
    return DocumentPlan(tuple(functions), script)


def _function(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> FunctionInfo:
    entries: list[EntryCall] = []
    def_line = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
    match = COMMENT_RE.search(def_line)
    if match:
        for part in match["calls"].split(" ; "):
            try:
                entry = parse_call(part, node.lineno, "comment")
            except EntryError:
                continue  # a comment that is not a call is the author's prose
            if entry.function == node.name:
                entries.append(entry)
    docstring = ast.get_docstring(node, clean=False) or ""
    entries.extend(_doctest_entries(docstring, node.name, node.lineno))
    args = node.args
    params = tuple(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
    return FunctionInfo(node.name, node.lineno, node.end_lineno or node.lineno, params, tuple(entries))


def _doctest_entries(docstring: str, name: str, line: int) -> list[EntryCall]:
    found = []
    doc_lines = docstring.splitlines()
    for i, text in enumerate(doc_lines):
        match = DOCTEST_RE.match(text)
        if not match:
            continue
        try:
            entry = parse_call(match["call"], line, "doctest")
        except EntryError:
            continue
        if entry.function != name:
            continue
        expected = doc_lines[i + 1].strip() if i + 1 < len(doc_lines) else ""
        if expected and not expected.startswith(">>>") and not expected.startswith("Traceback"):
            entry = msgspec.structs.replace(entry, returns=expected)
        found.append(entry)
    return found


def _is_definition(node: ast.stmt, first: bool) -> bool:
    """Code that only defines things: running the module would do nothing a reader wants traced."""
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return True  # the module docstring, or a bare string
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        value = node.value
        return value is None or _is_constant(value)
    return False


def _is_constant(node: ast.expr) -> bool:
    """A literal by its shape (nothing is built: a document is data here)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_constant(node.operand)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_is_constant(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_constant(k) for k in node.keys) and all(_is_constant(v) for v in node.values)
    return False
