"""What-if branches as the debugger core offers them to every front end (DAP, the terminal): set a
local at the current stop and stand on the branch that makes; list the branches; switch between
them. The recorded world does the work (world/branches.py); other worlds refuse, saying why."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neural_dap.core.branches import Branch
from neural_dap.core.world import Branches, HasBranches, WorldError

if TYPE_CHECKING:
    from neural_dap.debugger.core import Debugger, Report


def what_if_of(debugger: Debugger) -> Branches:
    world = debugger.world
    if world is None:
        raise WorldError("no program has been launched")
    what_if = world.what_if if isinstance(world, HasBranches) else None
    if what_if is None:
        raise WorldError(
            f"the {world.name} world cannot run the program again with a changed value: what-if branches "
            "need a recording of the real program (world 'recorded'); a model's predictions have no run to change"
        )
    return what_if


async def set_value(debugger: Debugger, frame: int, name: str, text: str) -> Report:
    """Set `name` (a local of the stack's `frame`, 0 the innermost) to the literal `text` at the
    current stop: the program runs again from there with it, as a new branch the session stands on."""
    what_if = what_if_of(debugger)
    stop = debugger.stop
    if stop is None:
        raise WorldError("the program is not stopped")
    report = await debugger.reach(lambda: what_if.set_value(stop, frame, name, text))
    return _described(report, what_if)


async def switch(debugger: Debugger, branch_id: int) -> Report:
    what_if = what_if_of(debugger)
    report = await debugger.reach(lambda: what_if.switch(branch_id))
    return _described(report, what_if)


def branches(debugger: Debugger) -> tuple[list[Branch], int]:
    """Every branch made in this session, and the one the session stands on."""
    what_if = what_if_of(debugger)
    return list(what_if.branches), what_if.current


def _described(report: Report, what_if: Branches) -> Report:
    if report.failure is None and report.reason == "pause":  # cancelled before the branch was recorded
        report.failure = "paused: no branch was made"
    elif report.failure is None:
        report.description = what_if.branches[what_if.current].describe()
    return report
