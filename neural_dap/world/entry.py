"""The first state of a predicted session, built from the launch (never by running the program).

A call `f(<args>)` becomes f's call state with its parameters bound to the argument reprs; a
return value becomes f's return state; a whole script starts at its module's first line. The
argument text is parsed, not evaluated: literals keep their repr, anything else is shown as written.
"""

from __future__ import annotations

import ast

from neural_dap.core.source import SourceInfo
from neural_dap.core.state import State
from neural_dap.core.world import Entry, WorldError


def _function_node(source: SourceInfo, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    try:
        tree = ast.parse(source.text)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def _value_text(node: ast.AST) -> str:
    try:
        return repr(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.unparse(node)


def bind_arguments(source: SourceInfo, function: str, args_text: str) -> dict[str, str]:
    """Parameter name -> repr text, as the call state's locals would show them."""
    try:
        call = ast.parse(f"_f({args_text})", mode="eval").body
    except SyntaxError as exc:
        raise WorldError(f"the arguments {args_text!r} are not valid Python: {exc.msg}") from None
    assert isinstance(call, ast.Call)
    node = _function_node(source, function)
    if node is None:
        raise WorldError(f"the program defines no function {function!r}")
    a = node.args
    positional = [p.arg for p in a.posonlyargs + a.args]
    bound: dict[str, str] = {}
    extra: list[str] = []
    for k, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            raise WorldError("*args in the entry arguments is not supported; write the values out")
        if k < len(positional):
            bound[positional[k]] = _value_text(arg)
        else:
            extra.append(_value_text(arg))
    kw_extra: dict[str, str] = {}
    names = set(positional) | {p.arg for p in a.kwonlyargs}
    for kw in call.keywords:
        if kw.arg is None:
            raise WorldError("**kwargs in the entry arguments is not supported; write the values out")
        if kw.arg in names:
            bound[kw.arg] = _value_text(kw.value)
        else:
            kw_extra[kw.arg] = _value_text(kw.value)
    defaults = a.defaults
    for name, default in zip(positional[len(positional) - len(defaults) :], defaults, strict=False):
        bound.setdefault(name, _value_text(default))
    for p, kw_default in zip(a.kwonlyargs, a.kw_defaults, strict=False):
        if kw_default is not None:
            bound.setdefault(p.arg, _value_text(kw_default))
    if extra and a.vararg is None:
        raise WorldError(
            f"{function}() takes {len(positional)} positional arguments but {len(positional) + len(extra)} were given"
        )
    if a.vararg is not None:
        bound[a.vararg.arg] = "(" + ", ".join(extra) + ("," if len(extra) == 1 else "") + ")"
    if kw_extra and a.kwarg is None:
        raise WorldError(f"{function}() got unexpected keyword arguments {sorted(kw_extra)}")
    if a.kwarg is not None:
        bound[a.kwarg.arg] = "{" + ", ".join(f"{k!r}: {v}" for k, v in kw_extra.items()) + "}"
    missing = [p for p in positional + [k.arg for k in a.kwonlyargs] if p not in bound]
    if missing:
        raise WorldError(f"{function}() is missing arguments {missing}")
    # locals appear as CPython lists them (co_varnames): positional, keyword-only, then *args, **kwargs
    order = (
        positional
        + [p.arg for p in a.kwonlyargs]
        + ([a.vararg.arg] if a.vararg else [])
        + ([a.kwarg.arg] if a.kwarg else [])
    )
    return {name: bound[name] for name in order if name in bound}


def entry_state(source: SourceInfo, path: str, entry: Entry | None) -> State:
    if entry is None:  # a whole script: its module starts at line 1 with nothing defined
        return State("call", 1, source.line_text(1), "<module>", 0, 0, {}, path=path)
    node = _function_node(source, entry.function)
    line = source.def_line(entry.function) or (
        min([node.lineno] + [d.lineno for d in node.decorator_list]) if node else None
    )
    if line is None:
        raise WorldError(f"the program defines no function {entry.function!r}")
    if entry.returns is not None:
        ret_line = source.last_return_line(entry.function) or line
        return State(
            "return", ret_line, source.line_text(ret_line), entry.function, 0, 0, {}, value=entry.returns, path=path
        )
    local_reprs = bind_arguments(source, entry.function, entry.args or "")
    return State("call", line, source.line_text(line), entry.function, 0, 0, local_reprs, path=path)
