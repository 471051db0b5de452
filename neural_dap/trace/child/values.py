"""Values as the recording child sends them: bounded, never-raising reprs without object addresses, and
the structured children of objects whose repr is not a literal. Standard library only."""

from __future__ import annotations

import re
import types

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+(?=[>,])")
_SMALL_INT = 1 << 53
_MISSING = object()
_MARK = "\u2026"
_COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>"})
# Types whose objects never change: identity unchanged means repr unchanged.
_ATOMS = frozenset({int, str, float, bool, type(None), bytes, complex})
# Builtin containers: the DAP layer rebuilds their children by parsing the repr, so none are sent.
_LITERAL_CONTAINERS = frozenset({list, tuple, dict, set, frozenset})
_HIDDEN_MODULE_TYPES = (types.ModuleType, types.FunctionType, type, types.BuiltinFunctionType)


def without_addresses(text: str) -> str:
    """Object addresses differ between runs; a trace must not depend on them."""
    return _ADDRESS.sub("", text) if " at 0x" in text else text


class Reprs:
    """Bounded, never-raising reprs."""

    def __init__(self, limit: int, max_children: int) -> None:
        self.limit = limit
        self.max_children = max_children

    def repr(self, value: object) -> str:
        try:
            if type(value) in _LITERAL_CONTAINERS and len(value) > self.max_children * 4:  # type: ignore[arg-type]
                text = self._long_container(value)
            else:
                text = repr(value)
        except BaseException as exc:  # a user's __repr__ may raise anything
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            return f"<repr of {type(value).__name__} raised {type(exc).__name__}: {_short(exc)}>"
        if type(text) is not str:
            return f"<repr of {type(value).__name__} returned {type(text).__name__}>"
        if type(value) is not str:
            text = without_addresses(text)
        if len(text) > self.limit:
            return text[: self.limit] + _MARK
        return text

    def _long_container(self, value) -> str:
        """A huge container's repr, cut after enough items without building the whole text."""
        items = []
        size = 0
        if isinstance(value, dict):
            it = (f"{self.repr(k)}: {self.repr(v)}" for k, v in value.items())
            open_, close = "{", "}"
        else:
            it = (self.repr(v) for v in value)
            brackets: dict[type, tuple[str, str]] = {
                list: ("[", "]"),
                tuple: ("(", ")"),
                set: ("{", "}"),
                frozenset: ("frozenset({", "})"),
            }
            open_, close = brackets[type(value)]
        for piece in it:
            items.append(piece)
            size += len(piece) + 2
            if size > self.limit:
                break
        return open_ + ", ".join(items) + close + _MARK

    def container_structure(self, value, text: str) -> list:
        if isinstance(value, dict):
            items = [(self.repr(k), v) for k, v in _first(value.items(), self.max_children)]
        else:
            items = [(str(i), v) for i, v in enumerate(_first(value, self.max_children))]
        children = [[name, self.structure(child, 1) or self.repr(child)] for name, child in items]
        return [text, type(value).__name__, children, max(0, len(value) - len(children))]

    def structure(self, value: object, depth: int = 2) -> list | None:
        """[repr, type, children, more] for objects whose repr is not a Python literal."""
        kind = type(value)
        if kind in _ATOMS or kind in _LITERAL_CONTAINERS:
            return None
        attrs = _attributes(value)
        if not attrs:
            return None
        children = []
        for name, child in attrs[: self.max_children]:
            sub = self.structure(child, depth - 1) if depth > 1 else None
            children.append([name, sub if sub is not None else self.repr(child)])
        return [self.repr(value), kind.__name__, children, max(0, len(attrs) - self.max_children)]


def _first(iterable, n: int) -> list:
    out: list = []
    for item in iterable:
        if len(out) >= n:
            break
        out.append(item)
    return out


def _attributes(value: object) -> list | None:
    try:
        d = object.__getattribute__(value, "__dict__")
    except Exception:
        d = None
    if isinstance(d, dict) and not isinstance(value, (type, types.ModuleType, types.FunctionType)):
        return [(str(k), v) for k, v in d.items()]
    slots = getattr(type(value), "__slots__", None)
    if slots:
        out = []
        for name in (slots,) if isinstance(slots, str) else slots:
            try:
                out.append((name, object.__getattribute__(value, name)))
            except Exception:
                pass
        return out
    return None


def _short(exc: BaseException) -> str:
    try:
        return str(exc)[:200]
    except BaseException:
        return "?"
