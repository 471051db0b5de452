"""The stepping policy: which world actions a DAP execution request becomes, and why the stop is made.

Stops land where debugpy's do, so a session can be compared with debugpy stop by stop:

  next            step_over; on 3.11, once the frame returns (or an exception leaves it), on with
                  step_into, as pydevd's step over becomes a step into there (the caller's line
                  may call more user code; an exit met next is a stop, shown in the caller); on
                  3.12+ debugpy stops at the return, shown in the caller at the call line
                  (`returns_stop_in_caller`)
  stepIn          step_into; a call is stepped through to the callee's first line
  stepOut         step_return (shown in the caller with the `(return)` value); out of a task's
                  coroutine, on to where the user's frame under the event loop goes on, first
                  stopping where the loop's runner returns into it (`asyncio.run` into `<module>`,
                  shown at its line: the task's return stands for that moment), as `next` and
                  `stepIn` off the task's last return do on 3.12+; from a generator, through its
                  pauses at `yield` to where it returns

                  The exit of a function library code called (click running the user's command, a
                  scheduler running a callback) returns into that code: next and stepIn stop where
                  it returns to the caller, shown at the call line on every version (its `(return)`
                  value is the library's, not recorded), or, where it calls the user's code again
                  first, at that code's first line; stepOut runs through those calls to where the
                  library returns to the caller (a breakpoint in them stops it)
  continue        breakpoint(enabled lines), or continue to the end
  stepBack        inv_step_over; a call state is stepped past into the caller, or, where library code
                  made the call right after an earlier call of the user's code exited (a sort
                  key's second call), into the last line of that earlier call (`next` mirrored)
  reverseContinue inv_breakpoint(enabled lines), or back to the start
  restartFrame    inv_step_return until the frame's call
  stepBackInto    inv_step_into          (custom request)
  stepBackOut     back out to the caller's line that made the call (custom request): inv_step_return
                  to this invocation's call, then inv_step_over into the caller; from a call state
                  (where Step Back Into lands) only the second half
  goto            run to the target line (forward, else its last run)

The policy knows actions and stops, nothing of DAP messages or of any world: it gets a function
that applies one action (`act`) and returns what the session should present.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import msgspec

from neural_dap.core.actions import Action, Target
from neural_dap.core.world import Stop
from neural_dap.debugger.shown import returning_name

_YIELD = re.compile(r"\byield\b")
_GENERATOR_RUNS = 32  # a generator's pauses one step out runs through (two actions each)
FORWARD = frozenset({"next", "stepIn", "stepOut", "continue", "goto"})
EXECUTION = FORWARD | {"stepBack", "reverseContinue", "stepBackInto", "stepBackOut", "restartFrame"}

# act(action, interrupt): apply one action; `interrupt` lets enabled breakpoints stop it on the way
Act = Callable[[Action, bool], Awaitable[Stop]]


class UnknownExecution(ValueError):
    pass


@dataclass(frozen=True)
class Outcome:
    stop: Stop
    reason: str  # the `stopped` event's reason
    finished: bool = False  # the program ended and the session ends (stopAtEnd is false)


async def drive(
    kind: str,
    current: Stop,
    act: Act,
    targets: tuple[Target, ...],
    *,
    stop_at_end: bool = True,
    invocation: int | None = None,
    line: int | None = None,
    path: str = "",
    returns_stop_in_caller: bool = False,
) -> Outcome:
    """Carry out one execution request from `current`; `targets` are the enabled breakpoints.
    `returns_stop_in_caller`: step as debugpy does on 3.12+ (see core.world.SteppingConvention)."""
    reason = "step"
    if kind in ("next", "stepIn") and _shown_at_the_raise(current):
        # the stop is made at the line that caught the exception (the handler's first, an except or
        # a finally line) and shown where the exception reached the frame, as debugpy shows it:
        # the step goes to that line itself, as debugpy's does, not past it
        there = msgspec.structs.replace(current, exception_line=0, hit_exception=False, hit_breakpoint=False)
        return Outcome(there, "step")
    if kind == "next":
        stop = await act(Action("step_over"), True)
        while _passes(stop, returns_stop_in_caller):
            if returns_stop_in_caller:  # 3.12+: past an exception leaving the function, as debugpy steps
                stop = await act(Action("step_over"), True)
                continue
            # 3.11: once the stepped frame has returned (or an exception left it), debugpy's step over
            # steps *into* (pydevd): the caller's line may call more of the user's code (`f(1) + g(2)`:
            # it stops in g), and an exit met on the way is a stop of its own, shown in the caller
            left = stop
            stop = await act(Action("step_into"), True)
            if stop.state.event == "call" and not (stop.hit_breakpoint or stop.hit_exception):
                stop = await act(Action("step_into"), True)
            stop = _showing_the_return(left, stop)
            break
    elif kind == "stepIn":
        stop = await act(Action("step_into"), True)
        if _yields(stop):
            # a generator pausing at `yield` is no return debugpy stops at: on to the consumer's line
            stop = await act(Action("step_into"), True)
        if stop.state.event == "call" and not (stop.hit_breakpoint or stop.hit_exception):
            stop = await act(Action("step_into"), True)
        while returns_stop_in_caller and stop.state.event == "exception" and _passes(stop, True):
            stop = await act(Action("step_into"), True)
    elif kind == "stepOut":
        stop = await act(Action("step_return"), True)
        stop = await _to_the_generators_return(stop, act, targets, returns_stop_in_caller)
        if _left_a_task(stop):
            # out of a coroutine an event loop runs (a task's): debugpy's step out returns only into
            # the user's frames on the real stack, to where the one under the loop goes on
            # (`<module>` once `asyncio.run` returns), not to the next task's line
            left = stop
            stop = await act(Action("step_return"), True)
            if _returned_under_the_library(left, stop):  # (there first, on every version)
                stop = await _where_the_library_returned(left, act)
        while _into_library(stop):
            # out of a function library code called (a sort key, a pandas `apply`, a scheduler's
            # callback): back to the user's code that called the library, as debugpy's step out
            # returns only into the user's code; the library's further calls of the user's code
            # are run through, a breakpoint or an exception in them stops the step
            stop = await act(Action("step_into"), True)
            if stop.state.event == "call" and not (stop.hit_breakpoint or stop.hit_exception):
                stop = await act(Action("step_return"), True)
    elif kind == "continue":
        stop = await act(Action("breakpoint", targets) if targets else Action("continue"), False)
    elif kind == "stepBack":
        stop = await act(Action("inv_step_over"), True)
        if stop.state.event == "call" and stop.library_called_before and not stop.hit_breakpoint:
            # the mirror of `next` off a function library code called, which goes on to its next
            # call of the user's code: back from that call to the last line of the one before
            stop = await act(Action("inv_step_into"), True)
            if stop.state.terminal and not stop.hit_breakpoint:
                stop = await act(Action("inv_step_over"), True)
        elif stop.state.event == "call" and not stop.at_start and not stop.hit_breakpoint:
            stop = await act(Action("inv_step_over"), True)
    elif kind == "reverseContinue":
        stop = await act(Action("inv_breakpoint", targets), False)
    elif kind == "stepBackInto":
        stop = await act(Action("inv_step_into"), False)
    elif kind == "stepBackOut":
        stop = current
        if stop.state.event != "call":
            stop = await act(Action("inv_step_return"), False)
        if not stop.at_start:
            stop = await act(Action("inv_step_over"), False)
    elif kind == "restartFrame":
        stop = current
        for _ in range(len(stop.stack) + 1):
            if stop.state.event == "call" and stop.state.invocation == invocation:
                break
            stop = await act(Action("inv_step_return"), False)
        reason = "restart"
    elif kind == "goto":
        assert line is not None
        stop = await act(Action("breakpoint", ((path, line),)), False)
        if stop.state.line != line or (path and stop.state.path != path):  # not there ahead: its last run
            stop = await act(Action("inv_breakpoint", ((path, line),)), False)
        reason = "goto"
    else:
        raise UnknownExecution(f"unknown execution {kind}")
    if kind in ("next", "stepIn", "stepOut"):
        stop = await _on_through_library(stop, act)
        stop = await _on_to_user_code(stop, act, returns_stop_in_caller)
    return Outcome(stop, _reason(kind, stop, reason), finished=_finishes(kind, stop, stop_at_end))


def _shown_at_the_raise(stop: Stop) -> bool:
    """An exception stop at the line that caught it, shown at the line the exception came from."""
    return bool(stop.exception_line) and stop.exception_line != stop.state.line and stop.state.event == "line"


def _passes(stop: Stop, returns_stop_in_caller: bool) -> bool:
    """A step goes on past this exit of a function back into its (traced) caller, as debugpy's do:
    `next` past a return on 3.11 (on 3.12+ it stops there, shown in the caller) and past an
    exception leaving the function on every version; `stepIn` past the latter on 3.12+. The exit
    of a function library code called is a stop of its own (`_on_through_library`), but for an
    exception on 3.12+, which debugpy steps past there too."""
    if not stop.state.terminal or len(stop.stack) <= 1 or stop.hit_breakpoint or stop.hit_exception or stop.at_end:
        return False
    if stop.state.event == "exception":
        return returns_stop_in_caller or not stop.called_by_library
    return not returns_stop_in_caller and not stop.called_by_library


def _showing_the_return(left: Stop, stop: Stop) -> Stop:
    """debugpy (3.11) keeps the value of a return its step over passed in the caller's frame: the
    next stop there shows `(return) f` beside the locals, as a stop at the return itself does."""
    state = left.state
    if state.event != "return" or left.called_by_library or len(left.stack) < 2 or not stop.stack:
        return stop
    if stop.state.terminal or stop.stack[0].invocation != left.stack[1].invocation:
        return stop
    name = returning_name(state.function, dict(left.stack[0].locals), state.path, state.line)
    return msgspec.structs.replace(stop, returned=((0, f"(return) {name}", state.value or "None", "", None),))


def _yields(stop: Stop) -> bool:
    """The step ended where a generator pauses at a `yield` (its frame's exit at that line, back to
    the consumer): pydevd treats such an exit as a pause, not a return."""
    state = stop.state
    return (
        state.event == "return"
        and len(stop.stack) > 1
        and not (stop.hit_breakpoint or stop.hit_exception or stop.at_end)
        and _YIELD.search(state.source) is not None
    )


async def _to_the_generators_return(stop: Stop, act: Act, targets: tuple[Target, ...], monitoring: bool) -> Stop:
    """A generator pausing at `yield` has not returned: debugpy's step out runs on until the
    generator returns, shown in whoever consumes it then, or a breakpoint or an exception stops it
    on the way. What a pause is differs by version, as pydevd's: on 3.11 (settrace) an exit at a
    line without a `return` of the code (`_yields`: a `yield` line); on 3.12+ every exit the
    generator resumes from (it ignores PY_YIELD), a generator expression's too. One never resumed
    never returns: the step out runs on as continue does. Each round costs two actions (a stop
    made and shown), so a long generator's step out stops after `_GENERATOR_RUNS` rounds, at its
    latest pause, and says so."""

    def pauses(stop: Stop) -> bool:
        return stop.suspends and not (stop.hit_breakpoint or stop.hit_exception) if monitoring else _yields(stop)

    for _ in range(_GENERATOR_RUNS):
        if not pauses(stop):
            return stop
        resumed = await act(Action("step_over"), True)  # (from a pause: where the generator resumes)
        if resumed.hit_breakpoint or resumed.hit_exception or resumed.at_end:
            return resumed
        here, there = stop.state, resumed.state
        if (there.function, there.path) != (here.function, here.path):
            return await act(Action("breakpoint", targets) if targets else Action("continue"), False)
        # (resumed at its exit already: a round with no line of its own, a generator expression's
        # on 3.13, whose resumes make no LINE event)
        stop = resumed if resumed.state.terminal else await act(Action("step_return"), True)
    if not pauses(stop):
        return stop
    note = (
        f"neural-dap: {stop.state.function} paused at `yield` {_GENERATOR_RUNS} times on the way out, and has not"
        " returned yet: this stop is at its latest pause (step out again to go on)"
    )
    return msgspec.structs.replace(stop, note=note)


def _into_library(stop: Stop) -> bool:
    """The step ended at the exit of a function library code called, which calls the user's code
    again before it returns to the traced caller."""
    return (
        stop.state.terminal
        and stop.library_calls_next
        and not (stop.hit_breakpoint or stop.hit_exception or stop.at_end)
    )


async def _on_through_library(stop: Stop, act: Act) -> Stop:
    """As debugpy steps off a return into library code (into its own code, justMyCode): the next
    stop is where that code returns to the traced caller (the exit itself stands for it, shown in
    the caller at the call line), or the first line of the user's code it calls before that."""
    while _into_library(stop):
        stop = await act(Action("step_into"), True)
        if stop.state.event == "call" and not (stop.hit_breakpoint or stop.hit_exception):
            stop = await act(Action("step_into"), True)
    return stop


