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
import importlib.util
import logging
import os
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

from neural_dap.core.source import read_source
from neural_dap.core.world import Entry, LaunchSpec, Stop, WorldError
from neural_dap.debugger import asking
from neural_dap.debugger.core import Busy, Debugger, Report
from neural_dap.debugger.launch import LaunchError, LaunchRequest, build_launch
from neural_dap.format.confidence import UNCERTAIN_BELOW
from neural_dap.mcp.checks import (
    check_condition,
    check_line,
    defined_functions,
    did_you_mean,
    names_in,
    owners_of,
    quote,
    root_name,
)
from neural_dap.mcp.sessions import Session, Sessions, ToolFailure
from neural_dap.mcp.views import Viewer, bounded_reprs, moment_id, page, parse_moment
from neural_dap.trace.child.runner import TOP_LEVEL_RAISED

log = logging.getLogger("neural_dap.mcp")

T = TypeVar("T")

DEFAULT_TIMEOUT = 30.0
GRACE = 5.0  # after a step's own timeout (which pauses it), how long the pause may take to land
RECORDING_SHARE = 0.3  # of a record call's timeout, the program's wall time
DEFAULT_MAX_EVENTS = 20_000_000  # a skeleton indexes ~10M events a second: the rest of the timeout
MAX_EXPRESSION = 10_000
MAX_ACTIONS = 50
MAX_PAGE = 500
MAX_SOURCE_LINES = 200  # lines of a file one `source` call shows

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
FORWARD = frozenset({"next", "stepIn", "stepOut", "continue"})


@dataclass(frozen=True)
class LineBreakpoint:
    """A line breakpoint as the debugger's breakpoint table takes it."""

    line: int
    condition: str | None = None
    hit_condition: str | None = None
    log_message: str | None = None


