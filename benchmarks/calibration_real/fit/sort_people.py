"""Sort people by age, then by name, and find the age gaps."""

people = [("zoe", 31), ("adam", 25), ("mia", 31), ("li", 19)]
by_age = sorted(people, key=lambda p: (p[1], p[0]))
gaps = []
for (name_a, age_a), (name_b, age_b) in zip(by_age, by_age[1:]):
    gaps.append(age_b - age_a)
oldest = by_age[-1][0]
print(by_age, gaps, oldest)
