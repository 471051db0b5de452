"""The state tree of one execution: its states, their invocations and call stacks.

What each debugger action means is defined once, over the execution's columns, in
`neural_dap.trace.actions` (`ActionSemantics`, the table of the nine actions is there); the
skeleton recording uses the same definition. `StateTree.apply` is the entry point the recorded
world model, the dataset generator, the evaluator and the reconciler call on a list of states.

States are kept in execution order. The states of one invocation are its `call` state, its `line`
states and its terminal (`return` / `exception`) state; the states of the calls it makes are its
children in the tree. A terminal state has left its invocation: stepping on from it happens in the
caller (as a debugger shows it: back in the caller, with the return value). Breakpoint targets are
(path, line) pairs; an empty path matches that line in any file.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from neural_dap.core.actions import Action, Target
from neural_dap.core.state import TERMINAL_EVENTS, State
from neural_dap.trace.actions import KIND_CODES, ActionSemantics, Columns


class Facts(NamedTuple):
    """What the tree reads of each event, where the states themselves are not built (a live
    recording of threads: its states are made on demand, trace/threaded.py): per event its kind,
    line and invocation, and per invocation (thread, depth, function, path). The lists may grow."""

    kinds: Sequence[str]
    lines: Sequence[int]
    invs: Sequence[int]
    invocation: Callable[[int], tuple[int, int, str, str]]


class StateTree:
    def __init__(
        self,
        states: Sequence[State],
        resumes: Mapping[int, int] | None = None,
        library: Collection[int] = (),
        open_before: Mapping[int, tuple[int, int]] | None = None,
        facts: Facts | None = None,
    ) -> None:
        """`resumes`: invocation -> the invocation a resumed generator or coroutine continues (a
        recording says; see trace/child/coroutines.py); `library`: the invocations library code
        called (see trace/child/__init__.py); `open_before`: invocation -> (thread, depth) of the
        frames already on the stacks where the states begin (a recording that starts at a cut,
        trace/rolling.py, or at a window: their snapshots), outermost first: they are the callers
        of what runs in them (a frame without a state yet has none in `stack`). `facts`: read the
        events from these rather than from `states`, which are then built only where asked for."""
        if not states:
            raise ValueError("a state tree needs at least one state")
        self.facts = facts
        self.states: Sequence[State] = list(states) if facts is None else states
        self.resumes = dict(resumes or {})
        self.library = frozenset(library)
        self.by_invocation: dict[int, list[int]] = {}
        self.call_index: dict[int, int] = {}
        self.end_index: dict[int, int] = {}
        self.parent: dict[int, int | None] = {}
        self.thread_of: dict[int, int] = {}
        self._open_stacks: dict[int, list[int]] = {}  # per thread: its open invocations, innermost last
        self._opened = open_before or {}
        for inv, (thread, depth) in self._opened.items():
            below = self._open_stacks.setdefault(thread, [])
            self.parent[inv] = below[-1] if below and depth > 0 else None
            below.append(inv)
        # the columns so far (grown by `extend`): invocations numbered in order of first appearance
        self._ids: list[int] = []
        self._number: dict[int, int] = {}
        self._codes: dict[tuple[str, str], int] = {}
        self._code_of: list[int] = []
        self._kinds = np.zeros(0, dtype=np.uint8)
        self._lines = np.zeros(0, dtype=np.int32)
        self._invs = np.zeros(0, dtype=np.int64)
        self._walk(0)
        self.semantics = ActionSemantics(self._columns(0))

    def extend(self, states: Sequence[State], resumes: Mapping[int, int], library: Collection[int]) -> None:
        """More states of the same run after these (a live recording of threads, at its next stop):
        the walk goes on from where it ended and the columns grow, so a stop costs what came since,
        not the whole run again. `resumes` and `library`: the recording's, as they are now. (With
        `facts`, `states` is the whole run's sequence, grown, and the facts tell what is new.)"""
        start = len(self._invs)
        if self.facts is None:
            assert isinstance(self.states, list)
            self.states.extend(states)
        else:
            self.states = states
        self.resumes = dict(resumes)
        self.library = frozenset(library)
        self._walk(start)
        self.semantics = ActionSemantics(self._columns(start))

    def _walk(self, start: int) -> None:
        """Each state's invocation from `start` on: its call, its caller, its end."""
        facts = self.facts
        if facts is None:
            for i in range(start, len(self.states)):
                state = self.states[i]
                self._visit(i, state.invocation, state.thread, state.depth, state.event)
            return
        kinds, invs, about = facts.kinds, facts.invs, facts.invocation
        for i in range(start, len(kinds)):
            inv = invs[i]
            thread, depth, _function, _path = about(inv)
            self._visit(i, inv, thread, depth, kinds[i])

    def _visit(self, i: int, inv: int, thread: int, depth: int, event: str) -> None:
        """State i, of invocation `inv` at `depth` in `thread`: its call, its caller, its end."""
        open_stacks, opened = self._open_stacks, self._opened
        open_stack = open_stacks.get(thread)
        if open_stack is None:
            open_stack = open_stacks[thread] = []
        if inv not in self.by_invocation:
            self.thread_of[inv] = thread
            self.by_invocation[inv] = []
            self.call_index[inv] = i
            # (a frame open before the states keeps its caller; asked of those only: a scan of
            # a deep recursion's stack at every call would cost its depth each time)
            if inv not in opened or inv not in open_stack:
                # depth 0: an entry of its own (the traced scope, a thread's function, a task's
                # coroutine the event loop runs), whatever traced frames are below it
                self.parent[inv] = open_stack[-1] if open_stack and depth > 0 else None
                open_stack.append(inv)
        self.by_invocation[inv].append(i)
        if event in TERMINAL_EVENTS:
            self.end_index[inv] = i
            if open_stack and open_stack[-1] == inv:
                open_stack.pop()
            elif inv in open_stack:
                del open_stack[open_stack.index(inv) :]

    def _columns(self, start: int) -> Columns:
        """The columns the actions read, from the states and the walk above (numbered in order of
        first appearance; an invocation's code is its first state's function and path); those of
        the states before `start` were made already."""
        states, facts = self.states, self.facts
        for inv, i in itertools.islice(self.call_index.items(), len(self._ids), None):
            self._number[inv] = len(self._ids)
            self._ids.append(inv)
            code = facts.invocation(inv)[2:] if facts is not None else (states[i].function, states[i].path)
            self._code_of.append(self._codes.setdefault(code, len(self._codes)))
        number, ids = self._number, self._ids
        if facts is None:
            new = states[start:]
            kinds = [KIND_CODES[s.event] for s in new]
            lines: Sequence[int] = [s.line for s in new]
            invs = [number[s.invocation] for s in new]
        else:
            end = len(facts.kinds)
            kinds = [KIND_CODES[k] for k in facts.kinds[start:end]]
            lines = facts.lines[start:end]
            invs = [number[v] for v in facts.invs[start:end]]
        self._kinds = np.concatenate([self._kinds, np.array(kinds, dtype=np.uint8)])
        self._lines = np.concatenate([self._lines, np.array(lines, dtype=np.int32)])
        self._invs = np.concatenate([self._invs, np.array(invs, dtype=np.int64)])
        parents = (self.parent[inv] for inv in ids)
        return Columns(
            kinds=self._kinds,
            lines=self._lines,
            invs=self._invs,
            call_index=np.fromiter(self.call_index.values(), dtype=np.int64, count=len(ids)),
            end_index=np.array([self.end_index.get(inv, -1) for inv in ids], dtype=np.int64),
            parent=np.array([number.get(p, -1) if p is not None else -1 for p in parents], dtype=np.int64),
            code_of=np.array(self._code_of, dtype=np.int64),
            codes=tuple(self._codes),
            thread_of=np.array([self.thread_of[inv] for inv in ids], dtype=np.int32)
            if any(self.thread_of.values())
            else None,
            resumes=np.array([number.get(self.resumes.get(inv, -1), -1) for inv in ids], dtype=np.int64)
            if self.resumes
            else None,
            library=np.array([inv in self.library for inv in ids], dtype=bool) if self.library else None,
        )

    def __len__(self) -> int:
        return len(self._invs)

    @property
    def last(self) -> int:
        return len(self._invs) - 1

    def is_terminal(self, i: int) -> bool:
        return self.states[i].event in TERMINAL_EVENTS

    def is_call(self, i: int) -> bool:
        return self.states[i].event == "call"

    # -- the actions (defined in trace.actions) ---------------------------------------------------
    def apply(self, i: int, action: Action) -> int:
        return self.semantics.apply(i, action)

    def next_line_at(self, i: int, targets: tuple[Target, ...]) -> int:
        found = self.semantics.next_hit(i, targets)
        return self.last if found is None else found

    def previous_line_at(self, i: int, targets: tuple[Target, ...]) -> int:
        found = self.semantics.previous_hit(i, targets)
        return 0 if found is None else found

    # -- the call stack at a state ---------------------------------------------------------------
    def stack(self, i: int) -> list[int]:
        """Indices of the latest state of each invocation on the stack at i, innermost first."""
        out = [i]
        inv = self.parent.get(self.states[i].invocation if self.facts is None else self.facts.invs[i])
        while inv is not None:
            indices = self.by_invocation.get(inv, ())
            k = bisect_right(indices, i)
            if k == 0:  # (a frame open before the states, that has not run since: see `open_before`)
                break
            out.append(indices[k - 1])
            inv = self.parent.get(inv)
        return out

    def available(self, i: int) -> list[str]:
        """Action kinds that move from state i (used by the trajectory sampler)."""
        out = []
        if i < self.last:
            out += ["step_into", "step_over", "step_return", "continue"]
            if self.semantics.next_line_event(i, forward=True) is not None:
                out.append("breakpoint")
        if i > 0:
            out += ["inv_step_into", "inv_step_over", "inv_step_return"]
            if self.semantics.next_line_event(i, forward=False) is not None:
                out.append("inv_breakpoint")
        return out
