"""The neural world model: a language model predicts each next program state.

Each action becomes a prompt: the program (the trace context), every frame of the session so far,
and the action (`nd` dialect: an action token; `cwm` dialect: Meta's Code World Model, driven the
way its own `cwmdbg` demo drives it, by forcing the next event token). Decoding is program-aware:
the model chooses only among frames the program allows after that action (`world.landing`: the
events, lines and local names read statically from the program), so a frame is valid by
construction. The completion is parsed and voted on when several samples are drawn; a frame that
still fails (a model that runs out of tokens, a program that does not compile and so cannot be
constrained) is retried, then reported as an error on that request. Model text is only ever
parsed, never evaluated.

States already seen are not predicted again: the session's known states form runs of consecutive
execution, and an action whose answer lies inside a run is a lookup (stepping back over what was
just stepped through costs nothing).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import msgspec

from neural_dap.core.actions import Action, Target, for_file, in_file
from neural_dap.core.flow import ProgramFlow
from neural_dap.core.focus import focus_lines
from neural_dap.core.source import SourceInfo, read_source
from neural_dap.core.state import TRUNCATION_MARK, Frame, State
from neural_dap.core.world import (
    Accept,
    Capabilities,
    ExceptionFilter,
    Exit,
    HitFilter,
    LaunchSpec,
    Stop,
    WorldError,
    accepted,
)
from neural_dap.core.writes import ProgramWrites
from neural_dap.format.calibration import Calibration, calibrate, written_since
from neural_dap.format.calibration import load as load_calibration
from neural_dap.format.confidence import UNCERTAIN_BELOW, FrameConfidence, frame_confidence
from neural_dap.format.grammar import FrameConstraint
from neural_dap.format.tokens import ACTION_TOKENS, CWM_TOKENS, FRAME_SEP, Special, merge_text
from neural_dap.format.trace import (
    Dialect,
    EndOfTrace,
    FormatError,
    TraceText,
    cwm_window,
    entry_line,
    open_chain,
    window_from,
)
from neural_dap.llm.base import ModelClient, ModelError
from neural_dap.trace.tree import StateTree
from neural_dap.world.entry import entry_state
from neural_dap.world.landing import frame_constraint

MAX_RUN_STEPS = 400  # cwm dialect: predicted steps one continue / step over may take
MAX_REJECTED_HITS = 50  # breakpoint landings whose condition was false, before giving up


# Tokens kept free for the next frame before the history window restarts (a frame of the examples is
# 15-60 tokens; locals of long lists take more).
FRAME_ROOM = 160


class ModelSettings(msgspec.Struct, frozen=True, omit_defaults=True):
    # "embedded", a model folder, an OpenAI-compatible server (http://127.0.0.1:8000/v1), or a list of
    # replicas of one (a session sticks to one and moves on when it fails)
    url: str | list[str] = "embedded"
    name: str | None = None
    dialect: str = "nd"
    temperature: float = 0.0
    samples: int = 1
    timeout: float = 60.0
    max_tokens: int = 768
    retries: int = 2
    constrained: bool = True  # program-aware decoding (valid frames by construction)
    # the model's confidence calibration (format.calibration): a calibration.json; None: the model
    # folder's own (embedded, a folder, or a served model whose name is a folder here); "none": the
    # model's raw probabilities
    calibration: str | None = None


@dataclass
class CallStats:
    action: str
    prompt_tokens: int
    generated_tokens: int
    cached_tokens: int | None
    seconds: float
    samples: int
    valid: int
    agreement: float
    constrained: int = 0  # tokens the decoding constraint changed


@dataclass
class StopStats:
    """What one stop cost: model calls (several in a cwm run) and their tokens."""

    action: str
    calls: list[CallStats] = field(default_factory=list)
    lookup: bool = False
    seconds: float = 0.0

    def totals(self) -> dict:
        cached = [c.cached_tokens for c in self.calls if c.cached_tokens is not None]
        return {
            "action": self.action,
            "modelCalls": len(self.calls),
            "lookup": self.lookup,
            "promptTokens": sum(c.prompt_tokens for c in self.calls),
            "generatedTokens": sum(c.generated_tokens for c in self.calls),
            "cachedTokens": sum(cached) if cached else None,
            "recomputedTokens": sum(c.prompt_tokens for c in self.calls) - sum(cached) if cached else None,
            "seconds": round(self.seconds, 4),
        }


class NeuralWorld:
    name = "neural"
    capabilities = Capabilities(exact=False, inverse=True)

    def __init__(self, client: ModelClient, settings: ModelSettings, calibration: Calibration | None = None) -> None:
        if settings.dialect not in ("nd", "cwm"):
            raise WorldError(f"unknown dialect {settings.dialect!r}: use 'nd' or 'cwm'")
        if settings.samples < 1:
            raise WorldError("samples must be at least 1")
        self.client = client
        self.settings = settings
        # maps the model's probabilities to how often such values are right (None: shown raw)
        self.calibration = calibration
        self.dialect: Dialect = "cwm" if settings.dialect == "cwm" else "nd"
        self.info: SourceInfo | None = None
        self.shown: frozenset[int] | None = None
        self.path = ""
        self.trace: TraceText | None = None
        self.frame_ids: list[list[int]] = []
        self.context_ids: list[int] = []
        self.ids: dict[str, int] = {}
        self.timeline: list[State] = []
        self.gap_before: list[bool] = []
        self.pos = 0
        self.ended = False  # the model said the traced scope ended after the last state
        self.stops: list[StopStats] = []
        self.invalid_frames = 0
        self.windows = 0  # times the history was cut to fit the model's context
        self.repaired_lines = 0  # predicted source lines read as the closest program line
        self.flow: ProgramFlow | None = None
        self.writes: ProgramWrites | None = None
        self._alias: dict[int, int] = {}  # an invocation's id in a later window -> its id before
        self.constrained_frames = 0  # predictions made under a constraint
        self.constrained_choices = 0  # tokens the constraint changed (the model's pick was not possible)
        self.retries = 0  # predictions asked again after an invalid frame
        self._limit: int | None = None
        self._entry: State | None = None
        # how sure the model was of each predicted state (by identity: the state object is kept too)
        self._confidence: dict[int, tuple[State, FrameConfidence]] = {}
        self._chosen_confidence: FrameConfidence | None = None  # of the last prediction, until committed
        self._value_confidence: dict[tuple[int, str], tuple[str, float]] = {}  # latest per (invocation, local)
        self._predicted: list[tuple[State, FrameConfidence]] = []  # every prediction made, for summary()

    # -- launch ---------------------------------------------------------------------------------------
    async def start(self, launch: LaunchSpec) -> Stop:
        path = launch.program
        text = launch.source
        if text is None:
            text = read_source(path)
            if text is None:
                raise WorldError(f"cannot read {path}")
        self.path = path
        self.info = SourceInfo(text, path)
        self.writes = ProgramWrites(self.info)  # what each statement can change (calibrating `..`)
        # a call of one function shows the model only what the call can reach (a long module fits)
        self.shown = focus_lines(text, launch.entry.function) if launch.entry is not None else None
        # cwm: the frames sys.settrace reports on 3.11, as CWM's traces have them (comprehensions, `.0`)
        self.flow = ProgramFlow(self.info, settrace_frames=self.dialect == "cwm") if self.settings.constrained else None
        first = entry_state(self.info, path, launch.entry)
        self.trace = self._trace_from(first)
        needed = [str(t) for t in CWM_TOKENS] + (
            [str(t) for t in ACTION_TOKENS.values()] if self.dialect == "nd" else []
        )
        try:
            self.ids = await self.client.special_ids(needed)
            self.context_ids = await self._encode(self.trace.context())
            if self.calibration is None and self.settings.calibration is None:
                self.calibration = _served_calibration(self.client.name)
        except ModelError as exc:
            hint = (
                " (a model that does not know the nd action tokens needs dialect 'cwm')"
                if self.dialect == "nd" and "special token" in str(exc)
                else ""
            )
            raise WorldError(f"{exc}{hint}") from None
        seen = await self._commit(first, None)
        self._entry = seen
        self.timeline = [seen]
        self.gap_before = [False]
        self.pos = 0
        self.stops.append(StopStats("start", lookup=True))
        return self._stop(seen)

    def _trace_from(self, state: State) -> TraceText:
        """A new conversation whose first frame is `state` (the start marker on its function's def)."""
        assert self.info is not None
        line = entry_line(self.dialect, self.info, state)
        shown = self.shown if self.shown is not None and line in self.shown else None
        return TraceText(
            self.dialect, self.info, line, path=self.path, entry_function=state.function, shown_lines=shown
        )

    async def _encode(self, segments: list[str]) -> list[int]:
        ids: list[int] = []
        for seg in merge_text(segments):
            if isinstance(seg, Special):
                ids.append(self.ids[seg])
            else:
                ids.extend(await self.client.tokenize(seg))
        return ids

    async def _commit(self, state: State, action: Action | None) -> State:
        """Add a frame to the conversation (predicted, looked up or given) and keep its token ids."""
        assert self.trace is not None
        seen = self.trace.append(state, action)
        self.frame_ids.append(await self._encode(self.trace.frames[-1]))
        return seen

    # -- acting ---------------------------------------------------------------------------------------------
    async def act(
        self,
        action: Action,
        *,
        exceptions: frozenset[ExceptionFilter] = frozenset(),
        breakpoints: tuple[Target, ...] = (),
        accept: Accept | None = None,
        hits: HitFilter | None = None,
    ) -> Stop:
        del hits  # (a prediction counts the hits it has shown: every one is asked)
        if self.trace is None:
            raise WorldError("the program has not been launched")
        # the model predicts one file: a breakpoint in another file is never a stop here
        action = for_file(action, self.path)
        breakpoints = tuple(t for t in breakpoints if in_file(t, self.path))
        started = time.monotonic()
        stats = StopStats(str(action))
        self.stops.append(stats)
        try:
            if action.kind in ("breakpoint", "inv_breakpoint") and accept is not None:
                stop = await self._act_until_accepted(action, stats, exceptions, accept)
            else:
                stop = await self._act_once(action, stats, exceptions, breakpoints, accept)
        finally:
            stats.seconds = time.monotonic() - started
        return stop

    async def _act_until_accepted(self, action, stats, exceptions, accept) -> Stop:
        for _ in range(MAX_REJECTED_HITS):
            stop = await self._act_once(action, stats, exceptions, (), None)
            if not stop.hit_breakpoint or stop.hit_exception or await accepted(accept, stop):
                return stop
        raise WorldError(f"no breakpoint hit was accepted within {MAX_REJECTED_HITS} predicted hits")

    async def _act_once(self, action, stats, exceptions, breakpoints, accept) -> Stop:
        targets = action.targets if action.kind in ("breakpoint", "inv_breakpoint") else breakpoints
        found = self._lookup(action)
        if found is not None:
            stats.lookup = True
            await self._move_to(found, action)
        elif self.dialect == "cwm":
            await self._cwm(action, stats, exceptions, breakpoints, accept)
        else:
            await self._nd(action, stats)
        state = self.timeline[self.pos]
        hit_bp = state.event == "line" and any(line == state.line for _, line in targets)
        stop = self._stop(state, hit_breakpoint=hit_bp, hit_exception=self._exception_stop(state, exceptions))
        if (
            hit_bp
            and action.kind not in ("breakpoint", "inv_breakpoint")
            and accept is not None
            and not await accepted(accept, stop)
        ):
            # a step lands on a line with a breakpoint: as in the recorded world, its condition, hit
            # count or log point decide whether that is a breakpoint stop (a log point only logs)
            stop = msgspec.structs.replace(stop, hit_breakpoint=False)
        return stop

    # -- known states -----------------------------------------------------------------------------------------
    def _run(self) -> tuple[int, int]:
        """The run of consecutive known states around the current position."""
        start = self.pos
        while start > 0 and not self.gap_before[start]:
            start -= 1
        end = self.pos
        while end + 1 < len(self.timeline) and not self.gap_before[end + 1]:
            end += 1
        return start, end

    def _lookup(self, action: Action) -> int | None:
        """The timeline index an action leads to, when the known states decide it; else None."""
        start, end = self._run()
        states = self.timeline[start : end + 1]
        i = self.pos - start
        kind = action.kind
        if kind == "step_into":
            return self.pos + 1 if i + 1 < len(states) else None
        if kind == "inv_step_into":
            return self.pos - 1 if i > 0 else None
        if kind == "inv_breakpoint" and all(line < 1 for line in action.lines):
            return 0 if self.pos > 0 else None  # no line to stop at on the way back: the start
        here = states[i]
        if kind in ("step_over", "step_return") and self.dialect == "cwm":
            return self._cwm_lookup(states, i, kind, start)
        tree = StateTree(states)
        if kind in ("step_over", "step_return"):
            owner = tree.parent.get(here.invocation) if here.terminal else here.invocation
            j = tree.apply(i, action)
            ok = j > i and states[j].invocation == owner and (kind == "step_over" or states[j].terminal)
            return start + j if ok else None
        if kind in ("inv_step_over", "inv_step_return"):
            owner = tree.parent.get(here.invocation) if here.event == "call" else here.invocation
            j = tree.apply(i, action)
            ok = j < i and states[j].invocation == owner and (kind == "inv_step_over" or states[j].event == "call")
            return start + j if ok else None
        if kind == "breakpoint":
            j = tree.apply(i, action)
            if j > i and states[j].event == "line" and states[j].line in action.lines:
                return start + j
            return start + len(states) - 1 if self._is_end(states[-1]) and j == len(states) - 1 and j > i else None
        if kind == "inv_breakpoint":
            j = tree.apply(i, action)
            if j < i and states[j].event == "line" and states[j].line in action.lines:
                return start + j
            return (
                start
                if start == 0 and self.timeline[0] is self._entry and i > 0 and self._entry.event == "call"
                else None
            )
        if kind == "continue":
            return start + len(states) - 1 if self._is_end(states[-1]) and i < len(states) - 1 else None
        return None

    def _cwm_lookup(self, states: list[State], i: int, kind: str, start: int) -> int | None:
        """Where a known run answers step_over / step_return as `_cwm` would predict it: the next
        state of the function or its caller (step_over); one step past the function's return
        (step_return, as cwmdbg's step_out). None where the run ends before that."""
        here = states[i]
        owner_depth = here.depth - 1 if self._leaves(here) else here.depth
        for j in range(i + 1, len(states)):
            state = states[j]
            if kind == "step_over" and state.depth <= owner_depth and state.event != "call":
                return start + j
            if kind == "step_return" and state.event == "return" and state.depth == owner_depth:
                if self._is_end(state):
                    return start + j
                return start + j + 1 if j + 1 < len(states) else None
        return None

    def _exception_stop(self, state: State, exceptions: frozenset[ExceptionFilter]) -> bool:
        """Does the exception filter stop at `state`? `uncaught`: the exception leaves the traced
        scope. In nd that is an exception state at depth 0; in cwm an exception event there may still
        be caught in that frame, so it is the end the exception left by (its return, None)."""
        raised = state.event == "exception" and "raised" in exceptions
        if self.dialect == "nd":
            return raised or (state.event == "exception" and "uncaught" in exceptions and state.depth == 0)
        return raised or ("uncaught" in exceptions and self._is_end(state) and self._raised_out(state) is not None)

    def _is_end(self, state: State) -> bool:
        return state.depth == 0 and self._leaves(state)

    def _leaves(self, state: State) -> bool:
        """Does `state` end its invocation? In cwm only a return does: an exception event is the
        exception passing through the frame (sys.settrace), which a handler there may catch."""
        return state.event == "return" or (state.event == "exception" and self.dialect == "nd")

    @property
    def steps_past_return(self) -> bool:
        """cwm: a step out goes one step past the function's return, as cwmdbg's `step_out` does."""
        return self.dialect == "cwm"

    async def _move_to(self, index: int, action: Action) -> None:
        """Move to a known state; the nd conversation records the move, the cwm one is cut back to it."""
        self.pos = index
        if self.dialect == "nd":
            await self._commit(self.timeline[index], action)
        else:
            await self._rebuild_cwm()

    async def _rebuild_cwm(self) -> None:
        """The cwm conversation is the known execution up to the current state."""
        assert self.trace is not None and self.info is not None
        first = self.timeline[0]
        self.trace = TraceText(
            "cwm",
            self.info,
            self.trace.entry_line,
            path=self.path,
            entry_function=first.function,
            shown_lines=self.trace.shown_lines,
        )
        self.frame_ids = []
        for state in self.timeline[: self.pos + 1]:
            await self._commit(state, Action("step_into"))

    # -- predicting ---------------------------------------------------------------------------------------------
    async def _nd(self, action: Action, stats: StopStats) -> None:
        result = await self._predict(action, None, stats)
        if isinstance(result, EndOfTrace):
            self.ended = True
            if not self._is_end(self.timeline[self.pos]):
                raise WorldError("the model says the program ended here, before its function returned")
            return
        landed = await self._commit(result, action)
        self._remember(landed)
        self._place(landed, action)

    def _place(self, state: State, action: Action) -> None:
        """Put a predicted state on the timeline: after the current run (forward) or before it."""
        start, end = self._run()
        if not action.inverse:
            adjacent = action.kind == "step_into" and self.pos == end
            del self.timeline[self.pos + 1 :]
            del self.gap_before[self.pos + 1 :]
            self.timeline.append(state)
            self.gap_before.append(not adjacent)
            self.pos = len(self.timeline) - 1
        else:
            adjacent = action.kind == "inv_step_into" and self.pos == start
            self.timeline = [state, *self.timeline[start:]]
            self.gap_before = [True, not adjacent, *self.gap_before[start + 1 :]]
            self.pos = 0

    async def _cwm(self, action, stats, exceptions, breakpoints, accept) -> None:
        """Base CWM knows no actions: each is emulated with single steps, forcing event tokens."""
        if action.inverse:
            raise WorldError(
                f"the cwm dialect steps back only through states it has predicted; {action} goes further back"
            )
        if self.pos < len(self.timeline) - 1:
            del self.timeline[self.pos + 1 :]
            del self.gap_before[self.pos + 1 :]
            await self._rebuild_cwm()
        here = self.timeline[self.pos]
        owner_depth = here.depth - 1 if self._leaves(here) else here.depth  # whose states step_over walks
        kind = action.kind
        lines = set(action.lines)
        interrupt = {line for _, line in breakpoints}
        returned = False  # step_return: the function has returned; one step more, as cwmdbg's step_out
        for step in range(MAX_RUN_STEPS):
            current = self.timeline[self.pos]
            if self._is_end(current):
                return
            forced = None
            if current.event == "call" and kind == "step_into":
                forced = "line"  # into the body, as cwmdbg's `step` does
            elif (
                current.event == "call"
                and step > 0
                and kind in ("step_over", "step_return")
                and current.depth > owner_depth
            ):
                forced = "return"  # jump over a call, as cwmdbg's `next` does
            state = await self._cwm_step(forced, stats)
            if state is None or kind == "step_into":
                return
            if self._exception_stop(state, exceptions):
                return
            if (
                state.event == "line"
                and state.line in interrupt
                and kind != "breakpoint"
                and await accepted(accept, self._stop(state, hit_breakpoint=True))
            ):
                return
            if kind == "step_over" and state.depth <= owner_depth and state.event != "call":
                return
            if kind == "step_return" and returned:
                return
            if kind == "step_return" and state.event == "return" and state.depth == owner_depth:
                returned = True
            if kind == "breakpoint" and state.event == "line" and state.line in lines:
                return
        raise WorldError(f"{action} did not end within {MAX_RUN_STEPS} predicted steps")

    async def _cwm_step(self, forced: str | None, stats: StopStats) -> State | None:
        result = await self._predict(Action("step_into"), forced, stats)
        if isinstance(result, EndOfTrace):
            self.ended = True
            return None
        landed = await self._commit(result, Action("step_into"))
        self._remember(landed)
        self.timeline.append(landed)
        self.gap_before.append(False)
        self.pos = len(self.timeline) - 1
        return landed

    async def _predict(self, action: Action, forced: str | None, stats: StopStats) -> State | EndOfTrace:
        assert self.trace is not None
        tail_ids = await self._encode(self.trace.prompt_tail(action, forced))
        prompt = self._prompt(tail_ids)
        limit = await self._context_length()
        settings = self.settings
        max_tokens = settings.max_tokens
        if limit is not None:
            # A frame rarely needs the whole generation budget: keep the history while one typical
            # frame still fits, and restart the window only when it does not.
            if limit - len(prompt) < min(max_tokens, FRAME_ROOM) and len(self.frame_ids) > 1:
                await self._restart_window()
                tail_ids = await self._encode(self.trace.prompt_tail(action, forced))
                prompt = self._prompt(tail_ids)
            max_tokens = max(1, min(max_tokens, limit - len(prompt)))
        constraint = self._constraint(action, forced)
        stop_id = self.ids[FRAME_SEP]
        problems: list[str] = []
        for attempt in range(settings.retries + 1):
            temperature = settings.temperature if attempt == 0 else max(settings.temperature, 0.7)
            samples = settings.samples if attempt == 0 else max(settings.samples, 3)
            if attempt:
                self.retries += 1
            try:
                result = await self.client.complete(
                    prompt,
                    max_tokens=max_tokens,
                    stop_ids=[stop_id],
                    n=samples,
                    temperature=temperature,
                    constraint=constraint,
                )
            except ModelError as exc:
                raise WorldError(f"the model could not predict {action}: {exc}") from None
            if constraint is not None:
                self.constrained_frames += 1
                self.constrained_choices += result.constrained
            candidates: list[State | EndOfTrace] = []
            read_from = []
            for completion in result.completions:
                try:
                    candidates.append(self._read(completion.text, action, forced, constraint))
                    read_from.append(completion)
                except FormatError as exc:
                    problems.append(str(exc))
                    self.invalid_frames += 1
            chosen, agreement = _vote(candidates)
            stats.calls.append(
                CallStats(
                    str(action),
                    result.prompt_tokens,
                    result.generated_tokens,
                    result.cached_tokens,
                    result.seconds,
                    len(result.completions),
                    len(candidates),
                    agreement,
                    result.constrained,
                )
            )
            if chosen is not None:
                completion = read_from[next(k for k, c in enumerate(candidates) if c is chosen)]
                confidence = frame_confidence(completion.text, completion.offsets, completion.logprobs, completion.cuts)
                if confidence is not None and isinstance(chosen, State):
                    written = (
                        written_since(self.trace, chosen, action.kind, self.writes)
                        if self.trace is not None and self.writes is not None
                        else None
                    )
                    confidence = calibrate(confidence, self.calibration, written, chosen.event)
                self._chosen_confidence = confidence
                if isinstance(chosen, State) and confidence is not None:
                    chosen = _mark_cut(chosen, confidence)
                return chosen
        raise WorldError(
            f"the model's answer to {action} was not a valid frame after {settings.retries + 1} attempts: "
            f"{problems[-1] if problems else 'no answer'}"
        )

    def _constraint(self, action: Action, forced: str | None) -> FrameConstraint | None:
        """The frames the program allows after `action` (None: the program does not compile)."""
        if self.flow is None or self.trace is None or not self.trace.states:
            return None
        return frame_constraint(self.flow, self.trace, self.trace.states[-1], action, forced)

    def _read(
        self, text: str, action: Action, forced: str | None, constraint: FrameConstraint | None
    ) -> State | EndOfTrace:
        """A completion as a state; a FormatError says why it is not a valid frame here."""
        assert self.trace is not None
        if constraint is not None:
            if not constraint.accepts(text):  # a client that cannot constrain, or one that ran out of tokens
                if constraint.run(text, complete=False) is not None:
                    raise FormatError("the frame is incomplete (the model stopped before its end)", text)
                raise FormatError(f"not a frame the program allows after {action}", text)
            return self.trace.parse(text, action, forced, allowed=constraint.landed(text))
        # Unconstrained (a program that does not compile): a small model often misspells the line it
        # means; read it as the closest program line, and count it (reconciliation still shows any
        # real mistake).
        parsed = self.trace.parse(text, action, forced, closest_line=True)
        if not isinstance(parsed, EndOfTrace):
            self._check(parsed, action)
        if self.trace.last_repair is not None:
            self.repaired_lines += 1
        return parsed

    def _prompt(self, tail_ids: list[int]) -> list[int]:
        prompt = list(self.context_ids)
        for ids in self.frame_ids:
            prompt.extend(ids)
        prompt.extend(tail_ids)
        return prompt

    async def _context_length(self) -> int | None:
        if self._limit is None:
            self._limit = await self.client.context_length() or 0
        return self._limit or None

    async def _restart_window(self) -> None:
        """The history no longer fits the model: start a new conversation that knows the call stack
        (`format.trace.window_from`), so a return from here goes back to the caller instead of ending
        the program. Earlier frames are forgotten by the model; the session's known states stay."""
        assert self.info is not None and self.trace is not None
        old = self.trace
        current = old.states[-1]
        chain = open_chain(old, current) if current.event in ("line", "call") else [current]
        gapless = await self._cwm_run(old) if self.dialect == "cwm" else None
        if gapless is not None:
            callers, start = gapless
            chain = [*callers, *old.states[start:]]
            self.trace, seen = cwm_window(self.info, callers, old.states[start:], self.path, old.tracker.next_id)
        else:
            self.trace, seen = window_from(self.dialect, self.info, chain, self.path, old.tracker.next_id)
        self.context_ids = await self._encode(self.trace.context())
        self.frame_ids = [await self._encode(frame) for frame in self.trace.frames]
        for before, after in zip(chain, seen, strict=False):
            self._alias[after.invocation] = before.invocation
        known = self._confidence.get(id(self.timeline[self.pos]))
        if known is not None and known[0] is self.timeline[self.pos]:
            self._confidence[id(seen[-1])] = (seen[-1], known[1])
        self.timeline[self.pos] = seen[-1]
        self.windows += 1

    async def _cwm_run(self, old: TraceText) -> tuple[list[State], int] | None:
        """Where a gapless cwm history can restart: the call of the outermost open invocation whose
        frames since then fit with room for the next frame; with the latest states of the open
        invocations above it (its callers). None: no call's history fits (or the callers cannot be
        told apart, in recursion), then the window jumps down the call stack instead."""
        limit = await self._context_length()
        stack = old.tracker.stack
        current = old.states[-1]
        latest = open_chain(old, current)[:-1] if current.event in ("line", "call") else []
        for depth, open_ in enumerate(stack):
            if depth and len(latest) < depth:
                return None
            start = next(
                (
                    k
                    for k in range(len(old.states) - 1, -1, -1)
                    if old.states[k].invocation == open_.invocation and old.states[k].event == "call"
                ),
                None,
            )
            if start is None:
                continue
            size = len(self.context_ids) + sum(len(ids) for ids in self.frame_ids[start:])
            if limit is None or size + FRAME_ROOM <= limit:
                return latest[:depth], start
        return None

    def _check(self, state: State, action: Action) -> None:
        """Is the predicted frame possible here? A FormatError says why not."""
        assert self.info is not None
        source = self.info
        if (
            source.compiles
            and state.event in ("line", "return", "exception")
            and state.line not in source.executable_lines
        ):
            raise FormatError(f"line {state.line} has no code: a {state.event} event cannot happen there")
        if (
            source.compiles
            and state.event in ("line", "return", "exception")
            and not any(span.name == state.function and state.line in span.lines for span in source.spans)
        ):
            raise FormatError(
                f"line {state.line} is not in {state.function}, where this {state.event} event would happen"
            )
        if state.event == "call" and source.compiles:
            starts = any(s.first_line == state.line for s in source.spans if s.name != "<module>")
            inside_generator = any(
                s.contains(state.line) and "yield" in "\n".join(source.line_text(n) for n in s.lines)
                for s in source.spans
                if s.name != "<module>"
            )
            if not (starts or inside_generator):
                raise FormatError(f"a call event at line {state.line}, where no function starts")
        kind = action.kind
        if kind == "step_return" and not state.terminal:
            raise FormatError("step_return must land on a return or exception")
        if kind == "inv_step_return" and state.event != "call":
            raise FormatError("inv_step_return must land on a call")
        if kind == "breakpoint" and not (
            (state.event == "line" and state.line in action.lines) or (state.terminal and state.depth == 0)
        ):
            raise FormatError(f"a breakpoint action must land on line {'/'.join(map(str, action.lines))} or at the end")
        if kind == "inv_breakpoint" and not (
            (state.event == "line" and state.line in action.lines) or (state.event == "call" and state.depth == 0)
        ):
            raise FormatError(
                f"an inv_breakpoint action must land on line {'/'.join(map(str, action.lines))} or at the start"
            )
        current = self.timeline[self.pos]
        if kind == "step_over" and not current.terminal and state.event == "call":
            raise FormatError("step_over cannot land in a callee")
        for name in state.locals:
            if not (name.isidentifier() or name.startswith(".")):
                raise FormatError(f"{name!r} is not a variable name")

    # -- for a reality to correct the prediction (world/reconciled.py) -----------------------------------------
    @property
    def current(self) -> State | None:
        """The state the session stands on."""
        return self.timeline[self.pos] if self.timeline else None

    def line_text(self, line: int) -> str:
        return self.info.line_text(line) if self.info is not None else ""

    async def replace_current(self, actual: State, action: Action) -> Stop:
        """Reality says the state `action` led to is `actual`: the last prediction is taken back, the
        real state takes its place in the conversation, and prediction goes on from there."""
        assert self.trace is not None
        self.trace.pop()
        self.frame_ids.pop()
        seen = await self._commit(actual, action)
        self._forget_values(seen)
        self.timeline[self.pos] = seen
        return self._stop(seen)

    # -- presenting -------------------------------------------------------------------------------------------
    def _stop(self, state: State, hit_breakpoint: bool = False, hit_exception: bool = False) -> Stop:
        assert self.trace is not None and self.info is not None
        stack = [Frame(state.function, state.line, state.source, state.invocation, self.path, dict(state.locals))]
        for open_ in reversed(self.trace.tracker.stack[:-1]):
            known = self._latest_before(open_.invocation)
            line = known.line if known else (open_.last_line or 0)
            stack.append(
                Frame(
                    open_.function,
                    line,
                    self.info.line_text(line),
                    open_.invocation,
                    self.path,
                    dict(known.locals) if known else {},
                )
            )
        at_end = self._is_end(state)
        exit_ = None
        if at_end:
            raised = self._raised_out(state)
            exit_ = Exit(0) if raised is None else Exit(1, f"uncaught {raised} (predicted)")
        confidence = self.confidence_of(state)
        return Stop(
            line_confidence=confidence.line if confidence else None,
            local_confidence={k: v for k, v in (confidence.locals if confidence else {}).items() if k in state.locals},
            value_confidence=confidence.value if confidence and state.terminal else None,
            state=state,
            stack=tuple(stack),
            index=self.pos,
            at_start=(self.pos == 0 and state is self._entry) or (state.event == "call" and state.depth == 0),
            at_end=at_end,
            exit=exit_,
            predicted=True,
            hit_breakpoint=hit_breakpoint,
            hit_exception=hit_exception,
        )

    def _raised_out(self, end: State) -> str | None:
        """The exception the traced scope ended with (None: it returned). In cwm an exception leaving
        it is its `exception` event followed by a return (None), as sys.settrace reports it."""
        if end.event == "exception":
            return end.value
        before = self.timeline[self.pos - 1] if self.dialect == "cwm" and self.pos > 0 else None
        if before is not None and before.event == "exception" and before.depth == 0 and end.value == "None":
            return before.value
        return None

    def _remember(self, state: State) -> None:
        """The committed state carries the confidence of the prediction it came from; a local written
        `..` is as sure as the value it repeats (when that was predicted too) times `..`'s own."""
        confidence, self._chosen_confidence = self._chosen_confidence, None
        if confidence is None:
            self._forget_values(state)
            return
        chained = dict(confidence.locals)
        for name, value in state.locals.items():
            p = chained.get(name)
            if p is None or state.event not in ("call", "line"):
                continue
            before = self._value_confidence.get((state.invocation, name))
            if name in confidence.unchanged and before is not None and before[0] == value:
                p = chained[name] = p * before[1]
            self._value_confidence[(state.invocation, name)] = (value, p)
        confidence = replace(confidence, locals=chained)
        self._confidence[id(state)] = (state, confidence)
        self._predicted.append((state, confidence))

    def _forget_values(self, state: State) -> None:
        """A state that was not predicted (given, real): its values are facts for later `..`."""
        for name in state.locals:
            self._value_confidence.pop((state.invocation, name), None)

    def confidence_of(self, state: State) -> FrameConfidence | None:
        """How sure the model was of a predicted state (None: given, looked up as real, or unknown).
        A local written `..` (unchanged) has the probability the model gave `..`."""
        known = self._confidence.get(id(state))
        return known[1] if known is not None and known[0] is state else None

    def _latest_before(self, invocation: int) -> State | None:
        """A caller's frame: its latest known line state before the current position."""
        same = {invocation}
        while invocation in self._alias:  # the same invocation in an earlier window
            invocation = self._alias[invocation]
            same.add(invocation)
        for k in range(self.pos - 1, -1, -1):
            state = self.timeline[k]
            if state.invocation in same and state.event in ("call", "line"):
                return state
        return None

    def source(self, path: str) -> str | None:
        if self.info is not None and os.path.abspath(path) == os.path.abspath(self.path):
            return self.info.text
        return read_source(path)

    def summary(self) -> dict[str, Any]:
        per_stop = [s.totals() for s in self.stops[1:]]
        calls = [c for s in self.stops for c in s.calls]
        predicted = [s for s in per_stop if not s["lookup"]]
        cached = [s["cachedTokens"] for s in predicted if s["cachedTokens"] is not None]
        recomputed = [s["recomputedTokens"] for s in predicted if s["recomputedTokens"] is not None]

        def mean(values: list) -> float | None:
            return round(sum(values) / len(values), 2) if values else None

        return {
            "world": self.name,
            "dialect": self.dialect,
            "model": self.client.describe(),
            "stops": len(per_stop),
            "lookups": sum(1 for s in per_stop if s["lookup"]),
            "modelCalls": len(calls),
            "invalidFrames": self.invalid_frames,
            "retries": self.retries,
            "constrainedFrames": self.constrained_frames,
            "constrainedChoices": self.constrained_choices,
            "historyRestarts": self.windows,
            "repairedLines": self.repaired_lines,
            "meanPromptTokens": mean([s["promptTokens"] for s in predicted]),
            "meanGeneratedTokens": mean([s["generatedTokens"] for s in predicted]),
            "meanCachedTokens": mean(cached),
            "meanRecomputedTokens": mean(recomputed),
            "meanSecondsPerStop": mean([s["seconds"] for s in predicted]),
            "meanAgreement": mean([c.agreement for c in calls]),
            "confidence": self._confidence_summary(),
            "perStop": per_stop,
        }

    def _confidence_summary(self) -> dict[str, Any]:
        """Over every prediction made: how sure the model was of what it showed."""
        values: list[float] = []
        lines: list[float] = []
        cut = 0
        for state, confidence in self._predicted:
            if confidence.line is not None:
                lines.append(confidence.line)
            if state.terminal:
                values += [confidence.value] if confidence.value is not None else []
                cut += int(confidence.cut_value)
            else:
                values += [p for name, p in confidence.locals.items() if name in state.locals]
                cut += len(confidence.cut_locals)

        def mean(xs: list[float]) -> float | None:
            return round(sum(xs) / len(xs), 3) if xs else None

        return {
            "predictedValues": len(values),
            "uncertainValues": sum(1 for p in values if p < UNCERTAIN_BELOW),
            "cutValues": cut,
            "meanValueConfidence": mean(values),
            "meanLineConfidence": mean(lines),
        }

    async def close(self) -> None:
        await self.client.close()


def _served_calibration(name: str) -> Calibration | None:
    """The calibration of a served model whose name (known once the server was asked) is a model
    folder here: vLLM serves `--model neural_dap/train/embedded` under that name."""
    if not os.path.isdir(name):
        return None
    try:
        return load_calibration(name)
    except (OSError, ValueError) as exc:
        raise WorldError(str(exc)) from None


def _mark_cut(state: State, confidence: FrameConfidence) -> State:
    """A value the client ended because the model looped on it ends with the truncation mark."""
    if confidence.cut_locals and state.event in ("call", "line"):
        locals_ = {k: v + TRUNCATION_MARK if k in confidence.cut_locals else v for k, v in state.locals.items()}
        return msgspec.structs.replace(state, locals=locals_)
    if confidence.cut_value and state.value is not None:
        return msgspec.structs.replace(state, value=state.value + TRUNCATION_MARK)
    return state


def _vote(candidates: list[State | EndOfTrace]) -> tuple[State | EndOfTrace | None, float]:
    if not candidates:
        return None, 0.0

    def key(c: State | EndOfTrace):
        if isinstance(c, EndOfTrace):
            return ("end",)
        return (c.event, c.line, tuple(sorted(c.locals.items())) if c.event in ("call", "line") else (), c.value)

    counts = Counter(key(c) for c in candidates)
    best, votes = counts.most_common(1)[0]
    chosen = next(c for c in candidates if key(c) == best)
    return chosen, votes / len(candidates)
