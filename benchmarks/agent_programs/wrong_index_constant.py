def second_largest(xs):
    ordered = sorted(xs)
    return ordered[1]


result = second_largest([5, 1, 9, 7])
print(result)
