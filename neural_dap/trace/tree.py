"""The state tree of one execution, and the meaning of every debugger action on it.

This is the single definition of the actions; the recorded world model, the dataset generator,
the evaluator and the reconciler all call `StateTree.apply`.

States are kept in execution order. The states of one invocation are its `call` state, its `line`
states and its terminal (`return` / `exception`) state; the states of the calls it makes are its
children in the tree. A terminal state has left its invocation: stepping on from it happens in the
caller (as a debugger shows it: back in the caller, with the return value).

| action             | from state s, go to ...                                                     |
|--------------------|-----------------------------------------------------------------------------|
| step_into          | the next state                                                              |
| step_over          | the next state of the same invocation (of the caller, from a terminal)      |
| step_return        | the terminal state of the invocation (of the caller's, from a terminal)     |
| breakpoint(L)      | the next `line` state at one of L, else the last state                      |
| continue           | the last state (the end of the traced scope)                                |
| inv_step_into      | the previous state                                                          |
| inv_step_over      | the previous state of the same invocation (of the caller, from a call)      |
| inv_step_return    | the call state of the invocation (of the caller's, from a call)             |
| inv_breakpoint(L)  | the previous `line` state at one of L, else the first state                 |
At the first or last state an action that cannot move stays where it is.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from neural_dap.core.actions import Action, Target
from neural_dap.core.state import TERMINAL_EVENTS, State


class StateTree:
    def __init__(self, states: Sequence[State]) -> None:
        if not states:
            raise ValueError("a state tree needs at least one state")
        self.states = states
        self.by_invocation: dict[int, list[int]] = {}
        self.call_index: dict[int, int] = {}
        self.end_index: dict[int, int] = {}
        self.parent: dict[int, int | None] = {}
        self.by_line: dict[int, list[int]] = {}  # line -> indices of `line` states
        open_stack: list[int] = []
        for i, state in enumerate(states):
            inv = state.invocation
            if inv not in self.by_invocation:
                self.by_invocation[inv] = []
                self.call_index[inv] = i
                self.parent[inv] = open_stack[-1] if open_stack else None
                open_stack.append(inv)
            self.by_invocation[inv].append(i)
            if state.event == "line":
                self.by_line.setdefault(state.line, []).append(i)
            elif state.event in TERMINAL_EVENTS:
                self.end_index[inv] = i
                if open_stack and open_stack[-1] == inv:
                    open_stack.pop()
                elif inv in open_stack:
                    del open_stack[open_stack.index(inv) :]

    def __len__(self) -> int:
        return len(self.states)

    @property
    def last(self) -> int:
        return len(self.states) - 1

    def is_terminal(self, i: int) -> bool:
        return self.states[i].event in TERMINAL_EVENTS

    def is_call(self, i: int) -> bool:
        return self.states[i].event == "call"

    # -- the actions -----------------------------------------------------------------------------
    def apply(self, i: int, action: Action) -> int:
        kind = action.kind
        if kind == "step_into":
            return min(i + 1, self.last)
        if kind == "inv_step_into":
            return max(i - 1, 0)
        if kind == "step_over":
            return self.step_over(i)
        if kind == "inv_step_over":
            return self.inv_step_over(i)
        if kind == "step_return":
            return self.step_return(i)
        if kind == "inv_step_return":
            return self.inv_step_return(i)
        if kind == "breakpoint":
            return self.next_line_at(i, action.targets)
        if kind == "inv_breakpoint":
            return self.previous_line_at(i, action.targets)
        if kind == "continue":
            return self.last
        raise ValueError(f"unknown action {kind}")

    def _owner_forward(self, i: int) -> int | None:
        """Whose states step_over / step_return move through from state i."""
        inv = self.states[i].invocation
        return self.parent.get(inv) if self.is_terminal(i) else inv

    def _owner_backward(self, i: int) -> int | None:
        inv = self.states[i].invocation
        return self.parent.get(inv) if self.is_call(i) else inv

    def step_over(self, i: int) -> int:
        owner = self._owner_forward(i)
        if owner is None:
            return self.last
        indices = self.by_invocation[owner]
        k = bisect_right(indices, i)
        return indices[k] if k < len(indices) else self.last

    def inv_step_over(self, i: int) -> int:
        owner = self._owner_backward(i)
        if owner is None:
            return 0
        indices = self.by_invocation[owner]
        k = bisect_left(indices, i)
        return indices[k - 1] if k > 0 else 0

    def step_return(self, i: int) -> int:
        owner = self._owner_forward(i)
        if owner is None:
            return self.last
        end = self.end_index.get(owner)
        return end if end is not None and end >= i else self.last

    def inv_step_return(self, i: int) -> int:
        owner = self._owner_backward(i)
        if owner is None:
            return 0
        return self.call_index[owner]

    def _matches(self, j: int, targets: tuple[Target, ...]) -> bool:
        path = self.states[j].path
        return any(p == "" or p == path for p, _ in targets)

    def next_line_at(self, i: int, targets: tuple[Target, ...]) -> int:
        best = self.last
        for line in {line for _, line in targets}:
            indices = self.by_line.get(line, ())
            k = bisect_right(indices, i)
            while k < len(indices) and indices[k] < best:
                if self._matches(indices[k], targets):
                    best = indices[k]
                    break
                k += 1
        return best

    def previous_line_at(self, i: int, targets: tuple[Target, ...]) -> int:
        best = 0
        for line in {line for _, line in targets}:
            indices = self.by_line.get(line, ())
            k = bisect_left(indices, i) - 1
            while k >= 0 and indices[k] > best:
                if self._matches(indices[k], targets):
                    best = indices[k]
                    break
                k -= 1
        return best

    # -- the call stack at a state ---------------------------------------------------------------
    def stack(self, i: int) -> list[int]:
        """Indices of the latest state of each invocation on the stack at i, innermost first."""
        out = [i]
        inv = self.parent.get(self.states[i].invocation)
        while inv is not None:
            indices = self.by_invocation[inv]
            k = bisect_right(indices, i)
            if k == 0:
                break
            out.append(indices[k - 1])
            inv = self.parent.get(inv)
        return out

    def available(self, i: int) -> list[str]:
        """Action kinds that move from state i (used by the trajectory sampler)."""
        out = []
        if i < self.last:
            out += ["step_into", "step_over", "step_return", "continue"]
            if any(j > i for indices in self.by_line.values() for j in indices[-1:]):
                out.append("breakpoint")
        if i > 0:
            out += ["inv_step_into", "inv_step_over", "inv_step_return"]
            if any(indices[0] < i for indices in self.by_line.values()):
                out.append("inv_breakpoint")
        return out
