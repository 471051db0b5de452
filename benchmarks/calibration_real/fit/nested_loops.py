"""A multiplication table and the products that are squares."""

size = 4
table = []
squares = []
for i in range(1, size + 1):
    row = []
    for j in range(1, size + 1):
        product = i * j
        row.append(product)
        if int(product**0.5) ** 2 == product:
            squares.append(product)
    table.append(row)
print(table[-1], sorted(set(squares)))
