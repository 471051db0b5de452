"""Retrying a flaky operation with a bounded number of attempts."""


class Flaky:
    def __init__(self, failures):
        self.failures = failures
        self.calls = 0

    def fetch(self):
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError(f"attempt {self.calls} failed")
        return {"status": 200, "calls": self.calls}


def with_retries(operation, attempts):
    errors = []
    for attempt in range(attempts):
        try:
            return operation(), errors
        except ConnectionError as exc:
            errors.append(str(exc))
    return None, errors


result, errors = with_retries(Flaky(2).fetch, 4)
gave_up, more = with_retries(Flaky(5).fetch, 3)
print(result, errors, gave_up, len(more))
