"""The world-model interface: the only thing the DAP layer knows about what it is debugging.

A world model answers "where does this action lead?" with a `Stop`. The recorded world navigates a
real execution; the neural world asks a model; the reconciled world wraps a model and a reality.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

import msgspec

from neural_dap.core.actions import Action, Target
from neural_dap.core.branches import Branch
from neural_dap.core.state import Frame, State, Value

ExceptionFilter = Literal["raised", "uncaught", "userUnhandled"]


class Entry(msgspec.Struct, frozen=True, omit_defaults=True):
    """Start at a call of one function (`args`), or at its return (`returns`) to step backwards."""

    function: str
    args: str | None = None  # Python literal text of the arguments, e.g. "[3, 1], key=None"
    returns: str | None = None  # repr text of a return value: start at the end, step back


class LaunchSpec(msgspec.Struct, frozen=True, omit_defaults=True):
    """What to debug (the keys every world shares) and the launch's other keys, which belong to the
    world that was asked for: each world declares and validates its own (`world_options`)."""

    program: str  # absolute path (for a module launch: the module's file, as `python -m` would run it)
    args: tuple[str, ...] = ()
    module: str | None = None  # `python -m MODULE`: run this module as __main__ (pytest, a package's CLI)
    python_args: tuple[str, ...] = ()  # interpreter options before the program (`-X dev`, `-W error`)
    stdin: str | None = None  # absolute path of a file the program reads as its standard input
    # a terminal console: `stdin` is a FIFO the user's typing arrives on, `stdin_log` keeps those
    # bytes (replays read them), the program's output is copied to the `output_copy` FIFO
    stdin_log: str | None = None
    output_copy: str | None = None
    cwd: str | None = None
    env: dict[str, str] | None = None
    entry: Entry | None = None
    source: str | None = None  # program text, when it is not (only) on disk
    world: str = "recorded"
    python: str | None = None  # the interpreter that runs the program (recording, debugpy, noDebug)
    options: dict[str, Any] = {}  # every other launch key, as the client sent it


OptionsT = TypeVar("OptionsT", bound=msgspec.Struct)


def world_options(launch: LaunchSpec, kind: type[OptionsT], world: str) -> OptionsT:
    """A world's own launch keys (a `msgspec.Struct` with camelCase names), checked with a message a
    user can act on. Keys other worlds own (and a client's own, such as VS Code's `name`) are ignored."""
    try:
        return msgspec.convert(launch.options, kind)
    except msgspec.ValidationError as exc:
        raise WorldError(f"launch of the {world} world: {exc}") from None


class Capabilities(msgspec.Struct, frozen=True):
    exact: bool  # states are real (recorded), not predicted
    inverse: bool  # can step backwards


class Divergence(msgspec.Struct, frozen=True, omit_defaults=True):
    """Where a predicted state and reality disagree."""

    kind: Literal["line", "event", "stack", "local", "value", "missing", "extra", "end"]
    name: str = ""  # the variable, for `local`
    predicted: str | None = None
    actual: str | None = None

    def describe(self) -> str:
        subject = f"{self.kind} {self.name}".strip() if self.name else self.kind
        return f"{subject}: predicted {self.predicted!r}, actually {self.actual!r}"


class Exit(msgspec.Struct, frozen=True, omit_defaults=True):
    """How the traced scope ended, when a stop is at its end."""

    code: int = 0
    description: str = ""  # empty for a normal end


class Stop(msgspec.Struct, frozen=True, omit_defaults=True):
    """Where an action landed."""

    state: State
    stack: tuple[Frame, ...]  # innermost first; stack[0] is the state's own frame
    index: int = 0  # position on the world's timeline
    at_start: bool = False
    at_end: bool = False
    exit: Exit | None = None  # set when at_end and the world knows how the program ended
    output: tuple[tuple[str, str], ...] = ()  # (stdout|stderr, text) written on the way here (forward)
    predicted: bool = False
    divergences: tuple[Divergence, ...] = ()
    hit_exception: bool = False  # stopped because of an exception filter
    hit_breakpoint: bool = False  # stopped at one of the breakpoint targets
    note: str = ""  # something the user should know about this stop
    suspends: bool = False  # the exit of a generator (or coroutine) that pauses here: it resumes later
    # The values functions returned into the stack's frames while the user stepped, shown beside
    # their locals as debugpy shows them (debugger/returns.py): (depth in `stack`, "(return) f", value,
    # the frame's local that holds the returned object then, or "": it opens as that local does;
    # else the value's children where the world has them, or None)
    returned: tuple[tuple[int, str, str, str, Value | None], ...] = ()
    # The state's function was called by library code (click running the user's command, a scheduler
    # running a callback), not by the frame below it on the stack: its exit returns into that code,
    # which returns to the caller's call line later. At such an exit, `library_calls_next`: that
    # code calls the user's code again first.
    called_by_library: bool = False
    library_calls_next: bool = False
    # A call library code made right after a function it called exited (the mirror of
    # `library_calls_next`: a step back from this call goes into that function)
    library_called_before: bool = False
    paused: bool = False  # a running program stopped where the user paused it (debug while it runs)
    # The `<module>` frame whose locals are the stop's globals where it is not on the stop's own
    # stack: a thread's function sees the main thread's module frame as it stood at the stop
    module_frame: Frame | None = None
    # The user's frames running below the stack where library code runs it (an event loop's task:
    # `<module>` under `asyncio.run`), innermost first: shown under the stack, as debugpy shows
    # the real stack; the stepping rules go by `stack` alone
    outer: tuple[Frame, ...] = ()
    # A stop an exception filter made at the line that caught the exception: the line where the
    # exception reached the frame (the `await` or the call it came out of), where debugpy shows it
    exception_line: int = 0
    # A predicted stop: the probability the model gave its source line, each local's value and the
    # returned / raised value (format.confidence; empty or None where the model did not say)
    line_confidence: float | None = None
    local_confidence: dict[str, float] = {}
    value_confidence: float | None = None


class WorldError(Exception):
    """A request the world cannot serve (a model down, garbage it cannot recover from, ...).

    The DAP layer turns it into an error response on that request; the session stays usable.
    """


class NotLive(WorldError):
    """This stop has no live program to ask (a full recording, the end of the run, a prediction):
    expressions fall back to the safe evaluator over the recorded values."""


class LiveResult(msgspec.Struct, frozen=True):
    text: str  # the value's repr, cut to the world's limit
    type: str


class CheckResult(msgspec.Struct, frozen=True, omit_defaults=True):
    """A breakpoint's expression evaluated in the program at a stop: a condition's truth, a log
    point part's text, or what the expression raised (as the user should read it)."""

    truth: bool | None = None
    text: str | None = None
    error: str | None = None


