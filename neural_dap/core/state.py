"""Program states: the vocabulary every layer of neural-dap shares.

A `State` is one trace event as `sys.settrace` sees it. The recorder produces them from a real run,
the format parser produces them from model text, the DAP layer presents them. Nothing here imports
anything of the project.
"""

from __future__ import annotations

from typing import Literal

import msgspec

Event = Literal["call", "line", "return", "exception"]
EVENTS: tuple[Event, ...] = ("call", "line", "return", "exception")
TERMINAL_EVENTS: frozenset[str] = frozenset({"return", "exception"})

# A repr cut to its limit ends with this mark, so users and parsers can tell it is incomplete.
TRUNCATION_MARK = "\u2026"


class Value(msgspec.Struct, frozen=True, omit_defaults=True):
    """A structured view of one value for an expandable variables tree (bounded depth and length)."""

    repr: str
    type: str = ""
    children: tuple[tuple[str, Value], ...] = ()
    more: int = 0  # children left out by the bound


class State(msgspec.Struct, frozen=True, omit_defaults=True):
    """One program state: an event at a line of one invocation, with the locals a debugger shows."""

    event: Event
    line: int
    source: str  # the whole source line, indentation kept, without its newline
    function: str
    depth: int  # 0 for the traced scope's entry
    invocation: int  # which call of which function; unique within one execution
    locals: dict[str, str] = {}  # name -> repr; for `line` events the values before the line runs
    value: str | None = None  # repr of the return value / exception (return and exception only)
    path: str = ""
    stdout: str = ""  # written since the previous state
    stderr: str = ""
    values: dict[str, Value] = {}  # structured children of locals that are not plain literals
    caught: str | None = None  # an exception raised and handled just before this state
    thread: int = 0  # the thread it ran in, numbered in the order threads first ran traced code

    @property
    def terminal(self) -> bool:
        return self.event in TERMINAL_EVENTS

    def format_view(self) -> tuple:
        """The fields the trace format carries: what a render -> parse round trip must preserve."""
        carries_locals = self.event in ("call", "line")
        return (
            self.event,
            self.line,
            self.source,
            self.function,
            self.depth,
            self.invocation,
            dict(self.locals) if carries_locals else {},
            self.value,
        )


_MODULE_TEXT = "<module '"


def as_traced(state: State) -> State:
    """The state as a trace shows it: a module's frame without the modules it imported. A debugger
    shows them among the module's variables (debugpy does); a trace leaves them out, as the traces
    the neural debugger learned from (and CWM's) do, so a model is neither shown nor asked for them."""
    if state.function != "<module>" or not any(text.startswith(_MODULE_TEXT) for text in state.locals.values()):
        return state
    kept = {name: text for name, text in state.locals.items() if not text.startswith(_MODULE_TEXT)}
    return msgspec.structs.replace(state, locals=kept)


class Frame(msgspec.Struct, frozen=True, omit_defaults=True):
    """One entry of a call stack, as a debugger shows it."""

    function: str
    line: int
    source: str
    invocation: int
    path: str = ""
    locals: dict[str, str] = {}
    values: dict[str, Value] = {}
