"""One DAP connection: requests in, responses and events out, a debugger core underneath.

The session translates; the `Debugger` (neural_dap/debugger) owns the world, the current stop, the
breakpoints and why each stop is made, and the session never imports a world implementation (it
gets a factory). Requests run concurrently (so `pause` and `cancel` can reach a long step); the
core lets one execution request move the world at a time. How DAP requests map to actions, so that
stops land where debugpy's do, is the stepping policy's docstring (debugger/stepping.py).
"""

from __future__ import annotations

import logging
import os
import re
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec

from neural_dap.core import reprs
from neural_dap.core.source import SourceInfo, read_source
from neural_dap.core.world import Entry, LaunchSpec, Stop, WorldError, WorldModel
from neural_dap.dap import plain_run
from neural_dap.dap import protocol as p
from neural_dap.dap.framing import FramingProblem
from neural_dap.dap.presentation import StopView
from neural_dap.debugger import history
from neural_dap.debugger.breakpoints import BreakpointSpec
from neural_dap.debugger.core import Busy, Debugger, Report, is_plain_reference
from neural_dap.debugger.launch import Launch, LaunchError, LaunchRequest, build_launch
from neural_dap.debugger.stepping import UnknownExecution

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
    p.ExceptionBreakpointsFilter(
        filter="userUnhandled",
        label="User Uncaught Exceptions",
        description="Stop where an exception leaves your code into code that is not yours (a failing test, say)",
        default=False,
    ),
]


class RequestError(Exception):
    """Turns into an error response with this message."""


