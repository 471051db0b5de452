"""A bounded stack that refuses to overflow."""


class Stack:
    def __init__(self, limit):
        self.limit = limit
        self.items = []

    def push(self, item):
        if len(self.items) >= self.limit:
            raise OverflowError("stack full")
        self.items.append(item)

    def pop(self):
        return self.items.pop()


s = Stack(2)
s.push("a")
s.push("b")
top = s.pop()
s.push("c")
s.push("d")
print(top, s.items)
