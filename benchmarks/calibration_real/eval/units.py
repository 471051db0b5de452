"""Convert between units of length through metres."""

TO_METRES = {"mm": 0.001, "cm": 0.01, "m": 1.0, "km": 1000.0, "in": 0.0254, "ft": 0.3048}


def convert(value, source, target):
    if source not in TO_METRES or target not in TO_METRES:
        raise KeyError(f"unknown unit {source!r} or {target!r}")
    return value * TO_METRES[source] / TO_METRES[target]


table = []
for value, source, target in [(5, "ft", "cm"), (3, "km", "m"), (12, "in", "ft")]:
    table.append((value, source, round(convert(value, source, target), 3), target))
try:
    convert(1, "yd", "m")
except KeyError as exc:
    problem = exc.args[0]
print(table, problem)
