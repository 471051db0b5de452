"""The user's functions called by the standard library: heapq's and sorted's key, a cached,
wrapped recursion (functools.lru_cache over functools.wraps)."""

import functools
import heapq


def weight(item):
    score = item[1] * 2  # breakpoint
    return score


def logged(func):
    @functools.wraps(func)
    def wrapper(*args):
        value = func(*args)
        return value

    return wrapper


@functools.lru_cache(maxsize=None)  # noqa: UP033 (written as its users write it)
@logged
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def top(items):
    best = heapq.nlargest(2, items, key=weight)
    return best


data = [("a", 3), ("b", 1), ("c", 5)]
result = top(data)
ranked = sorted(data, key=weight)
print(result, ranked, fib(6))
