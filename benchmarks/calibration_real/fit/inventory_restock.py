"""Restock a warehouse: items below their reorder level get ordered."""

stock = {"bolts": 120, "nuts": 15, "washers": 40, "screws": 5}
reorder_level = {"bolts": 50, "nuts": 30, "washers": 40, "screws": 20}
batch = {"bolts": 100, "nuts": 50, "washers": 25, "screws": 60}

orders = []
for item, quantity in stock.items():
    if quantity < reorder_level[item]:
        needed = reorder_level[item] - quantity
        batches = -(-needed // batch[item])
        orders.append((item, batches * batch[item]))
for item, amount in orders:
    stock[item] += amount
print(orders, stock)
