"""numpy, pandas, sqlite3 rows, a pydantic error, `__slots__` in a hierarchy, a repr that raises and
long containers: what the Variables view shows of each, beside debugpy (issue 38)."""

# ruff: noqa: F841  (the locals are there to be looked at in the debugger)

import sqlite3

import numpy as np
import pandas as pd
import pydantic


class Base:
    __slots__ = ("h",)


class Rect(Base):
    __slots__ = ("w",)

    def __init__(self, w, h):
        self.w = w
        self.h = h

    def __repr__(self):
        return f"Rect({self.w}x{self.h})"

    @property
    def area(self):
        return self.w * self.h


class Bad:
    def __init__(self):
        self.x = 1

    def __repr__(self):
        raise RuntimeError("no repr")


class Item(pydantic.BaseModel):
    name: str
    qty: int


def report():
    arr = np.arange(200)
    grid = np.linspace(0, 1, 1000).reshape(10, 100)
    df = pd.DataFrame({"city": ["Oslo", "Lima", "Rome"], "pop": [0.7, 10.0, 2.8]})
    rect = Rect(3, 4)
    items = [Bad(), 3]
    many = list(range(5000))
    keys = {f"k{i}": i for i in range(300)}
    text = "x" * 5000
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    cursor = conn.execute("select 'Dune' as title, 1965 as year")
    rows = cursor.fetchall()
    try:
        Item(name="pen", qty="many")
    except pydantic.ValidationError as exc:
        error = exc
    return len(rows) + rect.area + int(arr.sum()) + len(error.errors())  # breakpoint


print(report())
