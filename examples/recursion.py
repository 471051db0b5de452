"""Recursion: every call is its own invocation; step into, out of and back across them."""


def factorial(n):
    if n <= 1:
        return 1
    rest = factorial(n - 1)
    return n * rest


def digits_sum(n):
    total = 0
    while n > 0:
        total += n % 10
        n //= 10
    return total


value = factorial(5)
print(value, digits_sum(value))
