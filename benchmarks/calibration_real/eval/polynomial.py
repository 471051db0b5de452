"""Polynomials as coefficient lists: evaluate, add, differentiate."""


def evaluate(coeffs, x):
    result = 0
    for c in reversed(coeffs):
        result = result * x + c
    return result


def add(p, q):
    size = max(len(p), len(q))
    p = p + [0] * (size - len(p))
    q = q + [0] * (size - len(q))
    return [a + b for a, b in zip(p, q)]


def derivative(p):
    return [i * c for i, c in enumerate(p)][1:]


poly = [1, -3, 2]  # 1 - 3x + 2x^2
print(evaluate(poly, 2), add(poly, [0, 1]), derivative(poly))
