"""A shopping cart with coupons and free shipping over a threshold."""

PRICES = {"apple": 0.5, "bread": 2.25, "milk": 1.1, "cheese": 4.8}
COUPONS = {"SAVE10": 0.10, "HALFBREAD": None}

cart = {"apple": 6, "bread": 2, "cheese": 1}


def subtotal(items):
    return sum(PRICES[name] * qty for name, qty in items.items())


def apply_coupon(items, code):
    total = subtotal(items)
    if code == "HALFBREAD":
        total -= PRICES["bread"] * items.get("bread", 0) / 2
    elif code in COUPONS:
        total *= 1 - COUPONS[code]
    return round(total, 2)


total = apply_coupon(cart, "HALFBREAD")
shipping = 0 if total >= 10 else 3.5
print(total, shipping, total + shipping)
