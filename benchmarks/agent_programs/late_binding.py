# ruff: noqa: B023 (the bug this program is about)
def make_multipliers():
    fns = []
    for k in range(1, 4):
        fns.append(lambda x: x * k)
    return fns


result = [f(10) for f in make_multipliers()]
print(result)
