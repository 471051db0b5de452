"""Render program states as trace text (CWM's format and our `nd` extension) and parse them back.

One `TraceText` is one trace conversation: the program context, then frames. It renders known
frames (recorded ones, or the given entry state) and parses model completions into States, keeping
the per-invocation shadow of full locals that `".."` refers to. Parsing is `json.loads` plus string
matching: model text is never evaluated. Every failure is a `FormatError` saying what and where.

cwm:  <|begin_of_text|><|trace_context_start|>SOURCE<|frame_sep|>FRAME<|frame_sep|>FRAME<|frame_sep|>...
      (CWM's own traces: SOURCE is the file as it is; frames are sys.settrace's events on CPython 3.11,
      so an exception frame does not end its invocation, a return does; a module's call is not
      written. docs/design-notes.md, "CWM-exact traces", says where each rule comes from.)
nd:   ... FRAME<|frame_sep|>ACTION FRAME<|frame_sep|>ACTION FRAME<|frame_sep|> ...
call / line:         <|call_sep|>LOCALS<|action_sep|>SOURCE_LINE
return / exception:  <|return_sep|><|action_sep|>SOURCE_LINE<|arg_sep|>VALUE
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Literal

from neural_dap.core.actions import Action
from neural_dap.core.source import SourceInfo, mark_as_written
from neural_dap.core.state import State, as_traced
from neural_dap.format.invocations import InvocationTracker
from neural_dap.format.tokens import (
    ACTION_SEP,
    ACTION_TOKENS,
    ARG_SEP,
    BEGIN,
    CONTEXT_START,
    END,
    EVENT_TOKENS,
    FRAME_SEP,
    TOKEN_EVENTS,
    Segment,
    Special,
    split_specials,
)

Dialect = Literal["cwm", "nd"]
DIALECTS: tuple[Dialect, ...] = ("cwm", "nd")
DOTS = ".."


class FormatError(ValueError):
    """Model text that is not a valid frame: what was wrong, and where in the text."""

    def __init__(self, what: str, text: str = "", position: int | None = None) -> None:
        self.what = what
        self.text = text
        self.position = position
        where = f" at character {position}" if position is not None else ""
        snippet = text if len(text) <= 160 else text[:160] + "..."
        super().__init__(f"{what}{where} of {snippet!r}" if text else what)


class EndOfTrace:
    """The model predicted `<|end_of_text|>`: the traced scope has ended."""

    def __repr__(self) -> str:
        return "EndOfTrace"


END_OF_TRACE = EndOfTrace()


@dataclass
class _Parsed:
    event: str
    source_text: str
    raw_locals: dict[str, str] | None
    value: str | None


@dataclass
class TraceText:
    dialect: Dialect
    source: SourceInfo
    entry_line: int
    path: str = ""
    entry_function: str | None = None
    shown_lines: frozenset[int] | None = None  # the source lines the context shows (None: all)
    tracker: InvocationTracker = field(init=False)
    shadow: dict[int, dict[str, str]] = field(default_factory=dict)
    frames: list[list[Segment]] = field(default_factory=list)  # rendered frames, action tokens included
    states: list[State] = field(default_factory=list)
    _undo: list[tuple] = field(default_factory=list)  # per frame: tracker snapshot and the shadow it replaced
    last_repair: tuple[str, int] | None = field(default=None, init=False)  # set by parse(closest_line=True)
    went_back: bool = field(
        default=False, init=False
    )  # a frame was reached by an inverse action: shadows may be from later

    def __post_init__(self) -> None:
        if self.dialect not in DIALECTS:
            raise ValueError(f"unknown dialect {self.dialect!r}; expected cwm or nd")
        self.tracker = InvocationTracker(
            self.source, entry_function=self.entry_function, exception_leaves=self.dialect == "nd"
        )

    # -- rendering -------------------------------------------------------------------------------
    def context(self) -> list[Segment]:
        if self.dialect == "cwm":  # the file as it is, as cwmdbg sends it (never cropped)
            return [BEGIN, CONTEXT_START, mark_as_written(self.source.text, self.entry_line), FRAME_SEP]
        return [BEGIN, CONTEXT_START, self.source.with_start_marker(self.entry_line, self.shown_lines), FRAME_SEP]

    def writes(self, state: State) -> bool:
        """Is `state` a frame of the text? In cwm a module's `call` is not: sys.settrace reports it
        at line 0 on CPython 3.11 (no source line), and a `call` frame at a def line would read as a
        call of that function; a whole script's trace starts at the module's first line event."""
        return not (self.dialect == "cwm" and state.event == "call" and state.function == "<module>")

    def action_segments(self, action: Action | None) -> list[Segment]:
        """What the nd dialect writes before a frame reached by `action` (nothing in cwm)."""
        if self.dialect != "nd" or action is None or not self.frames:
            return []
        token = ACTION_TOKENS[action.kind]
        if action.kind in ("breakpoint", "inv_breakpoint"):
            return [token, ",".join(map(str, action.lines)), ARG_SEP]
        return [token]

    def frame_segments(self, state: State, shadow: dict[str, str] | None) -> list[Segment]:
        event_token = EVENT_TOKENS[state.event]
        line_text = state.source + "\n"
        if state.event in ("call", "line"):
            shown = {k: (DOTS if shadow is not None and shadow.get(k) == v else v) for k, v in state.locals.items()}
            return [event_token, json.dumps(shown), ACTION_SEP, line_text, FRAME_SEP]
        return [event_token, ACTION_SEP, line_text, ARG_SEP, json.dumps(state.value or ""), FRAME_SEP]

    def append(self, state: State, action: Action | None = None, *, unwritten: bool = False) -> State:
        """Add a known frame (the entry state, a recorded one, or a parsed one to commit).

        Returns the state as the trace text sees it: invocation, depth and function as a reader
        of the text infers them. `unwritten`: the state opens its invocation for the reader (a caller
        of where a restarted history begins) but is not in the text; so nothing of it is `..` later.
        """
        state = as_traced(state)
        kind = action.kind if action is not None else "step_into"
        snapshot = self.tracker.snapshot()
        inv, depth, function = self.tracker.advance(kind, state.event, state.line)
        shadow = self.shadow.get(inv)
        self._undo.append((snapshot, inv, shadow, self.went_back))
        if action is not None and action.inverse:
            self.went_back = True
        written = self.writes(state) and not unwritten
        segments = self.action_segments(action) + self.frame_segments(state, shadow) if written else []
        if state.event in ("call", "line") and written:
            self.shadow[inv] = dict(state.locals)
        self.frames.append(segments)
        seen = State(
            event=state.event,
            line=state.line,
            source=state.source,
            function=function,
            depth=depth,
            invocation=inv,
            locals=dict(state.locals) if state.event in ("call", "line") else dict(self.shadow.get(inv, {})),
            value=state.value,
            path=state.path or self.path,
        )
        self.states.append(seen)
        return seen

    def pop(self) -> State:
        """Take the last frame back (to replace a prediction with the real state)."""
        if not self.frames:
            raise IndexError("no frame to take back")
        snapshot, inv, shadow, self.went_back = self._undo.pop()
        self.tracker.restore(snapshot)
        if shadow is None:
            self.shadow.pop(inv, None)
        else:
            self.shadow[inv] = shadow
        self.frames.pop()
        return self.states.pop()

    def segments(self) -> list[Segment]:
        out = self.context()
        for frame in self.frames:
            out.extend(frame)
        return out

    def text(self) -> str:
        return "".join(self.segments())

    def prompt_tail(self, action: Action | None, forced_event: str | None = None) -> list[Segment]:
        """What follows the frames so far in a prompt that asks for the frame after `action`."""
        out = self.action_segments(action)
        if forced_event is not None:
            out.append(EVENT_TOKENS[forced_event])
        return out

    # -- parsing ---------------------------------------------------------------------------------
    def parse(
        self,
        completion: str,
        action: Action | None = None,
        forced_event: str | None = None,
        *,
        closest_line: bool = False,
        allowed: frozenset[tuple[str, int]] | None = None,
    ) -> State | EndOfTrace:
        """Parse one model completion (the text after the prompt, up to the frame separator).

        Does not change the trace: call `append` with the result to commit it. With `closest_line`, a
        source line that is not in the program is read as the program line most like it (see
        `SourceInfo.closest_line`); `self.last_repair` then says which text was replaced. `allowed`
        (event, line) pairs settle which of several lines with the same text is meant (what a
        decoding constraint let the model choose).
        """
        self.last_repair = None
        parsed = self._split(completion, forced_event)
        if parsed is None:
            return END_OF_TRACE
        if closest_line and parsed.source_text.endswith("\n") and not self.source.lines_matching(parsed.source_text):
            near = self.source.closest_line(parsed.source_text)
            if near is not None:
                self.last_repair = (parsed.source_text.rstrip("\n"), near)
                parsed = replace(parsed, source_text=self.source.line_text(near) + "\n")
        kind = action.kind if action is not None else "step_into"
        line, inv, depth, function = self._locate(parsed, kind, completion, allowed)
        if parsed.raw_locals is not None:
            shadow = self.shadow.get(inv, {})
            resolved: dict[str, str] = {}
            for name, value in parsed.raw_locals.items():
                if value == DOTS:
                    if name not in shadow:
                        raise FormatError(
                            f"local {name!r} is written '..' but has no earlier value in this invocation", completion
                        )
                    resolved[name] = shadow[name]
                else:
                    resolved[name] = value
        else:
            resolved = dict(self.shadow.get(inv, {}))
        return State(
            event=parsed.event,  # type: ignore[arg-type]
            line=line,
            source=self.source.line_text(line),
            function=function,
            depth=depth,
            invocation=inv,
            locals=resolved,
            value=parsed.value,
            path=self.path,
        )

    def _split(self, completion: str, forced_event: str | None) -> _Parsed | None:
        segments = split_specials(completion)
        positions = []
        pos = 0
        for seg in segments:
            positions.append(pos)
            pos += len(seg)
        # the frame ends at the first frame separator (a server may return it, or run past it)
        if FRAME_SEP in segments:
            cut = segments.index(FRAME_SEP)
            segments, positions = segments[:cut], positions[:cut]
        if forced_event is not None:
            segments = [EVENT_TOKENS[forced_event], *segments]
            positions = [0, *positions]
        if not segments:
            raise FormatError("empty frame: expected an event token", completion, 0)
        head = segments[0]
        if head == END:
            return None
        if not isinstance(head, Special) or head not in TOKEN_EVENTS:
            raise FormatError(
                "a frame must start with an event token (call/line/return/exception)", completion, positions[0]
            )
        event = TOKEN_EVENTS[head]
        rest = segments[1:]
        rest_pos = positions[1:]

        def expect_special(i: int, token: str) -> None:
            if i >= len(rest) or rest[i] != token:
                where = rest_pos[i] if i < len(rest_pos) else len(completion)
                raise FormatError(f"expected {token} in a {event} frame", completion, where)

        def text_at(i: int, what: str) -> str:
            if i >= len(rest) or isinstance(rest[i], Special):
                where = rest_pos[i] if i < len(rest_pos) else len(completion)
                raise FormatError(f"expected {what} in a {event} frame", completion, where)
            return rest[i]

        if event in ("call", "line"):
            if rest and rest[0] == ACTION_SEP:
                raise FormatError(f"a {event} frame needs its locals before {ACTION_SEP}", completion, rest_pos[0])
            raw = text_at(0, "the locals (a JSON object)")
            expect_special(1, ACTION_SEP)
            line_text = text_at(2, "the source line")
            if len(rest) > 3:
                raise FormatError(f"unexpected {rest[3]!r} after the source line", completion, rest_pos[3])
            return _Parsed(event, line_text, _parse_locals(raw, completion, rest_pos[0]), None)
        expect_special(0, ACTION_SEP)
        line_text = text_at(1, "the source line")
        expect_special(2, ARG_SEP)
        value_text = text_at(3, "the value")
        if len(rest) > 4:
            raise FormatError(f"unexpected {rest[4]!r} after the value", completion, rest_pos[4])
        try:
            value = json.loads(value_text)
        except (ValueError, RecursionError) as exc:
            raise FormatError(
                f"the value is not a JSON string ({type(exc).__name__})", completion, rest_pos[3]
            ) from None
        if not isinstance(value, str):
            raise FormatError("the value must be a JSON string (a repr)", completion, rest_pos[3])
        return _Parsed(event, line_text, None, value)

    def _locate(
        self, parsed: _Parsed, action_kind: str, completion: str, allowed: frozenset[tuple[str, int]] | None = None
    ) -> tuple[int, int, int, str]:
        """Which line is it, and which invocation? Ambiguous source text is settled by structure."""
        if not parsed.source_text.endswith("\n"):
            raise FormatError("the source line must end with a newline", completion)
        candidates = self.source.lines_matching(parsed.source_text)
        if allowed:
            candidates = [line for line in candidates if (parsed.event, line) in allowed] or candidates
        if not candidates:
            raise FormatError(f"the source line {parsed.source_text.rstrip()!r} is not in the program", completion)
        best = None
        for line in candidates:
            snap = self.tracker.snapshot()
            try:
                inv, depth, function = self.tracker.advance(action_kind, parsed.event, line)
                previous = self.tracker.previous_line
            finally:
                self.tracker.restore(snap)
            score = _score(self.source, parsed.event, line, function, previous)
            if best is None or score < best[0]:
                best = (score, line, inv, depth, function)
        assert best is not None
        return best[1], best[2], best[3], best[4]


def _score(source: SourceInfo, event: str, line: int, function: str, previous: int | None) -> tuple:
    consistent = 0 if source.function_at(line, starting=event == "call") == function else 1
    if previous is None:
        return (consistent, 0, line)
    if event in ("return", "exception"):
        return (consistent, 0 if line == previous else 1, abs(line - previous))
    forward = line - previous if line > previous else 1_000_000 + previous - line
    return (consistent, 0, forward)


def _parse_locals(raw: str, completion: str, position: int) -> dict[str, str]:
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise FormatError(f"the locals are not valid JSON ({exc})", completion, position) from None
    except RecursionError:
        raise FormatError("the locals are nested too deeply", completion, position) from None
    if not isinstance(value, dict):
        raise FormatError("the locals must be a JSON object", completion, position)
    for name, text in value.items():
        if not isinstance(text, str):
            raise FormatError(f"local {name!r} must be a repr string, got {type(text).__name__}", completion, position)
    return value


def entry_line(dialect: Dialect, source: SourceInfo, first: State, following: State | None = None) -> int:
    """The line the start marker goes on: the entry function's def line (its call frame's line).
    A whole script in cwm starts at the module's first line event (`following`, else the first
    line the module has code on), where its trace starts."""
    if dialect == "cwm" and first.function == "<module>":
        if first.event != "call":
            return first.line  # a module has no def line: its trace starts at a line event
        if following is not None and following.function == "<module>":
            return following.line
        return source.module_first_line() or first.line
    return first.line if first.event == "call" else (source.def_line(first.function) or first.line)


def cwm_window(
    source: SourceInfo, callers: list[State], run: list[State], path: str = "", first_id: int = 0
) -> tuple[TraceText, list[State]]:
    """A new cwm conversation for a history that no longer fits: CWM's traces have no gaps, so it is
    `run`, consecutive states from a call (whose def line carries the marker) to now, written as
    they happened. The open `callers` of that call (outermost first, each its latest state) are
    known to the reader but not written: a return from the call goes back to them, and their next
    frames are written in full. Returns the trace and the states (callers, then run) as it sees them."""
    first = callers[0] if callers else run[0]
    trace = TraceText("cwm", source, run[0].line, path=path, entry_function=first.function)
    trace.tracker.next_id = first_id
    seen = [
        trace.append(state, Action.at_lines("breakpoint", [state.line]) if k else None, unwritten=True)
        for k, state in enumerate(callers)
    ]
    seen += [trace.append(state, Action("step_into") if callers or k else None) for k, state in enumerate(run)]
    return trace, seen


def open_chain(trace: TraceText, current: State) -> list[State]:
    """The latest frame of each invocation open under `current`, outermost first, then `current`;
    just `[current]` where a breakpoint jump could not tell the invocations apart (recursion)."""
    latest: dict[int, State] = {}
    for state in trace.states:
        if state.event in ("call", "line"):
            latest[state.invocation] = state
    chain: list[State] = []
    functions = {current.function}
    for open_ in trace.tracker.stack[:-1]:
        known = latest.get(open_.invocation)
        if known is None or known.function in functions:
            return [current]
        functions.add(known.function)
        chain.append(known)
    return [*chain, current]


def window_from(
    dialect: Dialect, source: SourceInfo, chain: list[State], path: str = "", first_id: int = 0
) -> tuple[TraceText, list[State]]:
    """A new conversation for a history that no longer fits a model's context: it starts at
    `chain[0]` and jumps (breakpoint actions) to each next state, down the open call stack, so a
    reader still knows how deep the last state is. Returns the trace and the states as it sees them."""
    first = chain[0]
    line = entry_line(dialect, source, first, chain[1] if len(chain) > 1 else None)
    trace = TraceText(dialect, source, line, path=path, entry_function=first.function)
    trace.tracker.next_id = first_id  # invocation ids stay unique across windows
    seen = [trace.append(first)]
    for state in chain[1:]:
        action = Action("step_into") if state.event == "call" else Action.at_lines("breakpoint", [state.line])
        seen.append(trace.append(state, action))
    return trace, seen


def render_trace(
    states: list[State],
    dialect: Dialect,
    source: SourceInfo,
    path: str = "",
    actions: list[Action | None] | None = None,
) -> TraceText:
    """A whole trace as text: states[0] is the entry state, actions[i] led to states[i]."""
    first = states[0]
    line = entry_line(dialect, source, first, states[1] if len(states) > 1 else None)
    trace = TraceText(dialect, source, line, path=path, entry_function=first.function)
    for i, state in enumerate(states):
        trace.append(state, actions[i] if actions is not None and i > 0 else None)
    return trace
