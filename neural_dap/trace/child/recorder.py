"""What the recording child traces (the user's code) and how it turns a frame's locals into changes.
Standard library only."""

from __future__ import annotations

import codecs
import io
import os
import sys
import sysconfig
import types
from operator import is_ as _is

from neural_dap.trace.child.channel import Channel
from neural_dap.trace.child.coroutines import Suspensions
from neural_dap.trace.child.journal import plumbing
from neural_dap.trace.child.terminal import OutputCopy
from neural_dap.trace.child.values import (
    _ATOMS,
    _COMPREHENSIONS,
    _HIDDEN_MODULE_TYPES,
    _LITERAL_CONTAINERS,
    _MARK,
    _MISSING,
    _SMALL_INT,
    Reprs,
)

# what a Capture does with what is written to it (TEE: a child process recording itself, whose
# parent may be reading its output, records it and writes it to the file descriptor too)
RECORD, DISCARD, PASS, TEE = "record", "discard", "pass", "tee"
_CAPTURES: list[Capture] = []  # every one made: a worker or a forked child switches them all


def set_output_mode(mode: str) -> None:
    """RECORD: output becomes events; DISCARD: a replay (a worker) must not print it again; PASS: a
    process the debuggee forked writes to the file descriptor, as it would without us (the parent
    collects fd output)."""
    for capture in _CAPTURES:
        capture.capture_mode = mode


class _CaptureBuffer(io.BufferedWriter):
    """`sys.stdout.buffer` of the debuggee: bytes written here are output too, in order with text."""

    def __init__(self, raw: io.RawIOBase, owner: Capture) -> None:
        super().__init__(raw)  # type: ignore[arg-type]
        self._owner = owner

    def write(self, data) -> int:  # type: ignore[override]
        if self.closed:
            raise ValueError("write to closed file")
        return self._owner.write_bytes(data)

    def flush(self) -> None:
        if self.closed:
            raise ValueError("flush of closed file")


class _CaptureRaw(io.FileIO):
    """`sys.stdout.buffer` of an unbuffered (-u, PYTHONUNBUFFERED) debuggee: a FileIO, as there."""

    def __init__(self, fd: int, owner: Capture, name) -> None:
        super().__init__(fd, "w", closefd=False)
        self._owner = owner
        self.name = name

    def write(self, data) -> int:  # type: ignore[override]
        if self.closed:
            raise ValueError("I/O operation on closed file")
        return self._owner.write_bytes(data)


class Capture(io.TextIOWrapper):
    """sys.stdout / sys.stderr of the debuggee: output lands between the events it came between.

    Everything else answers as the stream the child was given (a pipe to the adapter): isatty(),
    encoding, errors, fileno(), name, buffer (whose writes are captured too), reconfigure(), so a
    program that looks at its streams (faulthandler, logging, click, pytest) sees what a plain run
    sees. What is written to the file descriptor itself (os.write(1, ...), buffer.raw) reaches the
    adapter through the pipe, after the captured output. The same object serves a replay (mode
    DISCARD) and a forked child of the debuggee (PASS), so what they see never differs.
    """

    def __init__(self, tag: str, recorder: Recorder, real, fd: int) -> None:
        real_buffer = getattr(real, "buffer", None)
        buffer: io.BufferedIOBase | io.RawIOBase
        if isinstance(real_buffer, io.BufferedWriter):
            buffer = _CaptureBuffer(real_buffer.raw, self)  # the real FileIO: fileno(), isatty(), name
        else:  # unbuffered (-u) or no stream at all
            if not _is_open(fd):
                fd = os.open(os.devnull, os.O_WRONLY)
            buffer = _CaptureRaw(fd, self, getattr(real_buffer, "name", fd))
        super().__init__(
            buffer,  # type: ignore[arg-type]
            encoding=getattr(real, "encoding", None) or "utf-8",
            errors=getattr(real, "errors", None) or "strict",
            newline="\n",
            line_buffering=bool(getattr(real, "line_buffering", False)),
            write_through=bool(getattr(real, "write_through", False)),
        )
        self.tag = tag
        self.recorder = recorder
        self.capture_mode = RECORD
        self.__dict__["mode"] = getattr(real, "mode", "w")  # as open() and the interpreter set it
        self._decoder: codecs.IncrementalDecoder | None = None
        _CAPTURES.append(self)

    def write_bytes(self, data) -> int:
        """What the debuggee writes to sys.stdout.buffer."""
        with memoryview(data) as view:
            size = view.nbytes
            if self.capture_mode in (RECORD, TEE):
                if self._decoder is None:
                    self._decoder = codecs.getincrementaldecoder(self.encoding)("replace")
                self.recorder.output(self.tag, self._decoder.decode(view.tobytes()))
            if self.capture_mode in (PASS, TEE):
                _write_fd(self.fileno(), view)
        return size

    def write(self, text: str) -> int:  # type: ignore[override]
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        mode = self.capture_mode
        data = text.encode(self.encoding, self.errors or "strict")  # what the real stream cannot encode raises here too
        if mode in (RECORD, TEE):
            self.recorder.output(self.tag, text)
        if mode in (PASS, TEE):
            _write_fd(self.fileno(), data)
        return len(text)


