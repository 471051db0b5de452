"""Validate sensor values against limits and report the first failure."""

LIMITS = {"temp": (-20, 50), "humidity": (0, 100), "pressure": (950, 1050)}
sample = {"temp": 22.5, "humidity": 104, "pressure": 1012}


class OutOfRange(ValueError):
    pass


def check(values):
    for key, value in values.items():
        low, high = LIMITS[key]
        if not low <= value <= high:
            raise OutOfRange(f"{key}={value}")
    return True


try:
    ok = check(sample)
except OutOfRange as err:
    ok = False
    reason = str(err)
print(ok, reason)