Check = tuple[str, Literal["truth", "str"]]  # (expression, what to make of its value)


@runtime_checkable
class ChecksLive(Protocol):
    """A world that can evaluate a breakpoint's condition and log message at a stop on the program's
    real objects, as debugpy does in the running program (a throwaway copy here: effects refused).
    Raises `NotLive` where it cannot (no program at that stop)."""

    async def check_live(self, stop: Stop, checks: tuple[Check, ...]) -> tuple[CheckResult, ...]: ...


class LiveChild(msgspec.Struct, frozen=True):
    """A child of a value in the Variables view, as debugpy shows it (trace/child/resolvers.py),
    computed on the real object at the stop. `selector` finds it again from its parent; `evaluate`
    is a template for its expression (`%s[3]`, `%s.name`, `len(%s)`), None where it has none."""

    name: str
    value: str
    type: str
    selector: list
    evaluate: str | None
    expandable: bool


class LiveRoot(msgspec.Struct, frozen=True):
    """A scope's variable as debugpy shows it (its text where the recorded one was cut)."""

    value: str
    type: str
    expandable: bool


@runtime_checkable
class ExpandsLive(Protocol):
    """A world that can show a stop's values as debugpy does, from the program's real objects: the
    children of a value found from a frame's local or global (`root`: ("l" | "g", name)) by a path
    of selectors. `live_at(stop)` says, without starting anything, whether it can at this stop;
    the calls raise `NotLive` where it cannot after all."""

    def live_at(self, stop: Stop) -> bool: ...

    async def children_live(
        self, stop: Stop, frame: int, root: tuple[str, str], path: tuple[list, ...], start: int, count: int
    ) -> tuple[tuple[LiveChild, ...], int]: ...

    async def roots_live(
        self, stop: Stop, frame: int, roots: tuple[tuple[str, str], ...]
    ) -> tuple[LiveRoot | None, ...]: ...


# Decides whether a breakpoint hit stops an action (conditions, hit counts, log points: the debugger
# core's); it may need the program to answer, so it may be a coroutine.
Accept = Callable[[Stop], "bool | Awaitable[bool]"]