def _write_fd(fd: int, data) -> None:
    with memoryview(data) as view:
        while view:
            view = view[os.write(fd, view) :]


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


class Recorder:
    def __init__(self, cfg: dict, channel: Channel) -> None:
        self.cfg = cfg
        self.limits = channel.limits
        self.channel = channel
        self.events = channel.events
        self.reprs = Reprs(self.limits.max_repr, self.limits.max_children, self.limits.repr_seconds)
        channel.guard = self.reprs.guard
        self.program = os.path.abspath(cfg["path"])
        self.trace_all = bool(cfg.get("trace_all", False))
        self.comprehensions = bool(cfg.get("comprehensions", False))
        self.as_debugpy = bool(cfg.get("as_debugpy", False))
        self.roots = [os.path.realpath(r) for r in cfg.get("roots") or [os.path.dirname(self.program)]]
        # justMyCode false: the standard library and installed packages are the user's code too
        self.excluded = _own_prefixes() if cfg.get("trace_libraries") else _excluded_prefixes()
        # keyed by id(code), each code kept alive in `codes_seen`: code objects compare by contents,
        # not by file (two empty modules' codes are equal), so a dict keyed by the code itself
        # would judge, and number, one file's code by another's
        self.user_cache: dict[int, bool] = {}
        self.library_cache: dict[int, bool] = {}
        self.code_ids: dict[int, int] = {}
        self.codes_seen: list[types.CodeType] = []
        # filename -> whether its code is the user's (`_judge_file`): a file is looked up on disk
        # once (a new code object of a file judged before costs no system call, and so no hand-over
        # of the GIL: with threads, library code a thread runs for the first time let another
        # thread run right there, at a moment no event or lock take orders, which a replay cannot
        # place: a logging cache filled by whichever thread looked first)
        self.judged_files: dict[str, bool] = {}
        self.next_invocation = 0
        self.depth = 0
        self.output_left = self.limits.max_output
        self.output_cut = False
        self.count = None  # skeleton mode: a function giving the number of events so far
        self.terminal = OutputCopy.open(cfg.get("output_copy"))  # a terminal console sees output as it is written
        # which invocation a resumed generator or coroutine continues, and whether the user's code runs it
        self.suspensions = Suspensions(self.is_user)

    def set_main(self, path: str, roots: list[str]) -> None:
        """A module launch: the main file is known once the module is found; the user's code is
        what lies under `roots` (the working folder), not the module's own folder."""
        if not self.cfg.get("roots"):
            self.roots = [os.path.realpath(r) for r in roots]
        real = os.path.realpath(path)
        library = any(real.startswith(p) for p in self.excluded)
        inside = any(real.startswith(r + os.sep) for r in self.roots) and not library
        # `python -m pytest`: pytest's own __main__ is not the user's code, the tests it runs are
        self.program = path if inside or (self.trace_all and not library) else ""
        self.user_cache.clear()
        self.library_cache.clear()
        self.judged_files.clear()

    # -- what is the user's code -----------------------------------------------------------------
    def is_user(self, code: types.CodeType) -> bool:
        found = self.user_cache.get(id(code))
        if found is None:
            found = self.judge(code)
        return found

    def judge(self, code: types.CodeType) -> bool:
        """Judge `code` once (the engines look in `user_cache` by id first)."""
        found = self.user_cache[id(code)] = self._judge(code)
        self.codes_seen.append(code)
        return found

    def _judge(self, code: types.CodeType) -> bool:
        if code.co_name in _COMPREHENSIONS and not self.comprehensions:
            return False  # inlined since 3.12 (PEP 709): traces stay the same on every version
        return self._users_file(code)

    def is_library(self, code: types.CodeType) -> bool:
        """Library code (the standard library, installed packages, code with no file), not the
        user's own code left untraced (a comprehension where they are not recorded). Asked of the
        frame under a traced call when it is not the traced frame below it: the call is then one
        that library code made (child/__init__.py), and stepping off its return is different."""
        found = self.library_cache.get(id(code))
        if found is None:
            found = self.library_cache[id(code)] = not self._users_file(code)
            self.codes_seen.append(code)
        return found

    def called_by_library(self, frame: types.FrameType, below: types.FrameType | None) -> bool:
        """A call of the user's code (`frame`) was made by library code, not by `below`, the traced
        frame under it on the stack."""
        back = frame.f_back
        return back is not None and back is not below and self.is_library(back.f_code)

    def _users_file(self, code: types.CodeType) -> bool:
        """The code lies in the user's files (whatever kind of code it is)."""
        with plumbing():  # (it looks at the file system: the recorder's question, not the program's)
            return self._judge_file(code)

    def _judge_file(self, code: types.CodeType) -> bool:
        filename = code.co_filename
        if filename == self.program:
            return True
        if filename.startswith("<"):
            return False
        found = self.judged_files.get(filename)
        if found is None:
            found = self.judged_files[filename] = self._judge_path(filename)
        return found

    def _judge_path(self, filename: str) -> bool:
        path = os.path.realpath(filename)
        if any(path.startswith(p) for p in self.excluded):
            return False
        if self.trace_all:
            return True
        return any(path == r or path.startswith(r + os.sep) for r in self.roots)

    def code_id(self, code: types.CodeType) -> int:
        cid = self.code_ids.get(id(code))
        if cid is None:
            cid = self.code_ids[id(code)] = len(self.code_ids)
            self.codes_seen.append(code)
            self.events.append(["k", cid, code.co_name, code.co_filename, code.co_firstlineno])
        return cid

    def output(self, tag: str, text: str) -> None:
        if text and self.terminal is not None:  # all of it: the limit bounds the recording, not the terminal
            with plumbing():
                self.terminal.write(text)
        if not text or self.output_cut:
            return
        left = self.output_left
        if len(text) > left:
            # the notice sits where the output was cut: right after the kept text, once
            self.output_cut = True
            self._output(tag, text[:left])
            self._output(tag, f"\n[neural-dap: output beyond {self.limits.max_output} characters dropped]\n")
            self.output_left = 0
            return
        self.output_left = left - len(text)
        self._output(tag, text)

    def _output(self, tag: str, text: str) -> None:
        if not text:
            return
        if self.count is None:
            self.events.append([tag, text])
        else:  # skeleton mode: the output says after how many events it was written
            self.events.append([tag, text, self.count()])

    # -- locals ----------------------------------------------------------------------------------
    def make_differ(self, module_scope: bool):
        """A function of f_locals that returns the changed locals as a flat list (or None).

        Hot path: it runs on every traced line. Atoms (ints, strs, ...) compare by identity, so an
        unchanged one costs two lookups; objects that can change in place are encoded each time.
        """
        objs: dict = {}  # name -> the object last seen
        encs: dict = {}  # name -> its encoding, for objects that can change in place
        # name -> the object last found fixed (a module's dunders, modules, functions and classes,
        # encoded once): the same object under the same name is known so again without asking at
        # every line (a thread's every line diffs its module's globals: engines.SharedGlobals)
        hidden: dict = {}
        # name -> (a small list or dict whose items are all atoms, a shallow copy of it): unchanged
        # while it holds the very same items, compared in C (a thread's list of results re-encoded
        # at every line was a tenth of a threaded recording)
        shallow: dict = {}
        unchanged = _same_items
        atoms_of = _atom_items
        is_ = _is
        missing = _MISSING
        atoms = _ATOMS
        module_type = types.ModuleType
        encode_atom = self.encode_atom
        encode_object = self.encode_object
        dotted = self.comprehensions  # CPython's own names (`.0`) shown as the interpreter has them

        def diff(f_locals, seen: dict | None = None):
            """`seen`: reprs already made at this event (one object shown in several frames, or in a
            frame and in its module's globals, is repr'd once an event: see Reprs.structure). The
            Python engines of every thread pass one; the C tracer does not (one memo a value)."""
            changes = None
            for name, value in f_locals.items():
                if type(value) in atoms:
                    if objs.get(name, missing) is value:
                        continue
                    enc = value if type(value) is int and -_SMALL_INT < value < _SMALL_INT else encode_atom(value)
                    objs[name] = value
                    encs.pop(name, None)
                    shallow.pop(name, None)
                elif module_scope and (
                    hidden.get(name, missing) is value or isinstance(value, module_type) or _hidden_global(name, value)
                ):
                    # a module's imported modules, functions, classes and dunders, shown as debugpy
                    # shows them (a module inline, the others in its groups): made once for the
                    # object a name holds (not among `encs`, so a module's unchanged globals are not
                    # diffed: SharedGlobals)
                    if objs.get(name, missing) is value:
                        continue
                    hidden[name] = value
                    enc = encode_object(value, seen)
                    objs[name] = value
                    encs.pop(name, None)
                    shallow.pop(name, None)
                else:
                    if name[0] == "." and not dotted:
                        continue
                    if module_scope:
                        hidden.pop(name, None)  # (the program's objects are not kept past its own use)
                    kept = shallow.get(name)
                    if kept is not None and kept[0] is value:
                        # (the same small list or dict of the same atoms: the same repr)
                        items = kept[1]
                        if type(value) is list:
                            if len(items) == len(value) and all(map(is_, items, value)):
                                continue
                        elif unchanged(items, value):
                            continue
                    # (the items before the repr: another thread may change the list while it runs)
                    kept = atoms_of(value)
                    enc = encode_object(value, seen)
                    objs[name] = value
                    if kept is not None:
                        shallow[name] = (value, kept)
                    elif name in shallow:
                        del shallow[name]
                    if encs.get(name) == enc:
                        continue
                    encs[name] = enc
                if changes is None:
                    changes = [name, enc]
                else:
                    changes.append(name)
                    changes.append(enc)
            if module_scope:
                for name in [n for n in hidden if n not in f_locals]:
                    del hidden[name]
            if module_scope or len(objs) > len(f_locals):  # something may have been deleted
                for name in [n for n in objs if n not in f_locals]:
                    del objs[name]
                    encs.pop(name, None)
                    shallow.pop(name, None)
                    if changes is None:
                        changes = []
                    changes.append(name)
                    changes.append([])
            return changes

        diff.encs = encs  # type: ignore[attr-defined]  # (the names shown that can change in place: engines.SharedGlobals)
        return diff

    def encode_atom(self, value):
        kind = type(value)
        if kind is bool or value is None:
            return value
        if kind is str and len(value) < self.limits.max_repr:
            return repr(value)
        return self.reprs.repr(value)

    def encode_object(self, value, seen: dict | None = None):
        structured = self.reprs.structure(value, 2, seen)
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


