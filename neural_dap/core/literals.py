"""A value the user typed for a variable (setVariable, `set NAME VALUE`), read as a Python literal.

The text comes from a client or a socket: it is parsed, never executed, within limits of size,
nesting and item count, so a value cannot hold up or exhaust the adapter. Accepted: ints, floats,
complex numbers, strings, bytes, True/False/None, and tuples, lists, dicts and sets of those
(`set()` for the empty set). Anything else (a name, a call, an operator) is refused with the reason.
"""

from __future__ import annotations

import ast

MAX_TEXT = 10_000  # characters of the typed value
MAX_NODES = 2_000  # literal pieces (items, keys, values)
MAX_DEPTH = 32  # nesting of containers

HINT = "a Python literal such as 3, -1.5, 'text', None, [1, 2], (1, 'a') or {'k': [True]}"


class LiteralError(ValueError):
    """The text is not a value this adapter accepts; the message says why, as the user reads it."""


def parse_literal(text: str) -> object:
    """The value `text` spells. Raises LiteralError for anything that is not a bounded literal."""
    if len(text) > MAX_TEXT:
        raise LiteralError(f"the value is {len(text)} characters long; at most {MAX_TEXT} are accepted")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc) or type(exc).__name__
        raise LiteralError(f"{_short(text)} is not {HINT} ({reason})") from None
    _check(tree.body, text)
    try:
        return ast.literal_eval(tree)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise LiteralError(f"{_short(text)} is not {HINT} ({exc})") from None


def _check(root: ast.AST, text: str) -> None:
    """Only literal nodes, few enough and shallow enough (ast.literal_eval alone accepts `1+2j`-style
    arithmetic and would walk any size)."""
    pending: list[tuple[ast.AST, int]] = [(root, 0)]
    count = 0
    while pending:
        node, depth = pending.pop()
        count += 1
        if count > MAX_NODES:
            raise LiteralError(f"the value has more than {MAX_NODES} parts")
        if depth > MAX_DEPTH:
            raise LiteralError(f"the value is nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, ast.Constant):
            if node.value is Ellipsis:
                raise LiteralError(f"{_short(text)} is not {HINT}")
            continue
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            if isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float, complex)):
                continue
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and _is_complex(node):
            continue  # 1+2j: how a complex number is written
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            pending.extend((item, depth + 1) for item in node.elts)
            continue
        elif isinstance(node, ast.Dict):
            if any(key is None for key in node.keys):
                raise LiteralError("a dict value cannot unpack another one (**)")
            pending.extend((item, depth + 1) for item in [*node.keys, *node.values] if item is not None)
            continue
        elif _is_empty_set(node):
            continue
        raise LiteralError(f"{_short(ast.unparse(node))} is not {HINT}; values are never executed")


def _is_complex(node: ast.BinOp) -> bool:
    def real(n: ast.AST) -> bool:
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            n = n.operand
        return isinstance(n, ast.Constant) and type(n.value) in (int, float)

    right = node.right
    return real(node.left) and isinstance(right, ast.Constant) and type(right.value) is complex


def _is_empty_set(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "set"
        and not node.args
        and not node.keywords
    )


def _short(text: str, limit: int = 60) -> str:
    text = text.strip()
    return repr(text if len(text) <= limit else text[:limit] + "…")
