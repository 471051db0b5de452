"""Whole scripts shaped like real code, deterministic from a seed.

A debugger's most common launch is a whole file (`"program": "${file}"`), so the corpus has modules
too, not only functions called with an input: a module docstring, imports from the standard
library, constants, sometimes a class with methods, the generated function (under a real name,
with a docstring and comments) and module-level code that calls them, often in `main()` under
`if __name__ == "__main__":`, printing with f-strings. Traced from the module's first line, the
trajectories walk module code, class bodies, methods and functions, as real scripts do.
"""

from __future__ import annotations

import ast
import random

from neural_dap.corpus.programs import Program, generate

_FUNCTION_NAMES = [
    "process",
    "transform",
    "summarize",
    "clean_text",
    "count_items",
    "normalize",
    "compute",
    "analyze",
    "build_index",
    "parse_line",
    "score",
    "merge_values",
    "filter_items",
    "encode",
    "rearrange",
    "collect",
    "tally",
    "solve",
    "apply_rules",
    "reshape",
    "format_report",
    "split_words",
    "rank",
    "check_input",
]
_DOCSTRINGS = [
    "Small utilities for working with text and numbers.",
    "A worked example: read some values, transform them, report the result.",
    "Helpers for a tiny report generator.",
    "Demonstrates a few list, string and dict operations.",
    "Exercise solutions, kept short.",
    "Processing pipeline for a toy data set.",
]
_FUNCTION_DOCS = [
    "Return the processed value.",
    "Compute the result for the given input.",
    "Transform the input and return it.",
    "Apply the rules to the input.",
    "Build the answer step by step.",
]
_COMMENTS = [
    "# keep track of what we have seen",
    "# update the running result",
    "# handle the simple case first",
    "# TODO: this could be faster",
    "# normalise before comparing",
    "# build the output",
    "# note: the order matters here",
    "# check the input",
]
_CONSTANTS = [
    ("LIMIT", lambda r: str(r.randint(2, 9))),
    ("SEPARATOR", lambda r: repr(r.choice([", ", "-", " | ", ":"]))),
    ("GREETING", lambda r: repr(r.choice(["hello", "hi", "welcome"]))),
    ("SCALE", lambda r: str(r.choice([2, 3, 10]))),
    ("VOWELS", lambda r: repr("aeiou")),
    ("DEFAULT_NAME", lambda r: repr(r.choice(["anon", "guest", "user"]))),
]


def _stack(r: random.Random) -> tuple[str, list[str]]:
    items = [r.randint(0, 9) for _ in range(r.randint(2, 4))]
    cls = '''class Stack:
    """A last-in, first-out stack."""

    def __init__(self):
        self.items = []

    def push(self, item):
        self.items.append(item)

    def pop(self):
        if not self.items:
            return None
        return self.items.pop()

    def __len__(self):
        return len(self.items)
'''
    use = [
        "stack = Stack()",
        f"for item in {items!r}:",
        "    stack.push(item)",
        "top = stack.pop()",
        'print(f"top={top}, left={len(stack)}")',
    ]
    return cls, use


def _account(r: random.Random) -> tuple[str, list[str]]:
    start, dep, wd = r.randint(0, 50), r.randint(1, 30), r.randint(1, 90)
    cls = """class Account:
    def __init__(self, owner, balance=0):
        self.owner = owner
        self.balance = balance
        self.history = []

    def deposit(self, amount):
        self.balance += amount
        self.history.append(amount)
        return self.balance

    def withdraw(self, amount):
        if amount > self.balance:
            raise ValueError("insufficient funds")
        self.balance -= amount
        self.history.append(-amount)
        return self.balance
"""
    use = [
        f"account = Account({r.choice(['ann', 'bob', 'eve'])!r}, {start})",
        f"account.deposit({dep})",
        "try:",
        f"    left = account.withdraw({wd})",
        "except ValueError as err:",
        "    left = -1",
        'print(f"{account.owner}: {left}")',
    ]
    return cls, use


def _point(r: random.Random) -> tuple[str, list[str]]:
    a, b, c, d = (r.randint(-5, 5) for _ in range(4))
    cls = """@dataclass
class Point:
    x: int
    y: int

    def moved(self, dx, dy):
        return Point(self.x + dx, self.y + dy)

    def manhattan(self, other):
        return abs(self.x - other.x) + abs(self.y - other.y)
"""
    use = [
        f"origin = Point({a}, {b})",
        f"target = origin.moved({c}, {d})",
        "distance = origin.manhattan(target)",
        'print(f"{target} is {distance} away")',
    ]
    return cls, use


def _tally(r: random.Random) -> tuple[str, list[str]]:
    words = [r.choice(["red", "blue", "red", "green", "blue", "red"]) for _ in range(r.randint(2, 5))]
    cls = '''class Tally:
    """Counts how often each key is added."""

    def __init__(self):
        self.counts = {}

    def add(self, key):
        self.counts[key] = self.counts.get(key, 0) + 1

    def most_common(self):
        best = None
        for key, count in self.counts.items():
            if best is None or count > self.counts[best]:
                best = key
        return best
'''
    use = [
        "tally = Tally()",
        f"for color in {words!r}:",
        "    tally.add(color)",
        "winner = tally.most_common()",
        'print("most common:", winner)',
    ]
    return cls, use


