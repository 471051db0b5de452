"""What-if branches of the recorded world: change a local at any moment of the past and the real
program runs on from there with the new value.

A branch is the program recorded again from its start with a list of edits, "when event N has been
recorded, set NAME to VALUE in the innermost frame" (trace/child/whatif.py does it in the recording
child and in every replay of it). Up to its first edit the branch reads the first run's journal
(what the program received from the world: files, clocks, the network), so it is that run again
and repeats none of its effects; from the edit on it runs in the sandbox: it reads the world as it
is, and every change it would make is refused (but for files in a scratch folder of its own), so a
branch never writes the user's files, databases or servers. A program that still does not run the
same way (threads) is caught when the new recording's events up to the edit (kind, line,
invocation) differ from the run the user stood on, or when the child finds another function or no
such local at that event: the branch is refused with the reason. Branch 0 is the original
recording; a branch made while standing on a branch keeps that branch's earlier edits. Where the
first run left no journal (a full recording), a branch runs in the sandbox from its start.

Re-recording from the start is the simple, correct design: a branch costs one recording of the
program up to the end (a replay from the nearest checkpoint would save the part before the edit).
Every branch made stays open to switch back to; at most `MAX_OPEN` recordings are kept at once, and
a branch whose recording was closed is recorded again when it is switched to.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import OrderedDict
from typing import Protocol

import anyio
import msgspec
import numpy as np

from neural_dap.core.branches import Branch, Edit
from neural_dap.core.literals import LiteralError, parse_literal
from neural_dap.core.world import Stop, WorldError
from neural_dap.trace.execution import Execution, SkeletonExecution
from neural_dap.trace.program import Limits, Outcome, Program
from neural_dap.trace.recorder import RecorderError, RecordingHandle, record_skeleton
from neural_dap.trace.skeleton import SkeletonRecording

MAX_BRANCHES = 64
MAX_OPEN = 6  # recordings kept open (each holds its checkpoint processes)
_CHUNK = 1 << 20  # events compared at a time


class Recipe(msgspec.Struct, frozen=True):
    """How the world recorded its program: what a branch records again."""

    program: Program
    limits: Limits
    python: str | None


class Host(Protocol):
    """What a WhatIf needs of the recorded world it serves: the execution it stands on and where,
    a way to stand on another one, and travel."""

    execution: Execution | None
    index: int

    def stand_on(self, execution: Execution, outcome: Outcome | None) -> tuple[Execution, Outcome | None] | None: ...

    async def travel(self, index: int, output_from: int | None = None) -> Stop: ...


class WhatIf:
    """The branches of one recorded world, and which one it stands on."""

    def __init__(self, world: Host) -> None:
        self.world = world
        self.recipe: Recipe | None = None
        self.branches: list[Branch] = [Branch(0)]
        self.current = 0
        self.open: OrderedDict[int, tuple[Execution, Outcome | None]] = OrderedDict()
        self.recording: RecordingHandle | None = None  # while a branch is being recorded
        self.journal: str | None = None  # the first run's journal (keep_journal)

    def remember(self, program: Program, limits: Limits, python: str | None) -> None:
        # a branch's run never changes the world: after its edit it runs in the sandbox
        self.recipe = Recipe(msgspec.structs.replace(program, sandbox=True), limits, python)

    def keep_journal(self, journal_file: str | None) -> None:
        """The first run's journal, which every branch reads up to its edit: kept (a hard link in a
        folder of our own) for as long as branches can be made, whichever recordings are open."""
        self.drop_journal()
        if journal_file is None or not os.path.isfile(journal_file):
            return
        folder = tempfile.mkdtemp(prefix="neural-dap-whatif-")
        kept = os.path.join(folder, "journal.bin")
        try:
            os.link(journal_file, kept)
        except OSError:
            shutil.copyfile(journal_file, kept)
        self.journal = kept

    def drop_journal(self) -> None:
        if self.journal is not None:
            shutil.rmtree(os.path.dirname(self.journal), ignore_errors=True)
            self.journal = None

    def interrupt(self) -> bool:
        """The user paused while a branch is being recorded (a value that makes the program loop):
        end that recording now; the move is cancelled and no branch is made."""
        recording = self.recording
        return recording.end_now() if recording is not None else False

    # -- making a branch ----------------------------------------------------------------------------
    async def set_value(self, stop: Stop, frame: int, name: str, text: str) -> Stop:
        """Set `name` to the literal `text` in `frame` (0: innermost) at `stop`, and stand on the
        branch that makes, at the same event, with the new value."""
        edit = self._edit(stop, frame, name, text)
        if len(self.branches) >= MAX_BRANCHES:
            raise WorldError(f"this session has made {MAX_BRANCHES - 1} branches already; start a new session")
        parent = self.branches[self.current]
        # the earlier edits of the branch stood on stay; a later one (or this value set again) is replaced
        kept = tuple(e for e in parent.edits if e.index < edit.index or (e.index == edit.index and e.name != name))
        branch = Branch(len(self.branches), parent.id, (*kept, edit))
        execution, outcome = await self._record(branch)
        if not _same_run(self.world.execution, execution, edit.index):
            execution.close()
            raise WorldError(
                f"no branch was made: run again, the program took another path before event {edit.index} "
                "(it is not deterministic up to there)"
            )
        self.branches.append(branch)
        return await self._stand_on(branch, execution, outcome, edit.index)

    def _edit(self, stop: Stop, frame: int, name: str, text: str) -> Edit:
        if self.recipe is None:
            raise WorldError("the program has not been launched")
        state = stop.state
        if state.event in ("return", "exception"):
            what = "returns" if state.event == "return" else "exits by an exception"
            raise WorldError(
                f"{state.function} {what} here: its locals are no longer used; step back to a line to change a value"
            )
        if frame != 0:
            raise WorldError(
                "only the innermost frame's locals can be changed (a caller resumes later: "
                "change its value while standing in it)"
            )
        top = stop.stack[0] if stop.stack else None
        if top is None or name not in top.locals:
            raise WorldError(f"{name} is not a local of {state.function} at this moment")
        try:
            value = parse_literal(text)
        except LiteralError as exc:
            raise WorldError(str(exc)) from None
        return Edit(
            stop.index, name, text.strip(), top.locals[name], _repr(value), state.function, state.path, state.line
        )

    async def _record(self, branch: Branch) -> tuple[Execution, Outcome | None]:
        recipe = self.recipe
        assert recipe is not None
        edits = [{"at": e.index, "name": e.name, "value": e.value, "function": e.function} for e in branch.edits]
        handle = self.recording = RecordingHandle()
        made: list[SkeletonRecording] = []

        def run() -> SkeletonRecording:
            made.append(
                record_skeleton(
                    recipe.program,
                    recipe.limits,
                    python=recipe.python,
                    recording=handle,
                    what_if=edits or None,
                    journal_of=self.journal,
                )
            )
            return made[0]

        try:
            recording = await anyio.to_thread.run_sync(run)
        except RecorderError as exc:
            raise WorldError(f"the program could not be run again: {exc}") from None
        except anyio.get_cancelled_exc_class():
            for unused in made:  # paused: the recording ended early and no branch is made of it
                unused.close()
            raise
        finally:
            self.recording = None
        if handle.ended:  # paused: the recording was ended early
            recording.close()
            raise WorldError("paused: the program was stopped while it ran with the new value; no branch was made")
        if recording.outcome.kind == "threads" or recording.log.switched_at is not None:
            # a branch is a skeleton recording, which follows one thread (see trace/child/threads.py)
            recording.close()
            raise WorldError(
                "no branch was made: the program runs its code in more than one thread, and a what-if "
                "branch is recorded for one thread only"
            )
        execution = SkeletonExecution(recording)
        applied = {(at, name): how for at, name, how in recording.log.what_if}
        for edit in branch.edits:
            how = applied.get((edit.index, edit.name))
            if how != "applied":
                execution.close()
                why = how or f"the run ended before event {edit.index}"
                raise WorldError(
                    f"no branch was made: run again, the program did not reach the same moment ({why}); "
                    "it is not deterministic up to there"
                )
        return execution, recording.outcome

    # -- switching ------------------------------------------------------------------------------------
    async def switch(self, branch_id: int) -> Stop:
        """Stand on another branch: at the same event when both runs are the same up to it, else at
        the event where they part."""
        if not 0 <= branch_id < len(self.branches):
            raise WorldError(f"there is no branch {branch_id}: the branches are 0 to {len(self.branches) - 1}")
        branch = self.branches[branch_id]
        here = self.world.index
        part = _parting(self.branches[self.current], branch)
        index = here if part is None or here <= part else part
        if branch_id == self.current:
            return await self.world.travel(index)
        found = self.open.pop(branch_id, None)
        execution, outcome = found if found is not None else await self._record(branch)
        return await self._stand_on(branch, execution, outcome, index)

    async def _stand_on(self, branch: Branch, execution: Execution, outcome: Outcome | None, index: int) -> Stop:
        # the world and the branches change together: a pause now must not leave one of them behind
        with anyio.CancelScope(shield=True):
            stop = await self._move_to(branch, execution, outcome, index)
        return stop

    async def _move_to(self, branch: Branch, execution: Execution, outcome: Outcome | None, index: int) -> Stop:
        left = self.world.stand_on(execution, outcome)
        if left is not None:
            self.open[self.current] = left
        self.current = branch.id
        while len(self.open) > MAX_OPEN:
            _, (old, _) = self.open.popitem(last=False)
            old.close()
        stop = await self.world.travel(min(index, execution.last), output_from=index)
        return msgspec.structs.replace(stop, note=self.note())

    def note(self) -> str:
        """What a stop on the current branch says about it."""
        return f"neural-dap: now on {self.branches[self.current].describe()}"

    def close(self) -> None:
        for execution, _ in self.open.values():
            execution.close()
        self.open.clear()
        self.drop_journal()


def _same_run(a: Execution | None, b: Execution, last: int) -> bool:
    """Whether two recordings ran the same events (kind, line, invocation) up to event `last`."""
    if a is None or len(a) <= last or len(b) <= last:
        return False
    x, y = a.semantics.columns, b.semantics.columns
    for start in range(0, last + 1, _CHUNK):  # a chunk at a time: runs of 10^7 events
        end = min(last + 1, start + _CHUNK)
        for p, q in ((x.kinds, y.kinds), (x.lines, y.lines), (x.invs, y.invs)):
            if not np.array_equal(np.asarray(p[start:end], dtype=np.int64), np.asarray(q[start:end], dtype=np.int64)):
                return False
    return True


def _parting(a: Branch, b: Branch) -> int | None:
    """The first event where runs `a` and `b` may differ (None: they are the same run)."""
    shared = 0
    while shared < min(len(a.edits), len(b.edits)) and a.edits[shared] == b.edits[shared]:
        shared += 1
    rest = [e.index for e in (*a.edits[shared:], *b.edits[shared:])]
    return min(rest) if rest else None


def _repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "\u2026"
