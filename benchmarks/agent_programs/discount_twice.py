def apply_discount(price, rate):
    return price * (1 - rate)


def checkout(prices, rate):
    total = 0
    for p in prices:
        discounted = apply_discount(p, rate)
        total += discounted
    total = apply_discount(total, rate)
    return round(total, 2)


result = checkout([10, 20], 0.1)
print(result)
