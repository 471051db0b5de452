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
# the types `inspect.isroutine` holds to be routines (a method descriptor: `__get__` without `__set__`)
ROUTINE_TYPES = frozenset(
    {
        "function",
        "builtin_function_or_method",
        "method",
        "method-wrapper",
        "wrapper_descriptor",
        "method_descriptor",
        "classmethod_descriptor",
        "staticmethod",
        "classmethod",
        "_lru_cache_wrapper",
        "partialmethod",
        "singledispatchmethod",
        "cached_property",
        "cython_function_or_method",
    }
)
_ROUTINE_TEXTS = ("<function ", "<built-in function ", "<bound method ", "<built-in method ", "<method-wrapper ")


def kind_of(text: str, structured: Value | None) -> str | None:
    """ "routine", "class" or "module" for a value debugpy files apart from the others (pydevd's
    `get_var_scope`: `inspect.isroutine`, `inspect.isclass`; a module it shows inline), judged by
    its recorded type, else by its text (a predicted value has only that); None for any other."""
    kind = structured.type if structured is not None else ""
    if kind in ROUTINE_TYPES or (not kind and text.startswith(_ROUTINE_TEXTS)):
        return "routine"
    if kind == "type" or text.startswith(("<class '", "<enum '")):
        return "class"
    if kind == "module" or text.startswith(_MODULE_TEXT):
        return "module"
    return None


def _traced_name(name: str, text: str, structured: Value | None) -> bool:
    return not (name.startswith("__") and name.endswith("__")) and kind_of(text, structured) is None


def as_traced(state: State) -> State:
    """The state as a trace shows it: a module's frame without its dunders, the modules it imported,
    its functions and its classes. A debugger shows them among the module's variables (debugpy does,
    in its groups); a trace leaves them out, as the traces the neural debugger learned from (and
    CWM's) do, so a model is neither shown nor asked for them; so do the summaries of a run for
    agents (MCP) and for the editor (the language server's values), which show a module's data."""
    if state.function != "<module>":
        return state
    values = state.values
    kept = {name: text for name, text in state.locals.items() if _traced_name(name, text, values.get(name))}
    if len(kept) == len(state.locals):
        return state
    return msgspec.structs.replace(state, locals=kept, values={k: v for k, v in values.items() if k in kept})


class Frame(msgspec.Struct, frozen=True, omit_defaults=True):
    """One entry of a call stack, as a debugger shows it."""

    function: str
    line: int
    source: str
    invocation: int
    path: str = ""
    locals: dict[str, str] = {}
    values: dict[str, Value] = {}
