"""Convert numbers to binary by hand and check against bin()."""


def to_binary(n):
    if n == 0:
        return "0"
    digits = []
    while n > 0:
        digits.append(str(n % 2))
        n //= 2
    return "".join(reversed(digits))


checks = {}
for n in [0, 5, 12, 255]:
    mine = to_binary(n)
    checks[n] = (mine, mine == bin(n)[2:])
print(checks)
