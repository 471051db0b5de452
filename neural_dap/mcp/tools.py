"""The MCP tools, carried out over the debugger core (one `Debugger` per session), protocol-free:
each takes plain arguments and returns a JSON-able dict, or raises `ToolFailure` with a message the
agent can act on. `server` registers them and turns failures into tool errors.

Nothing blocks: a recording runs within limits derived from the call's timeout (its wall time is
30% of it, its events at most 20 million unless asked), a step that runs past its timeout is paused
where it got to (the `pause` the DAP server's pause button uses), and every call is also bounded by
a deadline of its own. Text from the
agent is never run as code outside the evaluator's limits: `call_args` must be literals and is
rebuilt from their values, expressions and conditions go to `Debugger.evaluate` and the safe
evaluator, and paths must lie inside the workspace root.
"""

from __future__ import annotations

import ast
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import numpy as np

from neural_dap.core.world import Entry, LaunchSpec, Stop, WorldError
from neural_dap.debugger.core import Busy, Debugger, Report
from neural_dap.debugger.launch import LaunchError, LaunchRequest, build_launch
from neural_dap.mcp.sessions import Session, Sessions, ToolFailure
from neural_dap.mcp.views import Viewer, bounded_reprs, moment_id, page, parse_moment
from neural_dap.trace.actions import CALL

log = logging.getLogger("neural_dap.mcp")

T = TypeVar("T")

DEFAULT_TIMEOUT = 30.0
GRACE = 5.0  # after a step's own timeout (which pauses it), how long the pause may take to land
RECORDING_SHARE = 0.3  # of a record call's timeout, the program's wall time
DEFAULT_MAX_EVENTS = 20_000_000  # a skeleton indexes ~10M events a second: the rest of the timeout
MAX_EXPRESSION = 10_000
MAX_ACTIONS = 50
MAX_PAGE = 500
CONTEXT_ITEMS = 10  # the first items of a page carry their source context; the rest only file and line

# the tools' action names -> the debugger core's execution kinds
STEPS = {
    "next": "next",
    "step_in": "stepIn",
    "step_out": "stepOut",
    "continue": "continue",
    "step_back": "stepBack",
    "step_back_in": "stepBackInto",
    "step_back_out": "stepBackOut",
    "reverse_continue": "reverseContinue",
}
GOTO_PLACES = ("start", "end", "exception")


@dataclass(frozen=True)
class LineBreakpoint:
    """A line breakpoint as the debugger's breakpoint table takes it."""

    line: int
    condition: str | None = None
    hit_condition: str | None = None
    log_message: str | None = None


def check_timeout(timeout: float) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 1 <= timeout <= 600:
        raise ToolFailure("timeout must be a number of seconds from 1 to 600")
    return float(timeout)


async def within(timeout: float, what: str, work: Callable[[], Awaitable[T]]) -> T:
    """`work()` within `timeout` seconds, else a failure that says what timed out."""
    try:
        with anyio.fail_after(timeout):
            return await work()
    except TimeoutError:
        raise ToolFailure(f"{what} did not finish within {timeout:g} s (raise `timeout` to wait longer)") from None


def literal_call_args(text: str | None) -> str:
    """A call's argument text whose every argument is a literal, rebuilt from the values (so the
    text that reaches the recorded program is ours, not the agent's): "[3, 1], key=None"."""
    if not text or not text.strip():
        return ""
    try:
        call = ast.parse(f"f({text})", mode="eval").body
    except SyntaxError as exc:
        raise ToolFailure(f"call_args {text!r} is not an argument list: {exc.msg}") from None
    assert isinstance(call, ast.Call)
    parts = []
    try:
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                raise ValueError("*args")
            parts.append(repr(ast.literal_eval(arg)))
        for keyword in call.keywords:
            if keyword.arg is None:
                raise ValueError("**kwargs")
            parts.append(f"{keyword.arg}={ast.literal_eval(keyword.value)!r}")
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ToolFailure(
            "call_args must be literals (numbers, strings, lists, dicts, tuples, sets, None, True/False),"
            ' e.g. "[3, 1], key=None"; for anything else, record a script that makes the call'
        ) from None
    return ", ".join(parts)


