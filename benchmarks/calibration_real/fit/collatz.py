"""Collatz sequences: the longest start below a bound."""


def steps(n):
    count = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        count += 1
    return count


lengths = {}
for start in range(1, 12):
    lengths[start] = steps(start)
longest = max(lengths, key=lengths.get)
print(longest, lengths[longest])
