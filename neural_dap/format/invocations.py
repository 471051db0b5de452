"""Which invocation does a frame belong to? Inferred from what the trace text shows.

The trace format writes no invocation ids or depths. A reader rebuilds them from the sequence of
(action, event, line): a forward step into a `call` opens an invocation, a terminal frame closes
one, and so on. Where an action jumps (breakpoint, continue, stepping back into a callee) the
function of the landing line decides. The renderer and the parser both use this one class, so the
`".."` shorthand (unchanged since the previous frame of the same invocation) always resolves the
same way on both sides. On a plain forward trace the inference is exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from neural_dap.core.source import SourceInfo
from neural_dap.core.state import TERMINAL_EVENTS


@dataclass
class Open:
    invocation: int
    function: str
    last_line: int | None = None  # the line of this invocation's latest frame
    # False where the inference is a guess: entered by a jump (not a step into its call), or
    # returned to by a callee that was itself a guess (the real caller may not be on the stack)
    certain: bool = True


@dataclass
class InvocationTracker:
    source: SourceInfo
    stack: list[Open] = field(default_factory=list)
    entry_function: str | None = None  # the first frame's function, when the caller knows it
    next_id: int = 0
    last_event: str | None = None
    previous_line: int | None = None  # set by advance: the landing invocation's line before it
    # nd (our recorder): an `exception` frame is the exception leaving its function. CWM writes
    # sys.settrace's events: `exception` in every frame the exception passes (it may be caught
    # there), and each frame it leaves ends with a `return`; so in cwm only a return leaves.
    exception_leaves: bool = True

    def _push(self, function: str, line: int, certain: bool = True) -> Open:
        entry = Open(self.next_id, function, certain=certain)
        self.next_id += 1
        self.stack.append(entry)
        return entry

    def _pop_to(self, function: str) -> bool:
        for k in range(len(self.stack) - 1, -1, -1):
            if self.stack[k].function == function:
                del self.stack[k + 1 :]
                return True
        return False

    def function_of(self, event: str, line: int) -> str:
        return self.source.function_at(line, starting=event == "call")

    def advance(self, action: str, event: str, line: int) -> tuple[int, int, str]:
        """Account for a frame reached by `action`; returns (invocation, depth, function)."""
        stack = self.stack
        prev = self.last_event
        self.last_event = event
        if not stack:
            entry = self._push(self.entry_function or self.function_of(event, line), line)
            self.previous_line = None
            entry.last_line = line
            return entry.invocation, 0, entry.function
        function = self.function_of(event, line)
        left = self.leaves(prev)
        if action in ("step_into", "step_over", "step_return"):
            if left and len(stack) > 1:
                self._leave()  # the frame before this one had left its invocation
            elif left and event != "call":
                stack[-1].certain = False  # going on after the traced scope "ended": a caller we never saw
            if event == "call" and action == "step_into":
                self._push(function, line)
        elif action in ("inv_step_into", "inv_step_over", "inv_step_return", "inv_breakpoint"):
            if prev == "call" and len(stack) > 1:
                stack.pop()  # back before a call: in the caller again
            if action == "inv_step_into" and event in TERMINAL_EVENTS:
                self._push(function, line, certain=False)  # the state before is a callee's return
            elif action == "inv_breakpoint" and stack[-1].function != function:
                if self._pop_to(function):
                    stack[-1].certain = False
                else:
                    self._push(function, line, certain=False)
        else:  # a forward jump: breakpoint, continue
            if left and len(stack) > 1:
                self._leave()
            if stack[-1].function != function:
                if self._pop_to(function):
                    stack[-1].certain = False
                else:
                    self._push(function, line, certain=False)
        top = stack[-1]
        if action not in ("step_into", "step_over", "step_return") and self.source.shared_line(line):
            top.certain = False  # a jump to a line two code objects share (a lambda in a function)
        self.previous_line = top.last_line
        top.last_line = line
        return top.invocation, len(stack) - 1, top.function

    def leaves(self, event: str | None) -> bool:
        """Does a frame of this event end its invocation?"""
        return event == "return" or (event == "exception" and self.exception_leaves)

    def _leave(self) -> None:
        left = self.stack.pop()
        if not left.certain:
            self.stack[-1].certain = False  # its real caller may be another function

    def snapshot(self) -> tuple:
        return (
            [Open(o.invocation, o.function, o.last_line, o.certain) for o in self.stack],
            self.next_id,
            self.last_event,
        )

    def restore(self, snap: tuple) -> None:
        stack, self.next_id, self.last_event = snap
        self.stack = [Open(o.invocation, o.function, o.last_line, o.certain) for o in stack]

    def reset(self) -> None:
        self.stack.clear()
        self.next_id = 0
        self.last_event = None
