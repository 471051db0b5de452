"""Raised and caught exceptions: where did the bad value come from? Step back to see."""


def parse_age(text):
    age = int(text)
    if age < 0:
        raise ValueError(f"negative age: {age}")
    return age


def average_age(rows):
    ages = []
    for row in rows:
        try:
            ages.append(parse_age(row))
        except ValueError as err:
            print("skipped", repr(row), "-", err)
    return sum(ages) / len(ages)


print(average_age(["31", "x", "-4", "40"]))
