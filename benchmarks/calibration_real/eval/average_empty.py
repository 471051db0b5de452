"""Average of readings per sensor; one sensor has no readings (a crash)."""

readings = {"s1": [20.5, 21.0, 19.5], "s2": [18.0, 18.4], "s3": []}


def average(values):
    return sum(values) / len(values)


report = {}
for sensor, values in readings.items():
    report[sensor] = round(average(values), 2)
print(report)
