"""Calls written from values: a predicted call's arguments as argument text, and whether a
predicted value equals an expected one. Both read model text as literals; nothing is evaluated."""

from __future__ import annotations

import ast


def same_literal(predicted: str | None, expected: str) -> bool:
    if predicted is None:
        return False
    try:
        return ast.literal_eval(predicted) == ast.literal_eval(expected)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return predicted.strip() == expected.strip()


def call_text(code: str, local_reprs: dict[str, str], function: str = "f") -> str | None:
    """`function`'s argument text from the predicted call locals, if every one is a literal; else None.

    The text sent to the child is rebuilt from the *values*: each predicted repr is parsed as a
    literal and written again with `repr`, so no model text reaches the child as source (predicted
    reprs such as `1 #` or a string that closes the call could otherwise join into code). The
    child parses it with `literal_eval` only (`Program.literal_args`).
    """
    try:
        fn = next(n for n in ast.parse(code).body if isinstance(n, ast.FunctionDef) and n.name == function)
    except (StopIteration, SyntaxError):
        return None
    parts = []
    for param in fn.args.posonlyargs + fn.args.args:
        text = local_reprs.get(param.arg)
        if text is None:
            return None
        value = _literal(text)
        if value is _NOT_LITERAL:
            return None
        parts.append(repr(value))
    if fn.args.vararg is not None:
        values = _literal(local_reprs.get(fn.args.vararg.arg, "()"))
        if not isinstance(values, tuple):
            return None
        parts.extend(repr(v) for v in values)
    return ", ".join(parts)


_NOT_LITERAL = object()


def _literal(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL
