"""A threaded stretch's events kept within a budget: the oldest dropped, the frames alive kept.

After a second thread runs the program's code, every thread is recorded in full (child/switch.py),
and a server living under the recorder sends events for as long as it serves. Kept whole, they
would fill the adapter's memory (and the child ended the program at 2 M of them). So once the
events since the switch pass the budget, the oldest half is *folded*: the frames alive at the cut
become snapshots (each thread's stack, each frame's code, depth, latest line and locals there), and
the events before the cut are dropped. The joined recording (trace/threaded.py) then starts at the
cut, each frame alive there with its locals, and the session says how many events were dropped.

What the fold loses: a frame alive across the cut has no call event after it. It stays on its
thread's stack (the full recording's tree takes the snapshots as the frames open where its states
begin: trace/tree.py's `open_before`), but whether library code called it, or which generator run
it resumes, is not known. The output written before the cut is kept, shown at the first state
after it.
"""

from __future__ import annotations

from collections.abc import Iterator

BUDGET = 2_000_000  # events since the switch kept at most (a full recording's memory)
_STATES = frozenset(("c", "l", "r", "x"))


class _Frame:
    __slots__ = ("code", "depth", "line", "locals", "thread")

    def __init__(self, code: int, line: int, depth: int, thread: int) -> None:
        self.code = code
        self.line = line
        self.depth = depth
        self.thread = thread
        self.locals: dict[str, object] = {}  # name -> its encoding on the wire, in the order set

    def apply(self, changes: list | None) -> None:
        """A wire change list: name, encoding, name, encoding, ... (an empty list: deleted)."""
        if not changes:
            return
        for k in range(0, len(changes) - 1, 2):
            name, enc = changes[k], changes[k + 1]
            if isinstance(enc, list) and not enc:
                self.locals.pop(name, None)
            else:
                self.locals[name] = enc


class RollingEvents:
    """The events since the switch, as a list that keeps at most `budget` of them after `base`
    (the snapshot events of the frames alive at the last cut)."""

    def __init__(self, budget: int | None = None) -> None:
        self.budget = max(2, BUDGET if budget is None else budget)
        self.events: list = []
        self.base: list = []
        self.dropped = 0  # states (call, line, return, exception events) folded away
        self._frames: dict[int, _Frame] = {}  # invocation -> its frame, alive at the cut
        self._stacks: dict[int, list[int]] = {}  # thread -> its invocations, outermost first
        self._names: dict[int, str] = {}
        self._thread = 0  # the thread whose events come at the cut
        self._output: list = []  # output events before the cut

    def append(self, event: list) -> None:
        self.events.append(event)
        if len(self.events) > self.budget:
            self._fold(len(self.events) // 2)

    def __iter__(self) -> Iterator[list]:
        yield from self.base
        yield from self.events

    def __len__(self) -> int:
        return len(self.base) + len(self.events)

    def _fold(self, count: int) -> None:
        """Drop the oldest `count` events, keeping the frames they leave alive as snapshots."""
        for event in self.events[:count]:
            try:
                self._follow(event)
            except (IndexError, TypeError, ValueError):
                continue  # (a malformed event: the records are the child's, never trusted blindly)
        del self.events[:count]
        self.base = self._snapshots()

    def _follow(self, event: list) -> None:
        tag = event[0]
        frame: _Frame | None
        if tag in _STATES:
            self.dropped += 1
        if tag == "t":
            self._thread = int(event[1])
            if len(event) > 2:
                self._names[self._thread] = str(event[2])
        elif tag == "c" or (tag == "s" and event[1] not in self._frames):
            self._forget(event[1])  # (an invocation started twice: a corrupt stream, the later one kept)
            frame = self._frames[event[1]] = _Frame(int(event[2]), int(event[3]), int(event[4]), self._thread)
            frame.apply(event[5])
            self._stacks.setdefault(self._thread, []).append(event[1])
        elif tag == "s" or tag == "u":
            frame = self._frames.get(event[1])
            if frame is not None:
                frame.apply(event[-1])
        elif tag == "l":
            frame = self._frames.get(event[1])
            if frame is not None:
                frame.line = int(event[2])
                frame.apply(event[3])
        elif tag in ("o", "e") and len(event) == 2:
            self._output.append(event)
        elif tag in ("r", "x"):
            self._forget(event[1])

    def _forget(self, inv: int) -> None:
        frame = self._frames.pop(inv, None)
        if frame is not None:
            stack = self._stacks.get(frame.thread, [])
            if inv in stack:
                stack.remove(inv)

    def _snapshots(self) -> list:
        """Each thread's frames as snapshot events (child/wire.py's "s"), after its thread record;
        then the record of the thread whose events follow."""
        out: list = list(self._output)
        named = {thread: name for thread, name in self._names.items() if not self._stacks.get(thread)}
        for thread, name in named.items():  # (a thread named before the cut, idle at it: its name kept)
            out.append(["t", thread, name])
        for thread, stack in self._stacks.items():
            if not stack:
                continue
            out.append(["t", thread, self._names[thread]] if thread in self._names else ["t", thread])
            for inv in stack:
                frame = self._frames[inv]
                changes = [part for name, enc in frame.locals.items() for part in (name, enc)]
                out.append(["s", inv, frame.code, frame.line, frame.depth, changes])
        out.append(["t", self._thread])
        return out
