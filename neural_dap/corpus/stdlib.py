"""Real pure functions of the standard library, driven with generated inputs.

Each function is extracted from its module's source together with what it needs from that module
(helper functions, constants, imports), so it runs as user code: traced like any other program.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from neural_dap.corpus.programs import Program


def _word(rng: random.Random, alphabet: str = string.ascii_letters + "  ") -> str:
    return "".join(rng.choices(alphabet, k=rng.randint(0, 12)))


def _floats(rng: random.Random, n: int) -> str:
    return ", ".join(repr(round(rng.random(), 2)) for _ in range(n))


def _ints(rng: random.Random, n: int, lo: int = -9, hi: int = 30) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(n)]


@dataclass(frozen=True)
class Target:
    module: str
    name: str
    args: Callable[[random.Random], str]


TARGETS: list[Target] = [
    Target("colorsys", "rgb_to_yiq", lambda r: _floats(r, 3)),
    Target("colorsys", "rgb_to_hls", lambda r: _floats(r, 3)),
    Target("colorsys", "hls_to_rgb", lambda r: _floats(r, 3)),
    Target("colorsys", "rgb_to_hsv", lambda r: _floats(r, 3)),
    Target("colorsys", "hsv_to_rgb", lambda r: _floats(r, 3)),
    Target("bisect", "bisect_left", lambda r: f"{sorted(_ints(r, r.randint(0, 8)))!r}, {r.randint(-5, 25)}"),
    Target("bisect", "bisect_right", lambda r: f"{sorted(_ints(r, r.randint(0, 8)))!r}, {r.randint(-5, 25)}"),
    Target("bisect", "insort_left", lambda r: f"{sorted(_ints(r, r.randint(0, 8)))!r}, {r.randint(-5, 25)}"),
    Target("heapq", "heappush", lambda r: f"{sorted(_ints(r, r.randint(0, 7)))!r}, {r.randint(-5, 25)}"),
    Target("heapq", "heappop", lambda r: f"{sorted(_ints(r, r.randint(1, 7)))!r}"),
    Target("heapq", "heapify", lambda r: f"{_ints(r, r.randint(0, 8))!r}"),
    Target("string", "capwords", lambda r: repr(_word(r, "abcde fgh XY"))),
    Target("textwrap", "indent", lambda r: f"{(_word(r) + chr(10) + _word(r))!r}, {r.choice(['> ', '  ', '# '])!r}"),
    Target("html", "escape", lambda r: repr(_word(r, "ab<>&\"' c"))),
    Target("calendar", "isleap", lambda r: str(r.choice([1900, 2000, 2023, 2024, r.randint(1, 3000)]))),
    Target("calendar", "leapdays", lambda r: f"{r.randint(1890, 2000)}, {r.randint(2000, 2100)}"),
    Target("operator", "countOf", lambda r: f"{_ints(r, r.randint(0, 8), 0, 4)!r}, {r.randint(0, 4)}"),
    Target("operator", "indexOf", lambda r: f"{_ints(r, r.randint(1, 8), 0, 4)!r}, {r.randint(0, 4)}"),
    Target(
        "genericpath",
        "commonprefix",
        lambda r: repr([r.choice(["abc", "abd", "ab", "xyz", "abcde", "a"]) for _ in range(r.randint(1, 4))]),
    ),
]


@cache
def extract(module_name: str, name: str) -> str | None:
    """The function's source plus the module-level definitions it depends on, in module order."""
    try:
        module = importlib.import_module(module_name)
        tree = ast.parse(inspect.getsource(module))
    except (ImportError, OSError, TypeError, SyntaxError):
        return None
    defined: dict[str, ast.stmt] = {}
    order: list[ast.stmt] = []
    for node in tree.body:
        names: list[str] = []
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [(a.asname or a.name).split(".")[0] for a in node.names]
        if names:
            order.append(node)
        for n in names:
            defined.setdefault(n, node)  # the first definition: pure-Python versions come first
    wanted: list[ast.stmt] = []
    todo = [name]
    seen: set[str] = set()
    while todo:
        current = todo.pop()
        if current in seen or current not in defined:
            continue
        seen.add(current)
        node = defined[current]
        if node not in wanted:
            wanted.append(node)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in defined and sub.id not in seen:
                todo.append(sub.id)
    if not wanted or any(isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("_") for n in wanted):
        return None
    wanted.sort(key=order.index)
    lines = inspect.getsource(module).splitlines()
    parts = []
    for node in wanted:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        parts.append("\n".join(lines[start - 1 : node.end_lineno]))
    return "\n\n".join(parts) + "\n"


def generate_stdlib(seed: int) -> Program | None:
    rng = random.Random(seed)
    target = rng.choice(TARGETS)
    source = extract(target.module, target.name)
    if source is None:
        return None
    return Program(
        seed=seed, source=source, entry=target.name, args=target.args(rng), features=("stdlib", target.module)
    )
