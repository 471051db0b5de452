"""attrs classes with validators, converters, evolve and asdict."""

import attrs


@attrs.define
class Point:
    x: float = attrs.field(converter=float)
    y: float = attrs.field(converter=float)

    def norm(self):
        return (self.x**2 + self.y**2) ** 0.5


@attrs.frozen
class Segment:
    start: Point
    end: Point
    label: str = attrs.field(default="", validator=attrs.validators.instance_of(str))

    def length(self):
        return Point(self.end.x - self.start.x, self.end.y - self.start.y).norm()


def main():
    a = Point(0, 0)
    b = Point("3", 4)
    seg = Segment(a, b, label="ab")
    longer = attrs.evolve(seg, end=Point(6, 8))  # breakpoint
    print(seg.length(), longer.length())
    print(attrs.asdict(longer))
    try:
        Segment(a, b, label=3)
    except TypeError as exc:
        print("rejected:", type(exc).__name__)


main()
