"""The part of a module a prediction of one function needs, so a long file fits the model's context.

A neural world reads the program's source before its trace. For a call of `f` in a module of many
functions, only some of it matters: `f` itself, the module-level definitions it names (and those
they name, transitively), the imports and module-level assignments. The rest (other functions, a
`__main__` block, top-level calls) cannot run during the call and only costs context. Frames name
source lines by their text, so the trace reads the same with or without the lines left out.
"""

from __future__ import annotations

import ast

DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
KEPT_STATEMENTS = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.AugAssign)


def focus_lines(text: str, function: str) -> frozenset[int] | None:
    """Line numbers to show for a call of `function`; None to show the whole text (it does not
    parse, `function` is not a module-level name, or nothing would be left out)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    named = {node.name: node for node in tree.body if isinstance(node, DEFINITIONS)}
    target = named.get(function) or _class_holding(tree, function)
    if target is None:
        return None
    kept: list[ast.stmt] = [node for node in tree.body if isinstance(node, KEPT_STATEMENTS)]
    queue: list[ast.stmt] = [target, *kept]
    chosen = {id(target)}
    while queue:
        node = queue.pop()
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and child.id in named and id(named[child.id]) not in chosen:
                chosen.add(id(named[child.id]))
                queue.append(named[child.id])
    kept.extend(node for node in named.values() if id(node) in chosen)
    lines = frozenset(line for node in kept for line in _span(node))
    code_lines = {
        i + 1 for i, line in enumerate(text.splitlines()) if line.strip() and not line.lstrip().startswith("#")
    }
    return None if code_lines <= lines else lines


def _class_holding(tree: ast.Module, function: str) -> ast.ClassDef | None:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(
            isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == function for item in node.body
        ):
            return node
    return None


def _span(node: ast.stmt) -> range:
    decorators = getattr(node, "decorator_list", [])
    first = min([node.lineno, *(d.lineno for d in decorators)])
    return range(first, (node.end_lineno or node.lineno) + 1)
