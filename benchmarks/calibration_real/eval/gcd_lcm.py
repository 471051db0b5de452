"""Greatest common divisor and least common multiple of several numbers."""


def gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def lcm(a, b):
    return a * b // gcd(a, b)


numbers = [12, 18, 30]
g = numbers[0]
m = numbers[0]
for n in numbers[1:]:
    g = gcd(g, n)
    m = lcm(m, n)
print(g, m)
