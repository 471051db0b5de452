"""The recorded world model: one real execution, recorded once, navigated exactly in both directions."""

from __future__ import annotations

import os
import shutil
from typing import Any, Literal

import anyio
import msgspec

from neural_dap.core.actions import Action, Target
from neural_dap.core.source import read_source
from neural_dap.core.state import Frame
from neural_dap.core.world import (
    Accept,
    Capabilities,
    Check,
    CheckResult,
    ChildSession,
    ExceptionFilter,
    Exit,
    HitFilter,
    LaunchSpec,
    LiveChild,
    LiveResult,
    LiveRoot,
    NotLive,
    Stop,
    Thread,
    WorldError,
    accepted,
    world_options,
)
from neural_dap.trace import threaded
from neural_dap.trace.actions import EXCEPTION, ActionSemantics
from neural_dap.trace.children import ChildProcess, ChildRecordingError, list_children, new_children_folder, open_child
from neural_dap.trace.execution import Execution, FullExecution, SkeletonExecution, enclosing_frames
from neural_dap.trace.journal import JournalUnavailable
from neural_dap.trace.journal import library as journal_library
from neural_dap.trace.live import LiveError, LiveStop
from neural_dap.trace.program import run_again
from neural_dap.trace.queries import RecordingQueries
from neural_dap.trace.recorder import (
    Limits,
    Outcome,
    Program,
    RecorderError,
    Recording,
    RecordingHandle,
    module_file,
    record_async,
    record_skeleton,
)
from neural_dap.trace.skeleton import DivergenceError, SkeletonRecording
from neural_dap.world.branches import WhatIf
from neural_dap.world.live import LiveRun, awaiting_resume, decided_at_frontier, run_request, threaded_request

LIMIT_KEYS = {
    "maxEvents": "max_events",
    "wallTime": "wall_time",
    "maxRepr": "max_repr",
    "maxOutput": "max_output",
    "memoryMb": "memory_mb",
    "maxProcesses": "max_processes",
}
# What a launch may ask for: a launch comes from a client, and a recording must stay bounded.
LIMIT_RANGES: dict[str, tuple[float, float]] = {
    "maxEvents": (1, 200_000_000),
    "wallTime": (0.1, 3600),
    "maxRepr": (16, 100_000),
    "maxOutput": (0, 100_000_000),
    "memoryMb": (64, 65_536),
    "maxProcesses": (0, 64),
}


# A debug session's defaults: a skeleton recording takes millions of events (12 bytes each, states
# materialised on demand); full capture keeps every state in memory, so it stops much sooner.
SESSION_LIMITS = {
    "skeleton": Limits(max_events=50_000_000, wall_time=60.0),
    "full": Limits(max_events=2_000_000, wall_time=60.0),
}


class RecordedOptions(msgspec.Struct, frozen=True, rename="camel"):
    """The recorded world's launch keys (the reconciled world's recorded reality takes them too)."""

    limits: Any = None  # {"maxEvents": ..., ...}: checked key by key against LIMIT_RANGES
    recording: Literal["auto", "full", "skeleton"] = "auto"
    # debugpy's rule: true traces every file that is not the standard library's or an installed
    # package's (a sibling package of the user's included); false traces those too
    just_my_code: bool = True
    # debugpy's key: the Python programs it starts record themselves, each offered as a child session
    sub_process: bool = False
    child_recording: str | None = None  # a child session: the child process's recording (trace/children.py)
    # the program's changes to the world are refused (but for files under its own TMPDIR): a run
    # the user did not ask for (the language server's), or one that must not happen twice (a
    # failing test run again by `pytest --neural-dap`)
    sandbox: bool = False
    # debug while it runs (world/live.py): the launch answers at once and the program stops where
    # it is asked to; false: record it to its end, then debug (batch use: the language server, an
    # agent's `record`). A DAP session's launch says true unless the user said otherwise
    live: bool = False
    # from a second thread on: "skeletons" records every thread as skeleton records (1.5 to 1.7
    # times the no-op tracer's floor: docs/benchmarks.md): a live stop's own event is captured as
    # it happens, and the other
    # moments' values are rebuilt by replaying the threads in the recorded order of runs and lock
    # takes, each thread's reads answered from the journal, which some programs do not follow (a
    # cache whichever thread looks first fills; docs/time-travel.md): the values there are then
    # refused as a divergence, with the reason. "full" records every thread's every state (exact,
    # at 30-60 times a plain run's time). Unsaid: "skeletons" where the session runs live (a server,
    # a long job: each stop's own state is the program's, held there), "full" where the program is
    # recorded to its end first (every value there is the recording's)
    threads: Literal["full", "skeletons"] | None = None


