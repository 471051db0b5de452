"""One run of a document, taken through a world model, boiled down to what an editor shows per line.

A run starts a world (the same `WorldModel` the DAP server drives) at an entry call or at the top of
the script and steps it to the end: `step_into` through a recorded execution (every line of every
call in the document), `step_over` through a predicted one (one prediction per line of the entry
function). `LineFacts` then says, for each executed line, which locals the line changed and to
what, what it returned, what it raised, and where the model's prediction disagreed with reality.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Literal

import msgspec

from neural_dap.core.actions import Action, ActionKind
from neural_dap.core.calls import call_text, same_literal
from neural_dap.core.state import State, as_traced
from neural_dap.core.world import Divergence, LaunchSpec, Stop, WorldError, WorldModel
from neural_dap.debugger.core import Debugger
from neural_dap.lsp.entries import EntryCall

FIRST_KEPT = 6  # values kept from the start of a series; the last one is always kept too
Kind = Literal["recorded", "neural"]


class Series(msgspec.Struct):
    """The values one name took at one line, in order: the first few, the last, how many."""

    first: list[str] = []
    last: str = ""
    count: int = 0

    def add(self, value: str) -> None:
        if len(self.first) < FIRST_KEPT:
            self.first.append(value)
        self.last = value
        self.count += 1

    @property
    def values(self) -> list[str]:
        """What a reader sees: the kept values, with the last after a gap when some were left out."""
        if self.count <= len(self.first):
            return list(self.first)
        return [*self.first, "…", self.last]


class LineFacts(msgspec.Struct):
    line: int
    hits: int = 0
    changed: dict[str, Series] = {}  # name -> values it took when this line ran
    seen: dict[str, Series] = {}  # name -> its values when this line started (for names only read)
    returned: Series | None = None
    raised: list[str] = []
    diverged: list[str] = []  # what the model said instead of reality when it predicted this line's effect


class Raise(msgspec.Struct, frozen=True):
    line: int
    value: str
    caught: bool


class Run(msgspec.Struct):
    """The facts of one run; `error` says why it stopped early (a world that failed, a limit)."""

    kind: Kind
    entry: EntryCall | None  # None: the whole script
    lines: dict[int, LineFacts] = {}
    steps: int = 0
    returned: str | None = None
    raises: list[Raise] = []
    divergences: list[tuple[int, str]] = []  # (line, what differs), in order
    ended: str = ""  # how the run ended, in words
    error: str | None = None
    seconds: float = 0.0
    truncated: bool = False

    @property
    def label(self) -> str:
        return self.entry.label if self.entry else "this script"


class FoundInput(msgspec.Struct, frozen=True):
    """An input the model proposes for an output, and what a real run of it returned."""

    entry: EntryCall
    args: str | None  # the call's argument text (literals only), or None
    predicted_locals: dict[str, str] = {}
    verified: bool | None = None  # None: not checked (not literals, or no reality asked for)
    actual: str | None = None
    error: str | None = None


Progress = Callable[[int], Awaitable[None] | None]


class _Facts:
    """Builds `LineFacts` from states in timeline order (one pass, bounded memory)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lines: dict[int, LineFacts] = {}
        self.open_line: dict[int, State | None] = {}  # invocation -> its line that is running
        self.last: State | None = None
        self.raises: list[Raise] = []
        self.divergences: list[tuple[int, str]] = []

    def line(self, number: int) -> LineFacts:
        facts = self.lines.get(number)
        if facts is None:
            facts = self.lines[number] = LineFacts(number, changed={}, seen={}, raised=[], diverged=[])
        return facts

    def add(self, state: State, divergences: tuple[Divergence, ...] = ()) -> None:
        state = as_traced(state)  # (a module's data: not its dunders, imports, functions and classes)
        mine = not state.path or state.path == self.path
        running = self.open_line.get(state.invocation)
        if running is not None and mine:
            facts = self.line(running.line)
            for name, value in state.locals.items():
                if running.locals.get(name) != value:
                    facts.changed.setdefault(name, Series(first=[])).add(value)
        if divergences and mine:
            where = running.line if running is not None else state.line
            self.line(where).diverged.extend(_compact(d) for d in divergences)
            self.divergences.extend((where, d.describe()) for d in divergences)
        if mine:
            self._event(state)
        self.open_line[state.invocation] = state if state.event == "line" else None
        self.last = state

    def _event(self, state: State) -> None:
        facts = self.line(state.line)
        if state.event == "line":
            facts.hits += 1
            for name, value in state.locals.items():
                facts.seen.setdefault(name, Series(first=[])).add(value)
        elif state.event == "return" and state.value is not None:
            if facts.returned is None:
                facts.returned = Series(first=[])
            facts.returned.add(state.value)
        elif state.event == "exception" and state.value is not None and not self._propagating(state):
            facts.raised.append(state.value)
            self.raises.append(Raise(state.line, state.value, caught=True))

    def _propagating(self, state: State) -> bool:
        """An exception event in a caller, for the one its callee raised (not a raise of its own)."""
        last = self.last
        return last is not None and last.depth > state.depth and last.event in ("exception", "return")

    def finish(self, uncaught: bool) -> list[Raise]:
        if uncaught and self.raises:
            last = self.raises[-1]
            self.raises[-1] = Raise(last.line, last.value, caught=False)
        return self.raises