class DebugSession:
    def __init__(self, world_factory: WorldFactory, send: Send) -> None:
        self.debugger = Debugger(world_factory)
        self._send_struct = send
        self.seq = 0
        self.client = p.InitializeArguments()
        self.initialized = False
        self.initialize_read = False  # requests read after `initialize` are served (a client may pipeline them)
        self.plain: plain_run.PlainRun | None = None  # a launch with noDebug
        self.view: StopView | None = None
        self.configured = anyio.Event()
        self.launched = anyio.Event()
        self.terminated = False
        self.closing = anyio.Event()
        self.in_flight: dict[int, anyio.CancelScope] = {}
        self._open: set[int] = set()  # requests not answered yet
        self.goto_lines: dict[int, tuple[str, int]] = {}
        self.goto_moments: dict[int, int] = {}  # gotoTargets' executions of a line: target id -> event
        self.goto_ids = 0
        self.progress_counter = 0
        self._task_group: anyio.abc.TaskGroup | None = None

    @property
    def world(self) -> WorldModel | None:
        return self.debugger.world

    @property
    def stop(self) -> Stop | None:
        return self.debugger.stop

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
        launch = await self._launch_spec(args, request.arguments)
        for note in launch.notes:
            await self.output(note + "\n", "important")
        if args.no_debug:
            await self._launch_plainly(request, launch.spec)
            return
        debugger = self.debugger
        debugger.stop_on_entry, debugger.stop_at_end = args.stop_on_entry, args.stop_at_end
        progress = await self._progress_start(f"Starting the {launch.spec.world} world model")
        try:
            await debugger.start(launch.spec, self._task_group)
        finally:
            await self._progress_end(progress)
        await self.respond(request)
        await self.event(
            "process", p.ProcessEventBody(name=_process_name(launch.spec), start_method="launch", is_local_process=True)
        )
        await self.event("thread", p.ThreadEventBody(reason="started", thread_id=THREAD_ID))
        await self._after_launch_breakpoints()
        self.launched.set()
        assert self._task_group is not None
        self._task_group.start_soon(self._first_stop)

    async def _launch_spec(self, args: p.LaunchArguments, request_arguments: Any) -> Launch:
        entry = Entry(args.entry.function, args.entry.args, args.entry.returns) if args.entry else None
        options = {k: v for k, v in (request_arguments or {}).items() if k not in p.LAUNCH_KEYS}
        wanted = LaunchRequest(
            program=args.program,
            module=args.module,
            args=tuple(args.args),
            cwd=args.cwd,
            env=dict(args.env),
            env_file=args.env_file,
            entry=entry,
            world=args.world,
            python=args.python,
            python_args=tuple(args.python_args),
            stdin=args.stdin,
            options=options,
        )
        try:  # a module launch asks the interpreter where the module is: off the event loop
            return await anyio.to_thread.run_sync(build_launch, wanted)
        except LaunchError as exc:
            raise RequestError(str(exc)) from None

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
            module=launch.module,
            python_args=list(launch.python_args),
        )
        self.plain = plain_run.PlainRun(argv, launch.cwd, launch.env, launch.stdin)
        await self.respond(request)
        await self.event(
            "process", p.ProcessEventBody(name=_process_name(launch), start_method="launch", is_local_process=True)
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
        report = await self.debugger.first_stop()
        if report.failure is not None:
            await self._flush(report.output)
            await self.output(f"neural-dap: {report.failure}\n", "important")
            report.reason, report.description = "entry", report.failure
        elif report.reason == "pause":
            report.reason = "entry"
        await self._conclude(report)

    async def on_disconnect(self, request: p.Request) -> None:
        await self._shutdown()
        await self.respond(request)
        self.closing.set()

    async def on_terminate(self, request: p.Request) -> None:
        await self.respond(request)
        if self.plain is not None:
            self.plain.kill()
        await self._finish()

    async def _shutdown(self) -> None:
        if self.plain is not None:
            self.plain.kill()
        await self.debugger.close()

    # -- breakpoints ---------------------------------------------------------------------------------
    def _source_text(self, path: str) -> str | None:
        return self.debugger.source(path) or read_source(path)

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
        specs = self.debugger.breakpoints.set_lines(path, requested, self._source_text(path))
        self.debugger.check_ran(specs)
        await self.respond(request, {"breakpoints": [_breakpoint(s) for s in specs]})

    async def on_set_function_breakpoints(self, request: p.Request) -> None:
        args = self._args(request, p.SetFunctionBreakpointsArguments)
        specs = self.debugger.breakpoints.set_functions(args.breakpoints, self._known_sources())
        await self.respond(request, {"breakpoints": [_breakpoint(s) for s in specs]})

    def _known_sources(self) -> dict[str, str]:
        paths = set(self.debugger.breakpoints.by_path)
        if self.debugger.launch is not None:
            paths.add(self.debugger.launch.program)
        out = {}
        for path in sorted(paths):
            text = self._source_text(path)
            if text is not None:
                out[path] = text
        return out

    async def _after_launch_breakpoints(self) -> None:
        table = self.debugger.breakpoints
        changed = table.reverify(self._source_text)
        lines = [spec for specs in table.by_path.values() for spec in specs]
        changed += [spec for spec in self.debugger.check_ran(lines) if spec not in changed]
        if table.functions:
            changed += table.reresolve_functions(self._known_sources())
        for spec in changed:
            await self.event("breakpoint", {"reason": "changed", "breakpoint": _breakpoint(spec)})

    async def on_set_exception_breakpoints(self, request: p.Request) -> None:
        args = self._args(request, p.SetExceptionBreakpointsArguments)
        known = {f.filter for f in EXCEPTION_FILTERS}
        unknown = [f for f in args.filters if f not in known]
        self.debugger.exception_filters = frozenset(f for f in args.filters if f in known)
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
        stack = view.stop.stack
        depth = next((k for k, f in enumerate(stack) if f.invocation == frame.invocation), None)
        if args.context == "hover" and not is_plain_reference(args.expression):
            depth = None  # a hover only reads: what the mouse rests on never runs a call in the program
        try:
            result = await self.debugger.evaluate(args.expression, frame.variable_reprs(), depth)
        except WorldError as exc:
            raise RequestError(str(exc)) from None
        value = result.value if not result.live else reprs.parse_repr(result.text)  # expandable where it parses
        await self.respond(
            request,
            {
                "result": result.text,
                "type": result.type,
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
        await self.respond(request, exception_info(stop, self.debugger.exception_filters))

    async def on_goto_targets(self, request: p.Request) -> None:
        args = self._args(request, p.GotoTargetsArguments)
        path = os.path.abspath(args.source.path or "")
        text = self._source_text(path)
        if text is None or args.line not in SourceInfo(text, path).executable_lines:
            await self.respond(request, {"targets": []})
            return
        self.goto_ids += 1
        target_id = self.goto_ids
        self.goto_lines[target_id] = (path, args.line)
        targets = [p.GotoTarget(id=target_id, label=f"line {args.line}", line=args.line)]
        if self.debugger.exact and self.stop is not None:
            # in a recording, each execution of the line is a moment to travel to
            try:
                page = await history.line_executions(self.debugger, path, args.line, count=100)
            except WorldError:
                page = None
            for moment, hit, detail in page.items if page is not None else []:
                self.goto_ids += 1
                self.goto_moments[self.goto_ids] = moment.index
                label = f"line {args.line}, hit {hit}" + (f" ({detail})" if detail else "")
                targets.append(p.GotoTarget(id=self.goto_ids, label=label, line=args.line))
        await self.respond(request, {"targets": targets})

    # -- execution ----------------------------------------------------------------------------------
    async def on_next(self, request: p.Request) -> None:
        await self._execute(request, "next")

    async def on_step_in(self, request: p.Request) -> None:
        await self._execute(request, "stepIn")

    async def on_step_out(self, request: p.Request) -> None:
        await self._execute(request, "stepOut")

    async def on_continue(self, request: p.Request) -> None:
        await self._execute(request, "continue", body={"allThreadsContinued": True})

    async def on_step_back(self, request: p.Request) -> None:
        await self._execute(request, "stepBack")

    async def on_reverse_continue(self, request: p.Request) -> None:
        await self._execute(request, "reverseContinue")

    async def on_step_back_into(self, request: p.Request) -> None:
        await self._execute(request, "stepBackInto")

    async def on_step_back_out(self, request: p.Request) -> None:
        await self._execute(request, "stepBackOut")

    async def on_restart_frame(self, request: p.Request) -> None:
        args = self._args(request, p.RestartFrameArguments)
        frame = self._require_view().frame(args.frame_id)
        if frame is None:
            raise RequestError(f"no frame {args.frame_id} at this stop")
        await self._execute(request, "restartFrame", invocation=frame.invocation)

    async def on_goto(self, request: p.Request) -> None:
        args = self._args(request, p.GotoArguments)
        if args.target_id in self.goto_moments:
            await self._execute(request, "goto", run=lambda: self.debugger.travel(self.goto_moments[args.target_id]))
            return
        target = self.goto_lines.get(args.target_id)
        if target is None:
            raise RequestError(f"unknown goto target {args.target_id}")
        await self._execute(request, "goto", path=target[0], line=target[1])

    async def on_pause(self, request: p.Request) -> None:
        await self.respond(request)
        self.debugger.pause()

    async def on_cancel(self, request: p.Request) -> None:
        args = self._args(request, p.CancelArguments)
        await self.respond(request)
        if args.request_id is not None and args.request_id in self.in_flight:
            self.in_flight[args.request_id].cancel()

    async def _execute(
        self,
        request: p.Request,
        kind: str,
        body: Any = None,
        run: Callable[[], Awaitable[Report]] | None = None,
        **extra: Any,
    ) -> None:
        """Run one execution request. An exact world answers at once and then stops; a predicted one
        answers when its prediction is in, so a failed prediction is an error response to the
        request itself (which every client shows) and the session stays at its last stop."""
        if self.world is None or not self.launched.is_set():
            raise RequestError("no program has been launched")
        if self.terminated:
            raise RequestError("the program has ended")
        if self.debugger.busy:
            raise RequestError("the program is already running; pause it first")
        answer_first = self.debugger.exact
        if answer_first:
            await self.respond(request, body)
        progress = None if answer_first else await self._progress_start(kind)
        try:
            report = await (run() if run is not None else self.debugger.execute(kind, **extra))
        except Busy as exc:
            raise RequestError(str(exc)) from None
        except UnknownExecution as exc:
            raise RequestError(str(exc)) from None
        finally:
            await self._progress_end(progress)
        if report.failure is not None and not answer_first and not report.moved:
            await self._flush(report.output)  # nothing moved: the request fails; the client stays put
            await self.fail(request.seq, request.command, f"{kind} failed: {report.failure}")
            return
        if not answer_first:
            await self.respond(request, body)
        if report.failure is not None:  # answered already, or part of the step was taken
            await self._flush(report.output)
            report.output = [("important", f"neural-dap: {kind} failed: {report.failure}\n")]
            report.description = f"{kind} failed: {report.failure}"
        await self._conclude(report)

    async def _conclude(self, report: Report) -> None:
        await self._flush(report.output)
        if report.finished:
            await self._finish()
            return
        if not self.terminated:
            await self._present(report)

    async def _flush(self, output: list[tuple[str, str]]) -> None:
        for category, text in output:
            await self.output(text, category)

    async def _present(self, report: Report) -> None:
        stop = report.stop
        self.view = StopView(stop, stop.divergences)
        await self.event(
            "stopped",
            p.StoppedEventBody(
                reason=report.reason,
                thread_id=THREAD_ID,
                all_threads_stopped=True,
                description=report.description,
                text=report.text,
                hit_breakpoint_ids=report.hit_breakpoint_ids,
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

    async def _finish(self) -> None:
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
        await self.respond(request, self.debugger.summary())

    # -- data breakpoints and questions about the whole recorded run (debugger/history.py) ------------
    def _frame_depth(self, frame_id: int | None) -> int:
        """The stack index (0: innermost) of a DAP frame id at the current stop."""
        view = self._require_view()
        frame = view.frame(frame_id)
        if frame is None:
            raise RequestError(f"no frame {frame_id} at this stop")
        return next((k for k, f in enumerate(view.stop.stack) if f.invocation == frame.invocation), 0)

    async def on_data_breakpoint_info(self, request: p.Request) -> None:
        args = self._args(request, p.DataBreakpointInfoArguments)
        view = self._require_view()
        expression, frame_id = args.name, args.frame_id
        node = view.handles.get(args.variables_reference) if args.variables_reference else None
        if node is not None and node.kind in ("locals", "globals"):
            frame_id = node.target.id  # type: ignore[attr-defined]
        elif node is not None:  # an attribute or item of an expanded value: its evaluateName
            child = next(
                (v for v in view.variables(args.variables_reference or 0) if v.name == args.name and v.evaluate_name),
                None,
            )
            expression = child.evaluate_name if child is not None and child.evaluate_name else args.name
        data_id, description = self.debugger.data_breakpoint_info(expression, self._frame_depth(frame_id))
        body: dict[str, Any] = {"dataId": data_id, "description": description}
        if data_id is not None:
            body.update({"accessTypes": ["write"], "canPersist": False})
        await self.respond(request, body)

    async def on_set_data_breakpoints(self, request: p.Request) -> None:
        args = self._args(request, p.SetDataBreakpointsArguments)
        refused: dict[int, str] = {}
        wanted = []
        for k, bp in enumerate(args.breakpoints):
            if bp.access_type not in (None, "write"):
                refused[k] = (
                    f"only writes can be watched: a recording keeps values, not the reads of them ({bp.access_type})"
                )
            else:
                wanted.append((k, bp.data_id))
        results = self.debugger.set_data_breakpoints([data_id for _, data_id in wanted])
        by_index = dict(zip((k for k, _ in wanted), results, strict=True))
        out = []
        for k in range(len(args.breakpoints)):
            result = by_index.get(k, refused.get(k, ""))
            if isinstance(result, str):
                out.append(p.Breakpoint(verified=False, message=result, reason="failed"))
            else:
                message = f"{result.expression} in {result.function}"
                out.append(p.Breakpoint(verified=True, id=result.id, message=message))
        await self.respond(request, {"breakpoints": out})

    async def on_value_history(self, request: p.Request) -> None:
        args = self._args(request, p.ValueHistoryArguments)
        depth = self._frame_depth(args.frame_id)
        page = await history.value_history(
            self.debugger, args.expression, frame=depth, start=args.start, count=args.count
        )
        await self.respond(request, _camel(page))

    async def on_last_change(self, request: p.Request) -> None:
        """Custom: where the frame's invocation last changed the expression (who set this); null: never."""
        args = self._args(request, p.LastChangeArguments)
        depth = self._frame_depth(args.frame_id)
        change = await history.last_change(self.debugger, args.expression, frame=depth, before=args.before)
        await self.respond(request, {"change": _camel(change) if change is not None else None})

    async def on_calls(self, request: p.Request) -> None:
        args = self._args(request, p.CallsArguments)
        page = await history.calls(self.debugger, args.function, start=args.start, count=args.count)
        await self.respond(request, _camel(page))

    async def on_logpoint_history(self, request: p.Request) -> None:
        args = self._args(request, p.LogpointHistoryArguments)
        if not args.source.path:
            raise RequestError("logpointHistory needs source.path")
        page = await history.logpoint(
            self.debugger,
            os.path.abspath(args.source.path),
            args.line,
            args.log_message,
            start=args.start,
            count=args.count,
        )
        await self.respond(request, _camel(page))

    async def on_travel(self, request: p.Request) -> None:
        args = self._args(request, p.TravelArguments)
        last = history.queries_of(self.debugger).semantics.last  # refused at once where there is no recording
        if not 0 <= args.index <= last:
            raise RequestError(f"there is no event {args.index}: the run has events 0 to {last}")
        await self._execute(request, "travel", run=lambda: history.travel(self.debugger, args.index))


def _camel(value: Any) -> Any:
    """A history answer as DAP bodies spell keys (camelCase)."""
    data = msgspec.to_builtins(value)

    def convert(item: Any) -> Any:
        if isinstance(item, dict):
            return {
                re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): v if k == "arguments" else convert(v)
                for k, v in item.items()
            }
        if isinstance(item, list):
            return [convert(v) for v in item]
        return item

    return convert(data)


def _breakpoint(spec: BreakpointSpec) -> p.Breakpoint:
    return p.Breakpoint(
        verified=spec.verified,
        id=spec.id,
        message=spec.message,
        source=p.Source(name=os.path.basename(spec.path), path=spec.path) if spec.kind == "line" else None,
        line=spec.shown_line,
        reason=None if spec.verified else "failed",
    )


def _process_name(launch: LaunchSpec) -> str:
    return f"python -m {launch.module}" if launch.module else launch.program


def exception_info(stop: Stop, filters: frozenset[str]) -> dict[str, Any]:
    """DAP's exceptionInfo as debugpy answers it: the type (short and qualified), the message, how
    the stop was made (`unhandled`: the exception ends the program; `userUnhandled`: it leaves the
    user's code, whose frame has no traced caller; `always`: the `raised` filter) and the stack the
    exception is passing through, innermost call last as Python prints it."""
    text = (stop.state.value if stop.state.event == "exception" else stop.state.caught) or ""
    name = re.match(r"[\w.]+", text)
    full_type = name.group(0) if name else "Exception"
    type_name = full_type.rsplit(".", 1)[-1]
    message = text[len(full_type) :].lstrip(":( ").rstrip(")") if text.startswith(full_type) else text
    exit_ = stop.exit
    # at the end, the exception ends the program unless the program went on to end otherwise (pytest
    # catching its last test's failure and exiting with its own code)
    ends = stop.at_end and (
        exit_ is None or exit_.description.startswith("uncaught") or full_type in ("SystemExit", "builtins.SystemExit")
    )
    if ends:
        mode = "unhandled"
    elif "userUnhandled" in filters and stop.state.event == "exception" and len(stop.stack) == 1:
        mode = "userUnhandled"  # it leaves the user's code: its frame has no traced caller
    else:
        mode = "always" if "raised" in filters else "unhandled"
    frames = [
        traceback.FrameSummary(frame.path, frame.line, frame.function, line=_line_of(frame.path, frame.line))
        for frame in reversed(stop.stack)
    ]
    trace = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
    return {
        "exceptionId": full_type,
        "description": text,
        "breakMode": mode,
        "details": p.ExceptionDetails(
            message=message or text,
            type_name=type_name,
            full_type_name=full_type,
            stack_trace=trace + f"{text}\n",
        ),
    }


def _line_of(path: str, line: int) -> str:
    text = read_source(path)
    if text is None:
        return ""
    lines = text.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _is_command(command: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", command or ""))


def _snake(command: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", command).lower()