class Tools:
    def __init__(
        self, sessions: Sessions, world_factory: Callable[[LaunchSpec], Any], *, live_evaluate: bool = False
    ) -> None:
        self.sessions = sessions
        # an agent's expressions are a model's text: interpreted by the safe evaluator unless the
        # person who started the server allowed them to run in a live copy of the program
        self.live_evaluate = live_evaluate
        self.workspace = sessions.workspace
        self.world_factory = world_factory

    # -- helpers -----------------------------------------------------------------------------------
    async def _locked(self, session_id: str, timeout: float, work: Callable[[Session], Awaitable[T]]) -> T:
        session = self.sessions.get(session_id)
        try:
            with anyio.fail_after(timeout):
                await session.lock.acquire()
        except TimeoutError:
            raise ToolFailure(f"session {session_id} is busy with another call; try again") from None
        try:
            return await work(session)
        finally:
            session.lock.release()

    def _viewer(self, session: Session | None, max_repr: int) -> Viewer:
        return Viewer(self.workspace, session.debugger if session is not None else None, max_repr)

    async def _execute(self, debugger: Debugger, kind: str, timeout: float, **extra: Any) -> tuple[Report, bool]:
        """One execution request; past `timeout` it is paused where it got to (`timed_out`)."""
        timed_out = False

        async def watchdog() -> None:
            nonlocal timed_out
            await anyio.sleep(timeout)
            timed_out = True
            debugger.pause()

        async def run() -> Report | BaseException:
            async with anyio.create_task_group() as group:
                group.start_soon(watchdog)
                try:  # an error leaves the task group as itself, not wrapped in an exception group
                    answer: Report | BaseException = await debugger.execute(kind, **extra)
                except (Busy, WorldError) as exc:
                    answer = exc
                group.cancel_scope.cancel()
            return answer

        answer = await within(timeout + GRACE, kind, run)
        if isinstance(answer, BaseException):
            raise ToolFailure(str(answer))
        return answer, timed_out

    @staticmethod
    def _world(debugger: Debugger) -> Any:
        return debugger.world

    def _exception_site(self, debugger: Debugger) -> int | None:
        """The event where the exception that ended the run (or left the user's code) was raised."""
        execution = getattr(self._world(debugger), "execution", None)
        if execution is None:
            return None
        for points in (getattr(execution, "uncaught", []), getattr(execution, "user_unhandled", [])):
            if points:
                return int(points[0])
        return None

    # -- record --------------------------------------------------------------------------------------
    async def record(
        self,
        program: str | None = None,
        module: str | None = None,
        args: Sequence[str] = (),
        cwd: str | None = None,
        function: str | None = None,
        call_args: str | None = None,
        max_events: int | None = None,
        max_repr: int = 200,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        timeout = check_timeout(timeout)
        viewer = self._viewer(None, max_repr)
        folder = self.workspace.resolve(cwd, what="cwd") if cwd else self.workspace.root
        if not os.path.isdir(folder):
            raise ToolFailure(f"cwd {cwd!r} is not a folder")
        path = self.workspace.resolve(program, base=folder, what="program") if program else None
        if function is not None and not function.isidentifier():
            raise ToolFailure(f"function must be a function's name, not {function!r}")
        if function is None and call_args:
            raise ToolFailure("call_args needs function (the function to call)")
        entry = Entry(function, literal_call_args(call_args)) if function else None
        if not isinstance(args, (list, tuple)) or not all(isinstance(a, str) for a in args):
            raise ToolFailure("args must be a list of strings")
        # the recording stops in time for the run to be indexed and its first stop shown within the timeout
        limits: dict[str, Any] = {"wallTime": max(1.0, timeout * RECORDING_SHARE)}
        limits["maxEvents"] = max_events if max_events is not None else DEFAULT_MAX_EVENTS
        request = LaunchRequest(
            program=path, module=module, args=tuple(args), cwd=folder, entry=entry, options={"limits": limits}
        )
        try:
            launch = await within(
                timeout, "finding the module", lambda: anyio.to_thread.run_sync(build_launch, request)
            )
        except LaunchError as exc:
            raise ToolFailure(str(exc)) from None
        await self.sessions.admit()
        debugger = Debugger(self.world_factory)
        debugger.stop_on_entry = True
        try:

            async def start() -> Report:
                await debugger.start(launch.spec)
                return await debugger.first_stop()

            await within(timeout, "recording", start)
        except WorldError as exc:
            await debugger.close()
            raise ToolFailure(str(exc)) from None
        except BaseException:
            with anyio.CancelScope(shield=True):
                await debugger.close()
            raise
        what = f"-m {module}" if module else self.workspace.show(launch.spec.program)
        if function:
            what += f" {function}({entry.args if entry else ''})"
        session = Session(self.sessions.new_id(), debugger, what)
        self.sessions.add(session)
        return {
            "session": session.id,
            "recorded": what,
            **self._run_summary(debugger, viewer),
            "notes": list(launch.notes),
        }

    def _run_summary(self, debugger: Debugger, viewer: Viewer) -> dict[str, Any]:
        world = self._world(debugger)
        execution, outcome = getattr(world, "execution", None), getattr(world, "outcome", None)
        out: dict[str, Any] = {}
        if outcome is not None:
            out["outcome"] = outcome.kind
            out["exit_code"] = outcome.exit_code if outcome.exit_code is not None else (0 if outcome.ok else -1)
            if outcome.kind not in ("finished", "raised", "exited"):
                out["stopped_by_limit"] = outcome.describe()
        if execution is None:
            return out
        out["events"] = len(execution)
        try:
            out["calls"] = len(execution.semantics.columns.call_index)
        except AttributeError:
            pass
        site = self._exception_site(debugger)
        if (outcome is not None and outcome.kind == "raised") or site is not None:
            message = outcome.message if outcome is not None and outcome.kind == "raised" else ""
            exception: dict[str, Any] = {}
            if site is not None:
                state = execution.state(site)
                message = message or (state.value or "")
                exception["moment"] = f"m{site}"
                exception["location"] = viewer.location(state.path, state.line, state.function)
            kind, _, text = message.partition(": ")
            exception = {"type": kind, "message": viewer.cut(text), **exception}
            out["exception"] = exception
        out.update(viewer.output(execution.output(-1, execution.last), "output"))
        out["moments"] = {"start": "m0", "end": f"m{execution.last}"}
        return out

    # -- the current moment, and moving it ---------------------------------------------------------
    async def state(self, session: str, max_repr: int = 200, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        timeout = check_timeout(timeout)

        async def work(s: Session) -> dict[str, Any]:
            stop = s.debugger.stop
            if stop is None:
                raise ToolFailure("the session has no current moment")
            return {"session": s.id, **self._viewer(s, max_repr).stop(stop)}

        return await self._locked(session, timeout, work)

    async def step(
        self,
        session: str,
        action: str,
        breakpoints: Sequence[dict[str, Any]] = (),
        max_repr: int = 200,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        timeout = check_timeout(timeout)
        kind = STEPS.get(action)
        if kind is None:
            raise ToolFailure(f"unknown action {action!r}; one of: {', '.join(STEPS)}")

        async def work(s: Session) -> dict[str, Any]:
            debugger = s.debugger
            table = debugger.breakpoints
            shown = self._set_breakpoints(s, breakpoints)
            try:
                report, timed_out = await self._execute(debugger, kind, timeout)
            finally:
                for path in list(table.by_path):  # breakpoints hold for this step only
                    table.set_lines(path, [], None)
            out = {"session": s.id, "action": action, **self._viewer(s, max_repr).stop(report.stop, report)}
            if shown:
                out["breakpoints"] = shown
            if timed_out:
                out["timed_out"] = f"paused after {timeout:g} s where the step had got to"
            return out

        return await self._locked(session, timeout + 2 * GRACE, work)

    def _set_breakpoints(self, session: Session, breakpoints: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        if not isinstance(breakpoints, (list, tuple)) or len(breakpoints) > 100:
            raise ToolFailure("breakpoints must be a list of at most 100 {file, line, condition}")
        debugger = session.debugger
        by_path: dict[str, list[LineBreakpoint]] = {}
        for bp in breakpoints:
            file, line, condition = bp.get("file"), bp.get("line"), bp.get("condition")
            if not isinstance(line, int) or isinstance(line, bool) or line < 1:
                raise ToolFailure(f"a breakpoint's line must be a line number, not {line!r}")
            if condition is not None and (not isinstance(condition, str) or len(condition) > MAX_EXPRESSION):
                raise ToolFailure("a breakpoint's condition must be an expression (text)")
            path = self.workspace.resolve(file, what="breakpoint file") if file else self._main_path(debugger)
            by_path.setdefault(path, []).append(LineBreakpoint(line, condition or None))
        shown = []
        for path, requests in by_path.items():
            for spec in debugger.breakpoints.set_lines(path, requests, debugger.source(path)):
                entry: dict[str, Any] = {"file": self.workspace.show(path), "line": spec.shown_line}
                if not spec.verified or spec.message:
                    entry["verified"] = spec.verified
                    entry["message"] = spec.message
                shown.append(entry)
        return shown

    def _main_path(self, debugger: Debugger) -> str:
        if debugger.launch is None:
            raise ToolFailure("a breakpoint needs its file")
        return debugger.launch.program

    async def goto(
        self, session: str, where: str, max_repr: int = 200, timeout: float = DEFAULT_TIMEOUT
    ) -> dict[str, Any]:
        timeout = check_timeout(timeout)
        if where not in GOTO_PLACES:
            index = parse_moment(where)  # checked before the session is touched

        async def work(s: Session) -> dict[str, Any]:
            debugger = s.debugger
            if where == "start":
                report = await self._travel_kind(debugger, "reverseContinue", frozenset(), timeout)
            elif where == "end":
                report = await self._travel_kind(debugger, "continue", frozenset(), timeout)
            elif where == "exception":
                site = self._exception_site(debugger)
                if site is None:
                    raise ToolFailure("this run raised no exception that ended it or left your code")
                report = await self._travel(debugger, site, timeout)
            else:
                report = await self._travel(debugger, index, timeout)
            return {"session": s.id, **self._viewer(s, max_repr).stop(report.stop, report)}

        return await self._locked(session, timeout + 2 * GRACE, work)

    async def _travel_kind(self, debugger: Debugger, kind: str, filters: frozenset[str], timeout: float) -> Report:
        saved = debugger.exception_filters
        debugger.exception_filters = filters
        try:
            report, _ = await self._execute(debugger, kind, timeout)
        finally:
            debugger.exception_filters = saved
        if report.failure:
            raise ToolFailure(report.failure)
        return report

    async def _travel(self, debugger: Debugger, index: int, timeout: float) -> Report:
        from neural_dap.debugger import history

        last = getattr(getattr(self._world(debugger), "execution", None), "last", None)
        if last is not None and not 0 <= index <= last:
            raise ToolFailure(f"moment m{index} is not in this run (m0 to m{last})")
        try:
            report = await within(timeout, "travelling", lambda: history.travel(debugger, index))
        except WorldError as exc:
            raise ToolFailure(str(exc)) from None
        if report.failure:
            raise ToolFailure(report.failure)
        return report

    # -- values ----------------------------------------------------------------------------------------
    async def evaluate(
        self, session: str, expression: str, frame: int = 0, max_repr: int = 200, timeout: float = DEFAULT_TIMEOUT
    ) -> dict[str, Any]:
        timeout = check_timeout(timeout)
        self._check_expression(expression)

        async def work(s: Session) -> dict[str, Any]:
            debugger = s.debugger
            stop = self._stop(debugger)
            if not isinstance(frame, int) or not 0 <= frame < len(stop.stack):
                raise ToolFailure(f"frame must be from 0 (innermost) to {len(stop.stack) - 1}")
            names = dict(stop.stack[frame].locals) if stop.stack else dict(stop.state.locals)
            try:
                live_frame = frame if self.live_evaluate else None
                result = await within(timeout, "evaluate", lambda: debugger.evaluate(expression, names, live_frame))
            except WorldError as exc:
                raise ToolFailure(f"{expression}: {exc}") from None
            viewer = self._viewer(s, max_repr)
            out: dict[str, Any] = {"session": s.id, "moment": f"m{stop.index}", "expression": expression}
            out["value"] = viewer.cut(result.text)
            if len(result.text) > max_repr:
                out["value_left_out_chars"] = len(result.text) - max_repr + 1
            out["type"] = result.type
            out["live"] = result.live  # computed by a live copy of the program, not over recorded reprs
            return out

        return await self._locked(session, timeout + GRACE, work)

    @staticmethod
    def _stop(debugger: Debugger) -> Stop:
        stop = debugger.stop
        if stop is None:
            raise ToolFailure("the session has no current moment")
        return stop

    # -- the whole run: history.py's questions --------------------------------------------------------
    async def last_value(
        self,
        session: str,
        expression: str,
        frame: int = 0,
        max_repr: int = 200,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        timeout = check_timeout(timeout)
        self._check_expression(expression)

        async def work(s: Session) -> dict[str, Any]:
            from neural_dap.debugger import history

            stop = self._stop(s.debugger)
            change = await self._ask(timeout, lambda: history.last_change(s.debugger, expression, frame=frame))
            viewer = self._viewer(s, max_repr)
            out: dict[str, Any] = {"session": s.id, "expression": expression, "now": f"m{stop.index}"}
            if change is None:
                out["changed"] = False
                out["note"] = (
                    f"{expression} did not change in this frame's call up to now"
                    " (value_history covers every call of the function)"
                )
                return out
            return {**out, "changed": True, **self._change(viewer, change)}

        return await self._locked(session, timeout + GRACE, work)

    async def value_history(
        self,
        session: str,
        expression: str,
        frame: int = 0,
        start: int = 0,
        count: int = 50,
        max_repr: int = 200,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        timeout = check_timeout(timeout)
        self._check_expression(expression)
        start, count = self._paging(start, count)

        async def work(s: Session) -> dict[str, Any]:
            from neural_dap.debugger import history

            found = await self._ask(
                timeout, lambda: history.value_history(s.debugger, expression, frame=frame, start=start, count=count)
            )
            viewer = self._viewer(s, max_repr)
            items = [self._change(viewer, change, context=k < CONTEXT_ITEMS) for k, change in enumerate(found.items)]
            out = {"session": s.id, "expression": expression, **page(items, found.total, found.start)}
            if not found.total_exact:
                out["total_is_upper_bound"] = True
            return out

        return await self._locked(session, timeout + GRACE, work)

    async def value_origin(
        self,
        session: str,
        expression: str,
        frame: int = 0,
        max_repr: int = 200,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        timeout = check_timeout(timeout)
        self._check_expression(expression)

        async def work(s: Session) -> dict[str, Any]:
            from neural_dap.debugger import history

            stop = self._stop(s.debugger)
            origin = await self._ask(timeout, lambda: history.value_origin(s.debugger, expression, frame=frame))
            viewer = self._viewer(s, max_repr)
            steps = [
                {
                    "moment": moment_id(step.moment.index),
                    "kind": step.kind,
                    "expression": step.expression,
                    "value": viewer.cut(step.value) if step.value is not None else "<not set>",
                    "statement": step.statement,
                    **viewer.location(
                        step.moment.path, step.moment.line, step.moment.function, context=k < CONTEXT_ITEMS
                    ),
                }
                for k, step in enumerate(origin.steps)
            ]
            out: dict[str, Any] = {"session": s.id, "expression": expression, "now": f"m{stop.index}"}
            out["value"] = viewer.cut(origin.value) if origin.value is not None else "<not set>"
            return {**out, "steps": steps, "end": origin.end, "reason": viewer.cut(origin.reason)}

        return await self._locked(session, timeout + GRACE, work)

    async def calls(
        self,
        session: str,
        function: str,
        start: int = 0,
        count: int = 50,
        max_repr: int = 200,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        timeout = check_timeout(timeout)
        if not isinstance(function, str) or not function.strip() or len(function) > 1000:
            raise ToolFailure("function must be a function's name (or 'file.py:name')")
        start, count = self._paging(start, count)

        async def work(s: Session) -> dict[str, Any]:
            from neural_dap.debugger import history

            name = self._function_name(function)
            found = await self._ask(timeout, lambda: history.calls(s.debugger, name, start=start, count=count))
            viewer = self._viewer(s, max_repr)
            items = []
            for k, call in enumerate(found.items):
                shown, left = bounded_reprs(call.arguments, max_repr)
                item: dict[str, Any] = {
                    "call": call.call,
                    "moment": moment_id(call.moment.index),
                    "function": call.function,
                    "arguments": shown,
                }
                if left:
                    item["arguments_left_out"] = left
                if call.returned is None:
                    item["ended"] = False
                else:
                    item["raised" if call.raised else "returned"] = viewer.cut(call.value)
                    item["end_moment"] = moment_id(call.returned.index)
                item["location"] = viewer.location(call.moment.path, call.moment.line, context=k < CONTEXT_ITEMS)
                items.append(item)
            return {"session": s.id, "function": function, **page(items, found.total, found.start)}

        return await self._locked(session, timeout + GRACE, work)

    async def logpoint(
        self,
        session: str,
        file: str,
        line: int,
        message: str,
        start: int = 0,
        count: int = 50,
        max_repr: int = 200,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        timeout = check_timeout(timeout)
        if not isinstance(message, str) or len(message) > MAX_EXPRESSION:
            raise ToolFailure("message must be text such as 'x={x} total={total}'")
        if not isinstance(line, int) or isinstance(line, bool) or line < 1:
            raise ToolFailure("line must be a line number")
        start, count = self._paging(start, count)

        async def work(s: Session) -> dict[str, Any]:
            from neural_dap.debugger import history

            path = self.workspace.resolve(file, what="file") if file else self._main_path(s.debugger)
            found = await self._ask(
                timeout, lambda: history.logpoint(s.debugger, path, line, message, start=start, count=count)
            )
            viewer = self._viewer(s, max_repr)
            items = [
                {"hit": hit.hit, "moment": moment_id(hit.moment.index), "text": viewer.cut(hit.text)}
                for hit in found.items
            ]
            out = {
                "session": s.id,
                "location": viewer.location(path, line),
                "message": message,
                **page(items, found.total, found.start),
            }
            return out

        return await self._locked(session, timeout + GRACE, work)

    @staticmethod
    def _check_expression(expression: str) -> None:
        if not isinstance(expression, str) or not expression.strip() or len(expression) > MAX_EXPRESSION:
            raise ToolFailure(f"expression must be Python text of at most {MAX_EXPRESSION} characters")

    @staticmethod
    def _paging(start: int, count: int) -> tuple[int, int]:
        if not isinstance(start, int) or start < 0:
            raise ToolFailure("start must be 0 or more")
        if not isinstance(count, int) or not 1 <= count <= MAX_PAGE:
            raise ToolFailure(f"count must be from 1 to {MAX_PAGE}")
        return start, count

    def _function_name(self, function: str) -> str:
        """`name`, or `file.py:name` with the file confined to the root (as history takes it: `path:name`)."""
        path, sep, name = function.rpartition(":")
        if not sep or function.startswith("<"):
            return function.strip()
        return f"{self.workspace.resolve(path, what='file')}:{name.strip()}"

    async def _ask(self, timeout: float, question: Callable[[], Awaitable[T]]) -> T:
        try:
            return await within(timeout, "the question", question)
        except (WorldError, ValueError) as exc:  # history's QueryError is a ValueError
            raise ToolFailure(str(exc)) from None

    def _change(self, viewer: Viewer, change: Any, *, context: bool = True) -> dict[str, Any]:
        """A change as the agent reads it: `changed_by`, the statement that made it (the line that
        ran just before, in the same call; for arguments, the caller's line that made the call),
        and `moment`, the first moment that shows the new value."""
        moment = change.moment
        out: dict[str, Any] = {
            "moment": moment_id(moment.index),
            "before": viewer.cut(change.old) if change.old is not None else "<not set>",
            "after": viewer.cut(change.new) if change.new is not None else "<not set>",
        }
        origin = self._origin(viewer.debugger, moment.index)
        if origin is not None:
            index, path, line, function = origin
            out["changed_by"] = {"moment": moment_id(index), **viewer.location(path, line, function, context=context)}
        else:
            out["location"] = viewer.location(moment.path, moment.line, moment.function, context=context)
        if getattr(change, "call", 0):
            out["call"] = change.call
        return out

    @staticmethod
    def _origin(debugger: Debugger | None, index: int) -> tuple[int, str, int, str] | None:
        """The event whose statement made a change dated at `index`: the invocation's event before it,
        or for a call (arguments bound) the caller's event that made the call."""
        if debugger is None:
            return None
        from neural_dap.debugger import history

        try:
            cols = history.queries_of(debugger).semantics.columns
        except WorldError:
            return None
        inv = int(cols.invs[index])
        if int(cols.kinds[index]) == CALL:
            inv = int(cols.parent[inv])
            if inv < 0:
                return None
        k, window = index - 1, 256
        while k >= 0:
            low = max(0, k - window + 1)
            hits = np.flatnonzero(cols.invs[low : k + 1] == inv)
            if len(hits):
                j = low + int(hits[-1])
                function, path = cols.codes[int(cols.code_of[inv])]
                return j, path, int(cols.lines[j]), function
            k, window = low - 1, min(window * 8, 1 << 22)
        return None

    # -- predict ---------------------------------------------------------------------------------------
    async def predict(
        self,
        file: str,
        function: str,
        call_args: str | None = None,
        returns: str | None = None,
        actions: Sequence[str] | None = None,
        reconcile: str = "none",
        model: Any = "embedded",
        max_repr: int = 200,
        timeout: float = 120.0,
    ) -> dict[str, Any]:
        timeout = check_timeout(timeout)
        path = self.workspace.resolve(file, what="file")
        if not function.isidentifier():
            raise ToolFailure(f"function must be a function's name, not {function!r}")
        if (call_args is None) == (returns is None):
            raise ToolFailure("predict takes call_args (forward from a call) or returns (backward from a result)")
        if reconcile not in ("none", "recorded"):
            raise ToolFailure("reconcile must be 'none' or 'recorded'")
        if returns is not None:
            entry = Entry(function, returns=returns)
            default = ["step_back"] * 6
        else:
            entry = Entry(function, literal_call_args(call_args))
            default = ["step_in"] * 6
        steps = list(actions) if actions is not None else default
        if len(steps) > MAX_ACTIONS or any(a not in STEPS for a in steps):
            raise ToolFailure(f"actions must be at most {MAX_ACTIONS} of: {', '.join(STEPS)}")
        spec = LaunchSpec(
            program=path,
            cwd=os.path.dirname(path),
            entry=entry,
            world="neural",
            options={"model": model, "reconcile": reconcile},
        )
        debugger = Debugger(self.world_factory)
        debugger.stop_on_entry = True
        viewer = Viewer(self.workspace, debugger, max_repr)
        states: list[dict[str, Any]] = []
        out: dict[str, Any] = {"function": function, "file": self.workspace.show(path), "reconcile": reconcile}
        deadline = anyio.current_time() + timeout
        try:
            with anyio.CancelScope(deadline=deadline + GRACE) as scope:
                try:
                    await debugger.start(spec)
                    first = await debugger.first_stop()
                except WorldError as exc:
                    raise ToolFailure(str(exc)) from None
                states.append({"action": "start", **viewer.stop(first.stop, first)})
                for action in steps:
                    left = deadline - anyio.current_time()
                    if left <= 0:
                        out["timed_out"] = f"stopped after {timeout:g} s"
                        break
                    report, timed_out = await self._execute(debugger, STEPS[action], left)
                    states.append({"action": action, **viewer.stop(report.stop, report)})
                    if timed_out or report.failure:
                        out["stopped"] = report.failure or f"the model ran past {timeout:g} s"
                        break
                    if (report.stop.at_end and action in ("next", "step_in", "step_out", "continue")) or (
                        report.stop.at_start and action.startswith(("step_back", "reverse"))
                    ):
                        break
            if scope.cancelled_caught:
                out["timed_out"] = f"stopped after {timeout:g} s"
            summary = debugger.summary()
        finally:
            with anyio.CancelScope(shield=True):
                await debugger.close()
        out["states"] = states
        out["divergences"] = sum(len(s.get("divergences", [])) for s in states)
        out["summary"] = {
            k: summary.get(k) for k in ("world", "model", "dialect", "stops", "divergences") if k in summary
        }
        return out

    # -- close -----------------------------------------------------------------------------------------
    async def close(self, session: str) -> dict[str, Any]:
        closed = await self.sessions.close(session)
        return {"closed": closed.id, "recorded": closed.what, "sessions_open": len(self.sessions)}
