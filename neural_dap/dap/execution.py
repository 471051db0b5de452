"""Execution requests: each becomes one `Debugger.execute` and its `Report` becomes DAP events.
An exact world answers at once and then stops; a predicted one answers when its prediction is in,
so a failed prediction is an error response to the request itself."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from neural_dap.core.world import WorldError
from neural_dap.dap.connection import THREAD_ID, Connection, RequestError
from neural_dap.dap.inspection import exception_info
from neural_dap.dap.presentation import StopView
from neural_dap.dapwire import protocol as p
from neural_dap.debugger.core import Busy, Report
from neural_dap.debugger.stepping import UnknownExecution

# execution requests a client knows to be a resume (it clears the stop it shows): DAP's own
CLIENT_KNOWN = frozenset({"next", "stepIn", "stepOut", "continue", "stepBack", "reverseContinue", "restartFrame"})


class ExecutionRequests(Connection):
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
        if args.progress_id is not None and args.progress_id in self.progress_open:
            # the Cancel of a progress (VS Code's notification): a recording, or a predicted step, is
            # what the progress shows, and pause is what interrupts it. While the launch records, VS
            # Code's own Pause is disabled (the session is still starting): this is the way to end
            # the recording where the program waits, e.g. for input() in the terminal
            self.debugger.pause()

    async def _first_stop(self) -> None:
        """After configurationDone: stop on entry, or run to the first breakpoint. No request is open
        here, so a failure is told as an `important` output and the session stops at the entry."""
        await self.configured.wait()
        try:
            report = await self.debugger.first_stop()
            if report.failure is not None:
                await self._flush(report.output)
                await self.output(f"neural-dap: {report.failure}\n", "important")
                report.reason, report.description = "entry", report.failure
            elif report.reason == "pause" and report.stop.at_start:
                report.reason = "entry"  # (a recording paused before it was opened: it opens at its start)
            await self._conclude(report, preserve_focus=await self._first_stop_yields_focus(report))
        except WorldError:
            if not self.disconnecting:
                raise
            # the client disconnected while the program ran to its first stop: the world is closed
            # under it, and nothing is left to show (the adapter once died here with a traceback)

    async def _first_stop_yields_focus(self, report: Report) -> bool:
        """Whether the first stop should leave the editor's focus to another session (a child's)."""
        return False

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
        if kind not in CLIENT_KNOWN and report.moved and not self.terminated:
            # a custom request (stepBackInto/Out, travel, a goto to a moment): the client does not know
            # it ran the program, so it would keep showing the old stop's reason without this
            await self.event(
                "continued", p.ContinuedEventBody(thread_id=self.debugger.thread_id(), all_threads_continued=True)
            )
        await self._conclude(report)

    async def _conclude(self, report: Report, preserve_focus: bool = False) -> None:
        await self._flush(report.output)
        if report.finished:
            await self._finish()
            return
        if not self.terminated:
            await self._present(report, preserve_focus)

    async def _flush(self, output: list[tuple[str, str]]) -> None:
        for category, text in output:
            await self.output(text, category)

    async def _present(self, report: Report, preserve_focus: bool = False) -> None:
        stop = report.stop
        self.view = StopView(stop, stop.divergences, live=self.debugger.shows_live(stop))
        await self._announce_threads()
        description, text = report.description, report.text
        if report.reason == "exception" and (stop.state.event == "exception" or stop.state.caught):
            # as debugpy words it: the exception's type, and its message
            info = exception_info(stop, self.debugger.exception_filters)
            description, text = info["details"].message, info["exceptionId"]
        await self.event(
            "stopped",
            p.StoppedEventBody(
                reason=report.reason,
                thread_id=self.debugger.thread_id(),
                all_threads_stopped=True,
                description=description,
                text=text,
                hit_breakpoint_ids=report.hit_breakpoint_ids,
                preserve_focus_hint=True if preserve_focus else None,
            ),
        )
        if stop.divergences:
            await self.event(
                "invalidated", p.InvalidatedEventBody(areas=["variables"], thread_id=self.debugger.thread_id())
            )
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

    async def _announce_threads(self) -> None:
        """`thread` events for the threads that started or ended on the way to this stop (in a
        recording, going backwards un-starts them: they are announced as exited, and again later)."""
        alive = {t.id for t in self.debugger.threads()} | {THREAD_ID}
        for thread_id in sorted(alive - self.threads_shown):
            await self.event("thread", p.ThreadEventBody(reason="started", thread_id=thread_id))
        for thread_id in sorted(self.threads_shown - alive):
            await self.event("thread", p.ThreadEventBody(reason="exited", thread_id=thread_id))
        self.threads_shown = alive

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
