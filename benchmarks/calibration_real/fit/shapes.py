"""Shapes with inheritance: areas, perimeters and the largest."""

import math


class Shape:
    name = "shape"

    def area(self):
        raise NotImplementedError

    def describe(self):
        return f"{self.name} with area {self.area():.2f}"


class Rectangle(Shape):
    name = "rectangle"

    def __init__(self, w, h):
        self.w, self.h = w, h

    def area(self):
        return self.w * self.h


class Circle(Shape):
    name = "circle"

    def __init__(self, r):
        self.r = r

    def area(self):
        return math.pi * self.r**2


shapes = [Rectangle(3, 4), Circle(1.5), Rectangle(2, 2)]
largest = max(shapes, key=lambda s: s.area())
print(largest.describe(), [round(s.area(), 1) for s in shapes])
