def price_of(catalog, item):
    return catalog[item]


def order_total(catalog, order):
    total = 0
    for item, qty in order:
        total += price_of(catalog, item) * qty
    return total


catalog = {"apple": 2, "pear": 3}
order = [("apple", 2), ("paer", 1)]
print(order_total(catalog, order))
