"""Safe handling of value text: parse reprs into values, and evaluate user expressions over them.

World models describe values as repr text (a recorded repr, or a model's prediction). Nothing here
ever calls `eval`: reprs are parsed by walking their AST (Python literals, plus the shapes reprs
take: `set()`, `Point(x=1, y=2)`, `<Foo object>`), and expressions a user types into a watch,
hover, REPL or breakpoint condition are interpreted node by node over those parsed values, with
only side-effect-free operations allowed and sizes bounded.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass, field

from neural_dap.core.state import TRUNCATION_MARK

MAX_SEQUENCE = 100_000  # elements a computed str/list/tuple may have
MAX_ITERATIONS = 100_000  # steps of one comprehension
MAX_INT_BITS = 10_000


class EvaluationError(Exception):
    """An expression that cannot be evaluated safely here; the message says why."""


@dataclass(frozen=True)
class Opaque:
    """A value known only by its text (an object repr, a truncated or unparseable repr)."""

    text: str

    def __repr__(self) -> str:
        return self.text


@dataclass(frozen=True)
class ObjectRepr:
    """A repr shaped like a constructor call: `Point(x=1, y=2)`, `Counter({'a': 1})`."""

    name: str
    args: tuple = ()
    kwargs: tuple[tuple[str, object], ...] = field(default=())

    def __repr__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        return f"{self.name}({', '.join(parts)})"

    def attribute(self, name: str) -> object:
        for key, value in self.kwargs:
            if key == name:
                return value
        raise EvaluationError(f"{self.name} has no attribute {name!r} in its repr")


def parse_repr(text: str) -> object:
    """The value a repr describes, or `Opaque(text)` when it is not a parseable literal shape."""
    if text.endswith(TRUNCATION_MARK) or len(text) > 200_000:
        return Opaque(text)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return Opaque(text)
    try:
        return _literal(tree.body)
    except (ValueError, TypeError, RecursionError, MemoryError):
        return Opaque(text)


_CONSTRUCTORS = {"set": set, "frozenset": frozenset, "tuple": tuple, "list": list, "dict": dict, "bytearray": bytearray}


def _literal(node: ast.AST) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple):
        return tuple(_literal(e) for e in node.elts)
    if isinstance(node, ast.List):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Set):
        return {_literal(e) for e in node.elts}
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("dict unpacking")
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _literal(node.operand)
        if isinstance(operand, (int, float, complex)) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else operand
        raise ValueError("unary on non-number")
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        # complex literals: 1+2j
        left, right = _literal(node.left), _literal(node.right)
        if isinstance(left, (int, float)) and isinstance(right, complex):
            return left + right if isinstance(node.op, ast.Add) else left - right
        raise ValueError("arithmetic in a repr")
    if isinstance(node, ast.Name) and node.id in ("inf", "nan"):
        return math.inf if node.id == "inf" else math.nan
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
        name = _dotted(node.func)
        args = tuple(_literal(a) for a in node.args)
        kwargs = tuple((k.arg, _literal(k.value)) for k in node.keywords if k.arg is not None)
        if name in _CONSTRUCTORS and not kwargs and len(args) <= 1:
            try:
                return _CONSTRUCTORS[name](*args)
            except TypeError:
                pass
        return ObjectRepr(name, args, kwargs)
    if isinstance(node, ast.Constant) and node.value is Ellipsis:
        return Ellipsis
    raise ValueError(f"not a literal: {type(node).__name__}")


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise ValueError("not a name")


def children(value: object) -> list[tuple[str, object]]:
    """Named children for a variables tree: items of containers, fields of object reprs."""
    if isinstance(value, dict):
        return [(repr(k), v) for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        try:
            items = sorted(value)
        except TypeError:
            items = list(value)
        return [(str(i), v) for i, v in enumerate(items)]
    if isinstance(value, ObjectRepr):
        return [(str(i), v) for i, v in enumerate(value.args)] + list(value.kwargs)
    return []


def has_children(value: object) -> bool:
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        return len(value) > 0
    return isinstance(value, ObjectRepr) and bool(value.args or value.kwargs)


def type_name(value: object) -> str:
    if isinstance(value, ObjectRepr):
        return value.name
    if isinstance(value, Opaque):
        text = value.text
        if text.startswith("<") and " " in text:
            return text[1:].split(" ", 1)[0].rsplit(".", 1)[-1]
        return ""
    return type(value).__name__


def show(value: object) -> str:
    """How a value is written back (its repr; opaque text as it came)."""
    if isinstance(value, Opaque):
        return value.text
    try:
        return repr(value)
    except Exception:  # noqa: BLE001 (an exotic float or a huge int)
        return "<unprintable>"


# -- evaluating user expressions ---------------------------------------------------------------------

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


def _bounded(value: object) -> object:
    if isinstance(value, (str, bytes, list, tuple, dict, set)) and len(value) > MAX_SEQUENCE:
        raise EvaluationError(f"the result would have {len(value)} elements (limit {MAX_SEQUENCE})")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise EvaluationError("the result is too large an integer")
    return value


def _safe_sorted(items, key=None, reverse=False):
    if key is not None:
        raise EvaluationError("sorted(key=...) is not supported here")
    return sorted(items, reverse=reverse)


_BUILTINS = {
    "len": len,
    "abs": abs,
    "min": min,
    "max": max,
    "sum": sum,
    "sorted": _safe_sorted,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "repr": repr,
    "list": list,
    "tuple": tuple,
    "set": set,
    "frozenset": frozenset,
    "dict": dict,
    "any": any,
    "all": all,
    "round": round,
    "reversed": lambda x: list(reversed(x)),
    "enumerate": lambda x, start=0: list(enumerate(x, start)),
    "zip": lambda *xs: list(zip(*xs)),
    "range": lambda *a: _bounded(list(range(*a))) if len(range(*a)) <= MAX_SEQUENCE else _too_long(),
    "ord": ord,
    "chr": chr,
    "divmod": divmod,
    "isinstance": None,  # refused with a clear message below
    "type": lambda x: type_name(x),
}
_CONSTANTS = {"True": True, "False": False, "None": None}
# Methods without side effects, by receiver type.
_METHODS: dict[type, frozenset[str]] = {
    str: frozenset(
        "upper lower strip lstrip rstrip startswith endswith split rsplit splitlines count find rfind index rindex "
        "isdigit isalpha isalnum isspace isupper islower istitle isnumeric isdecimal replace join title capitalize "
        "swapcase center ljust rjust zfill partition rpartition casefold expandtabs removeprefix removesuffix".split()
    ),
    list: frozenset("count index copy".split()),
    tuple: frozenset("count index".split()),
    dict: frozenset("get keys values items copy".split()),
    set: frozenset("issubset issuperset union intersection difference isdisjoint copy".split()),
    frozenset: frozenset("issubset issuperset union intersection difference isdisjoint copy".split()),
    bytes: frozenset("decode hex count find startswith endswith".split()),
}


def _too_long():
    raise EvaluationError(f"range longer than {MAX_SEQUENCE}")


class SafeEvaluator:
    """Evaluates an expression over named values without executing anything."""

    def __init__(self, names: dict[str, object]) -> None:
        self.names = names
        self.steps = 0

    def evaluate(self, expression: str) -> object:
        try:
            tree = ast.parse(expression.strip(), mode="eval")
        except SyntaxError as exc:
            raise EvaluationError(f"invalid expression: {exc.msg}") from None
        try:
            return self.eval(tree.body)
        except EvaluationError:
            raise
        except RecursionError:
            raise EvaluationError("the expression is nested too deeply") from None
        except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError, AttributeError, OverflowError) as exc:
            raise EvaluationError(f"{type(exc).__name__}: {exc}") from None

    def _tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_ITERATIONS:
            raise EvaluationError("the expression takes too many steps")

    def eval(self, node: ast.AST) -> object:  # noqa: C901 (one branch per node type)
        self._tick()
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.names:
                value = self.names[node.id]
                if isinstance(value, Opaque):
                    return value
                return value
            if node.id in _CONSTANTS:
                return _CONSTANTS[node.id]
            if node.id in _BUILTINS:
                return _Builtin(node.id)
            raise EvaluationError(f"name {node.id!r} is not defined here")
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    items.extend(self.eval(e.value))
                else:
                    items.append(self.eval(e))
            kind = {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)]
            return _bounded(kind(items))
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise EvaluationError("** in a dict display is not supported")
            return {self.eval(k): self.eval(v) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.UnaryOp):
            operand = self._plain(self.eval(node.operand))
            if isinstance(node.op, ast.Not):
                return not operand
            op = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[type(node.op)]
            return op(operand)
        if isinstance(node, ast.BinOp):
            left = self._plain(self.eval(node.left))
            right = self._plain(self.eval(node.right))
            self._check_size(node.op, left, right)
            return _bounded(_BINOPS[type(node.op)](left, right))
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                result: object = True
                for v in node.values:
                    result = self.eval(v)
                    if not self._truth(result):
                        return result
                return result
            result = False
            for v in node.values:
                result = self.eval(v)
                if self._truth(result):
                    return result
            return result
        if isinstance(node, ast.Compare):
            left = self._plain(self.eval(node.left))
            for op, comp in zip(node.ops, node.comparators):
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
            return target[index]
        if isinstance(node, ast.Attribute):
            target = self.eval(node.value)
            if isinstance(target, ObjectRepr):
                return target.attribute(node.attr)
            return _Method(target, node.attr)
        if isinstance(node, ast.Call):
            func = self.eval(node.func)
            args = [self.eval(a) for a in node.args if not isinstance(a, ast.Starred)]
            if any(isinstance(a, ast.Starred) for a in node.args):
                raise EvaluationError("*args in a call is not supported here")
            kwargs = {k.arg: self.eval(k.value) for k in node.keywords if k.arg is not None}
            return self._call(func, args, kwargs)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return self._comprehension(node)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue):
                    value = self.eval(v.value)
                    parts.append(repr(value) if v.conversion == ord("r") else str(value))
            return "".join(parts)
        raise EvaluationError(f"{type(node).__name__} is not allowed in a debugger expression")

    def _slice(self, node: ast.AST) -> object:
        if isinstance(node, ast.Slice):
            return slice(*(self._plain(self.eval(p)) if p is not None else None for p in (node.lower, node.upper, node.step)))
        return self._plain(self.eval(node))

    def _plain(self, value: object) -> object:
        if isinstance(value, Opaque):
            raise EvaluationError(f"the value {value.text[:60]!r} is only known as text")
        if isinstance(value, (_Builtin, _Method)):
            raise EvaluationError("a function is not a value here")
        return value

    def _truth(self, value: object) -> bool:
        return bool(self._plain(value))

    @staticmethod
    def _check_size(op: ast.operator, left: object, right: object) -> None:
        if isinstance(op, ast.Mult):
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, bytes, list, tuple)) and isinstance(n, int) and len(seq) * max(n, 0) > MAX_SEQUENCE:
                    raise EvaluationError("the result would be too long")
        if isinstance(op, ast.Pow) and isinstance(left, int) and isinstance(right, int):
            if right > 0 and abs(left) > 1 and right * max(abs(left), 2).bit_length() > MAX_INT_BITS:
                raise EvaluationError("the result is too large an integer")
        if isinstance(op, ast.LShift) and isinstance(right, int) and right > MAX_INT_BITS:
            raise EvaluationError("the result is too large an integer")

    def _call(self, func: object, args: list, kwargs: dict) -> object:
        args = [self._plain(a) for a in args]
        kwargs = {k: self._plain(v) for k, v in kwargs.items()}
        if isinstance(func, _Builtin):
            impl = _BUILTINS[func.name]
            if impl is None:
                raise EvaluationError(f"{func.name}() is not available here")
            return _bounded(impl(*args, **kwargs))
        if isinstance(func, _Method):
            receiver = self._plain(func.receiver)
            allowed = _METHODS.get(type(receiver), frozenset())
            if func.name not in allowed:
                raise EvaluationError(f"{type(receiver).__name__}.{func.name}() is not available here (only methods without side effects)")
            result = getattr(receiver, func.name)(*args, **kwargs)
            if type(result).__name__ in ("dict_keys", "dict_values", "dict_items"):
                result = list(result)
            return _bounded(result)
        raise EvaluationError("only builtins and side-effect-free methods can be called here")

    def _comprehension(self, node) -> object:
        results: list = []
        outer = dict(self.names)

        def loop(generators, scope):
            if not generators:
                self.names = scope
                if isinstance(node, ast.DictComp):
                    results.append((self.eval(node.key), self.eval(node.value)))
                else:
                    results.append(self.eval(node.elt))
                return
            gen = generators[0]
            self.names = scope
            iterable = self._plain(self.eval(gen.iter))
            for item in iterable:
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
        return _bounded(results)


def _bind(target: ast.AST, value: object, scope: dict) -> None:
    if isinstance(target, ast.Name):
        scope[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        values = list(value)  # type: ignore[call-overload]
        if len(values) != len(target.elts):
            raise EvaluationError("cannot unpack: wrong number of values")
        for t, v in zip(target.elts, values):
            _bind(t, v, scope)
    else:
        raise EvaluationError("unsupported loop target")


@dataclass(frozen=True)
class _Builtin:
    name: str


@dataclass(frozen=True)
class _Method:
    receiver: object
    name: str


def evaluate(expression: str, local_reprs: dict[str, str]) -> object:
    """Evaluate `expression` over locals given as repr text (each parsed safely first)."""
    names = {name: parse_repr(text) for name, text in local_reprs.items()}
    return SafeEvaluator(names).evaluate(expression)