class HitFilter(Protocol):
    """Which hits of a breakpoint's line can stop (the debugger core's hit conditions)."""

    def next_hit(self, target: Target, after: int) -> int | None:
        """The first hit number above `after` (the hits of `target`'s line so far in the run) at
        which a breakpoint there can stop or log; None where none can again."""
        ...


async def accepted(accept: Accept | None, stop: Stop) -> bool:
    """What `accept` says of a breakpoint hit (none: every hit stops)."""
    if accept is None:
        return True
    decision = accept(stop)
    if inspect.isawaitable(decision):
        return bool(await decision)
    return bool(decision)


@runtime_checkable
class EvaluatesLive(Protocol):
    """A world that can evaluate the user's expressions in a real copy of the program at a stop:
    real objects (calls, methods, attributes, indexing), whatever an expression changes thrown
    away with that copy. Raises `NotLive` where it cannot, `WorldError` with the expression's own
    error where it raised."""

    async def evaluate_live(self, stop: Stop, frame: int, expression: str) -> LiveResult: ...


class Thread(msgspec.Struct, frozen=True):
    """A thread of the program, as a debugger lists it: `id` is the number the client uses (1 for
    the thread that started the program, as debugpy numbers nothing in particular; ours are small)."""

    id: int
    name: str


class ChildSession(msgspec.Struct, frozen=True):
    """A process the program started, which can be debugged in a session of its own (subProcess)."""

    pid: int
    name: str
    launch: dict[str, Any]  # the launch keys that open it (the world's own), beside the parent's others


@runtime_checkable
class HasChildSessions(Protocol):
    """A world whose program started processes that can be debugged too (DAP `startDebugging`)."""

    def child_sessions(self) -> list[ChildSession]: ...


@runtime_checkable
class HasThreads(Protocol):
    """A world whose program runs in more than one thread. A stop is in the thread of its state
    (`thread_id(stop)`); the others stand where they were at that moment. Worlds without it have
    one thread, id 1, "MainThread"."""

    def threads(self, stop: Stop) -> list[Thread]: ...

    def thread_id(self, stop: Stop) -> int: ...

    async def thread_stack(self, stop: Stop, thread_id: int) -> tuple[Frame, ...]: ...


class Branches(Protocol):
    """A world's what-if branches (the recorded world's: world/branches.py): set a value at a stop
    and stand on the run that makes, switch between runs, list them."""

    branches: list[Branch]
    current: int

    async def set_value(self, stop: Stop, frame: int, name: str, text: str) -> Stop: ...

    async def switch(self, branch_id: int) -> Stop: ...


@runtime_checkable
class HasBranches(Protocol):
    """A world that can run its program again with a changed value."""

    @property
    def what_if(self) -> Branches: ...


@runtime_checkable
class SteppingConvention(Protocol):
    """A world whose program ran on an interpreter where debugpy steps differently: on 3.12+ it
    traces with sys.monitoring, and `next` off a function's return stops in the caller at the call
    line (with the `(return)` value) and a step on into the user's code stops where a coroutine
    resumes; on 3.11 (settrace) both go on to the next line. Worlds without it step as on 3.11."""

    @property
    def returns_stop_in_caller(self) -> bool: ...


@runtime_checkable
class WorldModel(Protocol):
    name: str
    capabilities: Capabilities

    async def start(self, launch: LaunchSpec) -> Stop: ...

    async def act(
        self,
        action: Action,
        *,
        exceptions: frozenset[ExceptionFilter] = frozenset(),
        breakpoints: tuple[Target, ...] = (),
        accept: Accept | None = None,
        hits: HitFilter | None = None,
    ) -> Stop:
        """Apply `action` from the current stop.

        A breakpoint the action passes on its way (one of its own targets for breakpoint actions,
        one of `breakpoints` for steps) stops it early if `accept(stop)` agrees (conditions, hit
        counts and log points live in the caller); otherwise the action goes on. `hits`, where
        given, says which hits of a target's line `accept` can agree to at all: a world that knows
        which hit of the run a stop is may pass the others by without asking (or without a running
        program stopping there). With exception filters, a forward action also stops at an
        exception raised on the way (`raised`) or at the one that ends the program (`uncaught`).
        """
        ...

    def source(self, path: str) -> str | None: ...

    def summary(self) -> dict[str, Any]: ...

    async def close(self) -> None: ...
