"""The recorded world model: one real execution, recorded once, navigated exactly in both directions."""

from __future__ import annotations

import os
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Any

from neural_dap.core.actions import Action, Target
from neural_dap.core.state import Frame
from neural_dap.core.world import Capabilities, ExceptionFilter, Exit, LaunchSpec, Stop, WorldError
from neural_dap.trace.recorder import Limits, Program, RecorderError, Recording, record_async
from neural_dap.trace.tree import StateTree

LIMIT_KEYS = {"maxEvents": "max_events", "wallTime": "wall_time", "maxRepr": "max_repr", "maxOutput": "max_output", "memoryMb": "memory_mb",
              "maxProcesses": "max_processes"}
# What a launch may ask for: a launch comes from a client, and a recording must stay bounded.
LIMIT_RANGES: dict[str, tuple[float, float]] = {
    "maxEvents": (1, 200_000_000),
    "wallTime": (0.1, 3600),
    "maxRepr": (16, 100_000),
    "maxOutput": (0, 100_000_000),
    "memoryMb": (64, 65_536),
    "maxProcesses": (0, 64),
}


def limits_from(options: dict[str, Any]) -> Limits:
    given = options.get("limits") or {}
    if not isinstance(given, dict):
        raise WorldError("limits must be an object, e.g. {\"maxEvents\": 1000000}")
    unknown = set(given) - set(LIMIT_KEYS)
    if unknown:
        raise WorldError(f"unknown limits {sorted(unknown)}; known: {sorted(LIMIT_KEYS)}")
    values = {}
    for key, value in given.items():
        low, high = LIMIT_RANGES[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise WorldError(f"limit {key} must be a number from {low:g} to {high:g}, not {value!r}")
        values[LIMIT_KEYS[key]] = type(getattr(Limits(), LIMIT_KEYS[key]))(value)
    return Limits(**values)


class RecordedWorld:
    name = "recorded"
    capabilities = Capabilities(exact=True, inverse=True, needs_runnable=True)

    def __init__(self) -> None:
        self.recording: Recording | None = None
        self.tree: StateTree | None = None
        self.index = 0
        self._raised: list[int] = []
        self._uncaught: list[int] = []

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
        )
        try:
            rec = await record_async(program, limits_from(launch.options), python=launch.options.get("python"))
        except RecorderError as exc:
            raise WorldError(str(exc)) from None
        if not len(rec.states):
            detail = rec.stderr.strip().splitlines()[-3:]
            raise WorldError(f"nothing was recorded: {rec.outcome.describe()}" + (f" ({' / '.join(detail)})" if detail else ""))
        self.recording = rec
        self.tree = StateTree(list(rec.states))
        self._index_exceptions()
        self.index = 0
        return self._stop(0, output=self._output(-1, 0))

    def _index_exceptions(self) -> None:
        states = self.tree.states
        self._raised = [i for i, s in enumerate(states) if s.event == "exception" or s.caught]
        last = len(states) - 1
        uncaught: list[int] = []
        if states[last].event == "exception":
            # the run of exception exits that ends the program starts where it was raised
            k = last
            while k > 0 and states[k - 1].event == "exception" and states[k - 1].depth == states[k].depth + 1:
                k -= 1
            uncaught.append(k)
        self._uncaught = uncaught

    def _require(self) -> StateTree:
        if self.tree is None:
            raise WorldError("the program has not been launched")
        return self.tree

    async def act(
        self,
        action: Action,
        *,
        exceptions: frozenset[ExceptionFilter] = frozenset(),
        breakpoints: tuple[Target, ...] = (),
        accept: Callable[[Stop], bool] | None = None,
    ) -> Stop:
        tree = self._require()
        start = self.index
        jump = action.kind in ("breakpoint", "inv_breakpoint")
        targets = action.targets if jump else breakpoints
        if action.kind == "breakpoint":
            natural = tree.last
        elif action.kind == "inv_breakpoint":
            natural = 0
        else:
            natural = tree.apply(start, action)
        forward = natural > start
        exception_at = self._first_exception(start, natural, exceptions) if forward and exceptions else None
        for hit in self._hits(start, natural, targets):
            if exception_at is not None and exception_at < hit:
                break
            stop = self._stop(hit, output=self._output(start, hit) if forward else (), hit_breakpoint=True)
            if hit == natural and not jump:
                # the step ends here anyway: a breakpoint only changes why
                accepted = accept is None or accept(stop)
                self.index = hit
                return stop if accepted else self._stop(hit, output=stop.output)
            if accept is None or accept(stop):
                self.index = hit
                return stop
        if exception_at is not None:
            self.index = exception_at
            return self._stop(exception_at, output=self._output(start, exception_at), hit_exception=True)
        self.index = natural
        return self._stop(natural, output=self._output(start, natural) if forward else ())

    def _hits(self, start: int, end: int, targets: tuple[Target, ...]) -> list[int]:
        """Line states at the targets strictly after `start` up to `end`, in the walking direction."""
        if not targets or start == end:
            return []
        tree = self._require()
        lo, hi = (start + 1, end) if end > start else (end, start - 1)
        found: set[int] = set()
        for line in {line for _, line in targets}:
            indices = tree.by_line.get(line, [])
            for k in indices[bisect_left(indices, lo) : bisect_right(indices, hi)]:
                if tree._matches(k, targets):
                    found.add(k)
        return sorted(found, reverse=end < start)

    def _first_exception(self, start: int, end: int, filters: frozenset[ExceptionFilter]) -> int | None:
        found = None
        for kind in filters:
            points = self._raised if kind == "raised" else self._uncaught
            k = bisect_right(points, start)
            if k < len(points) and points[k] <= end and (found is None or points[k] < found):
                found = points[k]
        return found

    def _output(self, start: int, end: int) -> tuple[tuple[str, str], ...]:
        """stdout/stderr written after state `start` up to state `end` (and all that is left at the end)."""
        states = self._require().states
        out: list[tuple[str, str]] = []
        for k in range(start + 1, end + 1):
            s = states[k]
            if s.stdout:
                out.append(("stdout", s.stdout))
            if s.stderr:
                out.append(("stderr", s.stderr))
        if end == len(states) - 1 and start < end:
            out.extend(self._output_after_last_state())
        return tuple(out)

    def _output_after_last_state(self) -> list[tuple[str, str]]:
        rec = self.recording
        assert rec is not None
        shown_out = "".join(s.stdout for s in rec.states)
        shown_err = "".join(s.stderr for s in rec.states)
        out = []
        if len(rec.stdout) > len(shown_out) and rec.stdout.startswith(shown_out):
            out.append(("stdout", rec.stdout[len(shown_out) :]))
        if len(rec.stderr) > len(shown_err) and rec.stderr.startswith(shown_err):
            out.append(("stderr", rec.stderr[len(shown_err) :]))
        return out

    def _stop(self, i: int, output: tuple = (), hit_exception: bool = False, hit_breakpoint: bool = False) -> Stop:
        tree = self._require()
        states = tree.states
        log = self.recording.log  # type: ignore[union-attr]
        frames = []
        for depth, k in enumerate(tree.stack(i)):
            s = states[k]
            local_reprs, values = s.locals, s.values
            if depth > 0:
                local_reprs, values = log.caller_view(s.invocation, k, i, local_reprs, values)
            frames.append(Frame(s.function, s.line, s.source, s.invocation, s.path, local_reprs, values))
        frames = tuple(frames)
        at_end = i == tree.last
        return Stop(
            state=states[i],
            stack=frames,
            index=i,
            at_start=i == 0,
            at_end=at_end,
            exit=self._exit() if at_end else None,
            output=output,
            hit_exception=hit_exception,
            hit_breakpoint=hit_breakpoint,
        )

    def _exit(self) -> Exit:
        outcome = self.recording.outcome  # type: ignore[union-attr]
        if outcome.kind == "finished":
            return Exit(0)
        if outcome.kind == "raised":
            return Exit(1, f"uncaught {outcome.message}")
        if outcome.kind == "exited":
            return Exit(outcome.exit_code or 0, outcome.message)
        return Exit(outcome.exit_code if outcome.exit_code is not None else -1, outcome.describe() + " (the recording ends here)")

    def source(self, path: str) -> str | None:
        if self.recording is not None and path in self.recording.sources:
            return self.recording.sources[path]
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError:
            return None

    def summary(self) -> dict[str, Any]:
        rec = self.recording
        if rec is None:
            return {"world": self.name}
        return {
            "world": self.name,
            "states": len(rec.states),
            "outcome": rec.outcome.describe(),
            "engine": rec.engine,
            "python": rec.python,
            "recordSeconds": round(rec.seconds, 3),
            "program": os.path.basename(rec.main_path),
        }

    async def close(self) -> None:
        self.recording = None
        self.tree = None

