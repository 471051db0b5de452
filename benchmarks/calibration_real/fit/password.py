"""Rate password strength by simple rules."""

import re

RULES = [
    (r"[a-z]", "lower"),
    (r"[A-Z]", "upper"),
    (r"\d", "digit"),
    (r"[^\w\s]", "symbol"),
]


def strength(password):
    passed = [name for pattern, name in RULES if re.search(pattern, password)]
    score = len(passed) + (1 if len(password) >= 12 else 0)
    label = "weak" if score < 3 else "ok" if score < 5 else "strong"
    return label, passed


for pw in ["hunter2", "Correct-Horse-42", "abc"]:
    label, passed = strength(pw)
    print(pw, label, passed)
