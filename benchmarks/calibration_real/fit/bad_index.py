"""Pair each day with the next day's value; the last day has none (a crash)."""

values = [5, 8, 6, 9]
changes = []
for i in range(len(values)):
    change = values[i + 1] - values[i]
    changes.append(change)
print(changes)
