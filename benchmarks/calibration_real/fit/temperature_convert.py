"""Convert a table of Celsius temperatures and classify them."""


def to_fahrenheit(c):
    return c * 9 / 5 + 32


def classify(f):
    if f < 50:
        return "cold"
    elif f < 77:
        return "mild"
    return "hot"


celsius = [-5, 12, 24, 31]
table = []
for c in celsius:
    f = to_fahrenheit(c)
    table.append((c, f, classify(f)))
print(table)
