"""Pick the best discount rule for an order."""

rules = [
    ("ten off over 50", lambda total: 10 if total > 50 else 0),
    ("five percent", lambda total: total * 0.05),
    ("none", lambda total: 0),
]


def best_discount(total):
    best_name, best_amount = None, -1
    for name, rule in rules:
        amount = rule(total)
        if amount > best_amount:
            best_name, best_amount = name, amount
    return best_name, round(best_amount, 2)


print(best_discount(40), best_discount(80), best_discount(300))
