"""Body-mass index for a few people, with categories."""

people = [("ann", 1.65, 58), ("bo", 1.80, 95), ("cy", 1.72, 50)]


def bmi(height, weight):
    return weight / height**2


def category(value):
    if value < 18.5:
        return "under"
    if value < 25:
        return "normal"
    return "over"


results = {}
for name, height, weight in people:
    value = round(bmi(height, weight), 1)
    results[name] = (value, category(value))
print(results)
