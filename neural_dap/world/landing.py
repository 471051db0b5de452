"""Where an action can land, read from the program alone: the candidates of program-aware decoding.

The meaning of each action is defined on recorded executions (`trace.tree`); here is its static
mirror image, over the control flow of the program (`core.flow`), for a program that has not run:

  step_into        the line's successors in its function, and the calls the line makes; from a
                   call, the function's first events; from a return, what follows in the caller
  step_over        the same, without the calls
  step_return      the function's return lines (or an exception anywhere in it)
  continue         the end of the traced scope
  breakpoint(L)    the listed lines that can run, or the end
  inv_step_*       the mirror images: predecessors, the call, callees' returns
  inv_breakpoint   the listed lines, or the start

Each candidate (event, line) becomes a `FrameContext`: the invocation the trace text would assign
to it, and what its locals may hold. Where the program does not compile, or a frame's function is
not found, there is no constraint (None) and the world falls back to checking what the model wrote.
"""

from __future__ import annotations

from neural_dap.core.actions import Action
from neural_dap.core.flow import CodeFacts, Landing, ProgramFlow
from neural_dap.core.state import State
from neural_dap.format.grammar import FrameConstraint, FrameContext
from neural_dap.format.trace import TraceText


def frame_constraint(
    flow: ProgramFlow, trace: TraceText, current: State, action: Action, forced: str | None = None
) -> FrameConstraint | None:
    """The frames a model may write after `action` from `current` (the trace's latest frame)."""
    if not flow.available:
        return None
    found = candidate_landings(flow, trace, current, action)
    if found is None:
        return None
    landings, end = found
    if forced == "return" and current.event == "call" and not action.inverse:
        # cwmdbg's `next` over a call: the callee's return comes at once (any of its return lines)
        landings = set().union(*(_ends(c) for c in codes_holding(flow, current.function, current.line, "call")))
    if forced is not None:
        landings = {landing for landing in landings if landing[0] == forced}
        end = False
    contexts = _contexts(flow, trace, action, landings)
    if not contexts and not end:
        return None
    return FrameConstraint(trace.source, contexts, end=end, forced_event=forced)


def candidate_landings(
    flow: ProgramFlow, trace: TraceText, current: State, action: Action
) -> tuple[set[Landing], bool] | None:
    """(event, line) candidates and whether the end of the trace may be predicted; None: unknown.

    A line shared by several code objects (a lambda or generator expression inside a function, a
    `def` line run by the module) may be attributed to any of them by the trace text, which writes
    no function names: the candidates are the union over all of them.
    """
    stack = trace.tracker.stack
    codes = codes_holding(flow, current.function, current.line, current.event)
    if not codes or not stack:
        return None
    callers: list[CodeFacts] = []
    caller_line = None
    if len(stack) > 1 and stack[-2].last_line:
        caller_line = stack[-2].last_line
        callers = codes_holding(flow, stack[-2].function, caller_line, "line")
    # Where a return can land: the caller's line (its latest frame's), and every other statement
    # of the program that calls this function: after a jump into a callee (a breakpoint in it),
    # the trace text does not know who called it.
    sites = {(code, line) for code in callers for line in ([caller_line] if caller_line else [])}
    for code in codes:
        sites |= set(flow.call_sites(code))
    roots = codes_holding(flow, stack[0].function, trace.entry_line, "call")
    ends = set().union(*(_ends(r) for r in roots)) if roots else set()
    kind = action.kind
    at_top = len(stack) == 1
    out: set[Landing] = set()
    if kind in ("step_into", "step_over"):
        calls = kind == "step_into"
        if current.event == "call":
            for code in codes:
                out |= _entry(code, current.line)
        elif current.event == "line":
            for code in codes:
                out |= set(code.can_follow(current.line))
            if calls:
                out |= set(flow.calls_from(current.line))
        elif not trace.tracker.leaves(current.event):
            # cwm: an exception passing through this frame; a handler here goes on, else the
            # frame returns (None) at the same line and the caller gets the exception
            for code in codes:
                out |= set(code.can_follow(current.line)) | {("return", current.line)}
        else:
            for code, line in sites:
                out |= set(code.can_follow(line))
                if calls:
                    out |= set(flow.calls_from(line))
            return out, at_top
        return out, False
    if kind == "step_return":
        if not current.terminal:
            return set().union(*(_ends(c) for c in codes)), False
        return set().union(*(_ends(code) for code, _ in sites)), at_top
    if kind == "continue":
        return ends, False
    if kind == "breakpoint":
        runnable = {line for line in action.lines if flow.code_at_line(line)}
        return {("line", line) for line in runnable} | ends, False
    if kind == "inv_breakpoint":
        runnable = {line for line in action.lines if flow.code_at_line(line)}
        return {("line", line) for line in runnable} | {("call", r.first_line) for r in roots}, False
    if kind == "inv_step_return":
        owners = {code for code, _ in sites} if current.event == "call" else set(codes)
        return (set().union(*(_calls_of(c) for c in owners)), False) if owners else None
    if kind in ("inv_step_over", "inv_step_into"):
        callees = kind == "inv_step_into"
        if current.event == "call":
            lines = {line for _, line in sites}
            if not lines:
                return None
            out = {("line", line) for line in lines}
            if callees:
                for line in lines:
                    out |= _callee_ends(flow, line)
            return out, False
        for code in codes:
            before = _before(code, current)
            out |= {("line", line) for line in before}
            if _follows_call(code, current):
                out |= _calls_of(code)
            if callees:
                for line in before | {current.line}:
                    out |= _callee_ends(flow, line)
        return out, False
    return None


