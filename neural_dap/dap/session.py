"""One debug session: DAP requests in, responses and events out, a `WorldModel` underneath.

The session never imports a world implementation: it gets a factory that makes a `WorldModel`
from the launch arguments. Requests run concurrently (so `pause` and `cancel` can reach a long
step), but only one execution request moves the world at a time.

How DAP requests map to debugger actions, so that stops land where debugpy's do:
  next            step_over (a return is stepped past into the caller, as debugpy does)
  stepIn          step_into (a call is stepped through to the callee's first line)
  stepOut         step_return (shown in the caller with the `(return)` value)
  continue        breakpoint(enabled lines), or continue to the end
  stepBack        inv_step_over (a call state is stepped past into the caller)
  reverseContinue inv_breakpoint(enabled lines), or back to the start
  restartFrame    inv_step_return until the frame's call
  stepBackInto    inv_step_into          (custom request)
  stepBackOut     inv_step_return, then one state back into the caller's line (custom request)
  goto            run to the target line (forward, else its last run)
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec

from neural_dap.core import reprs
from neural_dap.core.actions import Action
from neural_dap.core.evaluator import Budget, EvaluationError, evaluate
from neural_dap.core.source import SourceInfo, read_source
from neural_dap.core.world import Entry, LaunchSpec, Stop, WorldError, WorldModel
from neural_dap.dap import plain_run
from neural_dap.dap import protocol as p
from neural_dap.dap.breakpoints import BreakpointTable, hit_condition_met, interpolate
from neural_dap.dap.framing import FramingProblem
from neural_dap.dap.presentation import StopView
from neural_dap.dap.stepping import FORWARD, Outcome, UnknownExecution, drive

log = logging.getLogger("neural_dap.dap")

WorldFactory = Callable[[LaunchSpec], WorldModel]
Send = Callable[[msgspec.Struct], Awaitable[None]]

THREAD_ID = 1
EXCEPTION_FILTERS = [
    p.ExceptionBreakpointsFilter(
        filter="raised",
        label="Raised Exceptions",
        description="Stop where an exception is raised, caught or not",
        default=False,
    ),
    p.ExceptionBreakpointsFilter(
        filter="uncaught",
        label="Uncaught Exceptions",
        description="Stop where the exception that ends the program is raised",
        default=True,
    ),
]


# Conditions and log points run at every hit, inside a step: each gets a small budget of its own.
CONDITION_BUDGET = Budget(steps=20_000, seconds=0.1)


class RequestError(Exception):
    """Turns into an error response with this message."""


class DebugSession:
    def __init__(self, world_factory: WorldFactory, send: Send) -> None:
        self.world_factory = world_factory
        self._send_struct = send
        self.seq = 0
        self.client = p.InitializeArguments()
        self.initialized = False
        self.initialize_read = False  # requests read after `initialize` are served (a client may pipeline them)
        self.plain: plain_run.PlainRun | None = None  # a launch with noDebug
        self.world: WorldModel | None = None
        self.launch_args: p.LaunchArguments | None = None
        self.view: StopView | None = None
        self.stop: Stop | None = None
        self.breakpoints = BreakpointTable()
        self.exception_filters: frozenset[str] = frozenset({"uncaught"})
        self.configured = anyio.Event()
        self.launched = anyio.Event()
        self.ended = False
        self.terminated = False
        self.closing = anyio.Event()
        self.exec_lock = anyio.Lock()
        self.running: anyio.CancelScope | None = None
        self.in_flight: dict[int, anyio.CancelScope] = {}
        self._open: set[int] = set()  # requests not answered yet
        self.goto_lines: dict[int, tuple[str, int]] = {}
        self.progress_counter = 0
        self._pending_output: list[tuple[str, str]] = []  # log points and notes met during an action
        self._task_group: anyio.abc.TaskGroup | None = None
        self._world_released = anyio.Event()  # tells the world's host task to close it
        self._world_closed = anyio.Event()

    # -- sending ------------------------------------------------------------------------------------
    def _next_seq(self) -> int:
        self.seq += 1
        return self.seq

    async def event(self, name: str, body: Any = None) -> None:
        await self._send_struct(p.Event(seq=self._next_seq(), event=name, body=body))

    async def respond(self, request: p.Request, body: Any = None) -> None:
        self._open.discard(request.seq)
        await self._send_struct(
            p.Response(seq=self._next_seq(), request_seq=request.seq, success=True, command=request.command, body=body)
        )

    async def fail(self, request_seq: int, command: str, message: str) -> None:
        self._open.discard(request_seq)
        await self._send_struct(
            p.Response(
                seq=self._next_seq(),
                request_seq=request_seq,
                success=False,
                command=command,
                message=message,
                body={"error": {"id": 1, "format": message, "showUser": True}},
            )
        )

    async def output(self, text: str, category: str = "console") -> None:
        await self.event("output", p.OutputEventBody(output=text, category=category))

    # -- dispatch -----------------------------------------------------------------------------------
    async def run(self, messages, task_group: anyio.abc.TaskGroup) -> None:
        """Serve until the client disconnects. `messages` yields decoded requests or problems."""
        self._task_group = task_group
        with anyio.CancelScope() as reading:
            task_group.start_soon(self._stop_reading_when_closing, reading)
            await self._read(messages, task_group)

    async def _stop_reading_when_closing(self, reading: anyio.CancelScope) -> None:
        """After `disconnect` is answered the session ends, though the client may keep its end open."""
        await self.closing.wait()
        reading.cancel()

    async def _read(self, messages, task_group: anyio.abc.TaskGroup) -> None:
        async for item in messages:
            if isinstance(item, FramingProblem):
                if not item.before_first_frame:  # a client that spoke DAP is told why; anything else is not
                    await self.output(f"neural-dap: closing the connection: {item.what}\n", "important")
                log.warning("closing the connection: %s", item.what)
                break
            if isinstance(item, p.Request):
                if item.command == "initialize":
                    self.initialize_read = True
                elif not self.initialize_read:
                    await self.fail(item.seq, item.command, "the first request must be 'initialize'")
                    continue
                task_group.start_soon(self.handle, item)
            else:
                await self._bad_message(item)
            if self.closing.is_set():
                break

    async def _bad_message(self, problem: tuple[int | None, str]) -> None:
        seq, what = problem
        log.warning("bad DAP message: %s", what)
        if seq is not None:
            await self.fail(seq, "unknown", f"malformed request: {what}")
        else:
            await self.output(f"neural-dap: ignored a malformed message ({what})\n", "important")

    async def handle(self, request: p.Request) -> None:
        method = getattr(self, "on_" + _snake(request.command), None) if _is_command(request.command) else None
        if method is None:
            await self.fail(request.seq, request.command, f"unsupported request {request.command!r}")
            return
        self._open.add(request.seq)
        with anyio.CancelScope() as scope:
            self.in_flight[request.seq] = scope
            try:
                await method(request)
            except RequestError as exc:
                await self.fail(request.seq, request.command, str(exc))
            except WorldError as exc:
                await self.fail(request.seq, request.command, str(exc))
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                await self.fail(request.seq, request.command, f"invalid arguments for {request.command}: {exc}")
            except Exception as exc:  # a bug of ours must not end the session
                log.exception("request %s failed", request.command)
                await self.fail(
                    request.seq, request.command, f"internal error in {request.command}: {type(exc).__name__}: {exc}"
                )
            finally:
                self.in_flight.pop(request.seq, None)
        if request.seq in self._open:  # cancelled before it was answered
            await self.fail(request.seq, request.command, "cancelled")

    @staticmethod
    def _args(request: p.Request, kind: type) -> Any:
        return msgspec.convert(request.arguments or {}, kind)

    # -- set-up requests ----------------------------------------------------------------------------
    async def on_initialize(self, request: p.Request) -> None:
        if self.initialized:
            raise RequestError("the session is already initialized")
        self.initialized = True
        self.client = self._args(request, p.InitializeArguments)
        await self.respond(request, p.Capabilities(exception_breakpoint_filters=EXCEPTION_FILTERS))
        await self.event("initialized")

    async def on_launch(self, request: p.Request) -> None:
        args = self._args(request, p.LaunchArguments)
        if self.world is not None or self.plain is not None:
            raise RequestError("this session has already launched a program")
        launch = self._launch_spec(args, request.arguments)
        if args.no_debug:
            await self._launch_plainly(request, launch)
            return
        world = self.world_factory(launch)
        progress = await self._progress_start(f"Starting the {world.name} world model")
        try:
            stop = await self._start_world(world, launch)
        finally:
            await self._progress_end(progress)
        self.world = world
        self.launch_args = args
        self.stop = stop
        await self.respond(request)
        await self.event(
            "process", p.ProcessEventBody(name=launch.program, start_method="launch", is_local_process=True)
        )
        await self.event("thread", p.ThreadEventBody(reason="started", thread_id=THREAD_ID))
        await self._after_launch_breakpoints()
        self.launched.set()
        assert self._task_group is not None
        self._task_group.start_soon(self._first_stop)

    def _launch_spec(self, args: p.LaunchArguments, request_arguments: Any) -> LaunchSpec:
        if not args.program:
            raise RequestError("launch needs 'program': the Python file to debug")
        cwd = args.cwd or os.getcwd()
        program = os.path.abspath(os.path.join(cwd, os.path.expanduser(args.program)))
        if not os.path.isfile(program):
            raise RequestError(f"the program {program} does not exist")
        entry = Entry(args.entry.function, args.entry.args, args.entry.returns) if args.entry else None
        options = {k: v for k, v in (request_arguments or {}).items() if k not in p.LAUNCH_KEYS}
        return LaunchSpec(
            program=program,
            args=tuple(args.args),
            cwd=cwd,
            env=dict(args.env) or None,
            entry=entry,
            world=args.world,
            python=args.python,
            options=options,
        )

    async def _launch_plainly(self, request: p.Request, launch: LaunchSpec) -> None:
        """Run Without Debugging: the program runs untraced; its output streams; then it ends."""
        entry = launch.entry
        if entry is not None and entry.returns is not None:
            raise RequestError("a launch that starts from a return value cannot run without debugging")
        argv = plain_run.command(
            launch.program,
            list(launch.args),
            launch.python,
            (entry.function, entry.args or "") if entry else None,
        )
        self.plain = plain_run.PlainRun(argv, launch.cwd, launch.env)
        await self.respond(request)
        await self.event(
            "process", p.ProcessEventBody(name=launch.program, start_method="launch", is_local_process=True)
        )
        assert self._task_group is not None
        self._task_group.start_soon(self._run_plainly, self.plain)

    async def _run_plainly(self, run: plain_run.PlainRun) -> None:
        await self.configured.wait()
        try:
            code = await run.run(self.output)
        except OSError as exc:
            await self.output(f"neural-dap: cannot run the program: {exc}\n", "important")
            code = 1
        if not self.terminated:
            self.terminated = True
            await self.event("exited", p.ExitedEventBody(exit_code=code))
            await self.event("terminated")

    async def on_configuration_done(self, request: p.Request) -> None:
        self.configured.set()
        await self.respond(request)

    async def _first_stop(self) -> None:
        """After configurationDone: stop on entry, or run to the first breakpoint. No request is open
        here, so a failure is told as an `important` output and the session stops at the entry."""
        await self.configured.wait()
        async with self.exec_lock:
            with anyio.CancelScope() as scope:
                self.running = scope
                try:
                    outcome = await self._first_outcome()
                except (WorldError, Exception) as exc:
                    if not isinstance(exc, WorldError):
                        log.exception("the first stop failed")
                    await self.output(f"neural-dap: {_failure_text(exc)}\n", "important")
                    await self._present(self.stop, "entry", description=_failure_text(exc))
                    return
                finally:
                    self.running = None
            if scope.cancelled_caught:
                await self._present(self.stop, "entry")
            else:
                await self._conclude(outcome)

    async def _first_outcome(self) -> Outcome:
        assert self.launch_args is not None and self.stop is not None
        stop = self.stop
        if self.launch_args.stop_on_entry or stop.state.terminal:
            if stop.state.event == "call" and not stop.at_end:
                stop = await self._act(Action("step_into"))
            return Outcome(stop, "entry")
        return await self._move("continue", initial=True)

    async def on_disconnect(self, request: p.Request) -> None:
        await self._shutdown()
        await self.respond(request)
        self.closing.set()

    async def on_terminate(self, request: p.Request) -> None:
        await self.respond(request)
        if self.plain is not None:
            self.plain.kill()
        await self._finish(reason="terminated by the client")

    async def _start_world(self, world: WorldModel, launch: LaunchSpec) -> Stop:
        """Start `world` in a task of its own, which also closes it.

        A world may hold cancel scopes (a debugpy client's reader, a model server process), and anyio
        requires a scope to be left in the task that entered it: request handlers are short-lived
        tasks, so neither the launch handler nor the disconnect handler may own the world.
        """
        if self._task_group is None:  # driven without `run` (unit tests): no task to host it
            return await world.start(launch)
        return await self._task_group.start(self._host_world, world, launch)

    async def _host_world(
        self, world: WorldModel, launch: LaunchSpec, *, task_status=anyio.TASK_STATUS_IGNORED
    ) -> None:
        try:
            with anyio.CancelScope() as scope:
                try:
                    task_status.started(await world.start(launch))
                    await self._world_released.wait()
                finally:  # released, failed to start, or the connection's tasks cancelled
                    # Close at the depth `start` ran at (a world's own scopes must be left in the
                    # order they were entered, so no new scope around this call), shielded from
                    # the connection's cancellation, for at most 5 s.
                    scope.shield = True
                    scope.deadline = anyio.current_time() + 5
                    try:
                        await world.close()
                    except Exception:
                        log.exception("closing the %s world failed", world.name)
        finally:
            self._world_closed.set()

    async def _shutdown(self) -> None:
        if self.plain is not None:
            self.plain.kill()
        if self.running is not None:
            self.running.cancel()
        if self.world is None:
            return
        if self._task_group is None:
            with anyio.move_on_after(5, shield=True):
                await self.world.close()
            return
        self._world_released.set()
        with anyio.move_on_after(6, shield=True):
            await self._world_closed.wait()

    # -- breakpoints ---------------------------------------------------------------------------------
    def _source_text(self, path: str) -> str | None:
        if self.world is not None:
            text = self.world.source(path)
            if text is not None:
                return text
        return read_source(path)

    async def on_set_breakpoints(self, request: p.Request) -> None:
        args = self._args(request, p.SetBreakpointsArguments)
        path = args.source.path
        if not path:
            raise RequestError("setBreakpoints needs source.path")
        path = os.path.abspath(path)
        requested = (
            args.breakpoints
            if args.breakpoints is not None
            else [p.SourceBreakpoint(line=ln) for ln in args.lines or []]
        )
        specs = self.breakpoints.set_lines(path, requested, self._source_text(path))
        await self.respond(request, {"breakpoints": [s.to_dap() for s in specs]})

    async def on_set_function_breakpoints(self, request: p.Request) -> None:
        args = self._args(request, p.SetFunctionBreakpointsArguments)
        specs = self.breakpoints.set_functions(args.breakpoints, self._known_sources())
        await self.respond(request, {"breakpoints": [s.to_dap() for s in specs]})

    def _known_sources(self) -> dict[str, str]:
        paths = set(self.breakpoints.by_path)
        if self.launch_args and self.launch_args.program:
            paths.add(os.path.abspath(os.path.join(self.launch_args.cwd or os.getcwd(), self.launch_args.program)))
        out = {}
        for path in sorted(paths):
            text = self._source_text(path)
            if text is not None:
                out[path] = text
        return out

    async def _after_launch_breakpoints(self) -> None:
        changed = self.breakpoints.reverify(self._source_text)
        if self.breakpoints.functions:
            changed += self.breakpoints.reresolve_functions(self._known_sources())
        for spec in changed:
            await self.event("breakpoint", {"reason": "changed", "breakpoint": spec.to_dap()})

    async def on_set_exception_breakpoints(self, request: p.Request) -> None:
        args = self._args(request, p.SetExceptionBreakpointsArguments)
        known = {f.filter for f in EXCEPTION_FILTERS}
        unknown = [f for f in args.filters if f not in known]
        self.exception_filters = frozenset(f for f in args.filters if f in known)
        body = {
            "breakpoints": [
                {"verified": f in known, "message": None if f in known else f"unknown filter {f!r}"}
                for f in args.filters
            ]
        }
        await self.respond(request, body)
        if unknown:
            await self.output(f"neural-dap: unknown exception filters {unknown}; known: {sorted(known)}\n", "important")

    # -- inspection ----------------------------------------------------------------------------------
    async def on_threads(self, request: p.Request) -> None:
        await self.respond(request, {"threads": [p.Thread(id=THREAD_ID, name="MainThread")]})

    def _require_view(self) -> StopView:
        if self.view is None:
            raise RequestError("the program is not stopped")
        return self.view

    async def on_stack_trace(self, request: p.Request) -> None:
        args = self._args(request, p.StackTraceArguments)
        frames = self._require_view().stack_frames()
        start = max(0, args.start_frame)
        chosen = frames[start : start + args.levels] if args.levels > 0 else frames[start:]
        await self.respond(request, {"stackFrames": chosen, "totalFrames": len(frames)})

    async def on_scopes(self, request: p.Request) -> None:
        args = self._args(request, p.ScopesArguments)
        view = self._require_view()
        if view.frame(args.frame_id) is None:
            raise RequestError(f"no frame {args.frame_id} at this stop")
        await self.respond(request, {"scopes": view.scopes(args.frame_id)})

    async def on_variables(self, request: p.Request) -> None:
        args = self._args(request, p.VariablesArguments)
        view = self._require_view()
        await self.respond(
            request, {"variables": view.variables(args.variables_reference, args.start, args.count, args.filter)}
        )

    async def on_evaluate(self, request: p.Request) -> None:
        args = self._args(request, p.EvaluateArguments)
        view = self._require_view()
        frame = view.frame(args.frame_id)
        if frame is None:
            raise RequestError("no such frame")
        names = frame.variable_reprs()
        try:
            # in a worker thread, within its budget: a heavy watch never holds up pause, cancel or stepping
            value = await anyio.to_thread.run_sync(evaluate, args.expression, names, abandon_on_cancel=True)
        except EvaluationError as exc:
            raise RequestError(str(exc)) from None
        text = reprs.show(value)
        await self.respond(
            request,
            {
                "result": text,
                "type": reprs.type_name(value) or None,
                "variablesReference": view.expandable(value, args.expression),
            },
        )

    async def on_source(self, request: p.Request) -> None:
        args = self._args(request, p.SourceArguments)
        path = args.source.path if args.source else None
        text = self._source_text(path) if path else None
        if text is None:
            raise RequestError("source not available")
        await self.respond(request, {"content": text, "mimeType": "text/x-python"})

    async def on_exception_info(self, request: p.Request) -> None:
        stop = self.stop
        if stop is None or not (stop.state.event == "exception" or stop.state.caught):
            raise RequestError("the program is not stopped at an exception")
        text = stop.state.value if stop.state.event == "exception" else stop.state.caught
        name = re.match(r"[\w.]+", text or "")
        type_name = name.group(0) if name else "Exception"
        mode = "unhandled" if stop.at_end else "always"
        await self.respond(
            request,
            {
                "exceptionId": type_name,
                "description": text,
                "breakMode": mode,
                "details": p.ExceptionDetails(message=text, type_name=type_name),
            },
        )

    async def on_goto_targets(self, request: p.Request) -> None:
        args = self._args(request, p.GotoTargetsArguments)
        path = os.path.abspath(args.source.path or "")
        text = self._source_text(path)
        if text is None or args.line not in SourceInfo(text, path).executable_lines:
            await self.respond(request, {"targets": []})
            return
        target_id = len(self.goto_lines) + 1
        self.goto_lines[target_id] = (path, args.line)
        await self.respond(
            request, {"targets": [p.GotoTarget(id=target_id, label=f"line {args.line}", line=args.line)]}
        )

    # -- execution ----------------------------------------------------------------------------------
    async def on_next(self, request: p.Request) -> None:
        await self._start_execution(request, "next")

    async def on_step_in(self, request: p.Request) -> None:
        await self._start_execution(request, "stepIn")

    async def on_step_out(self, request: p.Request) -> None:
        await self._start_execution(request, "stepOut")

    async def on_continue(self, request: p.Request) -> None:
        await self._start_execution(request, "continue", body={"allThreadsContinued": True})

    async def on_step_back(self, request: p.Request) -> None:
        await self._start_execution(request, "stepBack")

    async def on_reverse_continue(self, request: p.Request) -> None:
        await self._start_execution(request, "reverseContinue")

    async def on_step_back_into(self, request: p.Request) -> None:
        await self._start_execution(request, "stepBackInto")

    async def on_step_back_out(self, request: p.Request) -> None:
        await self._start_execution(request, "stepBackOut")

    async def on_restart_frame(self, request: p.Request) -> None:
        args = self._args(request, p.RestartFrameArguments)
        frame = self._require_view().frame(args.frame_id)
        if frame is None:
            raise RequestError(f"no frame {args.frame_id} at this stop")
        await self._start_execution(request, "restartFrame", invocation=frame.invocation)

    async def on_goto(self, request: p.Request) -> None:
        args = self._args(request, p.GotoArguments)
        target = self.goto_lines.get(args.target_id)
        if target is None:
            raise RequestError(f"unknown goto target {args.target_id}")
        await self._start_execution(request, "goto", path=target[0], line=target[1])

    async def on_pause(self, request: p.Request) -> None:
        await self.respond(request)
        if self.running is not None:
            self.running.cancel()

    async def on_cancel(self, request: p.Request) -> None:
        args = self._args(request, p.CancelArguments)
        await self.respond(request)
        if args.request_id is not None and args.request_id in self.in_flight:
            self.in_flight[args.request_id].cancel()

    async def _start_execution(self, request: p.Request, kind: str, body: Any = None, **extra: Any) -> None:
        """Run one execution request. An exact world answers at once and then stops; a predicted one
        answers when its prediction is in, so a failed prediction is an error response to the
        request itself (which every client shows) and the session stays at its last stop."""
        if self.world is None or not self.launched.is_set():
            raise RequestError("no program has been launched")
        if self.terminated:
            raise RequestError("the program has ended")
        if self.exec_lock.locked():
            raise RequestError("the program is already running; pause it first")
        async with self.exec_lock:
            answer_first = self.world.capabilities.exact
            if answer_first:
                await self.respond(request, body)
            outcome: Outcome | None = None
            failure: BaseException | None = None
            before = self.stop
            with anyio.CancelScope() as scope:
                self.running = scope
                try:
                    outcome = await self._move(kind, **extra)
                except (WorldError, Exception) as exc:
                    if not isinstance(exc, WorldError):
                        log.exception("%s failed", kind)
                    failure = exc
                finally:
                    self.running = None
            if failure is not None:
                await self._flush_pending_output()
                text = f"{kind} failed: {_failure_text(failure)}"
                if answer_first or self.stop is not before:
                    # answered already, or part of the step was taken (a stepIn that reached the
                    # call): say it where clients show it, and stop where the world stands
                    if not answer_first:
                        await self.respond(request, body)
                    await self.output(f"neural-dap: {text}\n", "important")
                    await self._present(self.stop, "pause", description=text)
                else:  # nothing moved: the request fails, and the client stays at its stop
                    await self.fail(request.seq, request.command, text)
                return
            if scope.cancelled_caught:  # paused: back at the last stop
                if not answer_first:
                    await self.respond(request, body)
                if not self.terminated:
                    await self._present(self.stop, "pause")
                return
            if not answer_first:
                await self.respond(request, body)
            assert outcome is not None
            await self._conclude(outcome)

    async def _move(
        self,
        kind: str,
        *,
        initial: bool = False,
        invocation: int | None = None,
        line: int | None = None,
        path: str = "",
    ) -> Outcome:
        """Apply the stepping policy from the current stop."""
        self._pending_output = []
        assert self.stop is not None and self.world is not None
        if kind in FORWARD and self.stop.at_end and not initial:
            return Outcome(self.stop, "end", finished=True)
        if not self.world.capabilities.inverse and kind not in FORWARD:
            raise WorldError(f"the {self.world.name} world model cannot step backwards")

        async def act(action: Action, interrupt: bool) -> Stop:
            return await self._act(action, interrupt=interrupt)

        stop_at_end = self.launch_args.stop_at_end if self.launch_args is not None else True
        try:
            return await drive(
                kind,
                self.stop,
                act,
                self.breakpoints.targets(),
                stop_at_end=stop_at_end,
                invocation=invocation,
                line=line,
                path=path,
            )
        except UnknownExecution as exc:
            raise RequestError(str(exc)) from None

    async def _conclude(self, outcome: Outcome) -> None:
        await self._flush_pending_output()
        if outcome.finished:
            if outcome.stop is not self.stop or not self.stop.at_end or outcome.reason != "end":
                await self._emit_output(outcome.stop)
            self.stop = outcome.stop
            await self._finish()
            return
        await self._present(outcome.stop, outcome.reason)

    async def _act(self, action: Action, *, interrupt: bool = True) -> Stop:
        assert self.world is not None
        forward = not action.inverse
        targets = self.breakpoints.targets() if interrupt else ()
        progress = await self._progress_start(f"{action}") if not self.world.capabilities.exact else None
        try:
            stop = await self.world.act(
                action,
                exceptions=self.exception_filters if forward else frozenset(),  # type: ignore[arg-type]
                breakpoints=targets if action.kind not in ("breakpoint", "inv_breakpoint") else (),
                accept=self._accept if forward or action.kind == "inv_breakpoint" or targets else None,
            )
        finally:
            await self._progress_end(progress)
        self.stop = stop
        return stop

    def _accept(self, stop: Stop) -> bool:
        """At a breakpoint on the way: conditions, hit counts and log points decide."""
        state = stop.state
        specs = self.breakpoints.at(state.path, state.line)
        if not specs:
            return True
        names = {**state.locals}
        stops = False
        for spec in specs:
            if spec.condition:
                try:
                    if not evaluate(spec.condition, names, CONDITION_BUDGET):
                        continue
                except EvaluationError as exc:
                    self._pending_output.append(
                        (f"neural-dap: breakpoint condition {spec.condition!r} failed: {exc}; stopping\n", "important")
                    )
            spec.hits += 1
            if not hit_condition_met(spec.hit_condition, spec.hits):
                continue
            if spec.log_message is not None:
                text = interpolate(spec.log_message, lambda e: evaluate(e, names, CONDITION_BUDGET))
                self._pending_output.append((text + "\n", "console"))
                continue
            stops = True
        return stops

    async def _flush_pending_output(self) -> None:
        pending, self._pending_output = self._pending_output, []
        for text, category in pending:
            await self.output(text, category)

    async def _emit_output(self, stop: Stop) -> None:
        for stream, text in stop.output:
            await self.output(text, "stdout" if stream == "stdout" else "stderr")

    async def _present(self, stop: Stop | None, reason: str, description: str | None = None) -> None:
        if stop is None:
            return
        self.stop = stop
        await self._emit_output(stop)
        if stop.note:
            await self.output(stop.note + "\n", "console")
        self.view = StopView(stop, stop.divergences)
        hit_ids = (
            [s.id for s in self.breakpoints.at(stop.state.path, stop.state.line)] if reason == "breakpoint" else None
        )
        text = None
        if reason == "exception":
            text = stop.state.value if stop.state.event == "exception" else stop.state.caught
            description = description or f"Exception: {text}"
        if reason == "end":
            exit_ = stop.exit
            code = exit_.code if exit_ else 0
            detail = f": {exit_.description}" if exit_ and exit_.description else ""
            description = (
                f"End of the program (exit code {code}{detail}). Step back to travel in time; continue to finish."
            )
        if reason == "function breakpoint" or (
            reason == "breakpoint" and hit_ids and any(self._is_function_bp(i) for i in hit_ids)
        ):
            reason = "function breakpoint"
        if stop.predicted and description is None and reason != "pause":
            description = "predicted by the model"
        await self.event(
            "stopped",
            p.StoppedEventBody(
                reason=reason,
                thread_id=THREAD_ID,
                all_threads_stopped=True,
                description=description,
                text=text,
                hit_breakpoint_ids=hit_ids or None,
            ),
        )

        if stop.divergences:
            await self.event("invalidated", p.InvalidatedEventBody(areas=["variables"], thread_id=THREAD_ID))
            top = self.view.frames[0] if self.view.frames else None
            if top is not None:
                await self.event(
                    "neuralDap/divergence",
                    {"path": top.path, "line": top.line, "text": stop.note or "the prediction differs from reality"},
                )
        if self.world is not None and not self.world.capabilities.exact:
            summary = self.world.summary()
            await self.event(
                "neuralDap/status",
                {
                    k: summary.get(k)
                    for k in ("world", "dialect", "model", "stops", "divergences", "statesCompared", "reconcile")
                },
            )

    def _is_function_bp(self, bp_id: int) -> bool:
        return any(s.id == bp_id for s in self.breakpoints.functions)

    async def _finish(self, reason: str = "") -> None:
        if self.terminated:
            return
        self.terminated = True
        stop = self.stop
        code = stop.exit.code if stop is not None and stop.exit is not None else 0
        if stop is not None and stop.exit is not None and stop.exit.description:
            await self.output(f"neural-dap: {stop.exit.description}\n", "important")
        await self.event("exited", p.ExitedEventBody(exit_code=code))
        await self.event("terminated")

    # -- progress -----------------------------------------------------------------------------------
    async def _progress_start(self, title: str) -> str | None:
        if not self.client.supports_progress_reporting:
            return None
        self.progress_counter += 1
        progress_id = f"neural-dap-{self.progress_counter}"
        await self.event(
            "progressStart", p.ProgressStartEventBody(progress_id=progress_id, title=title, cancellable=True)
        )
        return progress_id

    async def _progress_end(self, progress_id: str | None) -> None:
        if progress_id is not None:
            with anyio.CancelScope(shield=True):
                await self.event("progressEnd", p.ProgressEndEventBody(progress_id=progress_id))

    # -- custom requests ------------------------------------------------------------------------------
    async def on_session_summary(self, request: p.Request) -> None:
        summary = self.world.summary() if self.world is not None else {}
        await self.respond(request, summary)


def _failure_text(exc: BaseException) -> str:
    if isinstance(exc, WorldError):
        return str(exc)
    return f"internal error: {type(exc).__name__}: {exc}"


def _is_command(command: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", command or ""))


def _snake(command: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", command).lower()
