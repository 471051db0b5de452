def last_n(xs, n):
    start = len(xs) - n + 1
    return xs[start:]


window = last_n([1, 2, 3, 4, 5], 3)
print(window)
