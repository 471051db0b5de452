"""debugpy's Variables view, computed on the real objects of a live copy of the program.

What debugpy (pydevd 1.8) shows when a value is expanded, rule for rule, so that a neural-dap session
and a debugpy session show the same tree: a value's text is pydevd's `SafeRepr` (strings cut at
2**16 characters at the top, 128 inside a container; containers at 60 items, 20 one level down;
a repr that raises falls back to `object.__repr__`), or pandas' repr with debugpy's display options;
its children are

- a list or tuple (or deque): items `0`..`99` (named with as many digits as the last index), then
  `more` (the next items, or buckets of 1000 to open), then `len()`;
- a dict: `repr(key)` for its first 500 items, then `len()`; a set: each item by its id;
- a numpy array: `[0:N] ` (its first 500 items, a list), `dtype`, `max`, `min`, `shape`, `size`;
- a pandas DataFrame or Series: every attribute but methods (its columns among them), with `T`,
  `_series` and `style` not computed;
- any other object: `dir()`'s attributes (properties computed, `__slots__` of every class in the
  hierarchy included, a C object's getset attributes), sorted as pydevd sorts them (names, then
  `_names`). Dunder names, methods and classes are what debugpy files under its "special",
  "function" and "class variables" groups: they are left out here.

A child is found again by its path of selectors from a root (a frame's local or global), so the
adapter asks for `[("l", "df"), ("a", "columns")]` and never sends an expression. Only numbers,
strings and names travel. Standard library only (numpy and pandas are recognised by their types'
modules, never imported here).
"""

from __future__ import annotations

import inspect
import sys
import traceback
import types

MAX_STRING_OUTER = 2**16
MAX_STRING_INNER = 128
MAX_OTHER_OUTER = 2**16
MAX_OTHER_INNER = 128
MAX_COLLECTION = (60, 20)
INITIAL_ITEMS = 100  # a list's items shown before `more`
BUCKET = 1000  # items per bucket under `more`
RANDOM_ACCESS_ITEMS = 500  # a dict's or a set's items shown
NUMPY_ITEMS = 500
PANDAS_OPTIONS = (("display.max_rows", 60), ("display.max_columns", 10), ("display.max_colwidth", 50))
TOO_LARGE_ATTR = "Unable to handle:"
TOO_LARGE_MSG = (
    "Maximum number of items (%s) reached. To show more items customize the value of the"
    " PYDEVD_CONTAINER_RANDOM_ACCESS_MAX_ITEMS environment variable."
)
_LEAVES = (type(None), int, float, complex, str)  # no children in debugpy (bool is an int)
_METHOD_WRAPPER = type([].__str__)
_PANDAS_SKIPPED = {
    "T": "<transposed dataframe -- debugger:skipped eval>",
    "_series": "<dict[index:Series] -- debugger:skipped eval>",
    "style": "<pandas.io.formats.style.Styler -- debugger: skipped eval>",
}


# -- values --------------------------------------------------------------------------------------


def _module_of(obj: object) -> str:
    try:
        return str(type(obj).__module__)
    except Exception:
        return ""


def _is_numpy_array(obj: object) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(obj, numpy.ndarray)


def _pandas_kind(obj: object) -> str:
    """ "frame", "series" or "" (pandas is only looked at where the program imported it)."""
    pandas = sys.modules.get("pandas")
    if pandas is None:
        return ""
    try:
        if isinstance(obj, pandas.DataFrame):
            return "frame"
        if isinstance(obj, pandas.Series):
            return "series"
    except Exception:
        pass
    return ""


def value_text(obj: object) -> str:
    """The text debugpy shows for a value."""
    if _pandas_kind(obj):
        try:
            import pandas

            with pandas.option_context(*[x for option in PANDAS_OPTIONS for x in option]):
                return repr(obj)
        except Exception:
            pass
    try:
        return "".join(_repr(obj, 0))
    except Exception as exc:
        return f"An exception was raised: {exc!r}"


def type_name(obj: object) -> str:
    try:
        return str(type(obj).__name__)
    except Exception:
        return "Unable to get Type"


def expandable(obj: object) -> bool:
    return not isinstance(obj, _LEAVES)


def _has_own_repr(obj: object, kind: type) -> bool:
    try:
        return type(obj).__repr__ is kind.__repr__
    except Exception:
        return False


