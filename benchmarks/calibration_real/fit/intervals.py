"""Merge overlapping meeting times."""

meetings = [(9, 10), (13, 15), (9.5, 11), (14, 16), (17, 18)]


def merge(spans):
    spans = sorted(spans)
    merged = [spans[0]]
    for start, end in spans[1:]:
        last_start, last_end = merged[-1]
        if start <= last_end:
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged


busy = merge(meetings)
free_hours = sum(b[0] - a[1] for a, b in zip(busy, busy[1:]))
print(busy, free_hours)
