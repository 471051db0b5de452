"""The recording child process: runs the debuggee under a tracer and streams compact events.

Runs as `python -m neural_dap.trace.child`, reads its JSON configuration from stdin (then stdin
becomes /dev/null for the debuggee) and writes batches of events to the file descriptor named in the
configuration (see `Channel` for the framing). It needs only the standard library (msgspec, when
the interpreter has it, makes the encoding faster), so it runs under any Python >= 3.10
(sys.monitoring is used on 3.12+).

Wire events (one array each; `inv` is the invocation id, `line` the line number):
  ["k", code_id, name, filename, first_line]          a new code object (sent once)
  ["c", inv, code_id, line, depth, changes]           call (a generator resume is a new call)
  ["l", inv, line, changes, caught]                   line, locals *before* it runs
  ["r", inv, line, value]                             return (or yield)
  ["x", inv, line, value]                             exit by exception
  ["u", inv, changes]                                 the caller's locals right after a return
  ["o", text] / ["e", text]                           stdout / stderr written since the last event
  ["end", outcome, message, exit_code, value]         how the run ended (last message)
`changes` is a flat list [name, value, name, value, ...] of locals that changed since the previous
event of the same invocation. A value is an int (repr is str(int)), true/false/null (True/False/
None), a string (the repr), [] (the name was deleted) or [repr, type, children, more] for an
object with structured children. Sending ints raw moves their repr into the parent process.
"""

from __future__ import annotations

import ast
import builtins
import io
import json
import os
import re
import sys
import sysconfig
import threading
import time
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


class Limits:
    def __init__(self, cfg: dict) -> None:
        self.max_events = int(cfg.get("max_events", 200_000))
        self.wall_time = float(cfg.get("wall_time", 10.0))
        self.max_repr = int(cfg.get("max_repr", 1000))
        self.max_output = int(cfg.get("max_output", 1_000_000))
        self.memory_mb = int(cfg.get("memory_mb", 0))
        self.max_children = int(cfg.get("max_children", 50))
        self.max_processes = int(cfg.get("max_processes", 16))


def _normalize(text: str) -> str:
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
            text = _normalize(text)
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
            open_, close = {list: "[]", tuple: "()", set: "{}", frozenset: ("frozenset({", "})")}[type(value)]
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
    out = []
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


def _encoder():
    """msgpack through msgspec when this interpreter has it (several times faster), else JSON."""
    try:
        import msgspec

        return b"m", msgspec.msgpack.Encoder().encode
    except ImportError:
        return b"j", lambda batch: json.dumps(batch, separators=(",", ":")).encode("ascii")


class Channel:
    """Batches events in memory; a background thread writes them to the parent.

    Frames on the wire: one format byte (m: msgpack, j: JSON; upper case for the final record), a
    4-byte little-endian length, the encoded batch (an array of events). The flusher also enforces the wall-time and event limits:
    it runs whenever the debuggee releases the GIL, so an endless Python loop still ends with its
    events kept.
    """

    def __init__(self, fd: int, limits: Limits) -> None:
        self.fd = fd
        self.kind, self.encode = _encoder()
        self.events: list = []
        self.limits = limits
        self.sent = 0
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.closed = False
        self.thread = threading.Thread(target=self._run, name="neural-dap-flusher", daemon=True)
        self.exit = os._exit  # kept before the debuggee can replace it

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(0.01):
            self.flush()
            if time.monotonic() - self.started > self.limits.wall_time:
                self.finish("timeout", f"the program ran past the {self.limits.wall_time:g} s wall-time limit")
                self.exit(0)
            if self.sent >= self.limits.max_events:
                self.finish("event_limit", f"the program passed the {self.limits.max_events} event limit")
                self.exit(0)

    def _write(self, batch: list, last: bool = False) -> None:
        payload = self.encode(batch)
        kind = self.kind.upper() if last else self.kind  # the final record is marked: M / J
        data = kind + len(payload).to_bytes(4, "little") + payload
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]

    def flush(self) -> None:
        with self.lock:
            if self.closed:
                return
            events = self.events
            n = len(events)
            if not n:
                return
            batch = events[:n]
            del events[:n]
            room = self.limits.max_events - self.sent
            if room <= 0:
                return
            if len(batch) > room:
                batch = _cut_to_states(batch, room)
            self.sent += _count_states(batch)
            try:
                self._write(batch)
            except (OSError, ValueError, TypeError):
                self.closed = True

    def finish(self, outcome: str, message: str = "", exit_code: int | None = None, value=None) -> None:
        self.done.set()
        self.flush()
        with self.lock:
            if self.closed:
                return
            try:
                self._write([("end", outcome, message, exit_code, value)], last=True)
            except (OSError, ValueError, TypeError):
                pass
            self.closed = True


