"""Student records with dataclasses: ranking and honours."""

from dataclasses import dataclass, field


@dataclass
class Student:
    name: str
    marks: list = field(default_factory=list)

    def mean(self):
        return sum(self.marks) / len(self.marks) if self.marks else 0.0


roster = [Student("ali", [71, 80]), Student("bea", [92, 88, 95]), Student("cy", [])]
ranked = sorted(roster, key=lambda s: s.mean(), reverse=True)
honours = [s.name for s in ranked if s.mean() >= 85]
print([s.name for s in ranked], honours)
