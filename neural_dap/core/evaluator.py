"""Evaluate what a user types (a watch, a hover, the REPL, a breakpoint condition) over repr values.

Nothing here calls `eval`. The expression is interpreted node by node over values parsed from
repr text (`neural_dap.core.reprs`), with only side-effect-free operations allowed, and within a
budget that is checked *before* anything large is built: elements per result, elements allocated
in all, interpreter steps and wall time. One expression can therefore neither execute code, nor
exhaust memory, nor hold the event loop for long: every way it can fail is an `EvaluationError`.
"""

from __future__ import annotations

import ast
import operator
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from neural_dap.core.reprs import ObjectRepr, Opaque, from_value, parse_repr, show, type_name
from neural_dap.core.state import Value

MAX_EXPRESSION = 10_000  # characters of an expression
MAX_SEQUENCE = 100_000  # elements (or characters) one result may have
MAX_ALLOCATED = 1_000_000  # elements all results of one evaluation may have together
MAX_STEPS = 100_000  # interpreter steps of one evaluation
MAX_INT_BITS = 10_000
MAX_ROUND_DIGITS = 400
DEFAULT_SECONDS = 1.0


class EvaluationError(Exception):
    """An expression that cannot be evaluated safely here; the message says why. `raised`: Python
    itself raised it, computing on the values given (a ZeroDivisionError, a KeyError), as the
    program would; otherwise the evaluator could not compute it (a value known only as text, a
    name it was not given, a construct it refuses, its budget)."""

    def __init__(self, message: str, raised: bool = False) -> None:
        super().__init__(message)
        self.raised = raised


@dataclass(frozen=True)
class Budget:
    steps: int = MAX_STEPS
    seconds: float = DEFAULT_SECONDS
    allocated: int = MAX_ALLOCATED


