"""A ThreadPoolExecutor with one worker filling a module's dict, and a Timer: the breakpoint is in
the worker, where the Globals scope and module names must be what they are at that moment."""

import threading
from concurrent.futures import ThreadPoolExecutor

LIMIT = 3
results = {}


def work(n):
    total = 0
    for k in range(n):
        total += k
    results[n] = total  # breakpoint
    return total


with ThreadPoolExecutor(max_workers=1) as pool:
    done = list(pool.map(work, [2, 3, 4]))
timer = threading.Timer(0.01, lambda: results.setdefault("timer", LIMIT))
timer.start()
timer.join()
print(done, sorted(results.items(), key=str))
