"""Debugger actions: what a user asks a world model to do from the current state.

The meaning of each action (which state it lands on) is defined once, for every recording, in
`neural_dap.trace.actions`. This module names them, so every layer can speak about them, and holds
the one rule of which file a breakpoint target is in (`in_file`), which every world obeys.
"""

from __future__ import annotations

import functools
import os
from typing import Literal, get_args

import msgspec

ActionKind = Literal[
    "step_into",
    "step_over",
    "step_return",
    "breakpoint",
    "continue",
    "inv_step_into",
    "inv_step_over",
    "inv_step_return",
    "inv_breakpoint",
]
ACTION_KINDS: tuple[ActionKind, ...] = get_args(ActionKind)
INVERSE_KINDS: frozenset[str] = frozenset(k for k in ACTION_KINDS if k.startswith("inv_"))
WITH_LINES: frozenset[str] = frozenset({"breakpoint", "inv_breakpoint"})

# A breakpoint target: (path, line). An empty path matches a line of any file, which is what a
# single-file context (the neural world model, the trace format) means.
Target = tuple[str, int]


class Action(msgspec.Struct, frozen=True):
    kind: ActionKind
    targets: tuple[Target, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ACTION_KINDS:
            raise ValueError(f"unknown action {self.kind!r}; expected one of {', '.join(ACTION_KINDS)}")
        if self.targets and self.kind not in WITH_LINES:
            raise ValueError(f"action {self.kind} takes no lines")

    @property
    def inverse(self) -> bool:
        return self.kind in INVERSE_KINDS

    @property
    def lines(self) -> tuple[int, ...]:
        """The target line numbers, sorted and unique (what the trace format writes)."""
        return tuple(sorted({line for _, line in self.targets}))

    @classmethod
    def at_lines(cls, kind: ActionKind, lines: list[int] | tuple[int, ...], path: str = "") -> Action:
        return cls(kind, tuple((path, line) for line in sorted(set(lines))))

    def __str__(self) -> str:
        if self.kind in WITH_LINES:
            return f"{self.kind}({','.join(map(str, self.lines))})"
        return self.kind


@functools.lru_cache(maxsize=1024)
def _identity(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def same_file(a: str, b: str) -> bool:
    """Two paths name one file (a symlink and its target, a relative and an absolute path)."""
    return a == b or _identity(a) == _identity(b)


def in_file(target: Target, path: str) -> bool:
    """A breakpoint target can stop in file `path`: its path is that file, or empty (a line of any
    file: what a single-file context, the trace format, means)."""
    return not target[0] or same_file(target[0], path)


def for_file(action: Action, path: str) -> Action:
    """`action` in a world that runs only file `path` (the neural world predicts one file): the
    targets in other files are dropped; a breakpoint with none left runs on as continue does, an
    inverse one back to the start."""
    if action.kind not in WITH_LINES or all(in_file(t, path) for t in action.targets):
        return action
    kept = tuple(t for t in action.targets if in_file(t, path))
    if kept:
        return Action(action.kind, kept)
    return Action("continue") if action.kind == "breakpoint" else Action("inv_breakpoint", ((path, -1),))


STEP_INTO = Action("step_into")  # the action of a plain forward trace (cwm frames, `neural-dap trace`)
