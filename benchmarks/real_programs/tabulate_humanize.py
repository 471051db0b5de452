"""tabulate and humanize: a table of files with human-readable sizes and ages."""

import datetime as dt

import humanize
from tabulate import tabulate

NOW = dt.datetime(2024, 5, 1, 12, 0, 0)
FILES = [
    ("trace.bin", 123_456_789, dt.datetime(2024, 4, 30, 9, 0)),
    ("model.safetensors", 1_800_000_000, dt.datetime(2024, 3, 1, 12, 0)),
    ("notes.md", 2_048, dt.datetime(2024, 5, 1, 11, 58)),
]


def rows():
    out = []
    for name, size, modified in FILES:
        age = humanize.naturaldelta(NOW - modified)  # breakpoint
        out.append((name, humanize.naturalsize(size), age, humanize.intcomma(size)))
    return out


print(tabulate(rows(), headers=["file", "size", "age", "bytes"], tablefmt="github"))