def _count_states(batch: list) -> int:
    return sum(1 for e in batch if e[0] in "clrx")


def _cut_to_states(batch: list, room: int) -> list:
    out = []
    for e in batch:
        if e[0] in "clrx":
            if room == 0:
                break
            room -= 1
        out.append(e)
    return out


class Capture(io.TextIOBase):
    """sys.stdout / sys.stderr of the debuggee: output lands between the events it came between."""

    def __init__(self, tag: str, recorder: Recorder, name: str) -> None:
        self.tag = tag
        self.recorder = recorder
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def encoding(self) -> str:
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self.recorder.output(self.tag, text)
        return len(text)

    def flush(self) -> None:
        pass


class Recorder:
    def __init__(self, cfg: dict, channel: Channel) -> None:
        self.cfg = cfg
        self.limits = channel.limits
        self.channel = channel
        self.events = channel.events
        self.reprs = Reprs(self.limits.max_repr, self.limits.max_children)
        self.program = os.path.abspath(cfg["path"])
        self.trace_all = bool(cfg.get("trace_all", False))
        self.roots = [os.path.realpath(r) for r in cfg.get("roots") or [os.path.dirname(self.program)]]
        self.excluded = _excluded_prefixes()
        self.user_cache: dict = {}
        self.code_ids: dict = {}
        self.next_invocation = 0
        self.depth = 0
        self.output_left = self.limits.max_output
        self.output_cut = False

    # -- what is the user's code -----------------------------------------------------------------
    def is_user(self, code: types.CodeType) -> bool:
        found = self.user_cache.get(code)
        if found is None:
            found = self.user_cache[code] = self._judge(code)
        return found

    def _judge(self, code: types.CodeType) -> bool:
        if code.co_name in _COMPREHENSIONS:
            return False  # inlined since 3.12 (PEP 709): traces stay the same on every version
        filename = code.co_filename
        if filename == self.program:
            return True
        if filename.startswith("<"):
            return False
        path = os.path.realpath(filename)
        if any(path.startswith(p) for p in self.excluded):
            return False
        if self.trace_all:
            return True
        return any(path == r or path.startswith(r + os.sep) for r in self.roots)

    def code_id(self, code: types.CodeType) -> int:
        cid = self.code_ids.get(code)
        if cid is None:
            cid = self.code_ids[code] = len(self.code_ids)
            self.events.append(["k", cid, code.co_name, code.co_filename, code.co_firstlineno])
        return cid

    def output(self, tag: str, text: str) -> None:
        if not text:
            return
        if self.output_left <= 0:
            if not self.output_cut:
                self.output_cut = True
                self.events.append([tag, f"\n[neural-dap: output beyond {self.limits.max_output} characters dropped]\n"])
            return
        if len(text) > self.output_left:
            text = text[: self.output_left]
        self.output_left -= len(text)
        self.events.append([tag, text])

    # -- locals ----------------------------------------------------------------------------------
    def make_differ(self, module_scope: bool):
        """A function of f_locals that returns the changed locals as a flat list (or None).

        Hot path: it runs on every traced line. Atoms (ints, strs, ...) compare by identity, so an
        unchanged one costs two lookups; objects that can change in place are encoded each time.
        """
        objs: dict = {}  # name -> the object last seen
        encs: dict = {}  # name -> its encoding, for objects that can change in place
        missing = _MISSING
        atoms = _ATOMS
        encode_atom = self.encode_atom
        encode_object = self.encode_object

        def diff(f_locals):
            changes = None
            for name, value in f_locals.items():
                if type(value) in atoms:
                    if objs.get(name, missing) is value:
                        continue
                    if module_scope and name[:2] == "__":
                        continue
                    enc = value if type(value) is int and -_SMALL_INT < value < _SMALL_INT else encode_atom(value)
                    objs[name] = value
                    if name in encs:
                        del encs[name]
                else:
                    if name[0] == "." or (module_scope and _hidden_global(name, value)):
                        continue
                    enc = encode_object(value)
                    objs[name] = value
                    if encs.get(name) == enc:
                        continue
                    encs[name] = enc
                if changes is None:
                    changes = [name, enc]
                else:
                    changes.append(name)
                    changes.append(enc)
            if module_scope or len(objs) > len(f_locals):  # something may have been deleted
                for name in [n for n in objs if n not in f_locals]:
                    del objs[name]
                    encs.pop(name, None)
                    if changes is None:
                        changes = []
                    changes.append(name)
                    changes.append([])
            return changes

        return diff

    def encode_atom(self, value):
        kind = type(value)
        if kind is bool or value is None:
            return value
        if kind is str and len(value) < self.limits.max_repr:
            return repr(value)
        return self.reprs.repr(value)

    def encode_object(self, value):
        structured = self.reprs.structure(value)
        if structured is not None:
            return structured
        text = self.reprs.repr(value)
        if text.endswith(_MARK) and type(value) in _LITERAL_CONTAINERS:
            # the repr was cut: keep the first items as children, so the variables tree still opens
            return self.reprs.container_structure(value, text)
        return text

    def value_repr(self, value: object):
        if type(value) is int and -_SMALL_INT < value < _SMALL_INT:
            return value
        return self.reprs.repr(value)


