"""Small matrix helpers: transpose, multiply, identity check."""


def transpose(m):
    return [list(row) for row in zip(*m)]


def multiply(a, b):
    cols = transpose(b)
    return [[sum(x * y for x, y in zip(row, col)) for col in cols] for row in a]


def is_identity(m):
    return all(m[i][j] == (1 if i == j else 0) for i in range(len(m)) for j in range(len(m)))


a = [[1, 2], [3, 4]]
b = [[0, 1], [1, 0]]
product = multiply(a, b)
print(product, transpose(a), is_identity(multiply(b, b)))
