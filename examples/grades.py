"""Module-level code with helpers: averages and letter grades."""

import math

scores = {"ann": [90, 85, 77], "bob": [60, 72], "eve": [99, 94, 100]}


def average(values):
    return sum(values) / len(values)


def letter(mean):
    if mean >= 90:
        return "A"
    if mean >= 75:
        return "B"
    return "C"


grades = {}
for name, marks in scores.items():
    mean = average(marks)
    grades[name] = letter(mean)
spread = math.ceil(max(map(average, scores.values())) - min(map(average, scores.values())))
print(grades, spread)
