"""A library lending books; lending a lent book raises."""


class Library:
    def __init__(self, titles):
        self.available = set(titles)
        self.lent = {}

    def lend(self, title, reader):
        if title not in self.available:
            raise LookupError(f"{title} is not available")
        self.available.remove(title)
        self.lent[title] = reader

    def give_back(self, title):
        self.lent.pop(title)
        self.available.add(title)


lib = Library(["dune", "emma", "ulysses"])
lib.lend("dune", "ray")
lib.lend("emma", "sue")
lib.give_back("dune")
try:
    lib.lend("emma", "tom")
except LookupError as exc:
    print(exc)
print(sorted(lib.available), lib.lent)