def _repr(obj: object, level: int):
    for kind, prefix, suffix, comma in (
        (tuple, "(", ")", True),
        (list, "[", "]", False),
        (frozenset, "frozenset({", "})", False),
        (set, "{", "}", False),
    ):
        if isinstance(obj, kind) and _has_own_repr(obj, kind):
            return _repr_iter(obj, level, prefix, suffix, comma)
    try:
        from collections import deque

        if isinstance(obj, deque) and _has_own_repr(obj, deque):
            return _repr_iter(obj, level, "deque([", "])", False)
    except Exception:
        pass
    if isinstance(obj, dict) and _has_own_repr(obj, dict):
        return _repr_dict(obj, level)
    if isinstance(obj, (str, bytes)) and _has_own_repr(obj, type(obj)):
        return _repr_str(obj, level)
    if _is_long_iter(obj):
        return _repr_long_iter(obj)
    return _repr_other(obj, level)


def _is_long_iter(obj: object, level: int = 0) -> bool:
    try:
        if isinstance(obj, (str, bytes)):
            return len(obj) > MAX_STRING_INNER
        if not hasattr(obj, "__iter__"):
            return False
        if not isinstance(obj, (list, tuple, bytearray, range, dict, set, frozenset)):
            return False
        if obj is iter(obj) or isinstance(obj, range):
            return False
        if _module_of(obj).partition(".")[0] in ("numpy", "scipy"):
            return False
        if level >= len(MAX_COLLECTION):
            return True
        if len(obj) > MAX_COLLECTION[level]:
            return True
        return any(_is_long_iter(item, level + 1) for item in obj)
    except Exception:
        return True


def _repr_iter(obj, level: int, prefix: str, suffix: str, comma: bool):
    yield prefix
    if level >= len(MAX_COLLECTION):
        yield "..."
    else:
        count = MAX_COLLECTION[level]
        yield_comma = False
        for item in obj:
            if yield_comma:
                yield ", "
            yield_comma = True
            count -= 1
            if count <= 0:
                yield "..."
                break
            yield from _repr(item, 100 if item is obj else level + 1)
        else:
            if comma and count == MAX_COLLECTION[level] - 1:
                yield ","
    yield suffix


def _repr_long_iter(obj):
    try:
        yield f"<{type(obj).__name__}, len() = {len(obj)}>"
    except Exception:
        yield f"<{type_name(obj)}>"


def _repr_dict(obj: dict, level: int):
    if not obj:
        yield "{}"
        return
    if level >= len(MAX_COLLECTION):
        yield "{...}"
        return
    yield "{"
    count = MAX_COLLECTION[level]
    yield_comma = False
    for key in list(obj):
        if yield_comma:
            yield ", "
        yield_comma = True
        count -= 1
        if count <= 0:
            yield "..."
            break
        yield from _repr(key, level + 1)
        yield ": "
        try:
            item = obj[key]
        except Exception:
            yield "<?>"
        else:
            yield from _repr(item, 100 if item is obj else level + 1)
    yield "}"


def _repr_str(obj, level: int):
    limit = MAX_OTHER_INNER if level > 0 else MAX_OTHER_OUTER
    if len(obj) <= limit:
        yield repr(obj)
        return
    left, right = max(1, int(2 * limit / 3)), max(1, int(limit / 3))
    part1 = repr(obj[:left])
    part2 = repr(obj[-right:])
    yield part1[: part1.rindex("'")]
    yield "..."
    yield part2[part2.index("'") + 1 :]


def _repr_other(obj, level: int):
    try:
        text = repr(obj)
    except Exception:
        try:
            text = object.__repr__(obj)
        except Exception:
            text = f"<no repr available for {type_name(obj)}>"
    if type(text) is not str:
        text = str(text)
    limit = MAX_OTHER_INNER if level > 0 else MAX_OTHER_OUTER
    if limit >= len(text):
        yield text
        return
    left, right = max(1, int(2 * limit / 3)), max(1, int(limit / 3))
    yield text[:left]
    yield "..."
    yield text[-right:]


# -- children ------------------------------------------------------------------------------------

# A child: (name, value, selector from its parent, evaluate template: "%s[0]", "%s.x", None)
Child = tuple[str, object, list, "str | None"]


class _More:
    """debugpy's `more` under a long list: the items after the first 100, as buckets of 1000."""

    def __init__(self, value, start: int) -> None:
        self.value = value
        self.start = start

    def __repr__(self) -> str:
        return "..."


class _Range:
    """Items `start` to `end` of a long list (a bucket, or the rest where one bucket holds it)."""

    def __init__(self, value, start: int, end: int) -> None:
        self.value = value
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"[{self.start}:{self.end}]"


def _rest(obj, size: int) -> object:
    """A long list's `more`: its remaining items at once where they fit in one bucket."""
    return _Range(obj, INITIAL_ITEMS, size) if size - INITIAL_ITEMS < BUCKET else _More(obj, INITIAL_ITEMS)