def codes_holding(flow: ProgramFlow, function: str, line: int, event: str) -> list[CodeFacts]:
    """The code objects a state of `function` at `line` may belong to: the named one where it holds
    the line alone; on a line several code objects share, all of them."""
    named = flow.code_for(function, line, event)
    if event == "call":
        if named is not None and (named.first_line == line or line in named.yields):
            return [named]
        others = [c for c in flow.codes if c.first_line == line or line in c.yields]
    else:
        others = flow.code_at_line(line)
        if named is not None and line in named.lines and len(others) <= 1:
            return [named]
    out = [named] if named is not None else []
    return out + [c for c in others if c is not named]


def _entry(code: CodeFacts, line: int) -> set[Landing]:
    if line == code.first_line or code.kind == "module":  # a module's call: line 1, or 0 (settrace, 3.11)
        return set(code.entry)
    return set(code.can_follow(line)) | {("line", line)}  # a generator resumed at a yield


def _ends(code: CodeFacts) -> set[Landing]:
    return {("return", line) for line in code.returns} | {("exception", line) for line in code.lines}


def _calls_of(code: CodeFacts) -> set[Landing]:
    return {("call", code.first_line)} | {("call", line) for line in code.yields}


def _callee_ends(flow: ProgramFlow, line: int) -> set[Landing]:
    out: set[Landing] = set()
    for _event, first in flow.calls_from(line):
        for callee in flow.codes:
            if callee.first_line == first or first in callee.yields:
                out |= _ends(callee)
    return out


def _before(code: CodeFacts, current: State) -> set[int]:
    """Lines whose line event can come just before `current` in the same invocation."""
    if current.event == "line":
        return set(code.predecessors.get(current.line, ()))
    if current.event == "return":
        return {line for line, landings in code.successors.items() if ("return", current.line) in landings}
    return set(code.lines)  # an exception can follow any line


def _follows_call(code: CodeFacts, current: State) -> bool:
    landing = (current.event, current.line)
    return (
        landing in code.entry or current.event == "exception" or any(landing in code.can_follow(y) for y in code.yields)
    )


def _contexts(flow: ProgramFlow, trace: TraceText, action: Action, landings: set[Landing]) -> list[FrameContext]:
    """One context per (event, invocation): the lines, and what the locals may hold there."""
    grouped: dict[tuple, list[int]] = {}
    guessed: set[tuple] = set()
    for event, line in sorted(landings):
        snapshot = trace.tracker.snapshot()
        try:
            invocation, _depth, function = trace.tracker.advance(action.kind, event, line)
            certain = trace.tracker.stack[-1].certain
        finally:
            trace.tracker.restore(snapshot)
        key = (event, invocation, function)
        grouped.setdefault(key, []).append(line)
        if not certain or len(flow.code_at_line(line)) > 1:
            guessed.add(key)
    contexts = []
    for (event, invocation, function), lines in grouped.items():
        if event in ("return", "exception"):
            contexts.append(FrameContext(event, tuple(lines)))
            continue
        codes: list[CodeFacts] = []
        for line in lines:
            codes += [c for c in codes_holding(flow, function, line, event) if c not in codes]
        if not codes:
            continue  # a line no code object holds: not a landing the program allows
        shadow = trace.shadow.get(invocation) if event != "call" or action.inverse else None
        shadow_keys = tuple(shadow or ())
        names: list[str] = []
        for code in codes:
            names += [n for n in _names(code, event, lines) if n not in names]
        first_call = event == "call" and all(line == codes[0].first_line for line in lines) and not codes[0].yields
        ordered = len(codes) == 1 and codes[0].ordered and (event != "call" or first_call)
        # After a step back, an invocation's latest frame in the text may be from later than where
        # this one lands; after a jump, or on a line two code objects share, the text may put the
        # frame in another invocation than the real one: then its keys need not all be there, nor
        # in that order (they are still names the scope can bind, and ".." still needs a value).
        loose = action.inverse or trace.went_back or (event, invocation, function) in guessed
        deletable = frozenset(shadow_keys) if loose else frozenset().union(*(c.deletable for c in codes))
        contexts.append(
            FrameContext(event, tuple(lines), shadow_keys, deletable, tuple(names), ordered and not loose, loose)
        )
    return contexts


def _names(code: CodeFacts, event: str, lines: list[int]) -> tuple[str, ...]:
    if (
        event == "call"
        and code.kind == "function"
        and not code.yields
        and all(line == code.first_line for line in lines)
    ):
        # a call shows the arguments (and a closure's variables), in CPython's order
        wanted = set(code.params) | set(code.freevars)
        return tuple(n for n in code.names if n in wanted)
    return code.names
