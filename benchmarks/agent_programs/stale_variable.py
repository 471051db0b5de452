def max_of(xs):
    best = xs[0]
    for x in xs:
        if x > best:
            best = x
    return x


result = max_of([3, 9, 4])
print(result)
