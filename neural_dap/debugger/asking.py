"""Ask the recording, as a debugger session does: whole-run questions (debugger/history.py and
origin.py answer them over a recording) about the frame at the current stop, run in a worker thread
under the session's lock. DAP (`dap/queries.py`), the terminal (through DAP) and MCP call these."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neural_dap.core.world import WorldError
from neural_dap.debugger.history import Call, Change, LogLine, Moment, Page, history_of
from neural_dap.debugger.origin import Origin, follow
from neural_dap.trace.queries import RecordingQueries

if TYPE_CHECKING:
    from neural_dap.debugger.core import Debugger, Report


def queries_of(debugger: Debugger) -> RecordingQueries:
    world = debugger.world
    if world is None:
        raise WorldError("no program has been launched")
    queries = getattr(world, "queries", None)
    if not isinstance(queries, RecordingQueries):
        raise WorldError(
            f"the {world.name} world cannot be asked about the whole run: only an exact recording "
            "(world 'recorded') keeps it"
        )
    return queries


def _frame_target(debugger: Debugger, frame: int) -> tuple[int, int]:
    """(event index of the frame's latest event, the frame's invocation number in the columns)."""
    stop = debugger.stop
    if stop is None:
        raise WorldError("the program has not been launched")
    execution = queries_of(debugger).execution
    stack = execution.tree.stack(stop.index)  # type: ignore[attr-defined]
    if not 0 <= frame < len(stack):
        raise WorldError(f"no frame {frame} at this stop")
    event = int(stack[frame])
    return event, int(execution.semantics.columns.invs[event])


async def value_history(
    debugger: Debugger, expression: str, *, frame: int = 0, start: int = 0, count: int = 100
) -> Page[Change]:
    """Every change of `expression` over the whole run, in every invocation of the frame's function."""
    queries = queries_of(debugger)
    event, _inv = _frame_target(debugger, frame)
    track = history_of(queries).track(expression, int(queries.semantics.columns.invs[event]))
    return await debugger.ask(track.page, start, count)


async def last_change(
    debugger: Debugger, expression: str, *, frame: int = 0, before: int | None = None
) -> Change | None:
    """Where the frame's invocation last changed `expression`, at or before the current stop (or
    event `before`): who set the value the user is looking at. None: never (in this invocation)."""
    queries = queries_of(debugger)
    event, inv = _frame_target(debugger, frame)
    track = history_of(queries).track(expression, inv)
    at = event if before is None else min(before, event)
    return await debugger.ask(track.previous, at, inv)


async def value_origin(debugger: Debugger, expression: str, *, frame: int = 0) -> Origin:
    """Where the value of `expression` in the frame at the current stop came from: the statement
    that set it, followed back through plain copies, attribute and item stores and arguments to
    where it was computed (debugger/origin.py), each step a moment `travel` can go to."""
    queries = queries_of(debugger)
    event, inv = _frame_target(debugger, frame)
    return await debugger.ask(follow, history_of(queries), expression, inv, event)


async def calls(debugger: Debugger, function: str, *, start: int = 0, count: int = 100) -> Page[Call]:
    """Every call of `function` (a name; `path:name` for one file's), in run order."""
    queries = queries_of(debugger)
    return await debugger.ask(history_of(queries).calls, function, start, count)


async def logpoint(
    debugger: Debugger, path: str, line: int, message: str, *, start: int = 0, count: int = 100
) -> Page[LogLine]:
    """A log message (`{expr}` parts, as DAP log points) at every past execution of (path, line),
    evaluated over that state's values by the safe evaluator."""
    queries = queries_of(debugger)
    return await debugger.ask(history_of(queries).logpoint, path, line, message, start, count)


async def line_executions(
    debugger: Debugger, path: str, line: int, *, start: int = 0, count: int = 100
) -> Page[tuple[Moment, int, str]]:
    """Each execution of (path, line): its moment, which hit it is (1: the first) and the locals that
    differ from the previous execution's (where the states are at hand: a few windows at most)."""
    queries = queries_of(debugger)
    return await debugger.ask(history_of(queries).line_executions, path, line, start, count)


async def travel(debugger: Debugger, index: int) -> Report:
    """Move the current stop to any event of the run (reason `goto`)."""
    queries_of(debugger)
    return await debugger.travel(index)


__all__ = [
    "calls",
    "last_change",
    "line_executions",
    "logpoint",
    "queries_of",
    "travel",
    "value_history",
    "value_origin",
]
