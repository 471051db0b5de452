"""Sum the digits of a number recursively until one digit is left."""


def digit_sum(n):
    if n < 10:
        return n
    return n % 10 + digit_sum(n // 10)


def digital_root(n):
    while n >= 10:
        n = digit_sum(n)
    return n


print(digit_sum(9875), digital_root(9875))