def limits_from(given: Any, mode: str = "skeleton") -> Limits:
    given = given or {}
    if not isinstance(given, dict):
        raise WorldError('limits must be an object, e.g. {"maxEvents": 1000000}')
    unknown = set(given) - set(LIMIT_KEYS)
    if unknown:
        raise WorldError(f"unknown limits {sorted(unknown)}; known: {sorted(LIMIT_KEYS)}")
    values = {}
    for key, value in given.items():
        low, high = LIMIT_RANGES[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise WorldError(f"limit {key} must be a number from {low:g} to {high:g}, not {value!r}")
        values[LIMIT_KEYS[key]] = type(getattr(Limits(), LIMIT_KEYS[key]))(value)
    return msgspec.structs.replace(SESSION_LIMITS["full" if mode == "full" else "skeleton"], **values)


class RecordedWorld:
    """`recording` (launch key): "auto" (default) records the skeleton and materialises states on
    demand, so programs of millions of events can be debugged; "full" records every state (what a
    short run or a dataset wants); "skeleton" forces the first. Both give the same states and stops."""

    name = "recorded"
    capabilities = Capabilities(exact=True, inverse=True)

    def __init__(self, comprehension_frames: bool = True, as_debugpy: bool = True) -> None:
        # 3.11's comprehension frames, as debugpy steps into them (a reality for the nd dialect,
        # whose model never writes them, is recorded without)
        self.comprehension_frames = comprehension_frames
        # a one-line loop's rounds as debugpy stops at them (a reality for a model: as its traces)
        self.as_debugpy = as_debugpy
        self.execution: Execution | None = None
        self.index = 0
        self.mode = "auto"
        self.record_seconds = 0.0
        self.outcome: Outcome | None = None
        self.engine = ""
        self.python = ""
        self.program = ""
        self.just_my_code = True
        self._recording: RecordingHandle | None = None  # while the program is being recorded
        self._live: LiveStop | None = None  # the live copy of the program at the stop expressions asked about
        self._queries: RecordingQueries | None = None
        self.what_if = WhatIf(self)  # what-if branches: the program run again with a value changed
        self._children: str | None = None  # subProcess: where the program's Python children record themselves
        self.notices: list[str] = []  # what the user should read about how the program was recorded
        self.threads_joined = False  # a second thread ran: every thread recorded in full, no copies
        self._running: LiveRun | None = None  # the program still runs (debug while it runs: world/live.py)
        # ... and ran a second thread: the recording so far joined into one full recording at its
        # latest stop, and the index (in the whole run) of that recording's event 0
        self._joined: FullExecution | None = None
        self._joiner: threaded.Joiner | None = None  # (it joins only what came since the last stop)
        self._held: tuple[int, str] | None = None  # (event, socket) of the copy of the program held there
        self._base = 0
        self._extending = False  # ... and runs on now (an action waits for its next stop)
        self._targets_set: tuple[Target, ...] | None = None  # breakpoints the user set meanwhile
        self._live_lock = anyio.Lock()  # the live copy answers one question at a time

    async def start(self, launch: LaunchSpec) -> Stop:
        if launch.entry is not None and launch.entry.returns is not None:
            raise WorldError("starting from a return value needs a model: use world 'neural'")
        program = Program(
            path=launch.program,
            source=launch.source,
            argv=launch.args,
            entry=launch.entry.function if launch.entry else None,
            entry_args=(launch.entry.args or "") if launch.entry else "",
            cwd=launch.cwd,
            env=launch.env,
            module=launch.module,
            python_args=launch.python_args,
            stdin=launch.stdin,
            stdin_log=launch.stdin_log,
            output_copy=launch.output_copy,
            comprehensions=self.comprehension_frames,
            as_debugpy=self.as_debugpy,
        )
        options = world_options(launch, RecordedOptions, "recorded")
        if options.child_recording is not None:
            return await self._open_child(options.child_recording, options.just_my_code)
        if options.sub_process:
            self._children = new_children_folder()
        program = msgspec.structs.replace(
            program, trace="mine" if options.just_my_code else "all", children=self._children, sandbox=options.sandbox
        )
        self.just_my_code = options.just_my_code
        mode = self.mode = options.recording
        limits = limits_from(options.limits, mode)
        python = launch.python
        self.what_if.remember(run_again(program), limits, python)
        try:
            rec: Recording | SkeletonRecording
            if mode == "full":
                rec = await record_async(program, limits, python=python)
                execution: Execution = FullExecution(rec)
                self.engine, self.python = rec.engine, rec.python
            else:
                handle = self._recording = RecordingHandle()
                try:
                    # (child sessions and a terminal console are opened on a whole recording: batch)
                    runs_live = not (options.sub_process or program.stdin_log or program.output_copy)
                    runs_live = options.live and runs_live and journal_library() is not None
                    as_skeletons = options.threads == "skeletons" if options.threads is not None else runs_live
                    if runs_live:
                        explicit = isinstance(options.limits, dict) and "wallTime" in options.limits
                        opened = await self._start_live(program, limits, python, handle, explicit, as_skeletons)
                        if isinstance(opened, Stop):
                            return opened
                        skeleton = opened
                    else:
                        skeleton = await anyio.to_thread.run_sync(
                            lambda: record_skeleton(
                                program, limits, python=python, recording=handle, thread_skeletons=as_skeletons
                            )
                        )
                except JournalUnavailable as exc:
                    self._recording = None
                    if mode == "skeleton":
                        raise WorldError(str(exc)) from None
                    # (the program has not run: the child checks before it starts) every state kept
                    # as it happens, nothing replayed
                    self.notices.append(f"{exc}; recorded in full (every state kept, at most 2M events)")
                    rec = await record_async(program, limits_from(options.limits, "full"), python=python)
                    execution = FullExecution(rec)
                    self.engine, self.python = rec.engine, rec.python
                    return await self._opened(rec, execution)
                self._recording = None
                rec = skeleton
                execution = SkeletonExecution(skeleton)
                self.engine, self.python = skeleton.log.engine, skeleton.log.python
                if skeleton.log.switched_at is not None and skeleton.log.thread_skeletons:
                    # every thread recorded as skeletons: travelled as one skeleton, whose values in
                    # the threaded stretch a replay under the threads' schedule rebuilds
                    self.notices.append(
                        f"a second thread ran the program's code at event {skeleton.log.switched_at:,}: every"
                        " thread was recorded as skeletons from there; the values shown there are rebuilt"
                        " by replaying the threads in the recorded order (the program ran once)"
                    )
                elif skeleton.log.switched_at is not None:
                    # a second thread ran the program's code: from there every thread was recorded
                    # in full, in the same run; the states before are rebuilt from the checkpoints
                    try:
                        joined, switched = await anyio.to_thread.run_sync(lambda: threaded.join(skeleton))
                    except DivergenceError as exc:
                        execution.close()
                        raise WorldError(f"the recording's first part could not be rebuilt: {exc}") from None
                    execution.close()
                    rec, execution = joined, FullExecution(joined)
                    self.threads_joined = True
                    threaded_events = skeleton.log.threaded
                    if threaded_events.dropped:
                        self.notices.append(
                            f"a second thread ran the program's code at event {skeleton.log.switched_at:,}: every"
                            f" thread was recorded in full from there, and the recording keeps at most the latest"
                            f" {threaded_events.budget:,} of those events: it starts after the first"
                            f" {(skeleton.log.switched_at or 0) + threaded_events.dropped:,}, dropped (the frames"
                            " alive there start with their locals as they were)"
                        )
                    else:
                        self.notices.append(
                            f"a second thread ran the program's code at event {switched}: every thread was"
                            " recorded in full from there (the program ran once)"
                        )
                elif skeleton.outcome.kind == "threads":
                    # the main thread could not switch to recording every thread (it was in C code
                    # for long): the recording ends there, with what it has; it is not run again
                    self.notices.append(skeleton.outcome.message)
        except RecorderError as exc:
            raise WorldError(str(exc)) from None
        return await self._opened(rec, execution)

    async def _start_live(
        self,
        program: Program,
        limits: Limits,
        python: str | None,
        handle: RecordingHandle,
        wall_time: bool,
        thread_skeletons: bool,
    ) -> Stop | SkeletonRecording:
        """Debug while it runs (world/live.py): the program starts under the recorder and the session
        opens at its first event, at once. Where it ended before that (it could not stop there: the
        Python engines; or it ended at once) its whole recording is opened as a batch one. No
        wall-time limit applies while the session is at it, but one the launch asked for."""
        main_path = os.path.abspath(program.path)
        if program.module:
            main_path = module_file(program.module, program.cwd) or main_path
        if not wall_time:
            limits = msgspec.structs.replace(limits, wall_time=float("inf"))
        live = self._running = LiveRun.begin(
            lambda control: record_skeleton(
                program, limits, python=python, recording=handle, live=control, thread_skeletons=thread_skeletons
            )
        )
        execution = await anyio.to_thread.run_sync(live.first, program, main_path)
        if execution is not None:
            execution.keep_open = True  # (a what-if branch may leave it for a while: it runs on)
        if execution is None:
            await anyio.to_thread.run_sync(live.thread.join)
            self._running = None
            result = live.result
            if isinstance(result, BaseException):
                raise result
            assert isinstance(result, SkeletonRecording)
            return result
        log = execution.recording.log
        self.engine, self.python = log.engine, log.python
        self.what_if.keep_journal(execution.recording.journal_file)
        self.outcome = execution.recording.outcome
        self.program = os.path.basename(main_path)
        self.execution = execution
        self.index = 0
        return await self._stop(0, output=execution.output(-1, 0))

    @property
    def live(self) -> bool:
        """The program still runs (its recording grows as it goes on), and the session stands on its
        recording (not on a what-if branch made of it)."""
        running = self._running
        if running is None or not running.running:
            return False
        return self.execution is running.execution or (self._joined is not None and self.execution is self._joined)

    def breakpoints_changed(self, targets: tuple[Target, ...]) -> None:
        """While the program runs: the lines it stops at from now on."""
        if self._running is not None:
            self._running.set_breakpoints(targets)
            self._targets_set = targets

    async def breakpoints_taken(self) -> None:
        """Once the running program stops at the lines `breakpoints_changed` gave it."""
        if self._running is not None:
            await self._running.breakpoints_taken()

    async def _opened(self, rec: Recording | SkeletonRecording, execution: Execution) -> Stop:
        self.what_if.keep_journal(rec.journal_file if isinstance(rec, SkeletonRecording) else None)
        if rec.refused:
            count, first = rec.refused
            self.notices.append(
                f"the sandbox refused {count} change{'s' if count != 1 else ''} to the world"
                f" by code it ran (the first: {first})"
            )
        self.outcome = rec.outcome
        self.record_seconds = rec.seconds
        self.program = os.path.basename(rec.main_path)
        if not len(execution):
            execution.close()
            stderr = rec.stderr if isinstance(rec, Recording) else rec.fd_stderr
            detail = stderr.strip().splitlines()[-3:]
            raise WorldError(
                f"nothing was recorded: {rec.outcome.describe()}" + (f" ({' / '.join(detail)})" if detail else "")
            )
        self.execution = execution
        self.index = 0
        stop = await self._stop(0, output=execution.output(-1, 0))
        if self.notices:
            stop = msgspec.structs.replace(stop, note="neural-dap: " + "; ".join(self.notices))
        return stop

    def stand_on(self, execution: Execution, outcome: Outcome | None) -> tuple[Execution, Outcome | None] | None:
        """Stand on another recording of the program (a what-if branch, world/branches.py); returns
        the one left, for its branch to come back to. The caller travels to an event of it next."""
        left = (self.execution, self.outcome) if self.execution is not None else None
        if self._live is not None:
            self._live.close()
            self._live = None
        self.execution, self.outcome = execution, outcome
        return left

    def _require(self) -> Execution:
        if self.execution is None:
            raise WorldError("the program has not been launched")
        return self.execution

    @property
    def queries(self) -> RecordingQueries:
        """Questions about the whole recorded run (where lines ran, locals changed, calls were made)."""
        execution = self._require()
        if self._queries is None or self._queries.execution is not execution:
            self._queries = RecordingQueries(execution)
        return self._queries

    def hit_number(self, stop: Stop) -> int | None:
        """How many times the stop's (path, line) has run in the recorded run up to and including
        this stop's event (1 the first time): a fact of the run, the same whichever way the user
        walked to the stop, so a hit condition ("3", ">=5", "%2") means the same forward and in
        reverse. None where the stop is not at a line event (a call, a return)."""
        return self._require().semantics.hit_number(stop.index)

    async def act(
        self,
        action: Action,
        *,
        exceptions: frozenset[ExceptionFilter] = frozenset(),
        breakpoints: tuple[Target, ...] = (),
        accept: Accept | None = None,
        hits: HitFilter | None = None,
    ) -> Stop:
        start = self.index
        seen = start  # breakpoint hits up to here were put to `accept` already
        # the breakpoints set while the program runs on are this action's too (the program stops at
        # them, and the stop must be recognised as theirs, not run past with the lines it began with)
        follows_table = bool(breakpoints) or action.kind == "continue"
        self._targets_set = None
        while True:
            if follows_table and self._targets_set is not None:
                breakpoints = self._targets_set
            stop = await self._act_recorded(action, start, seen, exceptions, breakpoints, accept, hits)
            live = self._running
            if live is None or not self.live or action.inverse:
                return stop
            execution = self._require()
            frontier = execution.last
            wants_exceptions = bool(exceptions - {"uncaught"})
            request: dict | None
            if isinstance(execution, FullExecution) or (
                isinstance(execution, SkeletonExecution) and _threads_as_skeletons(execution)
            ):
                # every thread recorded (in full, or as skeletons) since a second one ran
                request = None
                if not (stop.hit_breakpoint or stop.hit_exception):
                    request = threaded_request(
                        execution, start, action, stop.index, breakpoints, wants_exceptions, hits
                    )
                if request is None:
                    return stop
            elif not isinstance(execution, SkeletonExecution):
                return stop
            elif stop.hit_exception and stop.index == frontier and _leaves_the_traced_code(execution, frontier):
                # an exception leaves the user's code here: whether it ends the program ("uncaught")
                # or library code catches it ("userUnhandled") shows at the next event
                request = {"at": frontier + 1}
            elif stop.index == frontier and stop.called_by_library and stop.state.terminal and not stop.at_end:
                # the exit of a function library code called: whether that code calls the user's
                # code again before it returns (where a step goes on to) shows at the next event
                request = {"at": frontier + 1}
            elif (
                stop.index < frontier
                or stop.hit_breakpoint
                or stop.hit_exception
                or decided_at_frontier(execution, start, action)
            ):
                return stop
            else:
                # the answer lies past what is recorded: the held program runs on to the first event
                # that can be it, and the action is answered again over the longer recording
                request = run_request(execution, start, action, breakpoints, wants_exceptions, hits)
            if "uncaught" in exceptions:
                request["uncaught"] = True  # (an exception that ends a thread: once threads run)
            self._held = None  # (the copy of where the program was held ends as it goes on)
            self._extending = True
            targets_before = self._targets_set
            try:
                went_on = await anyio.to_thread.run_sync(live.extend, request)
            finally:
                self._extending = False
            self._queries = None  # (their indexes are of the shorter recording)
            seen = frontier
            self.index = start
            skeleton = live.execution
            assert skeleton is not None
            if not went_on:
                skeleton.keep_open = False
                self._running = None  # the program ended: its recording is whole
                self.outcome = skeleton.recording.outcome
                self._held = None
                if skeleton.recording.log.switched_at is not None and not skeleton.recording.log.thread_skeletons:
                    before = self._base
                    await self._join_threads(skeleton)
                    start, seen = self._rebased(start, before), self._rebased(seen, before)
                    self.index = start
                continue
            if _threads_as_skeletons(skeleton):
                # every thread is recorded as skeletons, and the program is held: travelled as it
                # is, the stopped thread's event as captured there, the other moments of the
                # threads rebuilt by a replay under their recorded order; the copy held there answers
                held = skeleton.recording.log.held
                here = skeleton.recording.log.stops[-1][0] - 1 if skeleton.recording.log.stops else -1
                if held is not None and live.reason != "pause" and here >= 0:
                    self._held = (here, held[1])
                elif held is not None:
                    # (a pause: the copy holds the paused thread's frames, at its own latest event)
                    at = skeleton.semantics.last_of_thread(held[0], skeleton.last)
                    self._held = (at, held[1]) if at >= 0 else None
            elif skeleton.recording.log.switched_at is not None:
                # every thread is recorded in full now, and the program is held: the recording so
                # far becomes one full recording, travelled as any (world/live.py)
                before = self._base
                await self._join_threads(skeleton, running=True)
                start, seen = self._rebased(start, before), self._rebased(seen, before)
                self.index = start
                held = skeleton.recording.log.held
                joined = self._joined
                if joined is not None:
                    joined.alive_now = skeleton.recording.log.alive
                    joined.idle_now = skeleton.recording.log.idle
                if held is not None and joined is not None:
                    at = joined.semantics.last_of_thread(held[0], joined.last)
                    self._held = (at, held[1]) if at >= 0 else None
            if follows_table and live.reason == "breakpoint" and self._targets_set is not targets_before:
                # stopped by a breakpoint set while the program ran: at the first hit after it was
                # set (the latest recorded), not at a hit it had run past before (a past moment
                # shown as if the program were there)
                execution = self._require()
                assert self._targets_set is not None
                found = execution.hits(seen, execution.last, self._targets_set)
                if found:
                    seen = max(seen, found[-1] - 1)
            if live.reason == "pause":
                # shown at the latest event (of whichever thread: the others' stacks as they are there)
                execution = self._require()
                at = execution.last
                self.index = at
                stop = await self._stop(at, output=execution.output(start, at))
                return msgspec.structs.replace(stop, paused=True)

    def _rebased(self, index: int, before: int) -> int:
        """An index of the recording whose event 0 was event `before` of the run, in the one
        travelled now (0 where that event was dropped from it)."""
        return max(0, index + before - self._base)

    async def _join_threads(self, execution: SkeletonExecution, running: bool = False) -> None:
        """A live program started a second thread (child/switch.py): the recording becomes one full
        recording of every thread (trace/threaded.py), to be travelled as any: once the program
        has ended, or (`running`) at each stop while it runs on (held, every thread waiting)."""
        skeleton = execution.recording

        def joined() -> tuple[FullExecution, int]:
            joiner, full = self._joiner, self._joined
            if joiner is None or joiner.skeleton is not skeleton:
                joiner = self._joiner = threaded.Joiner(skeleton)
            elif not joiner.update() and full is not None:
                full.grow(joiner.recording())  # (only what came since is read)
                return full, joiner.base
            return FullExecution(joiner.recording(), joiner.facts()), joiner.base

        try:
            full, self._base = await anyio.to_thread.run_sync(joined)
        except DivergenceError as exc:
            raise WorldError(f"the recording's first part could not be rebuilt: {exc}") from None
        if not running:
            execution.close()
            self._joiner = None
        self.execution = full
        self._joined = full if running else None
        self.threads_joined = True
        self.outcome = full.recording.outcome

    async def _act_recorded(
        self,
        action: Action,
        start: int,
        seen: int,
        exceptions: frozenset[ExceptionFilter],
        breakpoints: tuple[Target, ...],
        accept: Accept | None,
        hits: HitFilter | None = None,
    ) -> Stop:
        """`action` from event `start` over what is recorded; breakpoint hits up to `seen` were put
        to `accept` already (an earlier pass of a live recording's action). A hit that `hits` rules
        out is passed by without making its stop (a state to rebuild) or asking `accept`."""
        execution = self._require()
        jump = action.kind in ("breakpoint", "inv_breakpoint")
        targets = action.targets if jump else breakpoints
        if action.kind == "breakpoint":
            natural = execution.last
        elif action.kind == "inv_breakpoint":
            natural = 0
        else:
            natural = execution.apply(start, action)
            if (
                action.kind == "step_over"
                and self.live
                and isinstance(execution, SkeletonExecution)
                and awaiting_resume(execution, natural) >= 0
            ):
                # over an `await` that paused the coroutine, which has not resumed yet: the step
                # goes on past what is recorded (the other tasks run meanwhile, and a breakpoint of
                # theirs on the way stops it, as in debugpy)
                natural = execution.last
        forward = natural > start
        if self._exited_cleanly():
            # sys.exit(0) / sys.exit() ends the program with SystemExit, which is no error: debugpy
            # does not stop there, and every click CLI would stop on its way out
            exceptions = exceptions - {"uncaught"}
        # (backwards too: reverse-continue stops at the exceptions the filters stop at, as continue does)
        exception_at = None
        if exceptions and natural != start:
            exception_at = execution.first_exception(start, natural, exceptions)
        for hit in execution.hits(start, natural, targets):
            if exception_at is not None and (exception_at < hit if forward else exception_at > hit):
                break
            if forward and hit <= seen:
                continue
            ruled_out = hits is not None and not _may_stop(execution.semantics, hit, hits)
            if ruled_out and not (hit == natural and not jump):
                continue
            stop = await self._stop(hit, output=execution.output(start, hit) if forward else (), hit_breakpoint=True)
            if hit == natural and not jump:
                # the step ends here anyway: a breakpoint only changes why
                decision = not ruled_out and await accepted(accept, stop)
                self.index = hit
                return stop if decision else msgspec.structs.replace(stop, hit_breakpoint=False)
            if await accepted(accept, stop):
                self.index = hit
                return stop
        if exception_at is not None:
            self.index = exception_at
            output = execution.output(start, exception_at) if forward else ()
            return await self._stop(exception_at, output=output, hit_exception=True)
        self.index = natural
        return await self._stop(natural, output=execution.output(start, natural) if forward else ())

    async def travel(self, index: int, output_from: int | None = None) -> Stop:
        """Move to any event of the run (a moment a query found). Moving forward hands over the
        output written on the way (from `output_from`, default the current event)."""
        execution = self._require()
        if not 0 <= index <= execution.last:
            raise WorldError(f"there is no event {index}: the run has events 0 to {execution.last}")
        start = self.index if output_from is None else output_from
        stop = await self._stop(index, output=execution.output(start, index) if index > start else ())
        self.index = index
        return stop

    async def _stop(
        self, i: int, output: tuple = (), hit_exception: bool = False, hit_breakpoint: bool = False
    ) -> Stop:
        execution = self._require()
        try:
            # materialising a skeleton's states replays from a checkpoint: off the event loop
            state, frames = await anyio.to_thread.run_sync(lambda: (execution.state(i), execution.frames(i)))
        except DivergenceError as exc:
            raise WorldError(f"{exc}; the states before it are exact, the ones after cannot be rebuilt") from None
        at_end = i == execution.last and not self.live
        module_frame = None
        if state.thread != 0 and not any(f.function == "<module>" and f.path == state.path for f in frames):
            module_frame = await anyio.to_thread.run_sync(_module_frame, execution, i, state.path)
        outer: tuple[Frame, ...] = ()
        if frames and frames[-1].function != "<module>":
            try:
                outer = await anyio.to_thread.run_sync(enclosing_frames, execution, i)
            except DivergenceError:
                pass  # (another moment that does not rebuild: the stop's own frames stand)
        exception_line = 0
        if hit_exception and state.event == "line" and state.caught:
            # the frame's state as the exception reached it (across an `await`: the coroutine's)
            before = execution.semantics.inv_step_over(i)
            if before < i:
                exception_line = int(execution.semantics.columns.lines[before])
        semantics = execution.semantics
        suspends = state.event == "return" and semantics.continued_by(int(semantics.columns.invs[i])) >= 0
        by_library = semantics.called_by_library(i)
        return Stop(
            state=state,
            stack=frames,
            index=i,
            at_start=i == 0,
            at_end=at_end,
            exit=self._exit() if at_end else None,
            output=output,
            hit_exception=hit_exception,
            hit_breakpoint=hit_breakpoint,
            suspends=suspends,
            called_by_library=by_library,
            library_calls_next=by_library and state.terminal and semantics.library_calls_next(i),
            library_called_before=by_library and state.event == "call" and semantics.library_called_before(i),
            module_frame=module_frame,
            outer=outer,
            exception_line=exception_line,
        )

    @property
    def returns_stop_in_caller(self) -> bool:
        """The program ran on 3.12+, where debugpy steps with sys.monitoring (SteppingConvention)."""
        version = tuple(int(p) for p in self.python.split(".")[:2] if p.isdigit())
        return version >= (3, 12)

    # -- threads (HasThreads) -----------------------------------------------------------------------
    def threads(self, stop: Stop) -> list[Thread]:
        """The threads alive at the stop, by the DAP ids the client uses (the thread number + 1)."""
        return [Thread(number + 1, name) for number, name in self._require().threads(stop.index)]

    def thread_id(self, stop: Stop) -> int:
        return stop.state.thread + 1

    async def thread_stack(self, stop: Stop, thread_id: int) -> tuple[Frame, ...]:
        execution = self._require()
        if thread_id == self.thread_id(stop):
            return stop.stack
        try:
            return await anyio.to_thread.run_sync(execution.thread_frames, stop.index, thread_id - 1)
        except DivergenceError as exc:
            raise WorldError(f"that thread's frames cannot be rebuilt here: {exc}") from None

    async def evaluate_live(self, stop: Stop, frame: int, expression: str) -> LiveResult:
        """`expression` in a live copy of the program at `stop` (see trace/live.py): one copy at a
        time, made at the first expression of a stop and kept while the session stays there."""
        execution = self._require()
        if not isinstance(execution, SkeletonExecution) and not self._held_at(stop):
            raise NotLive(self._no_copy())
        if stop.at_end:
            raise NotLive("the program has ended here")
        async with self._live_lock:  # (one question at a time on the live copy's connection)
            return await anyio.to_thread.run_sync(
                self._evaluate_live, execution, stop.index, frame, expression, abandon_on_cancel=True
            )

    def _no_copy(self) -> str:
        """Why a full recording has no program to ask at a stop."""
        if self.threads_joined:
            return (
                "the program ran more than one thread: its recording keeps values, not copies of it"
                " (one would hold one thread)"
            )
        return "a full recording keeps values, not a program to ask"

    def _held_at(self, stop: Stop) -> bool:
        """The program runs threads and is held at `stop`'s event: a copy of it made there answers
        (child/frontier.py `_held_copy`), the stopped thread's frames as the stop shows them."""
        held = self._held
        if held is None or not self.live or held[0] != stop.index:
            return False
        return self.execution is self._joined or _threads_as_skeletons(self.execution)

    def _evaluate_live(self, execution: Execution, index: int, frame: int, expression: str) -> LiveResult:
        live = self._live_stop(execution, index)
        try:
            value = live.evaluate(expression, frame)
        except LiveError as exc:
            raise WorldError(str(exc)) from None
        return LiveResult(value.text, value.type)

    def _live_stop(self, execution: Execution, index: int) -> LiveStop:
        """The live copy of the program at event `index`: the one kept, or a new one (replacing it):
        replayed from a checkpoint, or the copy of the program held there (threads)."""
        live = self._live
        held = self._held if self._held is not None and self._held[0] == index else None
        if live is None or live.index != index or (held is not None and live.held_path != held[1]):
            if live is not None:
                live.close()
            self._live = None
            try:
                if held is not None:
                    live = self._live = LiveStop.held(held[1], index)
                else:
                    assert isinstance(execution, SkeletonExecution)
                    live = self._live = LiveStop(execution.recording, index)
            except LiveError as exc:
                raise NotLive(str(exc)) from None
        return live

    def live_at(self, stop: Stop) -> bool:
        """Whether a live copy of the program can be made at `stop` (ExpandsLive): a skeleton
        recording with a checkpoint at or before it, the program not yet ended there."""
        execution = self.execution
        if self._held_at(stop):
            return True
        if not isinstance(execution, SkeletonExecution) or stop.at_end:
            return False
        recording = execution.recording
        checkpoints = recording.checkpoints
        if not checkpoints or checkpoints[0] > stop.index:
            return False
        return recording.diverged_at is None or stop.index < recording.diverged_at

    async def children_live(
        self, stop: Stop, frame: int, root: tuple[str, str], path: tuple[list, ...], start: int, count: int
    ) -> tuple[tuple[LiveChild, ...], int]:
        """The children debugpy shows of the value at `path` from `root` in `frame` (ExpandsLive)."""
        request = {"children": {"root": list(root), "path": list(path), "start": start, "count": count}}
        reply = await self._ask_live(stop, frame, request)
        children = tuple(msgspec.convert(c, LiveChild) for c in _rows(reply.get("children"), 6))
        return children, int(reply.get("total") or 0)

    async def roots_live(
        self, stop: Stop, frame: int, roots: tuple[tuple[str, str], ...]
    ) -> tuple[LiveRoot | None, ...]:
        """Scope variables' texts as debugpy shows them (ExpandsLive); None for one that failed."""
        reply = await self._ask_live(stop, frame, {"roots": [list(r) for r in roots]})
        answers = reply.get("roots")
        if not isinstance(answers, list) or len(answers) != len(roots):
            raise WorldError("the live program answered something unreadable")
        return tuple(
            LiveRoot(str(a[0]), str(a[1]), bool(a[2])) if isinstance(a, list) and len(a) == 3 else None for a in answers
        )

    async def _ask_live(self, stop: Stop, frame: int, request: dict) -> dict:
        execution = self._require()
        if not self.live_at(stop):
            raise NotLive("no live copy of the program at this stop")

        def run() -> dict:
            live = self._live_stop(execution, stop.index)
            try:
                return live.ask(request, frame)
            except LiveError as exc:
                raise WorldError(str(exc)) from None

        async with self._live_lock:
            return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)

    async def check_live(self, stop: Stop, checks: tuple[Check, ...]) -> tuple[CheckResult, ...]:
        """A breakpoint's condition and log message at `stop`, on the program's real objects in its
        innermost frame (ChecksLive): one throwaway fork of the live copy at the stop, which stays
        for the user's own expressions if the stop is made."""
        execution = self._require()
        if not isinstance(execution, SkeletonExecution) and not self._held_at(stop):
            raise NotLive(self._no_copy())
        if stop.at_end:
            raise NotLive("the program has ended here")

        def run() -> tuple[CheckResult, ...]:
            live = self._live_stop(execution, stop.index)
            try:
                answers = live.check(list(checks), 0)
            except LiveError as exc:
                raise NotLive(str(exc)) from None
            return tuple(msgspec.convert(a, CheckResult) for a in answers)

        async with self._live_lock:
            return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)

    def interrupt(self) -> bool:
        """The user paused while the program runs: a live one stops at its next event; one being
        recorded to its end (batch) ends its recording where the program is, and the session debugs
        what was recorded (a server, a program waiting for something)."""
        if self.what_if.recording is not None:
            return self.what_if.interrupt()  # a branch being recorded (a value that makes it loop)
        if self.live and self._extending and self._running is not None and self._running.pause():
            return True
        recording = self._recording
        return recording.end_now() if recording is not None else self.what_if.interrupt()

    def why_not_run(self, path: str) -> str | None:
        """Why a breakpoint in `path` can never be hit in this recording, or None if it can: no code
        of the file ran while traced (a file the program never imported, or library code outside
        `justMyCode`)."""
        execution = self.execution
        sources = getattr(getattr(execution, "recording", None), "sources", None)
        if sources is None:
            return None
        real = os.path.realpath(path)
        if any(os.path.realpath(known) == real for known in sources):
            return None
        if self.just_my_code and _is_library(real):
            return 'library code is not traced while "justMyCode" is true; set it to false to stop here'
        if self.live:
            return None  # (the running program may run it yet)
        return "no code of this file ran in the recorded run"

    def _exited_cleanly(self) -> bool:
        outcome = self.outcome
        return outcome is not None and outcome.kind == "exited" and not outcome.exit_code

    def _exit(self) -> Exit:
        outcome = self.outcome
        assert outcome is not None
        if outcome.kind == "finished":
            return Exit(0)
        if outcome.kind == "raised":
            return Exit(1, f"uncaught {outcome.message}")
        if outcome.kind == "exited":
            return Exit(outcome.exit_code or 0, outcome.message)
        return Exit(
            outcome.exit_code if outcome.exit_code is not None else -1,
            outcome.describe() + " (the recording ends here)",
        )

    def source(self, path: str) -> str | None:
        execution = self.execution
        sources = getattr(getattr(execution, "recording", None), "sources", None) or {}
        if sources.get(path):
            return sources[path]
        return read_source(path)

    def summary(self) -> dict[str, Any]:
        if self.execution is None:
            return {"world": self.name}
        out = {
            "world": self.name,
            "states": len(self.execution),
            "outcome": self.outcome.describe() if self.outcome else "",
            "engine": self.engine,
            "python": self.python,
            "recordSeconds": round(self.record_seconds, 3),
            "program": self.program,
            "recording": "skeleton" if isinstance(self.execution, SkeletonExecution) else "full",
        }
        if isinstance(self.execution, SkeletonExecution):
            rec = self.execution.recording
            out.update(
                {
                    "checkpoints": len(rec.checkpoints),
                    "materialisations": rec.materialisations,
                    "divergedAt": rec.diverged_at,
                }
            )
        return out

    async def _open_child(self, events: str, just_my_code: bool) -> Stop:
        """A child session: the recording a child process made of itself (it ran already)."""
        try:
            rec = await anyio.to_thread.run_sync(lambda: open_child(events))
        except (ChildRecordingError, OSError) as exc:
            raise WorldError(f"cannot open the child process's recording: {exc}") from None
        self.just_my_code = just_my_code
        self.mode = "full"
        self.outcome = rec.outcome
        self.engine, self.python = rec.engine, rec.python
        self.program = os.path.basename(rec.main_path)
        if not len(rec.states):
            raise WorldError(f"the child process recorded none of your code: {rec.outcome.describe()}")
        self.execution = FullExecution(rec)
        self.index = 0
        return await self._stop(0, output=self.execution.output(-1, 0))

    def child_sessions(self) -> list[ChildSession]:
        """The Python processes the program started that ran the user's code (subProcess: true)."""
        if self._children is None:
            return []
        return [
            ChildSession(child.pid, child.name, {"childRecording": child.events, "program": _child_program(child)})
            for child in list_children(self._children)
            if _ran_user_code(child)
        ]

    async def close(self) -> None:
        if self._running is not None:  # the session is over: so is the program (and its recording)
            self._running.end()
            await self._running.wait_finished()
            if self._running.execution is not None and self._running.execution is not self.execution:
                self._running.execution.keep_open = False
                self._running.execution.close()
            self._running = None
        if isinstance(self.execution, SkeletonExecution):
            self.execution.keep_open = False
        if self._children is not None:
            shutil.rmtree(self._children, ignore_errors=True)
            self._children = None
        self.what_if.close()
        if self._live is not None:
            self._live.close()
            self._live = None
        if self.execution is not None:
            self.execution.close()
        self.execution = None


