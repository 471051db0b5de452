"""A text histogram of dice rolls."""

from collections import Counter

rolls = [3, 5, 2, 6, 3, 3, 1, 5, 6, 6, 2, 3]
counts = Counter(rolls)
rows = []
for face in range(1, 7):
    bar = "#" * counts[face]
    rows.append(f"{face}: {bar}")
mode, times = counts.most_common(1)[0]
share = round(times / len(rolls), 3)
print("\n".join(rows))
print(mode, share)
