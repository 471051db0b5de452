"""A small inventory: a class with methods, a dataclass, and a main function."""

from dataclasses import dataclass


@dataclass
class Item:
    name: str
    price: int
    quantity: int = 1


class Inventory:
    def __init__(self):
        self.items = {}

    def add(self, item):
        if item.name in self.items:
            self.items[item.name].quantity += item.quantity
        else:
            self.items[item.name] = item
        return len(self.items)

    def total(self):
        value = 0
        for item in self.items.values():
            value += item.price * item.quantity
        return value


def main():
    stock = Inventory()
    stock.add(Item("pen", 2, 3))
    stock.add(Item("book", 12))
    stock.add(Item("pen", 2))
    print(f"{len(stock.items)} kinds, worth {stock.total()}")


if __name__ == "__main__":
    main()
