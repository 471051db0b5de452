"""One DAP session: the connection with every group of requests, and the set-up requests
(initialize, launch, configurationDone, disconnect, terminate).

The session translates; the `Debugger` (neural_dap/debugger) owns the world, the current stop, the
breakpoints and why each stop is made, and the session never imports a world implementation (it
gets a factory). How DAP requests map to actions, so that stops land where debugpy's do, is the
stepping policy's docstring (debugger/stepping.py).
"""

from __future__ import annotations

from typing import Any

import anyio

from neural_dap.core.world import Entry, LaunchSpec
from neural_dap.dap import plain_run
from neural_dap.dap.branch_requests import BranchRequests
from neural_dap.dap.breakpoint_requests import EXCEPTION_FILTERS, BreakpointRequests
from neural_dap.dap.child_sessions import ChildSessions
from neural_dap.dap.connection import THREAD_ID, RequestError, Send, WorldFactory
from neural_dap.dap.inspection import InspectionRequests, exception_info
from neural_dap.dap.queries import QueryRequests
from neural_dap.dap.terminal import TerminalConsole
from neural_dap.dapwire import protocol as p
from neural_dap.debugger.launch import Launch, LaunchError, LaunchRequest, build_launch

__all__ = ["EXCEPTION_FILTERS", "THREAD_ID", "DebugSession", "RequestError", "Send", "WorldFactory", "exception_info"]


class DebugSession(
    ChildSessions, TerminalConsole, QueryRequests, BranchRequests, InspectionRequests, BreakpointRequests
):
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
        spec = await self.open_console(launch.spec, args, runs_program=args.no_debug or _records(launch.spec))
        if args.no_debug:
            await self._launch_plainly(request, spec)
            return
        debugger = self.debugger
        debugger.stop_on_entry, debugger.stop_at_end = args.stop_on_entry, args.stop_at_end
        progress = await self._progress_start(f"Starting the {launch.spec.world} world model")
        try:
            await debugger.start(spec, self._task_group)
        finally:
            await self._progress_end(progress)
            await self.console_ended()  # the recording is over: nothing more is typed or shown live
        await self.respond(request)
        await self.event(
            "process", p.ProcessEventBody(name=_process_name(launch.spec), start_method="launch", is_local_process=True)
        )
        await self.event("thread", p.ThreadEventBody(reason="started", thread_id=THREAD_ID))
        await self._after_launch_breakpoints()
        self.launched.set()
        assert self._task_group is not None
        self._task_group.start_soon(self._first_stop)
        self._task_group.start_soon(self._offer_children, dict(request.arguments or {}), launch.spec.program)

    async def _offer_children(self, arguments: dict[str, Any], program: str) -> None:
        await self.configured.wait()
        await self.offer_child_sessions(arguments, program)

    async def _launch_spec(self, args: p.LaunchArguments, request_arguments: Any) -> Launch:
        entry = Entry(args.entry.function, args.entry.args, args.entry.returns) if args.entry else None
        options = {k: v for k, v in (request_arguments or {}).items() if k not in p.LAUNCH_KEYS}
        if args.world == "recorded":
            options.setdefault("live", True)  # debug while it runs (world/live.py), unless asked not to
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
            code = await run.run(self.program_output)
        except OSError as exc:
            await self.output(f"neural-dap: cannot run the program: {exc}\n", "important")
            code = 1
        await self.console_ended()
        if not self.terminated:
            self.terminated = True
            await self.event("exited", p.ExitedEventBody(exit_code=code))
            await self.event("terminated")

    async def on_configuration_done(self, request: p.Request) -> None:
        await self.respond(request)
        if self.plain is None:
            # the program runs to its first stop. VS Code's Restart reuses the session, which shows
            # the first stop since the last resume: without this, the old session's last stop
            # ("End of the program") stays in the Call Stack over the new one.
            await self.event("continued", p.ContinuedEventBody(thread_id=THREAD_ID, all_threads_continued=True))
        self.configured.set()

    async def on_disconnect(self, request: p.Request) -> None:
        self.disconnecting = True
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
        await self.close_console()


def _records(launch: LaunchSpec) -> bool:
    """The launch runs the real program (a recorded world, or a neural one reconciled with a recording)."""
    return launch.world == "recorded" or launch.options.get("reconcile") == "recorded"


def _process_name(launch: LaunchSpec) -> str:
    return f"python -m {launch.module}" if launch.module else launch.program