def _ran_user_code(child: ChildProcess) -> bool:
    """A child whose recording has events of the user's code (one cut short, by a kill, says
    nothing of how many: it is read)."""
    if child.count is not None:
        return child.count > 0
    try:
        return len(open_child(child.events).states) > 0
    except (ChildRecordingError, OSError):
        return False


def _child_program(child: ChildProcess) -> str:
    """The file a child session shows as its program (a multiprocessing worker runs the parent's)."""
    if child.command[0] == "--fork" and len(child.command) > 1:
        return child.command[1]
    if child.command[0] not in ("-m", "-c"):
        return os.path.join(child.cwd, child.command[0])
    return ""


def _rows(rows: object, width: int) -> list[dict]:
    """A live answer's rows as keyword dicts for msgspec (LiveChild's fields, in order)."""
    names = ("name", "value", "type", "selector", "evaluate", "expandable")[:width]
    if not isinstance(rows, list):
        raise WorldError("the live program answered something unreadable")
    return [dict(zip(names, row, strict=True)) for row in rows if isinstance(row, list) and len(row) == width]


def _module_frame(execution: Execution, i: int, path: str) -> Frame | None:
    """The `<module>` frame of `path` on the main thread's stack as it stood at event i: the globals a
    thread's function reads (the values as of the main thread's latest traced line; where a live
    program of threads is held, as it has them there). None where it is not there, or its moment
    does not rebuild (the stop's own values stand; its Globals are left out rather than wrong)."""
    if isinstance(execution, SkeletonExecution):
        held = execution.held_module_frame(i, path)
        if held is not None:
            return held
    try:
        frames = execution.thread_frames(i, 0)
    except DivergenceError:
        return None
    return next((f for f in frames if f.function == "<module>" and f.path == path), None)


