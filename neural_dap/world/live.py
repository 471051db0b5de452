"""Debug while it runs: a recorded world whose program is still running (UDB's model).

The launch answers at once: the program runs under the recorder and stops at its first event, and
the session opens there. Every action is answered from what is recorded so far, exactly as in a
finished recording, back and forth; an action whose answer lies past the last recorded event (the
live frontier: a `continue` with no breakpoint left on the way, a step from the frontier) lets the
held program run on until the first event that can be that answer (a breakpoint line, the step's
target, an exception), and is answered again over the longer recording. A pause stops the running
program at its next event. The child's side is trace/child/frontier.py; the channel to it
trace/live_recording.py.

Once a second thread runs (child/switch.py), every thread is recorded in full and the program still
stops for the session: at the breakpoints and exceptions of any thread, at a pause, and where the
stepping thread's step ends (`threaded_request`); every other thread waits at its next event
meanwhile. At each such stop the recording so far is joined into one full recording of every
thread (trace/threaded.py) and travelled as any.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import anyio
import numpy as np

from neural_dap.core.actions import Action, Target
from neural_dap.core.world import HitFilter
from neural_dap.trace.actions import CALL, LINE, RETURN, first_equal
from neural_dap.trace.execution import FullExecution, SkeletonExecution
from neural_dap.trace.live_recording import LiveControl
from neural_dap.trace.program import Outcome
from neural_dap.trace.skeleton import SkeletonRecording

RUNNING = Outcome("paused", "the program is still running")


class LiveRun:
    """A recording of a program that runs while the session debugs it."""

    def __init__(self, control: LiveControl, thread: threading.Thread) -> None:
        self.control = control
        self.thread = thread
        self.recording: SkeletonRecording | None = None
        self.execution: SkeletonExecution | None = None
        self.reason = ""  # why the program stopped last (the child's: step, breakpoint, exception, pause)

    @classmethod
    def begin(cls, record: Callable[[LiveControl], SkeletonRecording]) -> LiveRun:
        """Start `record` (the recorder, run to the program's end) in a thread of its own."""
        control = LiveControl()

        def run() -> None:
            try:
                result: Any = record(control)
            except BaseException as exc:  # told to the session, which raises it where it waits
                result = exc
            control.done(result)

        thread = threading.Thread(target=run, name="neural-dap-live-recording", daemon=True)
        live = cls(control, thread)
        thread.start()
        return live

    @property
    def running(self) -> bool:
        return not self.control.finished

    # -- the first stop ----------------------------------------------------------------------------
    def first(self, program: Any, main_path: str) -> SkeletonExecution | None:
        """(blocking) The recording up to the program's first event, or None when it ended first
        (then `result` is the finished recording, or an exception)."""
        stop = self.control.next_stop()
        if stop is None:
            return None
        recording = SkeletonRecording(self.control.log, main_path, 0.0, "", "", program)
        recording.outcome = RUNNING
        self.recording = recording
        self.execution = SkeletonExecution(recording)
        self._take(stop)
        return self.execution

    @property
    def result(self) -> Any:
        return self.control.result

    # -- running on ---------------------------------------------------------------------------------
    def extend(self, request: dict) -> bool:
        """(blocking) Let the program run until its next stop of `request` (LiveControl.run's
        arguments); True when it stopped, False when the recording ended (the program ended)."""
        self.control.run(**request)
        stop = self.control.next_stop()
        if stop is None:
            self._finished()
            return False
        self._take(stop)
        return True

    def _take(self, stop: tuple[int, str, list]) -> None:
        count, reason, window = stop
        recording = self.recording
        assert recording is not None and self.execution is not None
        recording.grown()
        self.execution.refresh()
        if window:
            recording.adopt_window(count - 1, window)
        self.reason = reason

    def _finished(self) -> None:
        """The program ended (or its recording did): the recording is whole."""
        self.thread.join(timeout=5)
        result = self.control.result
        recording = self.recording
        assert recording is not None and self.execution is not None
        if isinstance(result, SkeletonRecording):
            recording.outcome = result.outcome
            recording.seconds = result.seconds
            recording.fd_stdout, recording.fd_stderr = result.fd_stdout, result.fd_stderr
        else:
            recording.outcome = Outcome("crashed", f"the recording failed: {result}")
        recording.grown()
        self.execution.refresh()

    async def wait_finished(self) -> None:
        await anyio.to_thread.run_sync(self.thread.join)
        if self.recording is not None and self.execution is not None:
            self._finished()

    def pause(self) -> bool:
        return self.control.pause()

    def set_breakpoints(self, targets: tuple[Target, ...]) -> None:
        if self.running:
            self.control.set_breakpoints(breakpoint_lines(targets))

    async def breakpoints_taken(self) -> None:
        """Once the running program stops at the breakpoints set last (a request that sets them is
        answered then, as debugpy answers once its tracer has them): at most 2 s, a program busy in
        C code taking them at its next event."""
        if self.running:
            await anyio.to_thread.run_sync(self.control.breakpoints_taken, 2.0)

    def end(self) -> None:
        self.control.end()


def breakpoint_lines(targets: tuple[Target, ...]) -> dict[str, list[int]]:
    lines: dict[str, list[int]] = {}
    for target in targets:
        path, line = target
        if path:
            lines.setdefault(path, []).append(line)
    return lines


def counted_lines(
    execution: SkeletonExecution | FullExecution, targets: tuple[Target, ...], hits: HitFilter
) -> dict[str, list]:
    """The breakpoint lines for a run from the frontier, each with the hits the program runs past
    before it can stop there ([line, skip]; a line no hit can stop at again is left out): the child
    counts them down itself, where one stop a hit (a round trip to the adapter, to rule it out by
    its hit condition) cost 8 to 10 ms each."""
    semantics = execution.semantics
    frontier = execution.last
    lines: dict[str, list] = {}
    for target in targets:
        path, line = target
        if not path:
            continue
        so_far = int(np.searchsorted(semantics.line_index(path, line), frontier, side="right"))
        after = hits.next_hit(target, so_far)
        if after is None:
            continue
        skip = after - so_far - 1
        lines.setdefault(path, []).append([line, skip] if skip > 0 else line)
    return lines


def threaded_request(
    execution: FullExecution | SkeletonExecution,
    start: int,
    action: Action,
    answer: int,
    breakpoints: tuple[Target, ...],
    exceptions: bool,
    hits: HitFilter | None = None,
) -> dict | None:
    """Every thread recorded in full, the program held: what it must run to for `action` from
    event `start`, whose answer over what is recorded is `answer`; None where that answer stands (a
    step's own end, not where the recording runs out). A step's predicates are the stepping
    thread's: its next event, the next line or exit at its frame's place or below, its frame's
    exit; the breakpoints and exceptions stop every thread."""
    semantics = execution.semantics
    columns = semantics.columns
    last = execution.last
    kind = action.kind
    targets = action.targets if kind == "breakpoint" else breakpoints
    lines = breakpoint_lines(targets) if hits is None else counted_lines(execution, targets, hits)
    request: dict = {"breakpoints": lines, "exceptions": exceptions}
    if kind in ("breakpoint", "continue"):
        return request if answer >= last else None
    if kind not in ("step_into", "step_over", "step_return"):
        return None
    thread = semantics.thread(start)
    owner = _owner(semantics, start)
    if _step_ends_at(semantics, start, kind, owner, answer, thread):
        return None
    request["thread"] = thread
    end = int(columns.end_index[owner]) if owner >= 0 else -1
    if kind == "step_into" or owner < 0 or 0 <= end <= last:
        request["at"] = 0  # (its next event: the step's own answer, or the event after an exit)
    elif kind == "step_over":
        request["within"] = _child_invocation(execution, owner)
    else:
        request["exit_inv"] = _child_invocation(execution, owner)
    return request


def _owner(semantics: Any, start: int) -> int:
    """The frame a step over or out from event `start` moves through (-1: none)."""
    inv = int(semantics.columns.invs[start])
    return int(semantics.columns.parent[inv]) if semantics.kind(start) >= RETURN else inv


def _step_ends_at(semantics: Any, start: int, kind: str, owner: int, answer: int, thread: int) -> bool:
    """Whether `answer` is the step's own end: not where the recording runs out (the semantics
    answer the last event there), and not an exit whose thread has no event after it yet (the
    event after an exit decides where a step goes: library code may call the user's code again)."""
    last = semantics.last
    if answer <= start:
        return False
    if answer == last:
        if semantics.thread(last) != thread:
            return False
        inv = int(semantics.columns.invs[last])
        if kind == "step_over" and inv != owner:
            return False
        if kind == "step_return" and not (owner >= 0 and int(semantics.columns.end_index[owner]) == last):
            return False
    if semantics.kind(answer) >= RETURN:
        return semantics.next_of_thread(thread, answer) >= 0
    return True


def _child_invocation(execution: FullExecution | SkeletonExecution, inv: int) -> int:
    """The recording child's id of the tree's invocation `inv` (a full recording's states carry it;
    a skeleton's numbers are the recorder's: every thread's calls numbered in the stream's order)."""
    if isinstance(execution, SkeletonExecution):
        return inv
    columns = execution.semantics.columns
    index = first_equal(columns.invs, inv, 0, len(columns.invs))
    return execution.state(index).invocation if index >= 0 else -1


def run_request(
    execution: SkeletonExecution,
    start: int,
    action: Action,
    breakpoints: tuple[Target, ...],
    exceptions: bool,
    hits: HitFilter | None = None,
) -> dict:
    """What the held program at the frontier must run to, for `action` from event `start`: the first
    event that can be its answer (LiveControl.run's arguments); the hits of a breakpoint's line
    that `hits` rules out are run past."""
    semantics = execution.semantics
    columns = semantics.columns
    frontier = execution.last
    kind = action.kind
    targets = action.targets if kind == "breakpoint" else breakpoints
    lines = breakpoint_lines(targets) if hits is None else counted_lines(execution, targets, hits)
    request: dict = {"breakpoints": lines, "exceptions": exceptions}
    inv = int(columns.invs[start])
    terminal = semantics.kind(start) >= RETURN
    owner = int(columns.parent[inv]) if terminal else inv
    if kind == "step_into":
        request["at"] = frontier + 1
    elif kind == "step_over" and owner >= 0:
        answer = semantics.step_over(start)
        waiting = awaiting_resume(execution, answer)
        if waiting >= 0:  # over an `await` that paused the coroutine: on to where it resumes
            request["resumes"] = _recorder_invocation(execution, waiting)
        elif semantics.resumes_here(answer):  # resumed, no line of it yet: its next line or exit
            request["within"] = _recorder_invocation(execution, int(columns.invs[answer]))
        elif _exited(columns, owner, frontier):
            request["at"] = frontier + 1
        else:
            request["within"] = _recorder_invocation(execution, owner)
    elif kind == "step_return" and owner >= 0:
        if _exited(columns, owner, frontier):
            request["at"] = frontier + 1
        else:
            request["exit_inv"] = _recorder_invocation(execution, owner)
    return request


def _exited(columns: Any, owner: int, frontier: int) -> bool:
    """The owner's exit is the frontier (or before it): the event after it decides the step. The
    held program has left the frame already (the stop is made once the exit is recorded), so a
    predicate on that frame would never hold, and the program ran on (a `next` off a return ran the
    caller's next line, a 3 s sleep, before it stopped there)."""
    end = int(columns.end_index[owner])
    return 0 <= end <= frontier


def decided_at_frontier(execution: SkeletonExecution, start: int, action: Action) -> bool:
    """Whether the frontier (the last recorded event) is the answer of `action` from `start` by
    itself, not only where the recording ran out."""
    semantics = execution.semantics
    columns = semantics.columns
    frontier = execution.last
    if frontier <= start:
        return False
    kind = action.kind
    if kind == "step_into":
        # (a step that lands on an exit needs the event after it: library code may call the
        # user's code again before it returns to the caller, and a stop shows where it goes)
        return (frontier == start + 1 and semantics.kind(frontier) < RETURN) or frontier >= start + 2
    inv = int(columns.invs[start])
    terminal = semantics.kind(start) >= RETURN
    owner = int(columns.parent[inv]) if terminal else inv
    here = int(columns.invs[frontier])
    if kind == "step_over":
        if owner < 0:
            return False
        end = int(columns.end_index[owner])
        if 0 <= end <= frontier and semantics.kind(end) == RETURN and execution.paused(owner):
            # over an `await` (a `yield`) that paused the coroutine: the step ends on its next line
            # once it resumes, which the program has not reached while no continuation ran
            answer = semantics.step_over(start)
            if awaiting_resume(execution, answer) >= 0:
                return False
            return answer < frontier or (answer == frontier and semantics.kind(answer) == LINE)
        if here == owner:
            return semantics.kind(frontier) < RETURN  # (an exit: decided by the event after it)
        return _runs_under(columns, owner, here) is False
    if kind == "step_return":
        end = int(columns.end_index[owner]) if owner >= 0 else -1
        return 0 <= end < frontier  # the owner's exit and the event after it
    return False  # (a breakpoint hit the session accepted is a stop by itself; continue runs to the end)


def awaiting_resume(execution: SkeletonExecution, i: int) -> int:
    """The invocation whose resume a step's answer `i` waits for: event i is the exit of a
    generator's or coroutine's run that paused (an `await`, a `yield`: the skeleton's exit record
    says so) and nothing has resumed it yet (asked while the program runs); -1 else (a run that
    returned for good is an answer by itself)."""
    semantics = execution.semantics
    if not 0 <= i <= execution.last or semantics.kind(i) != RETURN:
        return -1
    inv = int(semantics.columns.invs[i])
    if not execution.paused(inv) or semantics.continued_by(inv) >= 0:
        return -1
    return inv


def _runs_under(columns: Any, owner: int, inv: int) -> bool | None:
    """True: `inv` runs under (is called, at any depth, by) `owner`; False: `inv` is owner's caller
    or runs beside it (an event there ends a step over); None: unknown."""
    seen = 0
    while inv >= 0 and seen < 10_000:
        if inv == owner:
            return True
        inv = int(columns.parent[inv])
        seen += 1
    return False


def _recorder_invocation(execution: SkeletonExecution, number: int) -> int:
    """The recorder's id of invocation `number` (the columns number them 0..m-1 in call order; the
    recorder's ids are the skeleton's `invs`, which the tree keeps as numbers: the same)."""
    del execution
    return number


__all__ = ["CALL", "LiveRun", "decided_at_frontier", "run_request"]
