def average(xs):
    total = 0
    for x in xs:
        total += x
    return total / len(xs)


def report(groups):
    return {name: average(values) for name, values in groups.items()}


groups = {"a": [1, 2, 3], "b": []}
print(report(groups))