def _left_a_task(stop: Stop) -> bool:
    """The step ended at the exit (a suspension, a return) of a chain library code runs, with the
    user's frames under that code (`outer`): an event loop's task under `asyncio.run`."""
    return _left_user_code(stop) and bool(stop.outer) and not stop.library_calls_next


def _left_user_code(stop: Stop) -> bool:
    """The step ended at the return (or exception exit) of a function no traced code called: its
    caller is library code (pytest running a test, an event loop running a task, a callback)."""
    return (
        stop.state.terminal and len(stop.stack) <= 1 and not (stop.hit_breakpoint or stop.hit_exception or stop.at_end)
    )


async def _on_to_user_code(stop: Stop, act: Act, returns_stop_in_caller: bool = False) -> Stop:
    """As debugpy steps with justMyCode: stepping out of the user's code into a library runs on to
    the next line of the user's code, wherever it is (the next test, the next task), rather than
    stopping at a return nobody traced will see. A coroutine resuming at its `await` is no such
    line: debugpy (3.12+) takes no PY_RESUME event, and a task resumed after `asyncio.sleep(0)`
    stops at its next line (it stopped at the `await` here, and a `next` off another task's
    `return` showed the resumed task one line early)."""
    while _left_user_code(stop):
        left = stop
        stop = await act(Action("step_into"), True)
        # through the calls that resume a chain of coroutines (a task's `main` resuming its `fetch`)
        # to the first line: debugpy never stops at a call
        for _ in range(64):
            if stop.state.event != "call" or stop.hit_breakpoint or stop.hit_exception:
                break
            stop = await act(Action("step_into"), True)
        if returns_stop_in_caller and _returned_under_the_library(left, stop):
            return await _where_the_library_returned(left, act)
    return stop


