"""The adapter's cyclic garbage collector, paused while a recording's events become Python objects.

Decoding a batch of the child's events makes tens of thousands of small lists, and indexing them
makes more; none can be part of a cycle. Left running, the collector walks them again and again as
they are made (its young collections every 700 allocations, and the older ones as the lists
survive): four times the cost of the decoding itself (msgspec, 20,000 line events a batch: 2.4 µs an
event with the collector running, 0.8 µs paused per batch, collections after it included). Paused
for one batch, they are walked once by the next collection instead.

`gc.disable()` is the process's: the adapter's other threads are not collected meanwhile either,
for the length of one batch.

Paused, the batch is still walked later, and walked again at every older collection for as long as
the recording is kept: a threaded recording of a million events spent a fifth of the adapter's time
(0.7 s) in the collector. So a decoded batch is taken out of the collector's sight altogether
(`out_of_sight`), as the child's C tracer takes its events out: decoded JSON or msgpack is a tree, it
cannot hold a cycle, and the adapter never adds one to it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

try:  # (built with the recorder's C parts; where it is not, the collector walks the batches)
    from neural_dap.trace._values import untrack as _untrack
except ImportError:
    _untrack = None


@contextmanager
def paused_collector() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def out_of_sight(tree: object) -> None:
    """A decoded batch's lists, dicts and tuples never walked by the cyclic collector (their memory
    is freed by reference counting as before). Only for trees that stay trees: a cycle made later
    through one of them would never be collected."""
    if _untrack is not None:
        _untrack(tree)