_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor,
}
_CMPOPS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}
_CONSTANTS = {"True": True, "False": False, "None": None}
# Methods without side effects, by receiver type.
_METHODS: dict[type, frozenset[str]] = {
    str: frozenset(
        (
            "upper lower strip lstrip rstrip startswith endswith split rsplit splitlines count find rfind index "
            "rindex isdigit isalpha isalnum isspace isupper islower istitle isnumeric isdecimal replace join "
            "title capitalize swapcase center ljust rjust zfill partition rpartition casefold expandtabs "
            "removeprefix removesuffix"
        ).split()
    ),
    list: frozenset(["count", "index", "copy"]),
    tuple: frozenset(["count", "index"]),
    dict: frozenset(["get", "keys", "values", "items", "copy"]),
    set: frozenset(["issubset", "issuperset", "union", "intersection", "difference", "isdisjoint", "copy"]),
    frozenset: frozenset(["issubset", "issuperset", "union", "intersection", "difference", "isdisjoint", "copy"]),
    bytes: frozenset(["decode", "hex", "count", "find", "startswith", "endswith"]),
}
_WIDTH_METHODS = frozenset({"center", "ljust", "rjust", "zfill"})
_FORMAT_NUMBER = re.compile(r"%[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


@dataclass(frozen=True)
class _Builtin:
    name: str


@dataclass(frozen=True)
class _Method:
    receiver: object
    name: str


class SafeEvaluator:
    """Evaluates an expression over named values without executing anything."""

    def __init__(self, names: dict[str, object], budget: Budget = Budget()) -> None:
        self.names = names
        self.budget = budget
        self.steps = 0
        self.allocated = 0
        self.deadline = 0.0

    def evaluate(self, expression: str) -> object:
        if len(expression) > MAX_EXPRESSION:
            raise EvaluationError(f"the expression is longer than {MAX_EXPRESSION} characters")
        self.steps = self.allocated = 0
        self.deadline = time.monotonic() + self.budget.seconds
        try:
            tree = ast.parse(expression.strip(), mode="eval")
            return self.eval(tree.body)
        except EvaluationError:
            raise
        except SyntaxError as exc:
            raise EvaluationError(f"invalid expression: {exc.msg}") from None
        except (RecursionError, MemoryError):
            raise EvaluationError("the expression is nested too deeply or too large") from None
        except Exception as exc:
            raise EvaluationError(f"{type(exc).__name__}: {exc}", raised=True) from None

    def value(self, expression: str) -> object:
        """`evaluate`, refusing a result that is no value of the program's (a method not called, a
        builtin, text): what a condition or a log point must be decided on."""
        return self._plain(self.evaluate(expression))

    # -- the budget ---------------------------------------------------------------------------------
    def _tick(self) -> None:
        self.steps += 1
        if self.steps > self.budget.steps:
            raise EvaluationError("the expression takes too many steps")
        if self.steps % 64 == 0 and time.monotonic() > self.deadline:
            raise EvaluationError(f"the expression took longer than {self.budget.seconds:g} s")

    def _room(self, size: int) -> None:
        """Refuse a result of `size` elements before it is built."""
        if size > MAX_SEQUENCE:
            raise EvaluationError(f"the result would have {size} elements (limit {MAX_SEQUENCE})")
        if self.allocated + size > self.budget.allocated:
            raise EvaluationError(f"the expression would build more than {self.budget.allocated} elements in all")
        self.allocated += size

    def _bounded(self, value: object) -> object:
        if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
            self._room(len(value))
        elif isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise EvaluationError("the result is too large an integer")
        return value

    # -- nodes ---------------------------------------------------------------------------------------
    def eval(self, node: ast.AST) -> object:
        self._tick()
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return self.names[node.id]
            if node.id in _CONSTANTS:
                return _CONSTANTS[node.id]
            if node.id in _BUILTIN_NAMES:
                return _Builtin(node.id)
            raise EvaluationError(f"name {node.id!r} is not defined here")
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items: list = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    value = self._plain(self.eval(e.value))
                    self._room(len(value) if hasattr(value, "__len__") else MAX_SEQUENCE + 1)  # type: ignore[arg-type]
                    items.extend(value)  # type: ignore[call-overload,arg-type]
                else:
                    items.append(self.eval(e))
            kind = {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)]
            return self._bounded(kind(items))
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise EvaluationError("** in a dict display is not supported")
            return self._bounded({self.eval(k): self.eval(v) for k, v in zip(node.keys, node.values, strict=False)})  # type: ignore[arg-type]
        if isinstance(node, ast.UnaryOp):
            operand = self._plain(self.eval(node.operand))
            if isinstance(node.op, ast.Not):
                return not operand
            unary: dict[type, Callable[[Any], Any]] = {
                ast.USub: operator.neg,
                ast.UAdd: operator.pos,
                ast.Invert: operator.invert,
            }
            return unary[type(node.op)](operand)
        if isinstance(node, ast.BinOp):
            left = self._plain(self.eval(node.left))
            right = self._plain(self.eval(node.right))
            self._check_binop(node.op, left, right)
            return self._bounded(_BINOPS[type(node.op)](left, right))
        if isinstance(node, ast.BoolOp):
            result: object = isinstance(node.op, ast.And)
            for v in node.values:
                result = self.eval(v)
                if self._truth(result) != isinstance(node.op, ast.And):
                    return result
            return result
        if isinstance(node, ast.Compare):
            left = self._plain(self.eval(node.left))
            for op, comp in zip(node.ops, node.comparators, strict=False):
                right = self._plain(self.eval(comp))
                if not _CMPOPS[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self.eval(node.body) if self._truth(self.eval(node.test)) else self.eval(node.orelse)
        if isinstance(node, ast.Subscript):
            target = self._plain(self.eval(node.value))
            index = self._slice(node.slice)
            if isinstance(index, slice) and isinstance(target, (str, bytes, list, tuple)):
                self._room(len(range(*index.indices(len(target)))))
            return target[index]  # type: ignore[index]
        if isinstance(node, ast.Attribute):
            target = self._plain(self.eval(node.value))
            if isinstance(target, ObjectRepr):
                return target.attribute(node.attr)
            return _Method(target, node.attr)
        if isinstance(node, ast.Call):
            if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                raise EvaluationError("*args and **kwargs in a call are not supported here")
            func = self.eval(node.func)
            args = [self.eval(a) for a in node.args]
            kwargs = {str(k.arg): self.eval(k.value) for k in node.keywords}
            return self._call(func, args, kwargs)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return self._comprehension(node)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue):
                    if v.format_spec is not None:
                        raise EvaluationError("format specifications in f-strings are not supported here")
                    value = self._plain(self.eval(v.value))
                    parts.append(_text(value, repr_=v.conversion == ord("r")))
                self._room(sum(len(p) for p in parts))
            return "".join(parts)
        raise EvaluationError(f"{type(node).__name__} is not allowed in a debugger expression")

    def _slice(self, node: ast.AST) -> object:
        if isinstance(node, ast.Slice):
            return slice(
                *(self._plain(self.eval(p)) if p is not None else None for p in (node.lower, node.upper, node.step))
            )
        return self._plain(self.eval(node))

    def _plain(self, value: object) -> object:
        if isinstance(value, Opaque):
            raise EvaluationError(f"the value {value.text[:60]!r} is only known as text")
        if isinstance(value, (_Builtin, _Method)):
            raise EvaluationError("a function is not a value here")
        return value

    def _truth(self, value: object) -> bool:
        return bool(self._plain(value))

    def _check_binop(self, op: ast.operator, left: object, right: object) -> None:
        """Refuse operations whose result would be too large, before computing it."""
        if isinstance(op, ast.Mult):
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, bytes, list, tuple)) and isinstance(n, int):
                    self._room(len(seq) * max(n, 0))
        sequences = (str, bytes, list, tuple)
        if isinstance(op, ast.Add) and isinstance(left, sequences) and isinstance(right, sequences):
            self._room(len(left) + len(right))
        if (
            isinstance(op, ast.Pow)
            and isinstance(left, int)
            and isinstance(right, int)
            and right > 0
            and abs(left) > 1
            and right * abs(left).bit_length() > MAX_INT_BITS
        ):
            raise EvaluationError("the result is too large an integer")
        if (
            isinstance(op, ast.LShift)
            and isinstance(right, int)
            and isinstance(left, int)
            and right + left.bit_length() > MAX_INT_BITS
        ):
            raise EvaluationError("the result is too large an integer")
        if isinstance(op, ast.Mod) and isinstance(left, (str, bytes)):
            self._check_percent_format(left, right)

    def _check_percent_format(self, fmt: str | bytes, args: object) -> None:
        text = fmt.decode("latin-1") if isinstance(fmt, bytes) else fmt
        for m in _FORMAT_NUMBER.finditer(text):
            for part in m.groups():
                if part == "*":
                    raise EvaluationError("'*' widths in % formatting are not supported here")
                if part and int(part) > MAX_SEQUENCE:
                    raise EvaluationError(f"a % format width of {part} is over the {MAX_SEQUENCE} limit")

    def _call(self, func: object, args: list, kwargs: dict) -> object:
        args = [self._plain(a) for a in args]
        kwargs = {k: self._plain(v) for k, v in kwargs.items()}
        if isinstance(func, _Builtin):
            return self._bounded(_BUILTINS[func.name](self, *args, **kwargs))
        if isinstance(func, _Method):
            receiver = self._plain(func.receiver)
            allowed = _METHODS.get(type(receiver), frozenset())
            if func.name not in allowed:
                raise EvaluationError(
                    f"{type(receiver).__name__}.{func.name}() is not available here (only methods without side effects)"
                )
            self._check_method(receiver, func.name, args)
            result = getattr(receiver, func.name)(*args, **kwargs)
            if type(result).__name__ in ("dict_keys", "dict_values", "dict_items"):
                result = list(result)
            return self._bounded(result)
        raise EvaluationError("only builtins and side-effect-free methods can be called here")

    def _check_method(self, receiver: object, name: str, args: list) -> None:
        """Size a string method's result from its arguments before calling it."""
        if not isinstance(receiver, str):
            return
        if name in _WIDTH_METHODS and args and isinstance(args[0], int):
            self._room(max(args[0], len(receiver)))
        elif name == "expandtabs":
            tab = args[0] if args and isinstance(args[0], int) else 8
            self._room(len(receiver) + receiver.count("\t") * max(tab, 0))
        elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
            old, new = args[0], args[1]
            hits = len(receiver) + 1 if not old else receiver.count(old)
            if len(args) > 2 and isinstance(args[2], int) and args[2] >= 0:
                hits = min(hits, args[2])
            self._room(len(receiver) + hits * max(0, len(new) - len(old)))
        elif name == "join" and args and isinstance(args[0], (list, tuple, set, frozenset, dict, str)):
            parts = args[0]
            size = sum(len(p) for p in parts if isinstance(p, str)) + len(receiver) * max(0, len(parts) - 1)
            self._room(size)

    def _comprehension(self, node) -> object:
        results: list = []
        outer = dict(self.names)

        def loop(generators, scope):
            if not generators:
                self.names = scope
                self._room(1)
                if isinstance(node, ast.DictComp):
                    results.append((self.eval(node.key), self.eval(node.value)))
                else:
                    results.append(self.eval(node.elt))
                return
            gen = generators[0]
            self.names = scope
            iterable = self._plain(self.eval(gen.iter))
            for item in iterable:  # type: ignore[attr-defined]
                self._tick()
                inner = dict(scope)
                _bind(gen.target, item, inner)
                self.names = inner
                if all(self._truth(self.eval(cond)) for cond in gen.ifs):
                    loop(generators[1:], inner)

        try:
            loop(node.generators, outer)
        finally:
            self.names = outer
        if isinstance(node, ast.SetComp):
            return set(results)
        if isinstance(node, ast.DictComp):
            return dict(results)
        return results


