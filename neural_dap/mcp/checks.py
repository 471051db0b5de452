"""Checks of what an agent asked for, each failing with a short error that names the problem.

An agent's mistake (a typo in a name, a line past the end of the file, a condition that does not
parse) must never come back as an empty answer that reads like a fact about the run ("never
called", "never changed"). Every message quotes the agent's text cut to `QUOTE_LIMIT` characters
(an 8,000-character expression is not echoed back) and, where a name was not found, offers the
nearest names that exist. Nothing here runs the agent's text: conditions are only compiled.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable

from neural_dap.core.source import SourceInfo
from neural_dap.mcp.sessions import ToolFailure

QUOTE_LIMIT = 80  # characters of an agent's text an error quotes
NEAREST = 3


def quote(text: object, limit: int = QUOTE_LIMIT) -> str:
    """`text` as an error shows it: its repr, cut, with the length said where it was cut."""
    shown = repr(text)
    if len(shown) <= limit:
        return shown
    size = len(text) if isinstance(text, str) else len(shown)
    return f"{shown[: limit - 1]}\u2026 ({size} characters)"


def nearest(name: str, known: Iterable[str]) -> list[str]:
    """The names of `known` most like `name` (a typo's likely intent), best first."""
    pool = sorted({k for k in known if k and k != name})
    close = difflib.get_close_matches(name, pool, n=NEAREST, cutoff=0.6)
    if not close:  # a prefix or a different case: `Total` for `total`, `calc` for `calculate`
        lowered = name.lower()
        close = [k for k in pool if k.lower().startswith(lowered) or lowered.startswith(k.lower())][:NEAREST]
    return close


def did_you_mean(name: str, known: Iterable[str]) -> str:
    found = nearest(name, known)
    return f"; nearest: {', '.join(found)}" if found else ""


def check_line(source: str | None, shown_path: str, line: int, what: str = "line") -> SourceInfo | None:
    """A line an agent named must be in the file and hold code (a breakpoint or log point on a
    blank line or a comment would never be reached). None: the source is not available to check."""
    if source is None:
        return None
    info = SourceInfo(source, shown_path)
    if not 1 <= line <= info.line_count:
        raise ToolFailure(f"{what} {line} is outside {shown_path} (no such line: it has lines 1 to {info.line_count})")
    code = info.executable_lines
    if line not in code:
        text = info.line_text(line).strip()
        kind = "a blank line" if not text else "a comment" if text.startswith("#") else f"`{text[:60]}`"
        near = sorted(code, key=lambda n: (abs(n - line), n))[:2]
        hint = f"; the nearest lines with code: {', '.join(map(str, sorted(near)))}" if near else ""
        raise ToolFailure(f"{what} {line} of {shown_path} has no code ({kind}){hint}")
    return info


def check_condition(condition: str) -> None:
    """A breakpoint's condition must be one Python expression: one that does not parse is refused
    (never treated as true, never as false). Only compiled here, never run."""
    try:
        compile(condition, "<condition>", "eval", dont_inherit=True)
    except SyntaxError as exc:
        raise ToolFailure(f"condition {quote(condition)} is not a Python expression ({exc.msg})") from None
    except (ValueError, MemoryError, RecursionError):
        raise ToolFailure(f"condition {quote(condition)} is not a Python expression") from None


def root_name(expression: str) -> str | None:
    """The variable an expression starts from (`total` of `total`, `self` of `self.items[0]`);
    None where it starts from something else (a call, a literal)."""
    try:
        node = ast.parse(expression.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def defined_functions(source: str) -> dict[str, int]:
    """Every function and method a source defines -> its `def` line (the first one of a name)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return {}
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.setdefault(node.name, node.lineno)
    return found


def names_in(source: str, function: str) -> set[str]:
    """The names a function's code uses or binds (its parameters included); for `<module>`, the
    top level's (not the bodies of its functions and classes). Read from the source's AST."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return set()
    if function == "<module>":
        return _names(tree, top_level=True)
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
            out |= _names(node, top_level=False)
    return out


def owners_of(source: str, name: str) -> list[str]:
    """The functions of a source that bind `name` (a parameter or an assignment): where a variable
    that is not the top level's lives."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            binds = any(
                (isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store))
                or (isinstance(n, ast.arg) and n.arg == name)
                for n in ast.walk(node)
            )
            if binds and node.name not in found:
                found.append(node.name)
    return found


def _names(scope: ast.AST, top_level: bool) -> set[str]:
    out: set[str] = set()
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            if top_level:  # a function's or class's body is not the top level's
                todo.extend(getattr(node, "decorator_list", []))
                continue
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        todo.extend(ast.iter_child_nodes(node))
    return out
