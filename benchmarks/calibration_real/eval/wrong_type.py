"""Join labels with counts; a count is not a string (a crash)."""

labels = ["apples", "pears"]
counts = [3, 5]
lines = []
for label, count in zip(labels, counts):
    line = label + ": " + count
    lines.append(line)
print("\n".join(lines))
