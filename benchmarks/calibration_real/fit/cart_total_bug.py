"""A cart total where quantities arrive as strings."""

cart = [("tea", "2", 3.5), ("cake", "1", 4.25), ("jam", "3", 2.0)]


def line_cost(qty, price):
    return qty * price


total = 0
for name, qty, price in cart:
    total += line_cost(int(qty), price)
tax = total * 0.08
print(round(total, 2), round(tax, 2))
