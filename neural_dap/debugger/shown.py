"""How a value reads in the Variables view and in evaluate's answers: as debugpy shows it.

debugpy does not show a container's `repr()` but pydevd's SafeRepr of it: a builtin list, tuple,
dict, set or frozenset nested three deep reads `[...]` (`{'a': {'b': {...}}}`), at most 59 items
show at the top level and 19 one level down (then `...`), and a string or another object's repr
inside a container that is longer than 128 characters is cut in the middle. An empty set reads `{}`.
The recording keeps `repr()` (what a trace holds and the model learns); this is only how the text
reads, rebuilt from it: parsed, never evaluated, never longer than it. Text that does not parse as
a literal container (an object's `<...>` repr inside, a repr cut by the recorder) reads as it is;
so does text SafeRepr made already (a live session's answers from the program: child/resolvers.py),
on which the rules change nothing.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Iterator

from neural_dap.core.reprs import MAX_REPR_TEXT
from neural_dap.core.source import read_source
from neural_dap.core.state import TRUNCATION_MARK

MAX_ITEMS = (60, 20)  # pydevd's SafeRepr.maxcollection: items per nesting level (one fewer shows)
INNER_LIMIT = 128  # SafeRepr.maxstring_inner / maxother_inner: a repr inside a container, at most
_COLLECTIONS = frozenset(("list", "tuple", "dict", "set", "frozenset", "OrderedDict", "deque"))
SEQUENCE, MAPPING, PAIRS = 0, 1, 2  # how a container's items read: `x`, `k: v`, `(k, v)`


def shown(text: str, type_name: str | None) -> str:
    """The text debugpy shows for a value of type `type_name` whose repr is `text`."""
    if type_name not in _COLLECTIONS or not text or text.endswith(TRUNCATION_MARK) or len(text) > MAX_REPR_TEXT:
        return text
    if type_name == "set" and text == "set()":
        return "{}"
    try:
        node = ast.parse(text, mode="eval").body
        if _collection(node) is None or any(_is_ellipsis(part) for part in ast.walk(node)):
            # (`...` in a repr: a container that holds itself, or text SafeRepr made already, such
            # as the program's own answer in a live session: it reads as it is)
            return text
        return "".join(_render(node, text, 0))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return text


def _is_ellipsis(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _collection(node: ast.AST) -> tuple[str, str, list, int] | None:
    """A container's (prefix, suffix, items, how they read) as SafeRepr writes it (the builtin ones,
    `OrderedDict` and `deque`, SafeRepr's own kinds); else None."""
    if isinstance(node, ast.List):
        return "[", "]", node.elts, SEQUENCE
    if isinstance(node, ast.Tuple):
        return "(", ")", node.elts, SEQUENCE
    if isinstance(node, ast.Set):
        return "{", "}", node.elts, SEQUENCE
    if isinstance(node, ast.Dict):
        return "{", "}", _pairs_of(node), MAPPING
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    name, args = node.func.id, node.args
    if name == "deque" and len(args) == 1 and isinstance(args[0], ast.List):
        if all(keyword.arg == "maxlen" for keyword in node.keywords):
            return "deque([", "])", args[0].elts, SEQUENCE  # (SafeRepr leaves `maxlen` out)
        return None
    if node.keywords:
        return None
    if name == "set" and not args:
        return "{", "}", [], SEQUENCE
    if name == "frozenset" and not args:
        return "frozenset({", "})", [], SEQUENCE
    if name == "frozenset" and len(args) == 1 and isinstance(args[0], ast.Set):
        return "frozenset({", "})", args[0].elts, SEQUENCE
    if name == "OrderedDict" and not args:
        return "OrderedDict([", "])", [], PAIRS
    if name == "OrderedDict" and len(args) == 1 and isinstance(args[0], ast.Dict):  # (3.12+'s repr)
        return "OrderedDict([", "])", _pairs_of(args[0]), PAIRS
    if name == "OrderedDict" and len(args) == 1 and isinstance(args[0], ast.List):  # (3.11's)
        pairs = args[0].elts
        if all(isinstance(pair, ast.Tuple) and len(pair.elts) == 2 for pair in pairs):
            return "OrderedDict([", "])", [tuple(pair.elts) for pair in pairs], PAIRS  # type: ignore[attr-defined]
    return None


def _pairs_of(node: ast.Dict) -> list:
    if any(key is None for key in node.keys):
        raise ValueError("not a repr: dict unpacking")
    return list(zip(node.keys, node.values, strict=True))


