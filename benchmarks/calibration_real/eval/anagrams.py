"""Group words that are anagrams of each other."""

from collections import defaultdict

words = ["listen", "silent", "enlist", "google", "gooegl", "cat", "act", "tac", "dog"]


def signature(word):
    return "".join(sorted(word))


groups = defaultdict(list)
for word in words:
    groups[signature(word)].append(word)

largest = max(groups.values(), key=len)
singles = [g[0] for g in groups.values() if len(g) == 1]
print(len(groups), largest, singles)
