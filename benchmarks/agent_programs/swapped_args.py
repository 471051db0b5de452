def power(base, exponent):
    return base**exponent


def squares(n):
    out = []
    for k in range(n):
        out.append(power(2, k))
    return out


result = squares(4)
print(result)
