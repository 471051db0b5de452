"""Text statistics with the standard library: re, collections and f-strings."""

import re
from collections import Counter

STOP_WORDS = {"the", "a", "and"}


def words(text):
    kept = []
    for word in re.findall(r"[a-z']+", text.lower()):
        if word not in STOP_WORDS:
            kept.append(word)
    return kept


def summary(text):
    counts = Counter(words(text))
    top, n = counts.most_common(1)[0]
    longest = max(counts, key=len)
    return f"{len(counts)} words, '{top}' x{n}, longest '{longest}'"


if __name__ == "__main__":
    report = summary("The cat and the hat sat on the mat. A cat!")
    print(report)
