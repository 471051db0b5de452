def product(xs):
    p = 0
    for x in xs:
        p *= x
    return p


result = product([2, 3, 4])
print(result)
