"""The adapter's cyclic garbage collector, paused while a recording's events become Python objects.

Decoding a batch of the child's events makes tens of thousands of small lists, and indexing them
makes more; none can be part of a cycle. Left running, the collector walks them again and again as
they are made (its young collections every 700 allocations, and the older ones as the lists
survive): four times the cost of the decoding itself (msgspec, 20,000 line events a batch: 2.4 µs an
event with the collector running, 0.8 µs paused per batch, collections after it included). Paused
for one batch, they are walked once by the next collection instead.

`gc.disable()` is the process's: the adapter's other threads are not collected meanwhile either,
for the length of one batch.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_collector() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
