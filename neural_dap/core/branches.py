"""What-if branches as data: a changed value (`Edit`) and a run made of edits (`Branch`). The
recorded world makes them (world/branches.py); the debugger and the front ends name them."""

from __future__ import annotations

import os

import msgspec


class Edit(msgspec.Struct, frozen=True):
    """One changed value: at event `index`, `name` (a local of `function`) became `new`."""

    index: int
    name: str
    value: str  # the literal as typed (checked here, read in the child with ast.literal_eval)
    old: str  # its repr before
    new: str  # its repr after
    function: str
    path: str
    line: int

    def describe(self) -> str:
        where = f"{os.path.basename(self.path)}:{self.line}" if self.path else f"line {self.line}"
        return f"{self.name} = {self.old} \u2192 {self.new} in {self.function} at {where} (event {self.index})"


class Branch(msgspec.Struct, frozen=True):
    """A run of the program: 0 the original; others the original with `edits` made on the way."""

    id: int
    parent: int | None = None
    edits: tuple[Edit, ...] = ()  # in run order; the last one is where this branch forked

    @property
    def fork(self) -> Edit | None:
        return self.edits[-1] if self.edits else None

    def describe(self) -> str:
        if self.fork is None:
            return f"branch {self.id} (the original run)"
        return f"branch {self.id}: {self.fork.describe()}"


__all__ = ["Branch", "Edit"]