async def _where_the_library_returned(left: Stop, act: Act) -> Stop:
    """3.12+: debugpy stops where the library code that ran a task returns into the user's frame
    under it (`asyncio.run` into `<module>`), shown there at the call line, before that frame's
    next line. The task's return stands for that moment (the library's value is not recorded):
    the step goes back to it, and shows it in the frames under the library."""
    back = await act(Action("inv_step_into"), False)
    if back.index != left.index:  # (not where it left: on, as before)
        return await act(Action("step_into"), True)
    return msgspec.structs.replace(
        left, stack=(*left.stack, *left.outer), outer=(), called_by_library=True, library_calls_next=False
    )


def _returned_under_the_library(left: Stop, stop: Stop) -> bool:
    """The step off a task's last return (not a pause) went straight on in the user's frame under
    the library code that ran the task: that code returned into it."""
    return (
        bool(left.outer)
        and left.state.event == "return"
        and not left.suspends
        and stop.index == left.index + 1
        and bool(stop.stack)
        and stop.stack[0].invocation == left.outer[0].invocation
        and not (stop.hit_breakpoint or stop.hit_exception)
    )


def _reason(kind: str, stop: Stop, reason: str) -> str:
    if stop.hit_exception:
        return "exception"
    if kind == "reverseContinue" and stop.at_start and not stop.hit_breakpoint:
        return "entry"  # back at the beginning: no breakpoint before
    if stop.hit_breakpoint and reason not in ("goto", "restart"):
        return "breakpoint"
    if stop.at_end and kind in FORWARD:
        return "end"
    return reason


def _finishes(kind: str, stop: Stop, stop_at_end: bool) -> bool:
    return stop.at_end and kind in FORWARD and not stop.hit_breakpoint and not stop.hit_exception and not stop_at_end