def _hidden_global(name: str, value: object) -> bool:
    return name.startswith("__") or isinstance(value, _HIDDEN_MODULE_TYPES)


def _excluded_prefixes() -> list[str]:
    paths = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            paths.add(os.path.realpath(sysconfig.get_path(key)))
        except (KeyError, TypeError):
            pass
    paths.add(os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    for entry in sys.path:
        if entry and ("site-packages" in entry or "dist-packages" in entry):
            paths.add(os.path.realpath(entry))
    return sorted(paths)


# -- engines ---------------------------------------------------------------------------------------


def settrace_engine(rec: Recorder):
    """sys.settrace: one closure per traced frame keeps its invocation id and locals shadow."""
    emit = rec.events.append
    user_cache = rec.user_cache
    judge = rec._judge
    code_ids = rec.code_ids
    value_repr = rec.value_repr
    make_differ = rec.make_differ
    bounded = rec.reprs.repr
    counter = [0]  # next invocation id
    active: list = []  # (frame, invocation, diff) of each traced frame on the stack

    def global_trace(frame, event, arg):
        code = frame.f_code
        user = user_cache.get(code)
        if user is None:
            user = user_cache[code] = judge(code)
        if not user:
            return None
        inv = counter[0]
        counter[0] = inv + 1
        depth = len(active)
        diff = make_differ(code.co_name == "<module>")
        active.append((frame, inv, diff))
        cid = code_ids.get(code)
        if cid is None:
            cid = rec.code_id(code)
        emit(("c", inv, cid, frame.f_lineno, depth, diff(frame.f_locals)))
        pending = None

        def local_trace(frame, event, arg):
            nonlocal pending
            if event == "line":
                if pending is None:
                    emit(("l", inv, frame.f_lineno, diff(frame.f_locals), None))
                else:
                    emit(("l", inv, frame.f_lineno, diff(frame.f_locals), bounded(pending)))
                    pending = None
            elif event == "return":
                if pending is not None and arg is None:
                    emit(("x", inv, frame.f_lineno, bounded(pending)))
                else:
                    emit(("r", inv, frame.f_lineno, value_repr(arg)))
                if active and active[-1][1] == inv:
                    active.pop()
                if active:
                    # what the callee changed in its caller's objects shows in the caller right away
                    caller, caller_inv, caller_diff = active[-1]
                    changes = caller_diff(caller.f_locals)
                    if changes:
                        emit(("u", caller_inv, changes))
            elif event == "exception":
                pending = arg[1]
            return local_trace

        return local_trace

    def start():
        sys.settrace(global_trace)  # this thread only: threads the program starts are not traced

    def stop():
        sys.settrace(None)

    return start, stop


def monitoring_engine(rec: Recorder):
    """sys.monitoring (3.12+): events enabled per user code object; other code is DISABLEd."""
    mon = sys.monitoring  # type: ignore[attr-defined]
    E = mon.events
    tool = next((t for t in (4, 3, 5, 2, 1) if mon.get_tool(t) is None), None)
    if tool is None:
        raise RuntimeError("no free sys.monitoring tool id")
    DISABLE = mon.DISABLE
    emit = rec.events.append
    is_user = rec.is_user
    value_repr = rec.value_repr
    getframe = sys._getframe
    stack: list = []  # [frame, inv, diff, pending] per active traced frame
    local_events = E.LINE | E.PY_RETURN | E.PY_YIELD | E.PY_RESUME | E.JUMP
    enabled: set = set()
    line_tables: dict = {}

    def on_start(code, offset):
        return start_invocation(code)

    def start_invocation(code):
        if not is_user(code):
            return DISABLE
        if code not in enabled:
            enabled.add(code)
            mon.set_local_events(tool, code, local_events)
        frame = getframe(2)  # 0: here, 1: on_start, 2: the code that started
        inv = rec.next_invocation
        rec.next_invocation = inv + 1
        diff = rec.make_differ(code.co_name == "<module>")
        entry = [frame, inv, diff, None]
        emit(["c", inv, rec.code_id(code), frame.f_lineno, len(stack), diff(frame.f_locals)])
        stack.append(entry)

    def on_line(code, line):
        if not stack:
            return
        top = stack[-1]
        frame = getframe(1)
        if top[0] is not frame:
            return  # another thread, or a frame we do not trace
        if top[3] is None:
            emit(["l", top[1], line, top[2](frame.f_locals), None])
        else:
            emit(["l", top[1], line, top[2](frame.f_locals), rec.reprs.repr(top[3])])
            top[3] = None

    def on_jump(code, offset, target):
        # settrace reports a backward jump within one line as a new line event (a one-line loop);
        # LINE does not. Mirror that (as CPython's own settrace emulation does) for generator
        # expressions, which are frames on every version; inlined comprehensions (3.12+) stay one
        # step, as their separate, untraced frames are on 3.11.
        if target > offset or code.co_name != "<genexpr>":
            return DISABLE
        table = line_tables.get(code)
        if table is None:
            table = line_tables[code] = _offset_lines(code)
        line = table.get(target)
        if line is None or line != table.get(offset):
            return DISABLE
        on_line_at(code, line, getframe(1))

    def on_line_at(code, line, frame):
        if not stack:
            return
        top = stack[-1]
        if top[0] is not frame:
            return
        emit(["l", top[1], line, top[2](frame.f_locals), None])

    def on_return(code, offset, retval):
        if stack and stack[-1][0] is getframe(1):
            top = stack.pop()
            emit(["r", top[1], top[0].f_lineno, value_repr(retval)])
            update_caller()

    def on_unwind(code, offset, exc):
        if stack and stack[-1][0] is getframe(1):
            top = stack.pop()
            emit(["x", top[1], top[0].f_lineno, rec.reprs.repr(exc)])
            update_caller()

    def update_caller():
        if stack:
            caller = stack[-1]
            changes = caller[2](caller[0].f_locals)
            if changes:
                emit(["u", caller[1], changes])

    def on_handled(code, offset, exc):
        if stack and stack[-1][0] is getframe(1):
            stack[-1][3] = exc

    def start():
        mon.use_tool_id(tool, "neural-dap")
        mon.register_callback(tool, E.PY_START, on_start)
        mon.register_callback(tool, E.PY_RESUME, on_start)
        mon.register_callback(tool, E.LINE, on_line)
        mon.register_callback(tool, E.JUMP, on_jump)
        mon.register_callback(tool, E.PY_RETURN, on_return)
        mon.register_callback(tool, E.PY_YIELD, on_return)
        mon.register_callback(tool, E.PY_UNWIND, on_unwind)
        mon.register_callback(tool, E.EXCEPTION_HANDLED, on_handled)
        mon.set_events(tool, E.PY_START | E.PY_RESUME | E.PY_UNWIND | E.EXCEPTION_HANDLED)

    def stop():
        mon.set_events(tool, 0)
        for code in enabled:
            mon.set_local_events(tool, code, 0)
        mon.free_tool_id(tool)

    return start, stop


def _offset_lines(code) -> dict:
    table = {}
    for start, end, line in code.co_lines():
        if line is not None:
            for offset in range(start, end, 2):
                table[offset] = line
    return table


# -- running the program ---------------------------------------------------------------------------


def _parse_call_args(text: str, namespace: dict, literal_only: bool = False) -> tuple[list, dict]:
    """Turn `"[3, 1], key=None"` into (args, kwargs).

    Literals are parsed with ast.literal_eval. Anything else (e.g. `set()`) is evaluated in the
    program's own namespace, because this text comes from the user who asked to run the program;
    with `literal_only` (text built from a model's prediction) anything else is refused.
    """
    tree = ast.parse(f"_entry_({text})", mode="eval")
    call = tree.body
    assert isinstance(call, ast.Call)

    def value(node):
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            if literal_only:
                raise ValueError(f"the argument {ast.unparse(node)[:80]!r} is not a Python literal") from None
            expr = ast.Expression(node)
            ast.fix_missing_locations(expr)
            return eval(compile(expr, "<entry args>", "eval"), namespace)  # noqa: S307 (user input)

    args: list = []
    for node in call.args:
        if isinstance(node, ast.Starred):
            args.extend(value(node.value))
        else:
            args.append(value(node))
    kwargs: dict = {}
    for kw in call.keywords:
        if kw.arg is None:
            kwargs.update(value(kw.value))
        else:
            kwargs[kw.arg] = value(kw.value)
    return args, kwargs


def ctrace_engine(rec: Recorder):
    """The settrace engine in C (3.11; built with the package when a compiler is there)."""
    from neural_dap.trace._ctracer import Tracer

    tracer = Tracer(rec.events, rec.user_cache, rec._judge, rec.code_ids, rec.code_id, rec.encode_atom, rec.encode_object,
                    rec.value_repr, rec.reprs.repr)
    return tracer.start, tracer.stop


def _choose_engine(name: str, rec: Recorder):
    if name == "monitoring" or (name == "auto" and hasattr(sys, "monitoring")):
        return "monitoring", monitoring_engine(rec)
    if name in ("auto", "ctrace") and sys.version_info[:2] == (3, 11):
        try:
            return "ctrace", ctrace_engine(rec)
        except ImportError:
            if name == "ctrace":
                raise
    return "settrace", settrace_engine(rec)


def _limit_processes(allowed: int) -> None:
    """At most `allowed` new processes: RLIMIT_NPROC where the kernel applies it (not for root), and a
    count kept by every way the standard library starts one. (Whatever the debuggee starts is killed
    with its process group when the recording ends.)"""
    try:
        import resource

        if os.geteuid() != 0:
            running = len(os.listdir("/proc")) if os.path.isdir("/proc") else 0  # a generous count of the user's processes
            soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
            cap = running + allowed
            if hard != resource.RLIM_INFINITY:
                cap = min(cap, hard)
            resource.setrlimit(resource.RLIMIT_NPROC, (cap, hard))
    except (ImportError, ValueError, OSError):
        pass
    left = [allowed]

    def counted(original):
        def start(*args, **kwargs):
            if left[0] <= 0:
                raise BlockingIOError(11, f"neural-dap: the debuggee may start at most {allowed} processes")
            left[0] -= 1
            return original(*args, **kwargs)

        return start

    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            setattr(os, name, counted(getattr(os, name)))
    try:
        import _posixsubprocess  # what subprocess.Popen starts processes with

        _posixsubprocess.fork_exec = counted(_posixsubprocess.fork_exec)
    except (ImportError, AttributeError):
        pass


def main() -> None:
    cfg = json.loads(sys.stdin.read())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # the debuggee reads EOF, never our configuration
    sys.stdin = open(0, closefd=False)
    limits = Limits(cfg)
    if limits.memory_mb:
        try:
            import resource

            cap = limits.memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        except (ImportError, ValueError, OSError):
            pass
    _limit_processes(limits.max_processes)
    import faulthandler

    # if the interpreter dies (a segfault in C code), its stack goes to stderr for the parent
    faulthandler.enable(file=sys.__stderr__)
    channel = Channel(int(cfg["events_fd"]), limits)
    rec = Recorder(cfg, channel)
    engine_name, (start, stop) = _choose_engine(cfg.get("engine", "auto"), rec)
    real_exit = os._exit

    def exit_after_flush(code: int = 0) -> None:
        stop()
        channel.finish("exited", f"the program called os._exit({code})", code)
        real_exit(code)

    os._exit = exit_after_flush  # type: ignore[assignment]
    channel.events.append(["engine", engine_name, sys.version.split()[0]])
    channel.start()
    outcome = _run(cfg, rec, start, stop, channel)
    channel.finish(*outcome)
    real_exit(0)


def _run(cfg: dict, rec: Recorder, start, stop, channel: Channel) -> tuple:
    path = rec.program
    source = cfg.get("source")
    try:
        if source is None:
            with open(path, "rb") as fh:
                source = fh.read()
        code = compile(source, path, "exec", dont_inherit=True)
    except (OSError, SyntaxError, ValueError) as exc:
        return ("error", f"cannot compile {path}: {type(exc).__name__}: {exc}", None, None)

    main_module = types.ModuleType("__main__")
    main_module.__dict__.update({"__file__": path, "__builtins__": builtins, "__cached__": None})
    sys.modules["__main__"] = main_module
    sys.argv = [path, *cfg.get("argv", [])]
    # as `python program.py` would: the program's folder first, not ours
    ours = cfg.get("own_path")
    sys.path[:] = [os.path.dirname(path)] + [p for p in sys.path[1:] if p != ours]
    if cfg.get("cwd"):
        try:
            os.chdir(cfg["cwd"])
        except OSError as exc:
            return ("error", f"cannot change directory to {cfg['cwd']}: {exc}", None, None)
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout = Capture("o", rec, "<stdout>")
    sys.stderr = Capture("e", rec, "<stderr>")
    entry = cfg.get("entry")
    try:
        if entry:
            exec(code, main_module.__dict__)  # the definitions run untraced
            func = main_module.__dict__.get(entry)
            if not callable(func):
                return ("error", f"{path} defines no function {entry!r}", None, None)
            try:
                args, kwargs = _parse_call_args(cfg.get("entry_args") or "", main_module.__dict__, bool(cfg.get("literal_args")))
            except (ValueError, SyntaxError) as exc:
                return ("error", f"cannot call {entry}: {exc}", None, None)
            start()
            try:
                result = func(*args, **kwargs)
            finally:
                stop()
            return ("finished", "", 0, rec.reprs.repr(result))
        start()
        try:
            exec(code, main_module.__dict__)
        finally:
            stop()
        return ("finished", "", 0, None)
    except SystemExit as exc:
        code_ = exc.code
        if code_ is None or isinstance(code_, int):
            return ("exited", f"the program called sys.exit({code_!r})", code_ or 0, None)
        print(code_, file=sys.stderr)
        return ("exited", f"the program called sys.exit({code_!r})", 1, None)
    except BaseException as exc:  # the debuggee's uncaught exception is an outcome, not our crash
        kind = "memory" if isinstance(exc, MemoryError) else "raised"
        return (kind, f"{type(exc).__name__}: {_short(exc)}", 1, rec.reprs.repr(exc))
    finally:
        sys.stdout, sys.stderr = stdout, stderr


if __name__ == "__main__":
    main()
