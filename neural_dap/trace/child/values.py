"""Values as the recording child sends them: bounded, never-raising reprs without object addresses, and
the structured children of objects whose repr is not a literal. Standard library only."""

from __future__ import annotations

import re
import threading
import time
import types
import weakref
from _thread import get_ident

try:  # the same walk in C (trace/_values.c); where it was not built, the definitions below run
    from neural_dap.trace._values import interrupt as _interrupt_in_c
    from neural_dap.trace._values import structure as _structure_in_c
except ImportError:
    _structure_in_c = _interrupt_in_c = None

# An address ends where the object's text goes on: `>` or `,` (`<Box object at 0x7f..>`), `:`
# (`<threading.Event at 0x7f..: unset>`, a cell's), a space (`<asyncio.locks.Lock object at
# 0x7f.. [unlocked]>`, an asyncio Queue's `at 0x7f.. maxsize=0`), `;` (a weakref's), `]` or `)`.
# Never a quote: " at 0x1F'" inside a string's repr is the string's own text.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+(?=[>,:;\s\])])")
_SMALL_INT = 1 << 53
_MISSING = object()
_MARK = "\u2026"
CONTAINER_ITEMS = 300
_COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>"})
# Types whose objects never change: identity unchanged means repr unchanged.
_ATOMS = frozenset({int, str, float, bool, type(None), bytes, complex})
# Builtin containers: the DAP layer rebuilds their children by parsing the repr, so none are sent.
_LITERAL_CONTAINERS = frozenset({list, tuple, dict, set, frozenset})
_builtin_repr = repr
_HIDDEN_MODULE_TYPES = (types.FunctionType, type, types.BuiltinFunctionType)  # (modules are shown)


def without_addresses(text: str) -> str:
    """Object addresses differ between runs; a trace must not depend on them."""
    return _ADDRESS.sub("", text) if " at 0x" in text else text


class _ReprTimeout(BaseException):
    """Raised into the traced thread when a repr runs past its deadline (see ReprGuard)."""