_SHALLOW_ITEMS = 64  # a longer list is encoded at each line (its copy and comparison would cost more)


def _atom_items(value: object) -> tuple | None:
    """What identifies the contents of a small list or dict whose items (keys and values) are all
    atoms: while each is the very same object, in the same order, its repr is the same. None for
    anything else."""
    if type(value) is list and len(value) <= _SHALLOW_ITEMS and _ATOMS.issuperset(map(type, value)):
        return tuple(value)
    if type(value) is dict and len(value) <= _SHALLOW_ITEMS and _ATOMS.issuperset(map(type, value)):
        values = tuple(value.values())
        return (tuple(value), values) if _ATOMS.issuperset(map(type, values)) else None
    return None


def _same_items(kept: tuple, value: dict) -> bool:
    """`value` (the dict `kept` was taken from) holds the very same items, in the same order
    (a list's are compared where the differ meets it)."""
    keys, values = kept
    return len(keys) == len(value) and all(map(_is, keys, value)) and all(map(_is, values, value.values()))


def _hidden_global(name: str, value: object) -> bool:
    if name.startswith("__") or isinstance(value, _HIDDEN_MODULE_TYPES):
        return True
    # a callable descriptor (functools' lru_cache and singledispatch wrappers, a C function):
    # debugpy files it with the module's functions, not among its variables
    kind = type(value)
    return hasattr(kind, "__get__") and not hasattr(kind, "__set__") and callable(value)


def _own_prefixes() -> list[str]:
    """neural-dap's own code: never traced."""
    return [os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))]


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
