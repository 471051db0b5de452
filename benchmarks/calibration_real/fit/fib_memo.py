"""Fibonacci numbers with a memo, and the first one over a bound."""

memo = {0: 0, 1: 1}


def fib(n):
    if n not in memo:
        memo[n] = fib(n - 1) + fib(n - 2)
    return memo[n]


index = 0
while fib(index) <= 100:
    index += 1
print(index, fib(index), len(memo))
