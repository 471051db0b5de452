def mean(xs):
    return sum(xs) // len(xs)


result = mean([1, 2, 4])
print(result)
