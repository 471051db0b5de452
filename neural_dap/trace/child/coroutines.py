"""Generators and coroutines: which invocation a resumed frame continues. Standard library only.

Every engine reports a resumed generator or coroutine (after a `yield` or an `await` that
suspended it) as a new invocation, as settrace does (a `call` event). To step over an `await` as
debugpy does (to the coroutine's next line, after the task resumes), the debugger needs to know
that the new invocation continues the old one: the frame is the same object while it is
suspended, so a suspension is kept by the frame's id until the frame resumes, or leaves for good
(a return or an exception ends it; its id can then belong to a new frame).
"""

from __future__ import annotations

import opcode
import types
from collections.abc import Callable

# CO_GENERATOR | CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR (as inspect names them;
# inspect itself is not imported: the program sees the modules it imported, not ours)
RESUMABLE = 0x20 | 0x80 | 0x100 | 0x200
# a frame pauses at a yield (and an await) on YIELD_VALUE (3.11-3.12), or on the RESUME right after it
# (3.13 reports that one); on any other instruction it left for good: a return, or an exception that
# a `finally` re-raises (RERAISE: 3.11's settrace reports it as a return with nothing pending)
_YIELD_VALUE = opcode.opmap["YIELD_VALUE"]
_RESUME = opcode.opmap.get("RESUME", -1)


class Suspensions:
    def __init__(self, is_user: Callable[[types.CodeType], bool]) -> None:
        self._by_frame: dict[int, tuple[object, int]] = {}  # id(frame) -> (its code, the invocation it left)
        self._is_user = is_user

    def started(self, frame) -> tuple[int, bool]:
        """A generator's or coroutine's frame starts running: (the invocation it continues, or -1
        where it starts for the first time; whether the user's code runs it). A task's coroutine is
        run by the event loop, not by the code below it on the stack: it leaves (returns, yields)
        into library code, and a debugger stepping off its end goes on to the user's next line
        (the next task's) rather than to that code."""
        found = self._by_frame.pop(id(frame), None)
        resumes = found[1] if found is not None and found[0] is frame.f_code else -1
        back = frame.f_back
        return resumes, back is not None and self._is_user(back.f_code)

    def left(self, frame, inv: int, raised: bool) -> bool:
        """The frame of invocation `inv` leaves: by a yield or an await (kept, to be resumed: True),
        or for good (False). The skeleton's exit record says which (SUSPENDED): a live step over an
        `await` waits for the resume, a step over a return does not."""
        if raised or _returned(frame):
            self._by_frame.pop(id(frame), None)
            return False
        self._by_frame[id(frame)] = (frame.f_code, inv)
        return True


def _returned(frame) -> bool:
    """The frame left for good: it did not pause at a yield. (Taking every exit but a return for a
    pause linked a new generator of the same function, whose frame reused the address of one that
    an exception had left, as that one's resume: a step over the exit landed in the new one.)"""
    lasti = frame.f_lasti
    code = frame.f_code.co_code
    if not 0 <= lasti < len(code):
        return True
    op = code[lasti]
    return not (op == _YIELD_VALUE or (op == _RESUME and lasti >= 2 and code[lasti - 2] == _YIELD_VALUE))
