"""A 2-D vector class with operators."""

import math


class Vector:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __add__(self, other):
        return Vector(self.x + other.x, self.y + other.y)

    def __mul__(self, k):
        return Vector(self.x * k, self.y * k)

    def length(self):
        return math.hypot(self.x, self.y)

    def __repr__(self):
        return f"Vector({self.x}, {self.y})"


path = [Vector(1, 2), Vector(3, -1), Vector(0, 4)]
position = Vector(0, 0)
for step in path:
    position = position + step * 2
print(position, round(position.length(), 3))
