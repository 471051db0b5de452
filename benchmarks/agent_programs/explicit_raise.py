def withdraw(balance, amount):
    if amount > balance:
        raise ValueError("insufficient funds")
    return balance - amount


def monthly(balance, fees):
    for fee in fees:
        balance = withdraw(balance, fee * 10)
    return balance


print(monthly(100, [1, 2, 8]))