def echo(text: str, limit: int = 200) -> str:
    """An agent's own text as an answer repeats it: cut, so a long expression is not sent back whole."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


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


_EXCEPTION_REPR = re.compile(r"^([A-Za-z_][\w.]*)\((.*)\)$", re.DOTALL)


def exception_parts(text: str) -> tuple[str, str]:
    """(type, message) of an exception as an outcome writes it ("KeyError: 'k'") or as its repr
    ("AssertionError('assert 1 == 2')", what an exception caught by a test runner shows)."""
    match = _EXCEPTION_REPR.match(text.strip())
    if match is not None:
        kind, inner = match.groups()
        try:
            value = ast.literal_eval(inner) if inner else ""
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return kind, inner
        return kind, value if isinstance(value, str) else repr(value)
    kind, _, message = text.partition(": ")
    return kind, message


def top_level_failure(output: str) -> str:
    """What the recording child said when the top level of a program raised before the function
    asked for was called (trace/child/runner.py writes it to the program's stderr)."""
    for line in reversed(output.splitlines()):
        if line.startswith(TOP_LEVEL_RAISED):
            return line[len("neural-dap: ") :]
    return ""


def module_problem(module: str) -> str:
    """Why `python -m MODULE` has nothing to record. Only a top-level name is looked up here: finding
    a dotted one would import its parent packages, which run code."""
    name = module if isinstance(module, str) else ""
    spec = None
    if name.isidentifier():
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
    if spec is not None and spec.origin in ("frozen", "built-in"):
        return f"module {quote(name)} is built into Python ({spec.origin}): it has no source file to record"
    if spec is not None and spec.submodule_search_locations is not None:
        return f"package {quote(name)} has no __main__ module: `python -m {name}` cannot run it"
    return f"no module named {quote(module)} in the workspace or the server's Python"


def drop_repeats(shown: dict[str, Any], prefix: str) -> None:
    """Take out of a shown stop's note and output the lines that start with `prefix` (what another
    key already says), and the keys left empty."""
    for key in ("note", "output"):
        text = shown.get(key)
        if not isinstance(text, str):
            continue
        kept = "".join(line for line in text.splitlines(keepends=True) if not line.startswith(prefix))
        if kept.strip():
            shown[key] = kept
        else:
            del shown[key]


def confidence_note(states: list[dict[str, Any]]) -> str:
    """One line on how far a prediction's values can be trusted, for the start of its answer."""
    values = sum(len(s.get("locals", {})) + ("returns" in s) + ("raises" in s) for s in states)
    guesses = [(k, name) for k, s in enumerate(states, 1) for name in s.get("uncertain", [])]
    lines = [s["line_p"] for s in states if s.get("line_p") is not None]
    if not states:
        return "no state was predicted"
    tail = "a model's guesses, not a run: check what matters with record"
    if guesses:
        first, name = guesses[0]
        return (
            f"LOW: {len(guesses)} of {values} predicted values are uncertain (p < {UNCERTAIN_BELOW} or unknown), "
            f"the first {name} at state {first}; {tail}"
        )
    if any(p < UNCERTAIN_BELOW for p in lines):
        return f"LOW: the model was unsure which line runs (p < {UNCERTAIN_BELOW}); {tail}"
    return f"every predicted value has p >= {UNCERTAIN_BELOW}; still {tail}"


class Tools:
    def __init__(
        self,
        sessions: Sessions,
        world_factory: Callable[[LaunchSpec], Any],
        *,
        live_evaluate: bool = False,
        models: Sequence[str] = (),
    ) -> None:
        self.sessions = sessions
        # model URLs or folders the person who started the server allowed predictions to use
        self.models = tuple(models)
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
            raise ToolFailure(f"cwd {quote(cwd)} is not a folder")
        path = self.workspace.resolve(program, base=folder, what="program") if program else None
        if path is not None and not os.path.isfile(path):
            raise ToolFailure(f"program {quote(program)} is not a file in the workspace")
        if function is not None and not function.isidentifier():
            raise ToolFailure(f"function must be a function's name, not {quote(function)}")
        if function is None and call_args:
            raise ToolFailure("call_args needs function (the function to call)")
        if function is not None and path is not None:
            self._check_defines(path, function)
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
            missing = module and str(exc).startswith("no module named")
            raise ToolFailure(module_problem(module) if module and missing else str(exc)) from None
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
        out: dict[str, Any] = {"session": session.id, "recorded": what, **self._run_summary(debugger, viewer)}
        if function:
            top_level = top_level_failure(out.get("output", ""))
            if top_level:
                out["top_level"] = top_level
        out["now"] = await self._stand_where_needed(debugger, timeout)
        if launch.notes:
            out["notes"] = list(launch.notes)
        return out

    def _check_defines(self, path: str, function: str) -> None:
        """A function to record must be defined by the program's file (a typo gets the nearest names)."""
        source = read_source(path)
        if source is None:
            return
        defined = defined_functions(source)
        if function in defined or function in names_in(source, "<module>"):
            return
        raise ToolFailure(
            f"{self.workspace.show(path)} defines no function {quote(function)}{did_you_mean(function, defined)}"
        )

    async def _stand_where_needed(self, debugger: Debugger, timeout: float) -> dict[str, Any]:
        """After a recording, the session stands where an agent looks first: where the exception
        that ended the run was raised, else at the end. If that travel fails, it stays at the start
        and says where to go."""
        site = self._exception_site(debugger)
        try:
            if site is not None:
                report = await self._travel(debugger, site, timeout)
                where = "exception"
            else:
                report = await self._travel_kind(debugger, "continue", frozenset(), timeout)
                where = "end"
        except ToolFailure as exc:
            return {"moment": "m0", "at": "start", "note": f"could not travel on ({exc}); goto end or exception"}
        stop = report.stop
        return {"moment": moment_id(stop.index), "at": where, "line": stop.state.line, "function": stop.state.function}

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
            kind, text = exception_parts(message)
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
            own = self._breakpoint_lines(s, breakpoints)
            here = debugger.stop
            if here is not None and here.at_end and kind in FORWARD:
                raise ToolFailure(
                    f"the session stands at the end of the run ({moment_id(here.index)}): nothing is left to run "
                    "forward; goto start first, or step backward (reverse_continue stops at a breakpoint's last hit)"
                )
            merged = {path: list(lines) for path, lines in s.breakpoints.items()}
            for path, lines in own.items():
                merged.setdefault(path, []).extend(lines)
            for path, lines in merged.items():
                requests = [LineBreakpoint(line, condition) for line, condition in lines]
                table.set_lines(path, requests, debugger.source(path) or read_source(path))
            try:
                report, timed_out = await self._execute(debugger, kind, timeout)
            finally:
                for path in list(table.by_path):  # the table holds only while this step runs
                    table.set_lines(path, [], None)
            out = {"session": s.id, "action": action, **self._viewer(s, max_repr).stop(report.stop, report)}
            if own:
                out["breakpoints_this_step"] = sum(len(lines) for lines in own.values())
            unreached = self._never_reached(debugger, merged)
            if unreached:  # a step that ran past them must not read as "they were passed"
                out["breakpoint_lines_never_ran"] = unreached
            if timed_out:
                out["timed_out"] = f"paused after {timeout:g} s where the step had got to"
            return out

        return await self._locked(session, timeout + 2 * GRACE, work)

    def _breakpoint_lines(
        self, session: Session, breakpoints: Sequence[dict[str, Any]]
    ) -> dict[str, list[tuple[int, str | None]]]:
        """Breakpoints as an agent gave them, checked: the file inside the root, the line in it and
        holding code, the condition a Python expression. path -> [(line, condition)]."""
        if not isinstance(breakpoints, (list, tuple)) or len(breakpoints) > 100:
            raise ToolFailure("breakpoints must be a list of at most 100 {file, line, condition}")
        debugger = session.debugger
        by_path: dict[str, list[tuple[int, str | None]]] = {}
        for bp in breakpoints:
            if not isinstance(bp, dict):
                raise ToolFailure("a breakpoint is an object: {file, line, condition}")
            unknown = sorted(set(bp) - {"file", "line", "condition"})
            if unknown:
                raise ToolFailure(f"a breakpoint has no key {quote(unknown[0])}: it is {{file, line, condition}}")
            file, line, condition = bp.get("file"), bp.get("line"), bp.get("condition")
            if not isinstance(line, int) or isinstance(line, bool) or line < 1:
                raise ToolFailure(f"a breakpoint's line must be a line number, not {quote(line)}")
            if condition is not None and (not isinstance(condition, str) or len(condition) > MAX_EXPRESSION):
                raise ToolFailure(
                    f"a breakpoint's condition must be an expression of at most {MAX_EXPRESSION} characters"
                )
            path = self.workspace.resolve(file, what="breakpoint file") if file else self._main_path(debugger)
            source = debugger.source(path) or read_source(path)
            if source is None:
                raise ToolFailure(f"breakpoint file {quote(file)} cannot be read")
            check_line(source, self.workspace.show(path), line, "breakpoint line")
            if condition and condition.strip():
                check_condition(condition)
            by_path.setdefault(path, []).append((line, condition.strip() if condition and condition.strip() else None))
        return by_path

    async def breakpoints(
        self,
        session: str,
        replace: Sequence[dict[str, Any]] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        """The session's breakpoints (every step stops at them): `replace` sets them all anew ([] clears
        them). Each is listed with how many times its line ran in the recording."""
        timeout = check_timeout(timeout)

        async def work(s: Session) -> dict[str, Any]:
            if replace is not None:
                s.breakpoints = self._breakpoint_lines(s, replace)
            return {"session": s.id, "breakpoints": self._listed_breakpoints(s)}

        return await self._locked(session, timeout, work)

    def _never_reached(self, debugger: Debugger, lines: dict[str, list[tuple[int, str | None]]]) -> list[str]:
        """The breakpoints' lines ("file:line") that never ran in the recording: nothing stops there."""
        try:
            queries = asking.queries_of(debugger)
        except WorldError:
            return []
        return [
            f"{self.workspace.show(path)}:{line}"
            for path, wanted in lines.items()
            for line in sorted({line for line, _ in wanted})
            if not len(queries.hits(path, line))
        ]

    def _listed_breakpoints(self, session: Session) -> list[dict[str, Any]]:

        try:
            queries: Any = asking.queries_of(session.debugger)
        except WorldError:
            queries = None
        listed = []
        for path, lines in session.breakpoints.items():
            for line, condition in lines:
                entry: dict[str, Any] = {"file": self.workspace.show(path), "line": line}
                if condition:
                    entry["condition"] = condition
                if queries is not None:
                    entry["line_ran"] = len(queries.hits(path, line))
                listed.append(entry)
        return listed

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

        last = getattr(getattr(self._world(debugger), "execution", None), "last", None)
        if last is not None and not 0 <= index <= last:
            raise ToolFailure(f"moment m{index} is not in this run (m0 to m{last})")
        try:
            report = await within(timeout, "travelling", lambda: asking.travel(debugger, index))
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
                raise ToolFailure(f"{quote(expression)}: {exc}") from None
            viewer = self._viewer(s, max_repr)
            out: dict[str, Any] = {"session": s.id, "moment": f"m{stop.index}", "expression": echo(expression)}
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

            stop = self._stop(s.debugger)
            function = self._check_name(s.debugger, expression, frame)
            change = await self._ask(timeout, lambda: asking.last_change(s.debugger, expression, frame=frame))
            viewer = self._viewer(s, max_repr)
            out: dict[str, Any] = {"session": s.id, "expression": echo(expression), "now": f"m{stop.index}"}
            if change is None:
                out["changed"] = False
                if stop.at_start or stop.index == 0:
                    out["note"] = "the session stands at the start of the run: nothing ran yet; goto end or exception"
                else:
                    out["note"] = (
                        f"not changed in this call of {function} up to now"
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

            function = self._check_name(s.debugger, expression, frame)
            found = await self._ask(
                timeout, lambda: asking.value_history(s.debugger, expression, frame=frame, start=start, count=count)
            )
            viewer = self._viewer(s, max_repr)
            # each row names its line and that line's code, not the lines around it (they repeat)
            items = [self._change(viewer, change, context=False) for change in found.items]
            out = {"session": s.id, "expression": echo(expression), **page(items, found.total, found.start)}
            if not found.total_exact:
                out["total_is_lower_bound"] = True  # counting stopped: more may follow
            if found.total == 0:
                out["note"] = f"never changed in any call of {function} that was recorded"
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

            stop = self._stop(s.debugger)
            self._check_name(s.debugger, expression, frame)
            origin = await self._ask(timeout, lambda: asking.value_origin(s.debugger, expression, frame=frame))
            viewer = self._viewer(s, max_repr)
            steps = [
                {
                    "moment": moment_id(step.moment.index),
                    "kind": step.kind,
                    "expression": step.expression,
                    "value": viewer.cut(step.value) if step.value is not None else "<not set>",
                    "statement": step.statement,  # (the step's own code: `source` shows the lines around it)
                    "file": self.workspace.show(step.moment.path),
                    "line": step.moment.line,
                    "function": step.moment.function,
                }
                for step in origin.steps
            ]
            out: dict[str, Any] = {"session": s.id, "expression": echo(expression), "now": f"m{stop.index}"}
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

            name = self._function_name(function)
            found = await self._ask(timeout, lambda: asking.calls(s.debugger, name, start=start, count=count))
            if found.total == 0:
                note = self._never_called(s.debugger, name)
                return {"session": s.id, "function": echo(function), **page([], 0, start), "note": note}
            viewer = self._viewer(s, max_repr)
            items = []
            # the function's source once per page (a name may have several definitions: each once)
            definitions: dict[tuple[str, int], dict[str, Any]] = {}
            for call in found.items:
                place = (call.moment.path, call.moment.line)
                if place not in definitions:
                    definitions[place] = viewer.location(*place, call.function)
            for call in found.items:
                shown, left = bounded_reprs(call.arguments, max_repr)
                item: dict[str, Any] = {"call": call.call, "moment": moment_id(call.moment.index), "arguments": shown}
                if left:
                    item["arguments_left_out"] = left
                if call.returned is None:
                    item["ended"] = False
                else:
                    item["raised" if call.raised else "returned"] = viewer.cut(call.value)
                    item["end_moment"] = moment_id(call.returned.index)
                if len(definitions) > 1:
                    item["file"], item["line"] = self.workspace.show(call.moment.path), call.moment.line
                items.append(item)
            out: dict[str, Any] = {"session": s.id, "function": echo(function)}
            out["definition" if len(definitions) == 1 else "definitions"] = (
                next(iter(definitions.values())) if len(definitions) == 1 else list(definitions.values())
            )
            return {**out, **page(items, found.total, found.start)}

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
        if not isinstance(message, str) or not message.strip() or len(message) > MAX_EXPRESSION:
            raise ToolFailure("message must be text such as 'x={x} total={total}'")
        if not isinstance(line, int) or isinstance(line, bool) or line < 1:
            raise ToolFailure("line must be a line number")
        start, count = self._paging(start, count)

        async def work(s: Session) -> dict[str, Any]:

            path = self.workspace.resolve(file, what="file") if file else self._main_path(s.debugger)
            shown = self.workspace.show(path)
            info = check_line(s.debugger.source(path) or read_source(path), shown, line)
            found = await self._ask(
                timeout, lambda: asking.logpoint(s.debugger, path, line, message, start=start, count=count)
            )
            if found.total == 0:
                text = info.line_text(line).strip()[:80] if info is not None else ""
                raise ToolFailure(
                    f"line {line} of {shown} never ran in this recording" + (f": `{text}`" if text else "")
                )
            viewer = self._viewer(s, max_repr)
            items = [
                {"hit": hit.hit, "moment": moment_id(hit.moment.index), "text": viewer.cut(hit.text)}
                for hit in found.items
            ]
            out = {
                "session": s.id,
                "location": viewer.location(path, line),
                "message": echo(message),
                **page(items, found.total, found.start),
            }
            return out

        return await self._locked(session, timeout + GRACE, work)

    def _check_name(self, debugger: Debugger, expression: str, frame: int) -> str:
        """The frame's function, once the variable `expression` starts from is known to it (a local
        here, or a name its code uses): a typo is an error with the nearest names, never an empty
        answer that reads as "never changed"."""
        stop = self._stop(debugger)
        if not isinstance(frame, int) or not 0 <= frame < max(1, len(stop.stack)):
            raise ToolFailure(f"frame must be from 0 (innermost) to {max(0, len(stop.stack) - 1)}")
        if not stop.stack:
            return stop.state.function
        target = stop.stack[frame]
        root = root_name(expression)
        if root is None or root in target.locals:
            return target.function
        source = debugger.source(target.path) or read_source(target.path)
        if source is None:
            return target.function
        known = names_in(source, target.function)
        if root in known:
            return target.function
        scope = (
            f"the top level of {self.workspace.show(target.path)}"
            if target.function == "<module>"
            else f"{target.function} ({self.workspace.show(target.path)})"
        )
        owners = [f for f in owners_of(source, root) if f != target.function][:3]
        where = f"; it is a variable of {', '.join(owners)}: goto a moment in a call of it" if owners else ""
        raise ToolFailure(
            f"{scope} has no variable {quote(root)}"
            + (where or did_you_mean(root, set(target.locals) | known))
            + (f"; frame {frame} is {target.function}" if frame else "")
        )

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

    def _never_called(self, debugger: Debugger, name: str) -> str:
        """Why a function has no calls: defined but never called (a fact about the run), or no such
        function (the agent's mistake: an error with the nearest names that exist)."""

        path, _, bare = name.rpartition(":")
        cols = asking.queries_of(debugger).semantics.columns
        recorded_paths = {p for _f, p in cols.codes if self.workspace.inside(p)}
        files = [path] if path else sorted(recorded_paths | {self._main_path(debugger)})
        known: set[str] = {f for f, p in cols.codes if not f.startswith("<") and (not path or p == path)}
        for file in files:
            source = debugger.source(file) or read_source(file)
            defined = defined_functions(source) if source is not None else {}
            if bare in defined:
                return (
                    f"{bare} is defined ({self.workspace.show(file)}:{defined[bare]}) but was never called in this run"
                )
            known |= set(defined)
        where = f" in {self.workspace.show(path)}" if path else ""
        raise ToolFailure(f"no function {quote(bare)} was recorded or is defined{where}{did_you_mean(bare, known)}")

    def _function_name(self, function: str) -> str:
        """`name`, or `file.py:name` with the file confined to the root (as history takes it: `path:name`)."""
        path, sep, name = function.rpartition(":")
        if not sep or function.startswith("<"):
            path, name = "", function
        name = name.strip()
        if "." in name and not name.startswith("<"):  # `Editor.insert`: the recording names it `insert`
            name = name.rsplit(".", 1)[-1]
        return f"{self.workspace.resolve(path, what='file')}:{name}" if path else name

    async def _ask(self, timeout: float, question: Callable[[], Awaitable[T]]) -> T:
        try:
            return await within(timeout, "the question", question)
        except (WorldError, ValueError) as exc:  # history's QueryError is a ValueError
            raise ToolFailure(str(exc)) from None

    def _change(self, viewer: Viewer, change: Any, *, context: bool = True) -> dict[str, Any]:
        """A change as the agent reads it: `changed_by`, the statement that made it (in the function
        that ran it: a callee's line for an object changed through another name; for arguments,
        `passed_by`, the caller's line that made the call), and `moment`, the first moment that
        shows the new value (debugger/history.py decides both)."""
        moment = change.moment
        out: dict[str, Any] = {
            "moment": moment_id(moment.index),
            "before": viewer.cut(change.old) if change.old is not None else "<not set>",
            "after": viewer.cut(change.new) if change.new is not None else "<not set>",
        }
        statement = change.statement
        if statement is not None:
            # bound when the call was made: the caller's line passed it, it did not change it
            argument = change.argument
            key = "passed_by" if argument else "changed_by"
            if argument:
                out["argument"] = True
            where = viewer.location(statement.path, statement.line, statement.function, context=context)
            out[key] = {"moment": moment_id(statement.index), **where}
        else:
            out["location"] = viewer.location(moment.path, moment.line, moment.function, context=context)
        if change.note:
            out["note"] = change.note
        if getattr(change, "call", 0):
            out["call"] = change.call
        return out

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
        if not isinstance(function, str) or not function.isidentifier():
            raise ToolFailure(f"function must be a function's name, not {quote(function)}")
        self._check_defines(path, function)
        model = self._model(model)
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
                states.append({"action": "start", **viewer.stop(first.stop, first, given=True)})
                for action in steps:
                    left = deadline - anyio.current_time()
                    if left <= 0:
                        out["timed_out"] = f"stopped after {timeout:g} s"
                        break
                    report, timed_out = await self._execute(debugger, STEPS[action], left)
                    shown = viewer.stop(report.stop, report, context=False)  # (the first state showed the code)
                    if shown.get("description") == "predicted by the model":
                        del shown["description"]  # `predicted: true` says it
                    if shown.get("divergences"):  # the note and the output repeat the divergences
                        drop_repeats(shown, "neural-dap: the prediction differs from reality")
                    states.append({"action": action, **shown})
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
            k: summary.get(k)
            for k in ("world", "model", "dialect", "stops", "divergences", "confidence")
            if k in summary
        }
        # first thing read: how far these guesses can be trusted
        return {"confidence": confidence_note(states[1:]), **out}

    def _model(self, model: Any) -> Any:
        """The model a prediction may use: the embedded one, a model folder inside the workspace, or
        a URL (or folder) the person who started the server named with --model. An agent's text must
        not make the server load files or reach addresses outside what it was given."""
        if model is None or model == "embedded":
            return "embedded"
        url = model.get("url") if isinstance(model, dict) else model
        if not isinstance(url, str) or not url:
            raise ToolFailure("model must be 'embedded', a model folder in the workspace, or a URL given with --model")
        if url in self.models or url == "embedded":
            return model
        if url.startswith(("http://", "https://")):
            allowed = ", ".join(self.models) or "none"
            raise ToolFailure(
                f"model URL {quote(url)} was not allowed by whoever started the server (--model; allowed: {allowed})"
            )
        folder = self.workspace.resolve(url, what="model folder")
        if not os.path.isfile(os.path.join(folder, "config.json")):
            raise ToolFailure(f"model folder {quote(url)} holds no model (no config.json)")
        return {**model, "url": folder} if isinstance(model, dict) else folder

    # -- source ----------------------------------------------------------------------------------------
    async def source(
        self,
        file: str = "",
        start: int = 1,
        end: int | None = None,
        session: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        """A stretch of a file's lines, numbered (at most `MAX_SOURCE_LINES`); with a session, the
        lines with code in it that never ran in that recording."""
        timeout = check_timeout(timeout)
        if not isinstance(start, int) or start < 1 or (end is not None and (not isinstance(end, int) or end < start)):
            raise ToolFailure("start must be a line number from 1, and end (if given) one at or after it")

        async def work(s: Session | None) -> dict[str, Any]:
            debugger = s.debugger if s is not None else None
            if file:
                path = self.workspace.resolve(file, what="file")
            elif debugger is not None:
                path = self._main_path(debugger)
            else:
                raise ToolFailure("source needs file (or a session, for its program)")
            text = (debugger.source(path) if debugger is not None else None) or read_source(path)
            if text is None:
                raise ToolFailure(f"file {quote(file)} cannot be read (not a text file in the workspace)")
            lines = text.splitlines()
            shown = self.workspace.show(path)
            if start > max(1, len(lines)):
                raise ToolFailure(f"start {start} is past the end of {shown} ({len(lines)} lines)")
            last = min(
                len(lines), end if end is not None else start + MAX_SOURCE_LINES - 1, start + MAX_SOURCE_LINES - 1
            )
            width = len(str(last))
            out: dict[str, Any] = {"file": shown, "start": start, "end": last, "total_lines": len(lines)}
            out["lines"] = [f"{n:>{width}} | {lines[n - 1]}" for n in range(start, last + 1)]
            if last < len(lines) and (end is None or end > last):
                out["next_start"] = last + 1
            if debugger is not None:
                out["never_ran"] = self._never_ran(debugger, path, text, start, last)
            return out

        if session is None:
            return await within(timeout, "source", lambda: work(None))
        return await self._locked(session, timeout, work)

    def _never_ran(self, debugger: Debugger, path: str, text: str, start: int, last: int) -> list[int]:
        """The lines from `start` to `last` that hold code but never ran in the session's recording."""
        from neural_dap.core.source import SourceInfo

        try:
            queries = asking.queries_of(debugger)
        except WorldError:
            return []
        code = SourceInfo(text, path).executable_lines
        return [n for n in range(start, last + 1) if n in code and not len(queries.hits(path, n))]

    # -- close -----------------------------------------------------------------------------------------
    async def close(self, session: str) -> dict[str, Any]:
        closed = await self.sessions.close(session)
        return {"closed": closed.id, "recorded": closed.what, "sessions_open": len(self.sessions)}