def _queue(r: random.Random) -> tuple[str, list[str]]:
    jobs = [r.choice(["build", "test", "lint", "ship"]) for _ in range(r.randint(2, 4))]
    cls = """class JobQueue:
    def __init__(self, name):
        self.name = name
        self.pending = []
        self.done = 0

    def submit(self, job):
        self.pending.append(job)
        return len(self.pending)

    def run_next(self):
        job = self.pending.pop(0)
        self.done += 1
        return job.upper()
"""
    use = [
        f"queue = JobQueue({r.choice(['ci', 'main', 'nightly'])!r})",
        f"for job in {jobs!r}:",
        "    queue.submit(job)",
        "first = queue.run_next()",
        'print(f"ran {first}, {len(queue.pending)} left")',
    ]
    return cls, use


_CLASSES = [_stack, _account, _point, _tally, _queue]
_CLASS_IMPORTS = {_point: "from dataclasses import dataclass"}


def _split_imports(source: str) -> tuple[list[str], list[str]]:
    lines = source.rstrip("\n").split("\n")
    imports = [ln for ln in lines if ln.startswith(("import ", "from "))]
    rest = [ln for ln in lines if not ln.startswith(("import ", "from "))]
    while rest and not rest[0].strip():
        rest.pop(0)
    return imports, rest


def _decorate(lines: list[str], r: random.Random, name: str, docstring: bool) -> list[str]:
    """Rename f, add a docstring and comments: lines that never run, as real code has."""
    out = []
    for ln in lines:
        if ln.startswith("def f("):
            ln = f"def {name}(" + ln[len("def f(") :]
            out.append(ln)
            if docstring:
                out.append(f'    """{r.choice(_FUNCTION_DOCS)}"""')
            continue
        stripped = ln.strip()
        if stripped and not stripped.startswith(("else", "elif", "except", "finally")) and r.random() < 0.12:
            indent = ln[: len(ln) - len(ln.lstrip())]
            out.append(indent + r.choice(_COMMENTS))
        out.append(ln)
    return out


def _variants(args: str, r: random.Random) -> list[str]:
    """A few more argument texts like `args` (for a loop over inputs), when it is one literal."""
    try:
        call = ast.parse(f"_({args})", mode="eval").body
        assert isinstance(call, ast.Call)
        if len(call.args) != 1 or call.keywords:
            return []
        value = ast.literal_eval(call.args[0])
    except (SyntaxError, ValueError, AssertionError):
        return []
    if isinstance(value, (str, list)) and len(value) > 1:
        return [repr(value[::-1]), repr(value[: len(value) // 2])]
    if isinstance(value, int) and not isinstance(value, bool):
        return [repr(value + r.randint(1, 5)), repr(-value)]
    return []


def generate_script(seed: int) -> Program:
    """The script for `seed`: a whole module, traced from its first line (`entry` is None)."""
    r = random.Random(f"script-{seed}")
    core = generate(seed)
    imports, body = _split_imports(core.source)
    name = r.choice(_FUNCTION_NAMES) if r.random() < 0.75 else "f"
    body = _decorate(body, r, name, docstring=r.random() < 0.5)
    parts: list[str] = []
    if r.random() < 0.6:
        parts.append(f'"""{r.choice(_DOCSTRINGS)}"""\n')
    make_class = r.choice(_CLASSES) if r.random() < 0.4 else None
    if make_class is not None and make_class in _CLASS_IMPORTS:
        imports = [_CLASS_IMPORTS[make_class], *imports]
    if r.random() < 0.3:
        imports.append(r.choice(["import sys", "import os", "import json"]))  # unused, as in real files
    if imports:
        parts.append("\n".join(sorted(set(imports), key=imports.index)) + "\n")
    constants = r.sample(_CONSTANTS, k=r.choice([0, 0, 1, 2]))
    if constants:
        parts.append("\n".join(f"{c} = {make(r)}" for c, make in constants) + "\n")
    class_use: list[str] = []
    if make_class is not None:
        cls, class_use = make_class(r)
        parts.append("\n" + cls)
    parts.append("\n" + "\n".join(body) + "\n")

    statements: list[str] = []
    variants = _variants(core.args, r)
    if variants and r.random() < 0.3:
        statements += [f"for case in [{core.args}, {', '.join(variants)}]:", f"    print({name}(case))"]
    else:
        statements += [f"result = {name}({core.args})"]
        statements.append(r.choice(['print(f"result: {result}")', "print(result)", 'print("result =", result)']))
    if constants and r.random() < 0.5:
        c = constants[0][0]
        statements.append(f'print(f"{c.lower()}={{{c}}}")')
    if class_use:
        at = r.choice([0, len(statements)])
        statements[at:at] = class_use
    style = r.random()
    if style < 0.45:
        main = ["def main():"] + ["    " + s for s in statements] + ["", "", 'if __name__ == "__main__":', "    main()"]
    elif style < 0.65:
        main = ['if __name__ == "__main__":'] + ["    " + s for s in statements]
    else:
        main = statements
    parts.append("\n" + "\n".join(main) + "\n")
    source = "\n".join(p.rstrip("\n") + "\n" for p in parts)
    features = tuple(sorted(set(core.features) | {"script"} | ({"class"} if make_class else set())))
    return Program(seed=seed, source=source, entry=None, args="", features=features)
