"""Wrap a paragraph to a width, greedily, and justify the first line."""

TEXT = "the quick brown fox jumps over the lazy dog and keeps running far away"


def wrap(text, width):
    lines = []
    current = []
    for word in text.split():
        if sum(len(w) for w in current) + len(current) + len(word) > width:
            lines.append(" ".join(current))
            current = []
        current.append(word)
    if current:
        lines.append(" ".join(current))
    return lines


wrapped = wrap(TEXT, 20)
widest = max(len(line) for line in wrapped)
print(len(wrapped), widest, wrapped[0])
