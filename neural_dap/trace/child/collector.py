"""The program's garbage collections at the same events in the recording and in every replay.

CPython collects when the count of container allocations passes a threshold, and the recorder's own
work (its hooks, the reprs of a captured window, a checkpoint serving a request) allocates too, a
different amount in the recording and in each replay. A collection runs finalizers: an asyncio
task's `__del__` that logs, a generator's `finally`, a file closed by its `__del__`; each can read the
clock or the disk. Run at another moment in a replay, they ask the journal for something in another
order than the recording did, and the replay diverges (found on asyncio programs under 3.12).

So, in a recording that is replayed, automatic collection is off and the recorder collects at every
`EVERY`th event itself (in the program's context: what finalizers do is the program's, journaled and
replayed), gen 1 and 2 at rarer multiples, as CPython's thresholds do in proportion. The program still
sees `gc.isenabled()`, `gc.enable()` and `gc.disable()` as it set them: a program that turned
collection off is collected only by its own `gc.collect()` calls, as it expects.

Standard library only.
"""

from __future__ import annotations

import gc

# events between two young collections (the engines' hook runs at each multiple). The hook, its
# collections and the checkpoints cost a sixth of recording a recursion when it ran every 4096
# events (fib(30), 3.12, best of 7: 601 ms, 505 without any); at 16384, 569 ms. Cyclic garbage
# waits up to that many events to be collected.
EVERY = 16384
MIDDLE = 16  # every 16th is of generation 1
OLD = 256  # every 256th of generation 2 (about every four million events: a full collection of a
# large heap takes milliseconds)


class Collector:
    def __init__(self, as_program) -> None:
        self.as_program = as_program  # a context manager: the journal's program context
        self.wanted = gc.isenabled()  # the program's own switch
        self._saved = (gc.enable, gc.disable, gc.isenabled)
        self.active = False

    def install(self) -> None:
        """Take over: automatic collection off, the program's switch virtual. The recorder's own
        objects (its modules, its start-up's) are made old first, as a plain run's start-up leaves
        the interpreter's: left young, every generation-1 collection walked all of them again
        (3.13: 1.5 ms each, a tenth of recording fib(25))."""
        if self.active:
            return
        self.active = True
        gc.collect()
        gc.disable()

        def enable() -> None:
            self.wanted = True

        def disable() -> None:
            self.wanted = False

        def isenabled() -> bool:
            return self.wanted

        gc.enable, gc.disable, gc.isenabled = enable, disable, isenabled  # type: ignore[assignment]

    def release(self) -> None:
        """Nothing is replayed from here on (every thread recorded in full): CPython collects again."""
        if not self.active:
            return
        self.active = False
        gc.enable, gc.disable, gc.isenabled = self._saved  # type: ignore[assignment]
        if self.wanted:
            gc.enable()

    def at(self, count: int) -> None:
        """The hook at event `count`: a collection where `count` is a multiple of `EVERY`."""
        if not self.active or not self.wanted or count % EVERY:
            return
        turn = count // EVERY
        generation = 2 if turn % OLD == 0 else 1 if turn % MIDDLE == 0 else 0
        with self.as_program():
            gc.collect(generation)


__all__ = ["EVERY", "Collector"]
