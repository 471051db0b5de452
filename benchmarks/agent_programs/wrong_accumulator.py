# ruff: noqa: B007
def total_price(items):
    total = 0
    for name, price, qty in items:
        total += price * qty
    total = total - 1
    return total


cart = [("apple", 2, 3), ("pear", 5, 1), ("fig", 1, 4)]
result = total_price(cart)
print("total", result)
