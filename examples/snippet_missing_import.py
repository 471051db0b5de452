"""Code that cannot run here: `fastmath` does not exist. The neural world model can still step it.

neural-dap debug examples/snippet_missing_import.py --world neural --entry mean_gap --args "[3, 9, 4]"
"""

from fastmath import clamp  # noqa: F401  (not installed anywhere)


def mean_gap(values):
    ordered = sorted(values)
    gaps = []
    for a, b in zip(ordered, ordered[1:]):
        gaps.append(b - a)
    return sum(gaps) / len(gaps)
