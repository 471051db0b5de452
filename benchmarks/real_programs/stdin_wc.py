"""A filter reading stdin, as `python stdin_wc.py < file` runs it: counts lines, words and the
most common word."""

import sys
from collections import Counter


def main():
    counts = Counter()
    lines = 0
    for line in sys.stdin:
        lines += 1
        counts.update(line.lower().split())  # breakpoint
    print(f"{lines} lines, {sum(counts.values())} words")
    for word, n in counts.most_common(3):
        print(word, n)


main()
