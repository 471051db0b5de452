"""A live, frozen copy of the program at one stop, answering the user's expressions with real objects.

A worker replays from a checkpoint to the stop's event (see child.skeleton) and, asked for a live
stop, hands its connection to a fork of itself paused at that event: the *live stop*. The worker
exits as usual, so its checkpoint serves the next request; the live stop serves expressions until
the adapter closes the connection (or is gone).

Each expression is evaluated in a fresh fork of the live stop, so whatever it changes (a list it
appends to, a file position, a global) is gone with that fork: the next expression, and the
recording, see the stop as it was. The fork has the evaluator's limits: a deadline after which it is
killed (a C loop or a hanging __repr__ included), an address-space cap, the repr cut to a size, its
output discarded. The text comes from the user of the debugger (a watch, a hover, the REPL), never
from a model: the adapter only sends what its client typed.

Standard library only.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import time
import types

from neural_dap.trace.child.journal import sandboxed
from neural_dap.trace.child.lifetime import alive, fork_ours

_EXIT = os._exit
_OURS = os.path.dirname(os.path.abspath(__file__))
IDLE_SECONDS = 1800.0  # a live stop nobody asks anything of ends on its own


def user_frames(is_user) -> list[types.FrameType]:
    """The frames of the program at this moment, innermost first, as the recording's stack shows
    them: only the code the recording traces (library frames in between are not in its stack)."""
    frames = []
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if not code.co_filename.startswith(_OURS) and is_user(code):
            frames.append(frame)
        frame = frame.f_back
    return frames


def serve(conn: socket.socket, answer: bytes, frames: list, encode, owner: int, limits: dict) -> None:
    """Become the live stop (in a fork; this process returns at once) and send `answer` first."""
    pid = fork_ours()  # the recorder's own: a debuggee's copy would die with the worker, which exits
    if pid != 0:
        return
    try:
        conn.sendall(len(answer).to_bytes(8, "little") + answer)
        _loop(conn, frames, encode, owner, limits)
    finally:
        _EXIT(0)


class _StillRunning:
    """(3.13+) In a held program's copy, the handle of a thread that runs in the program: a fork
    keeps one thread and marks the others' handles done; the program's are not."""

    def __init__(self, handle, waits) -> None:
        self.ident = getattr(handle, "ident", None)
        self._waits = waits

    def is_done(self) -> bool:
        return False

    def join(self, timeout=None) -> None:
        self._waits.acquire(True, -1 if timeout is None else timeout)  # (it never ends here)


def threads_as_they_were(active: dict, main) -> None:
    """In the copy of a program held at a stop (a fork made by the stopped thread): threading's view
    of the program's threads as the program has them. The fork keeps one thread, and threading's
    after-fork hook forgets the others and marks them ended, so `threading.enumerate()`,
    `active_count()`, `main_thread()` and each thread's `is_alive()` answered for a program of one
    thread (a user trial's `active_count()` said 1 where debugpy says 3). Private attributes of
    threading, touched only in the throwaway copy, per release (3.11-3.12: the thread state lock;
    3.13+: the thread handle)."""
    import _thread
    import threading

    waits = _thread.allocate_lock()
    waits.acquire()  # (held for ever: a thread "still running" holds it)
    current = threading.current_thread()
    for thread in active.values():
        if thread is current:
            continue
        if hasattr(thread, "_tstate_lock"):  # 3.11, 3.12
            thread._is_stopped = False
            thread._tstate_lock = waits
        handle = getattr(thread, "_handle", None)
        if handle is not None and hasattr(handle, "is_done"):  # 3.13+
            thread._handle = _StillRunning(handle, waits)
    threading._active.update(active)  # type: ignore[attr-defined]
    threading._main_thread = main  # type: ignore[attr-defined]


def serve_held(server: socket.socket, frames: list, encode, owner: int, after_fork=None) -> None:
    """The copy of a program held at a stop while every thread is recorded (child/frontier.py: a
    fork of it, made by the stopped thread, which is the only one a fork keeps): the adapter
    connects once, says the limits ({"live": {...}}), and asks expressions as of a live stop. Nothing
    is replayed: the copy is the program at that very moment. Returns when the connection ends.
    `after_fork`: run first in each expression's fork (`threads_as_they_were`)."""
    deadline = time.monotonic() + IDLE_SECONDS
    while True:
        ready, _, _ = select.select([server], [], [], 1.0)
        if not alive(owner) or time.monotonic() > deadline:
            return
        if ready:
            break
    conn, _ = server.accept()
    server.close()
    conn.settimeout(10.0)
    line = conn.makefile("rb").readline(1 << 20)
    try:
        request = json.loads(line)
    except ValueError:
        return
    limits = request.get("live") if isinstance(request, dict) else None
    if not isinstance(limits, dict):
        return
    answer = encode({"outcome": None, "events": []})
    conn.sendall(len(answer).to_bytes(8, "little") + answer)
    _loop(conn, frames, encode, owner, limits, after_fork)


def _loop(conn: socket.socket, frames: list, encode, owner: int, limits: dict, after_fork=None) -> None:
    """Serve until the adapter closes the connection (it does when the user moves on, and the
    kernel does when the adapter dies, however), the adapter is gone, or nobody asks for long."""
    conn.setblocking(True)
    reader = conn.makefile("rb")
    last = time.monotonic()
    while True:
        ready, _, _ = select.select([conn], [], [], 1.0)
        if not alive(owner) or time.monotonic() - last > IDLE_SECONDS:
            return  # the adapter is gone, or nobody asks
        if not ready:
            continue
        line = reader.readline(1 << 20)
        if not line:
            return  # the adapter closed the connection: this stop is no longer shown
        last = time.monotonic()
        reply: bytes | dict
        try:
            request = json.loads(line)
        except ValueError:
            reply = {"error": "malformed request"}
        else:
            reply = _evaluate_in_fork(request, frames, encode, limits, after_fork)
        data = reply if isinstance(reply, bytes) else encode(reply)
        conn.sendall(len(data).to_bytes(8, "little") + data)


def _evaluate_in_fork(request: dict, frames: list, encode, limits: dict, after_fork=None) -> bytes | dict:
    """The fork's encoded answer, or an error when it ran out of time or died."""
    seconds = float(limits.get("seconds", 2.0))
    read_fd, write_fd = os.pipe()
    pid = fork_ours()  # the recorder's own: a debuggee's copy would die with the worker, which exits
    if pid == 0:
        os.close(read_fd)
        if after_fork is not None:
            after_fork()
        with sandboxed():  # the user's expression reads the world as it is, and changes none of it
            reply = _evaluate(request, frames, limits)
        try:
            data = encode(reply)
        except Exception as exc:  # a value the encoder cannot carry
            data = encode({"error": f"cannot send the value back: {type(exc).__name__}"})
        with os.fdopen(write_fd, "wb") as out:
            out.write(data)
        _EXIT(0)
    os.close(write_fd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + seconds
    killed = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                killed = True
                break
            ready, _, _ = select.select([read_fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    if killed:
        return {"error": f"the expression ran past its {seconds:g} s limit"}
    if not chunks:
        return {"error": "the expression ended the process that evaluated it (out of memory?)"}
    return b"".join(chunks)


def _evaluate(request: dict, frames: list, limits: dict) -> dict:
    """In the throwaway fork: the expression, in the frame asked for, under the limits."""
    _cap_memory(int(limits.get("memory_mb", 1024)))
    index = request.get("frame", 0)
    if not isinstance(index, int):
        return {"error": "expected a frame index"}
    if not 0 <= index < len(frames):
        return {"error": "that frame is not live at this stop"}
    frame = frames[index]
    checks = request.get("checks")
    if isinstance(checks, list):
        return {"results": [_check(frame, check, limits) for check in checks]}
    if "children" in request:
        return _children(frame, request["children"])
    if "roots" in request:
        return _roots(frame, request["roots"])
    expression = request.get("expression")
    if not isinstance(expression, str):
        return {"error": "expected an expression"}
    try:
        code = compile(expression, "<evaluate>", "eval", dont_inherit=True)
    except SyntaxError as exc:
        return {"error": f"invalid expression: {exc.msg}"}
    try:
        namespace = dict(frame.f_locals)
        value = eval(code, frame.f_globals, namespace)
    except BaseException as exc:  # the user's expression raised: that is its answer
        return {"error": f"{type(exc).__name__}: {_cut(_safe_str(exc), 500)}"}
    max_repr = int(limits.get("max_repr", 10_000))
    try:
        text = repr(value)
    except BaseException:
        try:  # as debugpy shows a value whose repr raises: the object's own repr
            text = object.__repr__(value)
        except BaseException as exc:
            text = f"<repr failed: {type(exc).__name__}>"
    kind = type(value)
    return {
        "repr": _cut(text, max_repr),
        "type": kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}",
    }


def _check(frame: types.FrameType, check: object, limits: dict) -> dict:
    """One expression of a breakpoint (a condition: `truth`; a log point's part: `str`), in the
    frame's own namespace as debugpy evaluates them: {"truth": bool} / {"text": str}, or {"error":
    the exception as the user should read it}. Each runs after the ones before it in the same fork,
    as they would in the program."""
    if not (isinstance(check, list) and len(check) == 2 and isinstance(check[0], str)):
        return {"error": "expected [expression, mode]"}
    expression, mode = check
    try:
        code = compile(expression.strip(), "<breakpoint>", "eval", dont_inherit=True)
    except SyntaxError as exc:
        return {"error": f"SyntaxError: {exc.msg}"}
    try:
        value = eval(code, frame.f_globals, frame.f_locals)
        if mode == "truth":
            return {"truth": bool(value)}
        return {"text": _cut(str(value), int(limits.get("max_repr", 10_000)))}
    except BaseException as exc:  # the user's expression raised: that is its answer
        return {"error": f"{type(exc).__name__}: {_cut(_safe_str(exc), 500)}"}


def _root(frame: types.FrameType, root: object) -> object:
    """A frame's local (["l", name]) or global (["g", name]), or the value of the user's own watch
    or REPL expression (["e", text]: evaluated again, in this throwaway fork)."""
    if not (isinstance(root, list) and len(root) == 2 and root[0] in ("l", "g", "e") and isinstance(root[1], str)):
        raise LookupError("expected a root [scope, name]")
    if root[0] == "e":
        code = compile(root[1], "<evaluate>", "eval", dont_inherit=True)
        return eval(code, frame.f_globals, dict(frame.f_locals))
    names = frame.f_locals if root[0] == "l" else frame.f_globals
    if root[1] not in names:
        raise LookupError(f"{root[1]!r} is not defined here")
    return names[root[1]]


def _children(frame: types.FrameType, request: object) -> dict:
    """A value's children as debugpy shows them (child.resolvers): the value is found again from its
    root by the selectors of its path, and its children are described from `start` (`count`, 0: all)."""
    from neural_dap.trace.child import resolvers

    if not isinstance(request, dict):
        return {"error": "expected {root, path}"}
    try:
        value = _root(frame, request.get("root"))
        for selector in request.get("path") or []:
            value = resolvers.resolve(value, selector)
        found = resolvers.children(value)
    except Exception as exc:  # the value changed shape, or reading it raised
        return {"error": f"{type(exc).__name__}: {_cut(_safe_str(exc), 500)}"}
    start = max(0, int(request.get("start") or 0))
    count = int(request.get("count") or 0)
    chosen = found[start : start + count] if count > 0 else found[start:]
    return {"children": [resolvers.describe(*child) for child in chosen], "total": len(found)}


def _roots(frame: types.FrameType, roots: object) -> dict:
    """Each root's text, type and whether it opens, as debugpy shows them (a scope's variables whose
    recorded text was cut)."""
    from neural_dap.trace.child import resolvers

    out: list[object] = []
    for root in roots if isinstance(roots, list) else []:
        try:
            value = _root(frame, root)
            out.append([resolvers.value_text(value), resolvers.type_name(value), resolvers.expandable(value)])
        except Exception as exc:
            out.append({"error": f"{type(exc).__name__}: {_cut(_safe_str(exc), 200)}"})
    return {"roots": out}


def _cap_memory(megabytes: int) -> None:
    """At most `megabytes` more than the stop holds now: an expression that builds a huge value
    fails with MemoryError in this fork, not on the machine."""
    try:
        import resource

        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[0])
        now = pages * os.sysconf("SC_PAGE_SIZE")
        cap = now + megabytes * 1024 * 1024
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, OSError, ValueError):
        pass


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except BaseException:
        return "?"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
