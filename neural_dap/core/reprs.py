"""Repr text as data: parse it into values without evaluating anything, and write values back.

World models describe values as repr text: a recorded repr, or a model's prediction. Both are
untrusted, so a repr is parsed by walking its AST (Python literals, plus the shapes reprs take:
`set()`, `Point(x=1, y=2)`, `<Foo object>`), and parsing never allocates more than the text's own
size: `bytearray(200000000)` stays the text it is rather than 200 MB. Writing values back
(`show`) is bounded too, because a value built from shared references (`[[0] * 10**5] * 10**5`)
can have a repr far larger than the memory it holds.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field

from neural_dap.core.state import TRUNCATION_MARK, Value

MAX_REPR_TEXT = 200_000  # longer reprs are kept as text
SHOW_LIMIT = 100_000  # characters `show` writes at most


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
        return bounded_repr(self)

    def attribute(self, name: str) -> object:
        for key, value in self.kwargs:
            if key == name:
                return value
        raise AttributeError(f"{self.name} has no attribute {name!r} in its repr")


@dataclass(frozen=True)
class RecordedObject(ObjectRepr):
    """An object whose repr is not a literal (`<Order object>`), with the attributes the recorder
    kept (`State.values`): `order.lines` reads them without a live copy of the program."""

    text: str = ""

    def __repr__(self) -> str:
        return self.text

    def attribute(self, name: str) -> object:
        for key, value in self.kwargs:
            if key == name:
                return value
        raise AttributeError(
            f"{name!r} is not among the recorded attributes of {self.text}; nothing of the program runs here"
        )


def from_value(value: Value) -> object:
    """A recorded structured value as the evaluator reads it: an object with recorded attributes
    where it has them, else what its repr parses to."""
    if not value.children or not value.repr.startswith("<"):
        return parse_repr(value.repr)
    fields = tuple((name, from_value(child)) for name, child in value.children if name.isidentifier())
    return RecordedObject(name=type_name_of(value), kwargs=fields, text=value.repr)


def type_name_of(value: Value) -> str:
    return value.type or value.repr.strip("<>").split(" ")[0]


def parse_repr(text: str) -> object:
    """The value a repr describes, or `Opaque(text)` when it is not a parseable literal shape."""
    if text.endswith(TRUNCATION_MARK) or len(text) > MAX_REPR_TEXT:
        return Opaque(text)
    try:
        tree = ast.parse(text.strip(), mode="eval")
        return _literal(tree.body)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return Opaque(text)


# Constructors whose repr wraps a literal of the same size: calling them on an already parsed
# container allocates no more than the text holds. (`bytearray(n)` with an int would allocate n.)
_CONSTRUCTORS: dict[str, type] = {"set": set, "frozenset": frozenset, "tuple": tuple, "list": list, "dict": dict}
_SIZED = (list, tuple, set, frozenset, dict, str, bytes)


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
        keys = [k for k in node.keys if k is not None]
        if len(keys) != len(node.keys):
            raise ValueError("dict unpacking")
        return {_literal(k): _literal(v) for k, v in zip(keys, node.values, strict=True)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _literal(node.operand)
        if isinstance(operand, (int, float, complex)) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else operand
        raise ValueError("unary on non-number")
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        # complex literals: 1+2j
        left, right = _literal(node.left), _literal(node.right)
        if isinstance(left, (int, float)) and not isinstance(left, bool) and isinstance(right, complex):
            return left + right if isinstance(node.op, ast.Add) else left - right
        raise ValueError("arithmetic in a repr")
    if isinstance(node, ast.Name) and node.id in ("inf", "nan"):
        return math.inf if node.id == "inf" else math.nan
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
        name = _dotted(node.func)
        args = tuple(_literal(a) for a in node.args)
        kwargs = tuple((k.arg, _literal(k.value)) for k in node.keywords if k.arg is not None)
        if name in _CONSTRUCTORS and not kwargs and (not args or (len(args) == 1 and isinstance(args[0], _SIZED))):
            try:
                return _CONSTRUCTORS[name](*args)
            except (TypeError, ValueError):
                pass
        if name == "bytearray" and not kwargs and len(args) == 1 and isinstance(args[0], bytes):
            return bytearray(args[0])
        return ObjectRepr(name, args, kwargs)
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
        return [(show(k), v) for k, v in value.items()]
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


def show(value: object, limit: int = SHOW_LIMIT) -> str:
    """How a value is written back: its repr (opaque text as it came), cut at `limit` characters."""
    return bounded_repr(value, limit)


class _Full(Exception):
    """The output budget is spent."""


def bounded_repr(value: object, limit: int = SHOW_LIMIT) -> str:
    """`repr(value)`, but never building more than `limit` characters (then cut and marked)."""
    out: list[str] = []
    left = [limit]

    def put(text: str) -> None:
        if len(text) >= left[0]:
            out.append(text[: left[0]])
            left[0] = 0
            raise _Full
        out.append(text)
        left[0] -= len(text)

    def items(seq, open_: str, close: str, one_tuple: bool = False) -> None:
        put(open_)
        for k, item in enumerate(seq):
            if k:
                put(", ")
            walk(item)
        if one_tuple:
            put(",")
        put(close)

    def walk(v: object) -> None:
        kind = type(v)
        if kind is list:
            items(v, "[", "]")
        elif kind is tuple:
            items(v, "(", ")", one_tuple=len(v) == 1)  # type: ignore[arg-type]
        elif kind in (set, frozenset):
            if not v:
                put("set()" if kind is set else "frozenset()")
            elif kind is set:
                items(v, "{", "}")
            else:
                items(v, "frozenset({", "})")
        elif kind is dict:
            put("{")
            for k, (key, item) in enumerate(v.items()):  # type: ignore[attr-defined]
                if k:
                    put(", ")
                walk(key)
                put(": ")
                walk(item)
            put("}")
        elif kind is ObjectRepr:
            put(v.name + "(")  # type: ignore[attr-defined]
            first = True
            for a in v.args:  # type: ignore[attr-defined]
                if not first:
                    put(", ")
                first = False
                walk(a)
            for key, a in v.kwargs:  # type: ignore[attr-defined]
                if not first:
                    put(", ")
                first = False
                put(f"{key}=")
                walk(a)
            put(")")
        elif kind is Opaque:
            put(v.text)  # type: ignore[attr-defined]
        elif kind in (str, bytes, bytearray) and len(v) > left[0]:  # type: ignore[arg-type]
            put(repr(v[: left[0]]))  # type: ignore[index]
        else:
            try:
                text = repr(v)
            except Exception:
                text = "<unprintable>"
            put(text)

    try:
        walk(value)
    except _Full:
        return "".join(out) + TRUNCATION_MARK
    except RecursionError:
        return "".join(out) + TRUNCATION_MARK
    return "".join(out)
