"""Flatten nested lists and count their depth."""


def flatten(items):
    flat = []
    for item in items:
        if isinstance(item, list):
            flat.extend(flatten(item))
        else:
            flat.append(item)
    return flat


def depth(items):
    if not isinstance(items, list):
        return 0
    return 1 + max((depth(i) for i in items), default=0)


nested = [1, [2, [3, 4]], [], [[5]]]
print(flatten(nested), depth(nested))
