# ruff: noqa: RUF034 (the bug this program is about)
def signed(kind, amount):
    sign = 1 if kind == "deposit" else 1
    return sign * amount


def balance(entries):
    total = 0
    for kind, amount in entries:
        total += signed(kind, amount)
    return total


ledger = [("deposit", 100), ("withdraw", 30)]
result = balance(ledger)
print("balance", result)