def _may_stop(semantics: ActionSemantics, hit: int, hits: HitFilter) -> bool:
    """Whether a breakpoint at line event `hit` can stop or log there, by its hit number alone."""
    number = semantics.hit_number(hit)
    if number is None:
        return True
    target = (semantics.path(hit), int(semantics.columns.lines[hit]))
    return hits.next_hit(target, number - 1) == number


def _leaves_the_traced_code(execution: SkeletonExecution, i: int) -> bool:
    """Event i is an exception leaving an invocation that no traced code called."""
    columns = execution.semantics.columns
    return execution.semantics.kind(i) == EXCEPTION and int(columns.parent[columns.invs[i]]) < 0


def _is_library(path: str) -> bool:
    """The standard library's or an installed package's file (debugpy's idea of not "my code")."""
    import sysconfig

    prefixes = {os.path.realpath(sysconfig.get_path(key)) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    return "site-packages" in path or "dist-packages" in path or any(path.startswith(p + os.sep) for p in prefixes)


def _threads_as_skeletons(execution: object) -> bool:
    """A skeleton recording whose threads (a second one ran) are recorded as skeletons too: it is
    travelled as it is, the threads' values rebuilt by a replay under their recorded order."""
    if not isinstance(execution, SkeletonExecution):
        return False
    log = execution.recording.log
    return log.switched_at is not None and log.thread_skeletons