def _is_grouped(name: str, value: object) -> bool:
    """What debugpy files under a group rather than inline (pydevd's `get_var_scope`): dunder names
    (special variables); `_names` are "protected" and inline, methods and classes among them;
    other methods (function variables) and classes (class variables)."""
    if name.startswith("__") and name.endswith("__"):
        return True
    if name.startswith("_") or name.endswith("__"):
        return False
    try:
        return inspect.isroutine(value) or isinstance(value, _METHOD_WRAPPER) or inspect.isclass(value)
    except Exception:
        return False


def _order(name: str) -> tuple[int, str]:
    if name.startswith("__"):
        return (3 if name.endswith("__") else 2, name)
    return (1 if name.startswith("_") else 0, name)


def _attributes(obj: object, pandas: bool = False) -> list[Child]:
    """pydevd's DefaultResolver: dir()'s names and their values (an exception while reading one is
    its value, as its traceback), grouped ones left out, in pydevd's order. `pandas`: its resolver's
    reading instead (methods left out whatever their name, a missing one `<unable to get>`, `T`,
    `_series` and `style` not computed, no evaluate names)."""
    try:
        names = dir(obj)
    except Exception:
        names = []
    by_dict = False
    if not names:
        try:
            names = list(object.__getattribute__(obj, "__dict__"))
            by_dict = True
        except Exception:
            names = []
    out: list[Child] = []
    for name in names:
        if not isinstance(name, str):
            name = repr(name)
        if name.startswith("__") and name.endswith("__"):
            continue  # (special variables)
        value: object
        if pandas:
            if name in _PANDAS_SKIPPED:
                out.append((name, _PANDAS_SKIPPED[name], ["a", name], None))
                continue
            try:
                value = getattr(obj, name, "<unable to get>")
                if inspect.isroutine(value) or isinstance(value, _METHOD_WRAPPER):
                    continue
            except Exception as exc:
                value = f"<error getting: {exc}>"
        else:
            try:
                value = object.__getattribute__(obj, "__dict__")[name] if by_dict else getattr(obj, name)
            except AttributeError:
                continue
            except Exception as exc:
                value = "".join(traceback.format_exception(exc))
        if _is_grouped(name, value):
            continue
        evaluate = None if pandas else (f"%s.__dict__[{name!r}]" if by_dict else f"%s.{name}")
        out.append((name, value, ["a", name], evaluate))
    out.sort(key=lambda child: _order(child[0]))
    return out


def _sequence(obj) -> list[Child]:
    size = len(obj)
    digits = len(str(size - 1))
    out: list[Child] = []
    for i, item in enumerate(obj):
        if i >= INITIAL_ITEMS:
            out.append(("more", _rest(obj, size), ["more"], None))
            break
        out.append((f"{i:0{digits}d}", item, ["i", i], f"%s[{i}]"))
    return out


def _literal_key(key: object) -> bool:
    """pydevd gives a dict item an evaluate name only where the key's repr is the key."""
    if isinstance(key, tuple):
        return all(_literal_key(k) for k in key)
    return isinstance(key, (int, float, complex, str, bytes, type(None), bool, frozenset))


def _mapping(obj: dict) -> list[Child]:
    out: list[Child] = []
    seen: set[str] = set()
    for n, (key, value) in enumerate(obj.items()):
        name = value_key(key)
        if name in seen:
            name = f"{name} (id: {id(key)})"
        seen.add(name)
        out.append((name, value, ["k", n], f"%s[{value_key(key)}]" if _literal_key(key) else None))
        if n + 1 >= RANDOM_ACCESS_ITEMS:
            out.append((TOO_LARGE_ATTR, TOO_LARGE_MSG % RANDOM_ACCESS_ITEMS, ["none"], None))
            break
    return out


def value_key(key: object) -> str:
    try:
        return repr(key)
    except Exception:
        return object.__repr__(key)


def _set(obj) -> list[Child]:
    out: list[Child] = []
    for n, item in enumerate(obj):
        out.append((str(id(item)), item, ["s", n], None))
        if n >= RANDOM_ACCESS_ITEMS:
            out.append((TOO_LARGE_ATTR, TOO_LARGE_MSG % RANDOM_ACCESS_ITEMS, ["none"], None))
            break
    return out