async def run_world(
    world: WorldModel,
    launch: LaunchSpec,
    kind: Kind,
    entry: EntryCall | None,
    *,
    action: ActionKind,
    max_steps: int,
    progress: Progress | None = None,
) -> Run:
    """Step `world` from the launch to its end (or `max_steps`) and gather the facts of each line."""
    started = time.perf_counter()
    facts = _Facts(launch.program)
    run = Run(kind, entry, lines={}, raises=[], divergences=[])
    stop: Stop | None = None
    debugger = Debugger(lambda _launch: world)  # the core every front end drives, here one state at a time
    try:
        stop = await debugger.start(launch)
        facts.add(stop.state, stop.divergences)
        while not stop.at_end and run.steps < max_steps:
            stop = await debugger.act(Action(action))
            run.steps += 1
            facts.add(stop.state, stop.divergences)
            if progress is not None:
                maybe = progress(run.steps)
                if maybe is not None:
                    await maybe
    except WorldError as exc:
        run.error = str(exc)
    finally:
        if debugger.world is None:  # it failed to start: the core never held it
            await world.close()
        else:
            await debugger.close()
    run.lines = facts.lines
    run.divergences = facts.divergences
    uncaught = stop is not None and stop.at_end and stop.state.event == "exception"
    run.raises = facts.finish(uncaught)
    if stop is not None and stop.at_end:
        run.returned = stop.state.value if stop.state.event == "return" else None
        run.ended = _ending(stop)
    elif run.error is None:
        run.truncated = True
        run.ended = f"stopped after {run.steps} steps (the run goes on)"
    else:
        run.ended = f"stopped after {run.steps} steps: {run.error}"
    run.seconds = time.perf_counter() - started
    return run


def _compact(divergence: Divergence) -> str:
    """What the model said, short enough for the end of a line."""
    if divergence.kind in ("local", "missing", "extra") and divergence.name:
        if divergence.predicted is None:
            return f"{divergence.name} not set"
        return f"{divergence.name} ≈ {divergence.predicted}"
    if divergence.kind in ("value", "line", "event"):
        return f"{divergence.kind} ≈ {divergence.predicted}"
    return divergence.describe()


def _ending(stop: Stop) -> str:
    if stop.exit is not None and stop.exit.description:
        return stop.exit.description
    if stop.state.event == "return" and stop.state.value is not None and stop.state.depth == 0:
        return f"returned {stop.state.value}"
    return "finished"


async def find_input(
    world: WorldModel,
    launch: LaunchSpec,
    entry: EntryCall,
    source: str,
    verify: Callable[[str], Awaitable[str | None]] | None,
) -> FoundInput:
    """Start at `entry`'s return value and step back to its call: the call's locals are the input.

    `verify(args)` runs the function on that input for real and gives its return value (or None).
    """
    try:
        await world.start(launch)
        stop = await world.act(Action("inv_step_return"))
    except WorldError as exc:
        return FoundInput(entry, None, error=str(exc))
    finally:
        await world.close()
    if stop.state.event != "call":
        return FoundInput(entry, None, error="stepping back did not reach the call")
    found = dict(stop.state.locals)
    args = call_text(source, found, entry.function)
    if args is None:
        return FoundInput(entry, None, found, error="the predicted arguments are not all literals")
    if verify is None or entry.returns is None:
        return FoundInput(entry, args, found)
    actual = await verify(args)
    return FoundInput(entry, args, found, verified=same_literal(actual, entry.returns), actual=actual)