class ReprGuard:
    """A deadline for each repr of the program's values, kept by another thread.

    The thread making a repr only numbers it: `busy` for the thread the guard was made for (one
    attribute store: the hot path pays nothing more), `others[thread]` for each other thread a
    threaded recording follows. `check`, called every ~10 ms from the channel's flusher (a worker
    runs its own watcher), sees a thread's same repr still running: past `seconds` it raises
    _ReprTimeout in that thread (PyThreadState_SetAsyncExc: no signal handler or timer of the
    program's is touched, so a program's own SIGALRM / alarm() keep working), and from the second
    look on it marks the repr `slow` (it took >= ~10 ms), so its text is remembered rather than
    paid again. The exception can only land inside the repr: the look and the raise are one C call
    that keeps the GIL (trace/_values.c `interrupt`), and the thread checks for it at its next
    bytecode boundary, which lies before the store that clears its number. (One number for every
    thread, and the exception sent to the guard's own thread, once let a worker's slow repr go
    unseen, or raised the exception in a server's main loop, which ended the program.) A repr stuck
    in C (a blocking call that never returns, a C loop holding the GIL) cannot be interrupted; the
    recording's wall-time limit still ends it.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.busy = 0  # the number of the repr `thread` runs now (0: none)
        self.others: dict[int, int] = {}  # the same for each other thread
        self.seq = 0
        self.slow: int | tuple[int, int] = 0  # a repr seen running at two checks: its number (and thread)
        self.thread = get_ident()  # the traced thread (of a one-thread recording, the only one)
        self._seen: dict[int, tuple[int, float]] = {}  # thread -> (its repr's number, first seen)
        self._set_async = None
        try:
            import ctypes

            self._set_async = ctypes.pythonapi.PyThreadState_SetAsyncExc
        except (ImportError, AttributeError, OSError):
            pass  # no ctypes: slow reprs are still remembered, hanging ones are not interrupted

    def check(self) -> None:
        running = [(self.thread, self.busy)] if self.busy else []
        if self.others:
            running += [(thread, number) for thread, number in list(self.others.items()) if number]
        if not running:
            if self._seen:
                self._seen = {}
            return
        now = time.monotonic()
        seen: dict[int, tuple[int, float]] = {}
        for thread, number in running:
            first = self._seen.get(thread)
            if first is None or first[0] != number:
                seen[thread] = (number, now)
                continue
            seen[thread] = first
            self.slow = number if thread == self.thread else (number, thread)
            if self.seconds > 0 and now - first[1] >= self.seconds:
                seen[thread] = (number, now)  # a repr that swallows it gets it again one deadline later
                self._interrupt(thread, number)
        self._seen = seen

    def _interrupt(self, thread: int, number: int) -> None:
        holder, key = (self, "busy") if thread == self.thread else (self.others, thread)
        if _interrupt_in_c is not None:
            _interrupt_in_c(holder, key, number, thread, _ReprTimeout)
        elif self._set_async is not None:  # (the look and the raise apart: a rare race)
            import ctypes

            now = self.busy if holder is self else self.others.get(thread)
            if now == number:
                self._set_async(ctypes.c_ulong(thread), ctypes.py_object(_ReprTimeout))

    def watch(self, until: float, on_late, every: float = 0.01, name: str = "neural-dap-flusher") -> None:
        """A thread that checks (a worker's: the recording's flusher did not survive the fork), and
        calls `on_late` once time.monotonic() passes `until`."""

        def run() -> None:
            from neural_dap.trace.child.journal import mark_thread

            mark_thread()
            while time.monotonic() < until:
                time.sleep(every)
                self.check()
            on_late()

        threading.Thread(target=run, name=name, daemon=True).start()


def _not_busy(guard: ReprGuard, mine: bool, ident: int) -> None:
    if mine:
        guard.busy = 0
    else:
        guard.others[ident] = 0


_SLOW_KEPT = 4096  # remembered slow reprs, at most


class Reprs:
    """Bounded, never-raising, deadline-bound reprs.

    A value whose repr was slow (>= ~10 ms) or timed out is paid once: its text is remembered by
    the object's id while that same object lives (a weak reference says so; an object that has none
    is trusted by id and type), and shown again at later events even if the object changed since.
    The trade-off: a slow object's value may be stale in later states, instead of each event
    paying the repr again (a 50 ms repr in a 200-pass loop: 10 s).
    """

    def __init__(self, limit: int, max_children: int, seconds: float = 0.1) -> None:
        self.limit = limit
        self.max_children = max_children
        # a long container's items kept when its repr is cut: as many as debugpy's Variables view
        # shows of one (a dict's 300 keys), so a recording with no program to ask answers the same
        self.max_items = max(max_children, CONTAINER_ITEMS)
        self.guard = ReprGuard(seconds)
        self.slow: dict[int, tuple] = {}  # id -> (weak reference or type, text)
        # sockets' texts, each kept while the kernel says the same of it (trace/_values.c, C walk only)
        self.sockets: dict[int, tuple] = {}
        # objects' structures from their last walk, their atoms kept (trace/_values.c, C walk only)
        self.nodes: dict[int, tuple] = {}

    def repr(self, value: object) -> str:
        kind = type(value)
        # (the builtin scalars' reprs never raise, hang or show an address: the guard is not needed)
        if kind is str:
            if len(value) < self.limit:  # type: ignore[arg-type]
                text = _builtin_repr(value)
                return text if len(text) <= self.limit else text[: self.limit] + _MARK
        elif (kind is int and -_SMALL_INT < value < _SMALL_INT) or kind is float:  # type: ignore[operator]
            text = _builtin_repr(value)
            if len(text) <= self.limit:  # (a limit under 24 characters can cut one)
                return text
        elif kind is bool or value is None:
            return _builtin_repr(value)
        slow = self.slow
        if slow:
            found = slow.get(id(value))
            if found is not None and _same(found[0], value):
                return found[1]
        guard = self.guard
        seq = guard.seq + 1
        ident = get_ident()
        mine = ident == guard.thread  # (else a thread of a threaded recording: ReprGuard.others)
        try:
            if type(value) in _LITERAL_CONTAINERS and len(value) > self.max_children * 4:  # type: ignore[arg-type]
                text = self._long_container(value)
            else:
                guard.seq = seq
                if mine:
                    guard.busy = seq
                else:
                    guard.others[ident] = seq
                text = repr(value)
                if mine:
                    guard.busy = 0
                else:
                    guard.others[ident] = 0
                if guard.slow == (seq if mine else (seq, ident)) and type(text) is str:
                    return self._remember(value, self._bounded(value, text))
        except _ReprTimeout:
            _not_busy(guard, mine, ident)
            return self._remember(value, f"<repr of {type(value).__name__} timed out after {guard.seconds:g} s>")
        except BaseException as exc:  # a user's __repr__ may raise anything
            _not_busy(guard, mine, ident)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            return self._bounded(value, self._fallback(value))
        return self._bounded(value, text)

    def _fallback(self, value: object) -> str:
        """A repr that raised, as debugpy shows it: a container's items each by its own (bounded)
        repr, any other object as `object.__repr__` gives it (its address is then removed)."""
        kind = type(value)
        try:
            if kind in (list, tuple, set, frozenset):
                items = ", ".join(self.repr(v) for v in _first(value, self.max_children))  # type: ignore[call-overload]
                more = ", ..." if len(value) > self.max_children else ""  # type: ignore[arg-type]
                if kind is tuple and len(value) == 1:  # type: ignore[arg-type]
                    items += ","
                open_, close = {list: ("[", "]"), tuple: ("(", ")"), set: ("{", "}"), frozenset: ("frozenset({", "})")}[
                    kind
                ]
                return open_ + items + more + close
            if kind is dict:
                pairs = _first(value.items(), self.max_children)  # type: ignore[attr-defined]
                more = ", ..." if len(value) > self.max_children else ""  # type: ignore[arg-type]
                return "{" + ", ".join(f"{self.repr(k)}: {self.repr(v)}" for k, v in pairs) + more + "}"
            return object.__repr__(value)
        except BaseException as exc:
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            return f"<repr of {kind.__name__} raised {type(exc).__name__}: {_short(exc)}>"

    def _remember(self, value: object, text: str) -> str:
        if len(self.slow) >= _SLOW_KEPT:
            self.slow.clear()
        try:
            key: object = weakref.ref(value)
        except TypeError:
            key = type(value)
        self.slow[id(value)] = (key, text)
        return text

    def _bounded(self, value: object, text) -> str:
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
            items = [(self.repr(k), v) for k, v in _first(value.items(), self.max_items)]
        else:
            items = [(str(i), v) for i, v in enumerate(_first(value, self.max_items))]
        children = [[name, self.structure(child, 1) or self.repr(child)] for name, child in items]
        return [text, type(value).__name__, children, max(0, len(value) - len(children))]

    def structure(self, value: object, depth: int = 2, seen: dict | None = None) -> list | None:
        """[repr, type, children, more] for objects whose repr is not a Python literal.

        An object met twice in one structure (a request handler's `request` and `connection`, the
        socket under its `wfile`) is repr'd once: both are the same moment, so the text is the
        same, and some reprs are dear (a socket's asks the kernel for its two addresses).

        Done in C where built (trace/_values.c, held to this definition by
        tests/test_value_structure.py): a full capture walks every object local at every line."""
        if _structure_in_c is not None:
            return _structure_in_c(
                value,
                depth,
                {} if seen is None else seen,
                self.repr,
                _slot_names,
                self.limit,
                self.max_children,
                self.sockets,
                self.nodes,
            )
        return self.structure_in_python(value, depth, seen)

    def structure_in_python(self, value: object, depth: int = 2, seen: dict | None = None) -> list | None:
        """`structure` as defined: what the C walk must give, value for value."""
        kind = type(value)
        if kind in _ATOMS or kind in _LITERAL_CONTAINERS:
            return None
        if seen is None:
            seen = {}
        attrs = _attributes(value)
        if not attrs:
            # (its type, as a debugger shows it: an object without attributes of its own, a C one)
            return [self._repr_once(value, seen), kind.__name__, [], 0]
        children = []
        atoms = _ATOMS
        for name, child in attrs[: self.max_children]:
            if type(child) in atoms:  # (no structure, and no memo: an atom's repr is cheap)
                children.append([name, self.repr(child)])
                continue
            sub = self.structure_in_python(child, depth - 1, seen) if depth > 1 else None
            children.append([name, sub if sub is not None else self._repr_once(child, seen)])
        return [self._repr_once(value, seen), kind.__name__, children, max(0, len(attrs) - self.max_children)]

    def _repr_once(self, value: object, seen: dict) -> str:
        if type(value) in _ATOMS:
            return self.repr(value)
        found = seen.get(id(value))
        if found is None:
            # (the object is kept beside its text: its id cannot be reused while `seen` lives)
            found = seen[id(value)] = (value, self.repr(value))
        return found[1]


def _same(key: object, value: object) -> bool:
    if type(key) is weakref.ref:
        return key() is value  # type: ignore[operator]
    return key is type(value)


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
    names = _slot_names(type(value))
    if names:
        out = []
        for name in names:
            try:
                out.append((name, object.__getattribute__(value, name)))
            except Exception:
                pass  # (a slot not set yet)
        return out
    return None


def _slot_names(kind: type) -> tuple[str, ...]:
    """Every slot of a class and of its bases (a subclass's `__slots__` names only its own), in
    debugpy's order; `__dict__` and `__weakref__` are no values. Found once per class: walking the
    bases at every line of every frame holding such an object cost a tenth of a full recording.
    (The cache is keyed by the class's id and checked by a weak reference: it keeps no class alive
    and runs none of a metaclass's code, as a dict or lru_cache keyed by the class would.)"""
    found = _SLOT_NAMES.get(id(kind))
    if found is not None and found[0]() is kind:
        return found[1]
    names = _find_slot_names(kind)
    try:
        ref = weakref.ref(kind)
    except TypeError:
        return names
    if len(_SLOT_NAMES) >= _SLOT_NAMES_KEPT:
        _SLOT_NAMES.clear()
    _SLOT_NAMES[id(kind)] = (ref, names)
    return names


def _find_slot_names(kind: type) -> tuple[str, ...]:
    names: set[str] = set()
    for klass in getattr(kind, "__mro__", ()):
        slots = klass.__dict__.get("__slots__")
        if slots:
            names.update((slots,) if isinstance(slots, str) else slots)
    names -= {"__dict__", "__weakref__"}
    return tuple(sorted(names, key=lambda n: (n.startswith("__"), n.startswith("_"), n)))


_SLOT_NAMES: dict[int, tuple[weakref.ref, tuple[str, ...]]] = {}  # id(class) -> (its weak reference, slots)
_SLOT_NAMES_KEPT = 4096


def _short(exc: BaseException) -> str:
    try:
        return str(exc)[:200]
    except BaseException:
        return "?"