def _numpy(obj) -> list[Child]:
    """debugpy's NDArrayTypeResolveProvider (its `__internals__` is a special variable)."""
    out: list[Child] = []
    try:
        numeric = obj.dtype.kind in "biufc"
    except Exception:
        numeric = False
    if obj.size > 1024 * 1024:
        low = high = "ndarray too big, calculating min would slow down debugging"
        high = "ndarray too big, calculating max would slow down debugging"
    elif obj.size == 0:
        low = high = "array is empty"
    elif numeric:
        low, high = obj.min(), obj.max()
    else:
        low = high = "not a numeric object"
    try:
        out.append((f"[0:{len(obj)}] ", list(obj[0:NUMPY_ITEMS]), ["np", "items"], None))
    except Exception:
        pass  # (a 0-d array has no len)
    out += [
        ("dtype", obj.dtype, ["np", "dtype"], None),
        ("max", high, ["np", "max"], None),
        ("min", low, ["np", "min"], None),
        ("shape", obj.shape, ["np", "shape"], None),
        ("size", obj.size, ["np", "size"], None),
    ]
    out.sort(key=lambda child: _order(child[0]))
    return out


def children(obj: object) -> list[Child]:
    """The children debugpy shows for `obj`, in its order (none for a leaf). Items that are methods
    or classes go to debugpy's groups, as attributes do (a tuple of classes shows `len()` only)."""
    return [
        child
        for child in _children(obj)
        if child[0].startswith("'") or child[0] in ("len()", TOO_LARGE_ATTR) or not _is_grouped(child[0], child[1])
    ]


def _children(obj: object) -> list[Child]:
    if not expandable(obj):
        return []
    if isinstance(obj, _More):
        out: list[Child] = []
        start, size = obj.start, len(obj.value)
        while start < size:
            end = min(start + BUCKET, size)
            out.append((f"[{start}:{end}]", _Range(obj.value, start, end), ["r", start, end], None))
            start = end
        return out
    if isinstance(obj, _Range):
        digits = len(str(len(obj.value) - 1))
        return [
            (f"{i:0{digits}d}", obj.value[i], ["i", i], f"%s[{i}]")
            for i in range(obj.start, min(obj.end, len(obj.value)))
        ]
    if _is_numpy_array(obj):
        return _numpy(obj)
    if _pandas_kind(obj):
        return _attributes(obj, pandas=True)
    from collections import OrderedDict, deque

    if isinstance(obj, (list, tuple, deque)):
        extra = _attributes(obj) if type(obj) not in (list, tuple, deque) else []
        return [*extra, *_sequence(obj), ("len()", len(obj), ["none"], "len(%s)")]
    if isinstance(obj, (dict, OrderedDict)):
        extra = _attributes(obj) if type(obj) is not dict else []
        return [*extra, *_mapping(obj), ("len()", len(obj), ["none"], "len(%s)")]
    if isinstance(obj, (set, frozenset)):
        extra = _attributes(obj) if type(obj) not in (set, frozenset) else []
        return [*extra, *_set(obj), ("len()", len(obj), ["none"], "len(%s)")]
    if isinstance(obj, types.FrameType):
        return []
    return _attributes(obj)


def resolve(obj: object, selector: list) -> object:
    """The child of `obj` a selector (from `children`) names, found again on the real object."""
    kind = selector[0] if selector else None
    if kind == "i":
        if isinstance(obj, _Range):
            return obj.value[selector[1]]
        return obj[selector[1]]  # type: ignore[index]
    if kind == "a":
        if _pandas_kind(obj):
            return _PANDAS_SKIPPED.get(selector[1]) or getattr(obj, selector[1], "<unable to get>")
        try:
            return getattr(obj, selector[1])
        except AttributeError:
            return object.__getattribute__(obj, "__dict__")[selector[1]]
    if kind == "k":
        for n, value in enumerate(obj.values()):  # type: ignore[attr-defined]
            if n == selector[1]:
                return value
        raise LookupError("the item is gone")
    if kind == "s":
        for n, item in enumerate(obj):  # type: ignore[arg-type,var-annotated]
            if n == selector[1]:
                return item
        raise LookupError("the item is gone")
    if kind == "more":
        return _rest(obj, len(obj))  # type: ignore[arg-type]
    if kind == "r":
        return _Range(obj.value if isinstance(obj, (_More, _Range)) else obj, selector[1], selector[2])
    if kind == "np":
        return {c[2][1]: c[1] for c in _numpy(obj)}[selector[1]]
    raise LookupError(f"unknown selector {selector!r}")


def describe(name: str, obj: object, selector: list, evaluate: str | None) -> list:
    """One child as it travels: [name, value text, type, selector, evaluate template, expandable]."""
    if isinstance(obj, _More):
        return [name, "...", "MoreItems", selector, evaluate, True]
    if isinstance(obj, _Range):
        return [name, repr(obj), "MoreItemsRange", selector, evaluate, True]
    return [name, value_text(obj), type_name(obj), selector, evaluate, expandable(obj)]
