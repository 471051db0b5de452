def merge(a, b):
    merged = dict(a)
    for k, v in b.items():
        merged[k] = v
    return merged


stock = merge({"apple": 3, "pear": 2}, {"apple": 4})
result = stock["apple"]
print(result)