def _bind(target: ast.AST, value: object, scope: dict) -> None:
    if isinstance(target, ast.Name):
        scope[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        values = list(value)  # type: ignore[call-overload]
        if len(values) != len(target.elts):
            raise EvaluationError("cannot unpack: wrong number of values")
        for t, v in zip(target.elts, values, strict=False):
            _bind(t, v, scope)
    else:
        raise EvaluationError("unsupported loop target")


def _text(value: object, repr_: bool) -> str:
    return show(value) if repr_ or not isinstance(value, str) else value


# -- builtins: each takes the evaluator first, so it can size its result before building it -----------


def _sized(ev: SafeEvaluator, value: object) -> int:
    try:
        return len(value)  # type: ignore[arg-type]
    except TypeError:
        raise EvaluationError(f"{type_name(value)} has no length") from None


def _range(ev: SafeEvaluator, *args: int) -> list:
    r = range(*args)
    ev._room(len(r))
    return list(r)


def _sorted(ev: SafeEvaluator, items, key=None, reverse=False):
    if key is not None:
        raise EvaluationError("sorted(key=...) is not supported here")
    return sorted(items, reverse=reverse)


def _sum(ev: SafeEvaluator, items, start=0):
    items = list(items)
    if isinstance(start, (list, tuple, str)) or any(not isinstance(x, (int, float, complex)) for x in items):
        ev._room(_sized(ev, start) + sum(_sized(ev, x) for x in items))
    return sum(items, start)


def _round(ev: SafeEvaluator, number, ndigits=None):
    if ndigits is not None and isinstance(ndigits, int) and abs(ndigits) > MAX_ROUND_DIGITS:
        raise EvaluationError(f"round() with more than {MAX_ROUND_DIGITS} digits is not supported here")
    return round(number) if ndigits is None else round(number, ndigits)


def _dir(ev: SafeEvaluator, *args):
    """`dir()`: the names in scope, as `'x' in dir()` asks (of an object: not here, it would run its
    `__dir__`)."""
    if args:
        raise EvaluationError("dir(object) is not available here; dir() lists the names in scope")
    return sorted(name for name in ev.names if name.isidentifier())


def _refused(name: str):
    def call(ev: SafeEvaluator, *args, **kwargs):
        raise EvaluationError(f"{name}() is not available here")

    return call


def _plain_builtin(fn):
    return lambda ev, *args, **kwargs: fn(*args, **kwargs)


_BUILTINS = {
    "len": _plain_builtin(len),
    "abs": _plain_builtin(abs),
    "min": _plain_builtin(min),
    "max": _plain_builtin(max),
    "sum": _sum,
    "sorted": _sorted,
    "str": lambda ev, *a: _text(a[0], repr_=False) if a else "",
    "int": _plain_builtin(int),
    "float": _plain_builtin(float),
    "bool": _plain_builtin(bool),
    "repr": lambda ev, value: _text(value, repr_=True),
    "list": _plain_builtin(list),
    "tuple": _plain_builtin(tuple),
    "set": _plain_builtin(set),
    "frozenset": _plain_builtin(frozenset),
    "dict": _plain_builtin(dict),
    "any": _plain_builtin(any),
    "all": _plain_builtin(all),
    "round": _round,
    "reversed": lambda ev, x: list(reversed(x)),
    "enumerate": lambda ev, x, start=0: list(enumerate(x, start)),
    "zip": lambda ev, *xs: list(zip(*xs, strict=False)),
    "range": _range,
    "ord": _plain_builtin(ord),
    "chr": _plain_builtin(chr),
    "divmod": _plain_builtin(divmod),
    "isinstance": _refused("isinstance"),
    "type": lambda ev, x: type_name(x),
    "dir": _dir,
}
_BUILTIN_NAMES = frozenset(_BUILTINS)


def evaluate(
    expression: str, local_reprs: dict[str, str], budget: Budget = Budget(), values: Mapping[str, Value] | None = None
) -> object:
    """Evaluate `expression` over locals given as repr text (each parsed safely first); `values`:
    their recorded structure, so an object's recorded attributes can be read (`self.items`)."""
    structured = values or {}
    names = {
        name: from_value(structured[name]) if name in structured else parse_repr(text)
        for name, text in local_reprs.items()
    }
    return SafeEvaluator(names, budget).evaluate(expression)
