"""Invoice lines with tax rates and a discount over a threshold."""

from decimal import Decimal

items = [
    {"name": "paper", "qty": 3, "price": Decimal("4.50"), "tax": Decimal("0.2")},
    {"name": "pens", "qty": 10, "price": Decimal("0.80"), "tax": Decimal("0.2")},
    {"name": "book", "qty": 1, "price": Decimal("12.00"), "tax": Decimal("0.05")},
]


def line_total(item):
    net = item["qty"] * item["price"]
    return net, net * item["tax"]


net_sum = Decimal(0)
tax_sum = Decimal(0)
for item in items:
    net, tax = line_total(item)
    net_sum += net
    tax_sum += tax
discount = net_sum * Decimal("0.1") if net_sum > 30 else Decimal(0)
total = (net_sum - discount + tax_sum).quantize(Decimal("0.01"))
print(net_sum, tax_sum, discount, total)
