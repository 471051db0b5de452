"""Debugger actions: what a user asks a world model to do from the current state.

The meaning of each action (which state it lands on) is defined once, on the state tree, in
`neural_dap.trace.tree`. This module only names them, so every layer can speak about them.
"""

from __future__ import annotations

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


STEP_INTO = Action("step_into")  # the action of a plain forward trace (cwm frames, `neural-dap trace`)
