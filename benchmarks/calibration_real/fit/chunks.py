"""Split a list into chunks and sum each chunk."""


def chunked(items, size):
    return [items[i : i + size] for i in range(0, len(items), size)]


data = list(range(1, 11))
parts = chunked(data, 3)
sums = [sum(p) for p in parts]
print(parts, sums)
