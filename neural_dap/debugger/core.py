"""The debugger core: one program being debugged, whatever protocol asks.

It owns the world model, the current stop (nothing else writes it), the breakpoints and their hit
counts, the exception filters and the execution lock, and it decides why each stop is made. A
front end (DAP, the terminal, MCP) only translates requests into `execute`/`evaluate` calls and
`Report`s into its own messages, the way vscode-mock-debug's session translates its runtime.

Hit counts: in an exact world a breakpoint's hit number is a fact of the run (the nth execution of
its line, asked of the world with `hit_number`), so a hit condition means the same thing after any
travel back and forth. A world that cannot say (a model predicting) counts the hits it has shown.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

import anyio
import anyio.abc
import msgspec

from neural_dap.core import reprs
from neural_dap.core.actions import Action
from neural_dap.core.evaluator import EvaluationError, evaluate
from neural_dap.core.state import Frame, Value
from neural_dap.core.world import (
    Check,
    CheckResult,
    ChecksLive,
    EvaluatesLive,
    ExpandsLive,
    HasThreads,
    LaunchSpec,
    LiveChild,
    LiveRoot,
    NotLive,
    SteppingConvention,
    Stop,
    Thread,
    WorldError,
    WorldModel,
)
from neural_dap.debugger import conditions, history
from neural_dap.debugger.breakpoints import BreakpointSpec, BreakpointTable, LineRequest
from neural_dap.debugger.returns import STEPS, ReturnValues
from neural_dap.debugger.stepping import FORWARD, Outcome, UnknownExecution, drive
from neural_dap.trace.queries import RecordingQueries

log = logging.getLogger("neural_dap.debugger")

WorldFactory = Callable[[LaunchSpec], WorldModel]
T = TypeVar("T")

EXCEPTION_FILTERS = ("raised", "uncaught", "userUnhandled")
MAIN_THREAD = 1  # the id of the thread that started the program
UNSET = "(unset)"  # how a change shows a name, attribute or item that was not bound


@runtime_checkable
class KnowsHits(Protocol):
    """An exact world that can say which execution of its line a stop is (1 for the first)."""

    def hit_number(self, stop: Stop) -> int | None: ...


@runtime_checkable
class RunsLive(Protocol):
    """A world whose program runs while it is debugged (world/live.py)."""

    @property
    def live(self) -> bool: ...

    def breakpoints_changed(self, targets: tuple) -> None: ...

    async def breakpoints_taken(self) -> None: ...


class Paused(Exception):
    """The running program stopped where the user paused it: the request ends there."""

    def __init__(self, stop: Stop) -> None:
        super().__init__("paused")
        self.stop = stop


@runtime_checkable
class Travels(Protocol):
    """An exact world that can move to any event of its run."""

    async def travel(self, index: int, output_from: int | None = None) -> Stop: ...


@dataclass(frozen=True)
class DataBreakpoint:
    """Stop where `expression` changes, in any invocation of `function` (of `path`)."""

    id: int
    expression: str
    path: str
    function: str


class Busy(Exception):
    """An execution request while another one runs."""


@dataclass
class Report:
    """What a front end shows after an execution request."""

    stop: Stop
    reason: str  # entry, step, breakpoint, function breakpoint, exception, pause, end, goto, restart
    description: str | None = None
    text: str | None = None  # an exception's text
    hit_breakpoint_ids: list[int] | None = None
    output: list[tuple[str, str]] = field(default_factory=list)  # (category, text): program output, log points
    finished: bool = False  # the program ended and the session ends (stopAtEnd is false)
    failure: str | None = None  # the request failed; `moved` says whether the stop changed anyway
    moved: bool = True


class Debugger:
    def __init__(self, world_factory: WorldFactory) -> None:
        self.world_factory = world_factory
        self.world: WorldModel | None = None
        self.launch: LaunchSpec | None = None
        self.stop_on_entry = False
        self.stop_at_end = True
        self.breakpoints = BreakpointTable()
        self.exception_filters: frozenset[str] = frozenset({"uncaught"})
        self._stop: Stop | None = None
        self._lock = anyio.Lock()
        self._running: anyio.CancelScope | None = None
        self._output: list[tuple[str, str]] = []  # collected during one request
        self._released = anyio.Event()
        self._closed = anyio.Event()
        self._task_group: anyio.abc.TaskGroup | None = None
        self._starting: WorldModel | None = None  # a world whose start (a recording) is under way
        self.data_breakpoints: list[DataBreakpoint] = []
        self._data_ids = 0
        self._bound: tuple[int, bool] | None = None  # (event, forward): a data breakpoint's change ends the move
        self._data_hit: tuple[DataBreakpoint, history.Change] | None = None
        self._end_shown = False  # the current stop was shown as the end of the program
        self._undecided: set[int] = set()  # breakpoints whose condition was said to be undecidable
        self._returns = ReturnValues()  # the `(return) f` values the user's steps showed, per frame

    # -- state -------------------------------------------------------------------------------------
    @property
    def stop(self) -> Stop | None:
        return self._stop

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    @property
    def exact(self) -> bool:
        return self.world is not None and self.world.capabilities.exact

    def source(self, path: str) -> str | None:
        return self.world.source(path) if self.world is not None else None

    # -- threads -----------------------------------------------------------------------------------
    def threads(self) -> list[Thread]:
        """The program's threads at the stop (one, "MainThread", where the world knows no others)."""
        world, stop = self.world, self._stop
        if stop is None or not isinstance(world, HasThreads):
            return [Thread(MAIN_THREAD, "MainThread")]
        return world.threads(stop)

    def thread_id(self) -> int:
        """The thread the stop is in."""
        world, stop = self.world, self._stop
        if stop is None or not isinstance(world, HasThreads):
            return MAIN_THREAD
        return world.thread_id(stop)

    async def thread_stack(self, thread_id: int) -> tuple[Frame, ...]:
        """A thread's call stack at the stop: the stop's own for its thread, where the others stood."""
        stop = self._require_stop()
        world = self.world
        if not isinstance(world, HasThreads):
            return stop.stack if thread_id == MAIN_THREAD else ()
        if thread_id == world.thread_id(stop):
            return stop.stack
        async with self._lock:  # rebuilding its states shares the recording's windows with the moves
            return await world.thread_stack(stop, thread_id)

    # -- launch and end ----------------------------------------------------------------------------
    async def start(self, launch: LaunchSpec, task_group: anyio.abc.TaskGroup | None = None) -> Stop:
        """Start the world asked for; its first stop (the program's start) becomes the current one.

        With a task group the world lives in a task of its own, which also closes it: a world may
        hold cancel scopes (a debugpy client's reader, a model server process), and anyio requires
        a scope to be left in the task that entered it, so no short-lived request task may own it.
        """
        if self.world is not None:
            raise WorldError("this session has already launched a program")
        world = self.world_factory(launch)
        self._starting = world
        self._task_group = task_group
        if task_group is None:
            stop = await world.start(launch)
        else:
            stop = await task_group.start(self._host, world, launch)
        self.world, self.launch, self._stop = world, launch, stop
        self._starting = None
        return stop

    async def _host(self, world: WorldModel, launch: LaunchSpec, *, task_status=anyio.TASK_STATUS_IGNORED) -> None:
        try:
            with anyio.CancelScope() as scope:
                try:
                    task_status.started(await world.start(launch))
                    await self._released.wait()
                finally:  # released, failed to start, or the connection's tasks cancelled
                    # Close at the depth `start` ran at (a world's own scopes must be left in the
                    # order they were entered), shielded from cancellation, for at most 5 s.
                    scope.shield = True
                    scope.deadline = anyio.current_time() + 5
                    try:
                        await world.close()
                    except Exception:
                        log.exception("closing the %s world failed", world.name)
        finally:
            self._closed.set()

    async def close(self) -> None:
        if self._running is not None:
            self._running.cancel()
        if self.world is None:
            return
        if self._task_group is None:
            with anyio.move_on_after(5, shield=True):
                await self.world.close()
            return
        self._released.set()
        with anyio.move_on_after(6, shield=True):
            await self._closed.wait()

    def set_line_breakpoints(
        self, path: str, requested: Sequence[LineRequest], source: str | None
    ) -> list[BreakpointSpec]:
        """Replace a file's line breakpoints (every front end: DAP's setBreakpoints, MCP's steps):
        each is verified against the source and against the run (a file it never traced)."""
        specs = self.breakpoints.set_lines(path, requested, source)
        self.check_ran(specs)
        self.breakpoints_changed()
        return specs

    def breakpoints_after_launch(
        self, source_of: Callable[[str], str | None], sources: dict[str, str]
    ) -> list[BreakpointSpec]:
        """The breakpoints set before the launch, judged again now the world knows the program: the
        lines against its sources, the files against the run, function names against `sources`.
        Returns those whose verdict changed (a front end tells its client)."""
        table = self.breakpoints
        changed = table.reverify(source_of)
        lines = [spec for specs in table.by_path.values() for spec in specs]
        changed += [spec for spec in self.check_ran(lines) if spec not in changed]
        if table.functions:
            changed += table.reresolve_functions(sources)
        return changed

    def check_ran(self, specs: list[BreakpointSpec]) -> list[BreakpointSpec]:
        """Line breakpoints in files the recorded run never traced can never be hit: say so on them
        (unverified, with the reason) instead of letting them look set. Returns those changed."""
        why_not_run = getattr(self.world, "why_not_run", None)
        if why_not_run is None:
            return []
        changed = []
        for spec in specs:
            if spec.kind == "line" and spec.verified:
                reason = why_not_run(spec.path)
                if reason is not None:
                    spec.verified, spec.message, spec.lines = False, reason, []
                    changed.append(spec)
        return changed

    def pause(self) -> None:
        """Interrupt the running request: it ends at the last stop with reason `pause`. A program
        that runs while it is debugged (a live world) stops at its next event, and the request ends
        there. While the program is still being recorded (batch), a world that can (`interrupt`)
        ends the recording there and the session opens on what was recorded."""
        # (a launched world may be recording too: a what-if branch, world/branches.py)
        world = self._starting or self.world
        interrupt = getattr(world, "interrupt", None)
        live = isinstance(world, RunsLive) and world.live
        interrupted = interrupt() if interrupt is not None else False
        if live and interrupted and self._running is not None:
            return  # the running program stops at its next event: the request ends there (see _act)
        if self._running is not None:
            self._running.cancel()

    def breakpoints_changed(self) -> None:
        """The breakpoint table changed: a program that runs while it is debugged stops at the new
        lines from now on."""
        world = self.world
        if isinstance(world, RunsLive) and world.live:
            world.breakpoints_changed(self.breakpoints.targets())

    async def breakpoints_taken(self) -> None:
        """Once a program that runs while it is debugged stops at the lines set last (a front end
        answers the request that set them then: a request made right after must meet them)."""
        world = self.world
        if isinstance(world, RunsLive) and world.live:
            await world.breakpoints_taken()

    # -- execution ---------------------------------------------------------------------------------
    async def first_stop(self) -> Report:
        """After configuration: stop on entry, or run to the first breakpoint."""
        return await self._run(self._first_outcome)

    async def _first_outcome(self) -> Outcome:
        stop = self._require_stop()
        self._collect_output(stop)  # what the program wrote before its first traced line
        if self.stop_on_entry or stop.state.terminal:
            if stop.state.event == "call" and not stop.at_end:
                stop = await self._act(Action("step_into"))
            return Outcome(stop, "entry")
        return await self._move("continue", initial=True)

    async def execute(self, kind: str, **extra: Any) -> Report:
        """One execution request (the stepping policy's names: next, stepIn, stepOut, continue,
        stepBack, reverseContinue, stepBackInto, stepBackOut, restartFrame, goto)."""
        if self.world is None:
            raise WorldError("no program has been launched")
        if self._lock.locked():
            raise Busy("the program is already running; pause it first")
        return await self._run(lambda: self._move(kind, **extra))

    async def _run(self, move: Callable[[], Any]) -> Report:
        async with self._lock:
            before = self._stop
            self._output = []
            outcome: Outcome | None = None
            failure: BaseException | None = None
            with anyio.CancelScope() as scope:
                self._running = scope
                try:
                    outcome = await move()
                except Paused as paused:
                    outcome = Outcome(paused.stop, "pause")
                except UnknownExecution:
                    raise
                except (WorldError, Exception) as exc:
                    if not isinstance(exc, WorldError):
                        log.exception("an execution request failed")
                    failure = exc
                finally:
                    self._running = None
            stop = self._require_stop()
            output, self._output = self._output, []
            if failure is not None:
                text = failure_text(failure)
                return Report(stop, "pause", text, output=output, failure=text, moved=stop is not before)
            if scope.cancelled_caught or outcome is None:
                return Report(stop, "pause", output=output)
            return self._report(outcome, output)

    async def act(self, action: Action) -> Stop:
        """One world action from the current stop, as it is (no stepping policy, breakpoints or
        exception stops): what a front end that walks every state uses (the language server's
        per-line facts, an evaluation). The stop it reaches becomes the current one."""
        if self.world is None:
            raise WorldError("no program has been launched")
        if self._lock.locked():
            raise Busy("the program is already running; pause it first")
        async with self._lock:
            stop = await self.world.act(action)
            self._stop = stop
            return stop

    async def _move(
        self,
        kind: str,
        *,
        initial: bool = False,
        invocation: int | None = None,
        line: int | None = None,
        path: str = "",
    ) -> Outcome:
        stop = self._require_stop()
        assert self.world is not None
        if kind in FORWARD and stop.at_end and not initial:
            # the last event was shown as something else (the exception that ends the run, a
            # breakpoint on the last line): the end stop comes once, so stepping back stays possible
            shown_end = self._end_shown or not self.stop_at_end
            return Outcome(stop, "end", finished=shown_end)
        if not self.world.capabilities.inverse and kind not in FORWARD:
            raise WorldError(f"the {self.world.name} world model cannot step backwards")

        async def act(action: Action, interrupt: bool) -> Stop:
            return await self._act(action, interrupt=interrupt)

        data = None
        if kind in ("continue", "reverseContinue") and self.data_breakpoints:
            data = await self._data_target(stop.index, forward=kind == "continue")
            if data is None and kind == "continue" and isinstance(self.world, RunsLive) and self.world.live:
                # the change may lie past what is recorded: run on to the next stop, then look again
                # over the longer recording (a change before that stop is travelled back to)
                return await self._continue_live_to_data(stop, act)
        if data is None:
            outcome = await drive(
                kind,
                stop,
                act,
                self.breakpoints.targets(),
                stop_at_end=self.stop_at_end,
                invocation=invocation,
                line=line,
                path=path,
                returns_stop_in_caller=self._returns_stop_in_caller(),
            )
            self._stop = outcome.stop  # (the same event may be presented anew: an exception's line)
            if kind in STEPS:
                await self._take_returns(kind, stop, outcome.stop)
            return outcome
        return await self._drive_to_data(kind, stop, act, data)

    async def _take_returns(self, kind: str, before: Stop, after: Stop) -> None:
        """Keep the values functions returned into the user's frames during this step (debugpy's
        `(return) f`), where the world can say what the step passed."""
        queries = getattr(self.world, "queries", None)
        if not isinstance(queries, RecordingQueries):
            return
        unwinds = self._returns_stop_in_caller()
        try:
            events = self._returns.returns_of(kind, before, after, queries, unwinds)
            library = self._returns.library_of(kind, before, after, queries, unwinds)
            if events or library:  # (their states: a skeleton replays, off the event loop)
                await anyio.to_thread.run_sync(self._returns.add, queries, events, library)
        except Exception:  # (the values beside the locals are not worth failing the step for)
            log.warning("the return values of a step could not be read", exc_info=True)

    async def _continue_live_to_data(self, start: Stop, act: Callable[[Action, bool], Any]) -> Outcome:
        mark = len(self._output)
        outcome = await drive(
            "continue",
            start,
            act,
            self.breakpoints.targets(),
            stop_at_end=self.stop_at_end,
            returns_stop_in_caller=self._returns_stop_in_caller(),
        )
        data = await self._data_target(start.index, forward=True)
        if data is None or data[1].moment.index > outcome.stop.index:
            return outcome
        spec, change = data
        world = self.world
        assert isinstance(world, Travels)
        del self._output[mark:]  # what was written past the change was not reached
        stop = await world.travel(change.moment.index, output_from=start.index)
        self._collect_output(stop)
        self._stop = stop
        self._data_hit = (spec, change)
        return Outcome(stop, "data breakpoint")

    def _returns_stop_in_caller(self) -> bool:
        world = self.world
        return isinstance(world, SteppingConvention) and world.returns_stop_in_caller

    # -- data breakpoints: value changes as extra targets of continue / reverseContinue ---------------
    async def _data_target(self, index: int, *, forward: bool) -> tuple[DataBreakpoint, history.Change] | None:
        """The nearest change (after the stop going forward, before it going back) of any data
        breakpoint's expression, found in the recording (debugger/history.py)."""
        queries = getattr(self.world, "queries", None)
        if queries is None:
            return None
        found = await anyio.to_thread.run_sync(history.nearest_change, queries, self.data_breakpoints, index, forward)
        return found

    async def _drive_to_data(
        self, kind: str, start: Stop, act: Callable[[Action, bool], Any], data: tuple[DataBreakpoint, history.Change]
    ) -> Outcome:
        """Continue as usual, with every stop past the change refused (so no log point or hit count
        past it runs); a stop that lands past it (a breakpoint after it, the end) travels back to it."""
        spec, change = data
        forward = kind == "continue"
        bound = history.data_stop(change, forward)  # after the change going forward, at its statement going back
        mark = len(self._output)
        self._bound = (bound, forward)
        try:
            outcome = await drive(
                kind,
                start,
                act,
                self.breakpoints.targets(),
                stop_at_end=self.stop_at_end,
                returns_stop_in_caller=self._returns_stop_in_caller(),
            )
        finally:
            self._bound = None
        at = outcome.stop.index
        if at < bound if forward else at > bound:
            return outcome  # a breakpoint or an exception comes first
        world = self.world
        assert isinstance(world, Travels)
        del self._output[mark:]  # what was written past the change was not reached
        stop = await world.travel(bound, output_from=start.index)
        self._collect_output(stop)
        self._stop = stop
        self._data_hit = (spec, change)
        return Outcome(stop, "data breakpoint")

    def data_breakpoint_info(self, expression: str, frame: int = 0) -> tuple[str | None, str]:
        """(dataId, description) for a data breakpoint on `expression` in the frame's function: the
        dataId names the expression and the function, so it holds in every invocation of it."""
        world, stop = self.world, self._stop
        if world is None or stop is None:
            return None, "the program is not stopped"
        if not isinstance(getattr(world, "queries", None), RecordingQueries):
            return None, f"the {world.name} world keeps no recording to find where values change"
        if not 0 <= frame < len(stop.stack):
            return None, f"no frame {frame} at this stop"
        try:
            history.parse_path(expression)
        except WorldError as exc:
            return None, str(exc)
        here = stop.stack[frame]
        data_id = msgspec.json.encode([expression.strip(), here.path, here.function]).decode()
        return data_id, f"{expression.strip()} in {here.function} (every call)"

    def set_data_breakpoints(self, data_ids: list[str]) -> list[DataBreakpoint | str]:
        """Replace the data breakpoints; a dataId this session did not give is refused (its message)."""
        out: list[DataBreakpoint | str] = []
        kept: list[DataBreakpoint] = []
        for data_id in data_ids:
            try:
                expression, path, function = msgspec.json.decode(data_id.encode(), type=tuple[str, str, str])
                history.parse_path(expression)
            except (msgspec.DecodeError, msgspec.ValidationError, WorldError):
                out.append(f"unknown dataId {data_id!r}: ask dataBreakpointInfo for one")
                continue
            self._data_ids += 1
            spec = DataBreakpoint(self._data_ids, expression, path, function)
            kept.append(spec)
            out.append(spec)
        self.data_breakpoints = kept
        return out

    async def _act(self, action: Action, *, interrupt: bool = True) -> Stop:
        assert self.world is not None
        forward = not action.inverse
        targets = self.breakpoints.targets() if interrupt else ()
        accept = self._accept if forward or action.kind == "inv_breakpoint" or targets else None
        stop = await self.world.act(
            action,
            # reverse-continue stops at the exceptions the filters stop at, as continue does
            exceptions=self.exception_filters if forward or action.kind == "inv_breakpoint" else frozenset(),  # type: ignore[arg-type]
            breakpoints=targets if action.kind not in ("breakpoint", "inv_breakpoint") else (),
            accept=accept,
            # the hits a hit condition rules out, passed by without a stop (not while a data
            # breakpoint's move is bounded: then `_accept` takes any hit past the change)
            hits=self.breakpoints if accept is not None and self._bound is None else None,
        )
        # every stop on the way hands over the output written since the last one, so a request of
        # several actions (a `next` over a return) loses none of it
        self._collect_output(stop)
        self._stop = stop
        if stop.paused:
            raise Paused(stop)
        return stop

    def _collect_output(self, stop: Stop) -> None:
        self._output.extend(("stdout" if stream == "stdout" else "stderr", text) for stream, text in stop.output)

    async def _accept(self, stop: Stop) -> bool:
        """At a breakpoint on the way: conditions, hit counts and log points decide (as debugpy's
        do: debugger/conditions.py)."""
        if self._bound is not None and (stop.index > self._bound[0] if self._bound[1] else stop.index < self._bound[0]):
            return True  # past a data breakpoint's change: the move ends there, then travels back to it
        state = stop.state
        specs = self.breakpoints.at(state.path, state.line)
        if not specs:
            return True
        hit = self.world.hit_number(stop) if isinstance(self.world, KnowsHits) else None
        names = conditions.exact_names(names_at(stop))
        live = self._live_checker(stop)
        stops = False
        for spec in specs:
            if hit is None:
                spec.hits += 1  # (a world that cannot say which hit of the run this is: the hits shown)
            stops |= await self._spec_stops(spec, hit if hit is not None else spec.hits, names, live)
        return stops

    async def _spec_stops(
        self, spec: BreakpointSpec, hits: int, names: dict[str, object], live: conditions.LiveChecker | None
    ) -> bool:
        message = conditions.split_message(spec.log_message) if spec.log_message is not None else None
        checks: list[Check] = [(e, "str") for e in message.expressions] if message is not None else []
        by_hits = conditions.hit_decides(spec.hit_condition, hits)
        asks_condition = bool(spec.condition) and by_hits is not True
        if asks_condition:
            checks.append((spec.condition or "", "truth"))
        verdicts = await conditions.decide(checks, names, live) if checks else []
        holds = self._condition_verdict(spec, verdicts[-1]) if asks_condition else by_hits is not False
        if holds and message is not None:
            text = conditions.message_text(message, verdicts[: len(message.expressions)])
            self._output.append(("console", text + "\n"))
            return False  # a log point never stops
        return holds

    def _condition_verdict(self, spec: BreakpointSpec, verdict: conditions.Verdict) -> bool:
        """A condition that raised does not stop; its error is shown at each hit but a NameError's
        (debugpy 1.8 in its DAP mode: `skip_suspend_on_breakpoint_exception = (BaseException,)`,
        `skip_print_breakpoint_exception = (NameError,)`). One that cannot be evaluated here never
        stops either (said once per breakpoint)."""
        if verdict.error is not None:
            if not verdict.error.startswith("NameError"):
                self._output.append(
                    (
                        "important",
                        f"Error while evaluating expression in conditional breakpoint: {spec.condition}\n"
                        f"{verdict.error}\n",
                    )
                )
            return False
        if verdict.undecided is not None:
            if spec.id not in self._undecided:
                self._undecided.add(spec.id)
                self._output.append(
                    (
                        "important",
                        f"neural-dap: breakpoint condition {spec.condition!r} cannot be evaluated here"
                        f" ({verdict.undecided}); it does not stop there\n",
                    )
                )
            return False
        return bool(verdict.truth)

    def _live_checker(self, stop: Stop) -> conditions.LiveChecker | None:
        """Asks the program at `stop` (ChecksLive); None where the world keeps no program."""
        world = self.world
        if not isinstance(world, ChecksLive):
            return None

        async def check(checks: tuple[Check, ...]) -> tuple[CheckResult, ...] | None:
            try:
                return await world.check_live(stop, checks)
            except WorldError as exc:  # NotLive: no program at this stop
                log.debug("no live check at event %s: %s", stop.index, exc)
                return None

        return check

    def _report(self, outcome: Outcome, output: list[tuple[str, str]]) -> Report:
        stop = outcome.stop
        queries = getattr(self.world, "queries", None)
        if isinstance(queries, RecordingQueries):
            stop = self._returns.shown(stop, queries)
        reason = outcome.reason
        if stop.note:
            output.append(("console", stop.note + "\n"))
        hit_ids = (
            [s.id for s in self.breakpoints.at(stop.state.path, stop.state.line)] if reason == "breakpoint" else []
        )
        if reason == "breakpoint" and hit_ids and all(self._is_function_bp(i) for i in hit_ids):
            reason = "function breakpoint"
        report = Report(stop, reason, hit_breakpoint_ids=hit_ids or None, output=output, finished=outcome.finished)
        self._end_shown = reason == "end"
        if reason == "data breakpoint" and self._data_hit is not None:
            spec, change = self._data_hit
            self._data_hit = None
            # (a value not bound yet, or no longer, reads "(unset)": None would read as the value None)
            old, new = (UNSET if v is None else v for v in (change.old, change.new))
            report.description = f"{spec.expression}: {old} \u2192 {new}"
            if change.statement is not None:  # who changed it: the statement, where it ran
                where = change.statement
                report.description += f" by `{change.code}` ({where.function}, line {where.line})"
            report.hit_breakpoint_ids = [spec.id]
            output.append(("console", report.description + "\n"))
        if reason == "exception":
            report.text = stop.state.value if stop.state.event == "exception" else stop.state.caught
            report.description = f"Exception: {report.text}"
        elif reason == "end":
            code = stop.exit.code if stop.exit else 0
            detail = f": {stop.exit.description}" if stop.exit and stop.exit.description else ""
            report.description = (
                f"End of the program (exit code {code}{detail}). Step back to travel in time; continue to finish."
            )
        elif stop.predicted:
            report.description = "predicted by the model"
        return report

    def _is_function_bp(self, bp_id: int) -> bool:
        return any(s.id == bp_id for s in self.breakpoints.functions)

    def _require_stop(self) -> Stop:
        if self._stop is None:
            raise WorldError("the program has not been launched")
        return self._stop

    # -- the whole run (debugger/history.py) ---------------------------------------------------------
    async def ask(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a question about the whole recording (`fn(*args)`, blocking: it may rebuild states) in
        a worker thread, while no execution request moves the world (they share its windows)."""
        if self.world is None:
            raise WorldError("no program has been launched")
        async with self._lock:
            try:
                return await anyio.to_thread.run_sync(lambda: fn(*args))
            except ValueError as exc:  # a QueryError: a question this recording cannot answer
                raise WorldError(str(exc)) from None

    async def travel(self, index: int) -> Report:
        """Move the current stop to event `index` of the run (reason `goto`): a moment a query found."""
        world = self.world
        if world is None:
            raise WorldError("no program has been launched")
        if not isinstance(world, Travels):
            raise WorldError(f"the {world.name} world cannot travel to a moment of the run")
        if self._lock.locked():
            raise Busy("the program is already running; pause it first")

        async def move() -> Outcome:
            stop = await world.travel(index)
            self._collect_output(stop)
            self._stop = stop
            return Outcome(stop, "goto")

        return await self._run(move)

    async def reach(self, move: Callable[[], Awaitable[Stop]], reason: str = "goto") -> Report:
        """A move the world makes outside the stepping policy (a what-if branch, a switch between
        branches: debugger/branching.py); the stop it reaches becomes the current one."""
        if self.world is None:
            raise WorldError("no program has been launched")
        if self._lock.locked():
            raise Busy("the program is already running; pause it first")

        async def run() -> Outcome:
            stop = await move()
            self._returns.clear()  # (another run: what returned into its frames is its own)
            self._collect_output(stop)
            self._stop = stop
            return Outcome(stop, reason)

        return await self._run(run)

    # -- values ---------------------------------------------------------------------------------------
    async def evaluate(
        self, expression: str, names: dict[str, str], frame: int | None = None, values: dict[str, Value] | None = None
    ) -> Evaluated:
        """The user's expression at the current stop. Where the world holds a live copy of the
        program (`EvaluatesLive`), it answers with real objects (calls, methods, numpy); elsewhere
        the safe evaluator interprets it over the recorded values, in a worker thread within its
        budget, so a heavy watch never holds up pause, cancel or stepping."""
        world, stop = self.world, self._stop
        no_program = ""  # why no copy of the program answers here (said where that is why it fails)
        if frame is not None and stop is not None and isinstance(world, EvaluatesLive):
            try:
                live = await world.evaluate_live(stop, frame, expression)
                return Evaluated(live.text, live.type or None, None, live=True)
            except NotLive as exc:
                no_program = str(exc)
        try:
            value = await anyio.to_thread.run_sync(
                lambda: evaluate(expression, names, values=values), abandon_on_cancel=True
            )
        except EvaluationError as exc:
            if no_program and not exc.raised:  # (a name, a call, a module: what only a program has)
                raise WorldError(f"{exc}: only the values recorded at this stop are known ({no_program})") from None
            raise WorldError(str(exc)) from None
        return Evaluated(reprs.show(value), reprs.type_name(value) or None, value)

    def shows_live(self, stop: Stop) -> bool:
        """Whether the Variables view at `stop` can come from the program's real objects, as
        debugpy's does (ExpandsLive); otherwise it shows what the recording kept."""
        world = self.world
        return isinstance(world, ExpandsLive) and world.live_at(stop)

    async def children_live(
        self, frame: int, root: tuple[str, str], path: tuple[list, ...], start: int = 0, count: int = 0
    ) -> tuple[tuple[LiveChild, ...], int]:
        """A value's children at the current stop, from the program (ExpandsLive): (the page asked
        for, how many there are). Raises WorldError (NotLive) where it cannot."""
        world, stop = self.world, self._require_stop()
        if not isinstance(world, ExpandsLive):
            raise NotLive(f"the {world.name if world else 'absent'} world keeps no program")
        return await world.children_live(stop, frame, root, path, start, count)

    async def roots_live(self, frame: int, roots: tuple[tuple[str, str], ...]) -> tuple[LiveRoot | None, ...]:
        world, stop = self.world, self._require_stop()
        if not isinstance(world, ExpandsLive):
            raise NotLive(f"the {world.name if world else 'absent'} world keeps no program")
        return await world.roots_live(stop, frame, roots)

    def summary(self) -> dict[str, Any]:
        return self.world.summary() if self.world is not None else {}


def names_at(stop: Stop) -> dict[str, str]:
    """The names an expression at `stop` reads, as recorded: its frame's locals over its module's
    globals (the `<module>` frame of the same file on the stack, where there is one)."""
    names: dict[str, str] = {}
    module = next((f for f in reversed(stop.stack) if f.function == "<module>" and f.path == stop.state.path), None)
    module = module or stop.module_frame
    if module is not None and module is not (stop.stack[0] if stop.stack else None):
        names.update(module.locals)
    names.update(stop.state.locals)
    return names


def failure_text(exc: BaseException) -> str:
    if isinstance(exc, WorldError):
        return str(exc)
    return f"internal error: {type(exc).__name__}: {exc}"


def is_plain_reference(expression: str) -> bool:
    """A name, attribute or item chain with constant or name keys (`self.items[3]`, `d["k"]`): what
    an editor's hover reads. Anything else (a call, an operator) is for a watch or the REPL."""
    try:
        node = ast.parse(expression.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return False
    while True:
        if isinstance(node, ast.Name):
            return True
        reads = isinstance(node, ast.Attribute) or (
            isinstance(node, ast.Subscript) and isinstance(node.slice, (ast.Constant, ast.Name))
        )
        if not reads:
            return False
        node = node.value  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Evaluated:
    text: str  # as shown
    type: str | None
    value: Any  # the parsed value where the safe evaluator computed it (expandable), else None
    live: bool = False  # computed by the live program
