def total(xs):
    s = 0
    for i in range(len(xs) + 1):
        s += xs[i]
    return s


print(total([4, 5, 6]))