def _render(node: ast.AST, text: str, level: int) -> Iterator[str]:
    """pydevd's `_repr` of the value `node` stands for, at nesting `level`."""
    found = _collection(node)
    if found is None:
        yield _atom(node, text, level)
        return
    prefix, suffix, items, reads = found
    if reads != SEQUENCE and not items:
        yield prefix + suffix
        return
    yield prefix
    if level >= len(MAX_ITEMS):
        yield "..."
        yield suffix
        return
    count = MAX_ITEMS[level]
    for k, item in enumerate(items):
        if k:
            yield ", "
        count -= 1
        if count <= 0:
            yield "..."
            break
        if reads == MAPPING:
            yield from _render(item[0], text, level + 1)
            yield ": "
            yield from _render(item[1], text, level + 1)
        elif reads == PAIRS:
            yield "("
            yield from _render(item[0], text, level + 1)
            yield ", "
            yield from _render(item[1], text, level + 1)
            yield ")"
        else:
            yield from _render(item, text, level + 1)
    else:
        if isinstance(node, ast.Tuple) and len(items) == 1:
            yield ","
    yield suffix


def _atom(node: ast.AST, text: str, level: int) -> str:
    """A value that is no builtin container: its repr as written, cut in the middle inside one."""
    written = ast.get_source_segment(text, node)
    if written is None:
        raise ValueError("no text for a part of the repr")
    if level == 0:
        return written
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, (str, bytes)):
        if len(value) <= INNER_LIMIT:
            return written
        # (pydevd's cut, to the letter: it looks for a single quote, whichever quote repr chose)
        left, right = repr(value[: 2 * INNER_LIMIT // 3]), repr(value[-(INNER_LIMIT // 3) :])
        if "'" in left and "'" in right:
            return left[: left.rindex("'")] + "..." + right[right.index("'") + 1 :]
    if len(written) <= INNER_LIMIT:
        return written
    return written[: 2 * INNER_LIMIT // 3] + "..." + written[-(INNER_LIMIT // 3) :]


def returning_name(function: str, local_reprs: dict[str, str], path: str = "", line: int = 0) -> str:
    """The name debugpy gives a return value, `(return) NAME`: a method's with its class
    (`Box.get`, the class of `self` as the program has it, a subclass's for an inherited method;
    `cls` itself for a classmethod), a function's alone. pydevd asks whether the first parameter's
    class has that method, and whether that attribute's code is this very code; the recording has
    the first parameter's repr, so its name says, and the source (`path`, a `line` of the function)
    says whether a decorator hides the code (a property's getter: `(return) area`)."""
    first = next(iter(local_reprs), None)
    text = local_reprs.get(first or "", "")
    owner = ""
    if first == "cls" and text.startswith("<class '") and text.endswith("'>"):
        owner = text[len("<class '") : -2].rsplit(".", 1)[-1]
    elif first == "self" and text.startswith("<") and " " in text:
        owner = text[1:].split(" ", 1)[0].rsplit(".", 1)[-1]
    elif first == "self" and "(" in text and text[0].isidentifier():
        owner = text.split("(", 1)[0].rsplit(".", 1)[-1]  # (a repr of the dataclass kind: `Box(x=1)`)
    if not owner.isidentifier() or (path and line and _hidden_by_a_decorator(path, _mtime(path), function, line)):
        return function
    return f"{owner}.{function}"


# decorators that hand the function itself back: the class's attribute is still its code
_TRANSPARENT = frozenset({"classmethod", "staticmethod", "abstractmethod", "override", "final"})


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


@functools.lru_cache(maxsize=32)
def _hidden_by_a_decorator(path: str, _mtime: float, function: str, line: int) -> bool:
    """`function`, whose body holds `line` in the file at `path`, is decorated by something that
    does not hand the function back (`@property`, `@cached_property`, `@x.setter`, a wrapper), so
    the class's attribute of that name is not its code. (A pure function of the file's text: the
    cache is keyed by its modification time.)"""
    source = read_source(path)
    if source is None:
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name == function
            and node.lineno <= line <= (node.end_lineno or node.lineno)
        ):
            return any(_decorator_name(d) not in _TRANSPARENT for d in node.decorator_list)
    return False


def _decorator_name(node: ast.expr) -> str:
    """The last name of a decorator (`abc.abstractmethod` -> `abstractmethod`; a call's callee)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""
