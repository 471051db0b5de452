def moving_sums(xs, k):
    sums = []
    for i in range(len(xs) - k):
        window = xs[i : i + k]
        sums.append(sum(window))
    return sums


def smooth(readings):
    return moving_sums(readings, 3)


result = smooth([4, 8, 6, 2, 10])
print(result)
