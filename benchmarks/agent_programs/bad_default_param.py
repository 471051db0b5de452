def scale(values, factor=0):
    return [v * factor for v in values]


def normalise(values):
    return scale(values)


result = normalise([1, 2, 3])
print(result)
