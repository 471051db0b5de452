"""Counters made with closures."""


def make_counter(start, step):
    count = start

    def tick():
        nonlocal count
        count += step
        return count

    return tick


a = make_counter(0, 1)
b = make_counter(10, -2)
values = [a(), a(), b(), a(), b()]
print(values)
