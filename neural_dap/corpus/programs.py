"""A generator of small Python functions with inputs, deterministic from a seed.

The programs are of the kind debuggers meet and CRUXEval probes: str / list / dict / int operations
and their methods, loops, branches, comprehensions, helper calls, recursion, raised and caught
exceptions. Each is a function `f` (sometimes with helpers) plus the literal text of a call's
arguments. Every loop is bounded by its input, so programs end quickly.

Types are tracked per variable so every generated statement is well-typed; what can still fail
(an index, a `.index()` lookup, an int() conversion) is either guarded or placed inside a `try`.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass, field

INT, STR, LINT, LSTR, DICT, BOOL = "int", "str", "list_int", "list_str", "dict", "bool"
TYPES = (INT, STR, LINT, LSTR, DICT)
_NAMES = {
    INT: ["n", "k", "count", "total", "idx", "x", "y", "m", "num", "acc", "step", "size"],
    STR: ["s", "text", "word", "name", "line", "res", "out", "prefix", "chars", "t", "part"],
    LINT: ["nums", "xs", "values", "arr", "items", "lst", "data", "seq", "scores", "stack"],
    LSTR: ["words", "names", "parts", "tokens", "strs", "keys_", "letters", "lines"],
    DICT: ["d", "counts", "seen", "mapping", "table", "freq", "index", "memo"],
    BOOL: ["flag", "found", "ok", "done"],
}
_WORDS = [
    "a",
    "b",
    "ab",
    "abc",
    "hello",
    "world",
    "py",
    "x",
    "zz",
    "dog",
    "cat",
    "A",
    "Bc",
    "q1",
    "42",
    "7",
    " ",
    "-",
    "_",
]
_CHARS = list("abcxyzAB01 -_.,")


@dataclass
class Program:
    """A generated program: source text defining `f`, and the literal text of one call's arguments."""

    seed: int
    source: str
    entry: str | None  # the function to call; None: the whole script runs
    args: str
    features: tuple[str, ...] = ()


@dataclass
class _Scope:
    vars: dict[str, str] = field(default_factory=dict)  # name -> type
    loop_vars: set[str] = field(default_factory=set)  # not to be reassigned inside their loop

    def of(self, kind: str) -> list[str]:
        return [n for n, t in self.vars.items() if t == kind]

    def assignable(self, kind: str) -> list[str]:
        return [n for n in self.of(kind) if n not in self.loop_vars]

    def copy(self) -> _Scope:
        return _Scope(dict(self.vars), set(self.loop_vars))


class _Gen:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.features: set[str] = set()
        self.helpers: list[str] = []
        self.helper_sigs: list[tuple[str, list[str], str]] = []  # name, param types, return type

    # -- literals --------------------------------------------------------------------------------
    def lit(self, kind: str) -> str:
        r = self.rng
        if kind == INT:
            return str(r.choice([0, 1, 2, 3, 4, 5, 7, 10, -1, -3, 12, 100]))
        if kind == STR:
            return repr(r.choice([*_WORDS, "".join(r.choices(_CHARS, k=r.randint(1, 6)))]))
        if kind == BOOL:
            return r.choice(["True", "False"])
        if kind == LINT:
            return repr([r.randint(-5, 20) for _ in range(r.randint(0, 6))])
        if kind == LSTR:
            return repr([r.choice(_WORDS) for _ in range(r.randint(0, 5))])
        if kind == DICT:
            return repr({r.choice(_WORDS): r.randint(0, 9) for _ in range(r.randint(0, 4))})
        raise ValueError(kind)

    def input_value(self, kind: str) -> str:
        """Argument text for a call: sizes small enough that loops stay short."""
        r = self.rng
        if kind == INT:
            return str(r.randint(-3, 12))
        if kind == STR:
            alphabet = r.choice([string.ascii_lowercase[:6], "abcXYZ 123", "aeiou-_ ", "hello world", "0123456789"])
            return repr("".join(r.choices(alphabet, k=r.randint(0, 10))))
        if kind == LINT:
            return repr([r.randint(-9, 20) for _ in range(r.randint(0, 8))])
        if kind == LSTR:
            return repr([r.choice(_WORDS) for _ in range(r.randint(0, 6))])
        if kind == DICT:
            return repr({r.choice(_WORDS): r.randint(-2, 9) for _ in range(r.randint(0, 5))})
        raise ValueError(kind)

    # -- expressions ----------------------------------------------------------------------------
    def pick(self, scope: _Scope, kind: str) -> str | None:
        names = scope.of(kind)
        return self.rng.choice(names) if names else None

    def expr(self, scope: _Scope, kind: str, depth: int = 0) -> str:
        """An expression of type `kind` that never raises."""
        r = self.rng
        v = self.pick(scope, kind)
        if depth > 1 or r.random() < 0.15:
            return v if v is not None and r.random() < 0.7 else self.lit(kind)
        options = getattr(self, f"_expr_{kind}")(scope, depth)
        options = [o for o in options if o]
        if v is not None:
            options += [v, v]
        return r.choice(options) if options else self.lit(kind)

    def _expr_int(self, scope: _Scope, depth: int) -> list[str]:
        r = self.rng
        i, s, li, ls, d = (self.pick(scope, k) for k in (INT, STR, LINT, LSTR, DICT))
        out = []
        if i:
            out += [
                f"{i} + {self.lit(INT)}",
                f"{i} * {r.randint(2, 3)}",
                f"{i} - {self.expr(scope, INT, depth + 1)}",
                f"{i} % {r.randint(2, 5)}",
                f"{i} // {r.randint(2, 4)}",
                f"abs({i})",
                f"-{i}",
            ]
        if s:
            out += [f"len({s})", f"{s}.count({self.lit(STR)})", f"{s}.find({self.lit(STR)})", f"len({s}.split())"]
        if li:
            out += [
                f"len({li})",
                f"sum({li})",
                f"{li}.count({self.expr(scope, INT, depth + 1)})",
                f"max({li}, default=0)",
                f"min({li}, default=0)",
                f"sum(x for x in {li} if x > {self.lit(INT)})",
            ]
        if ls:
            out += [f"len({ls})", f"len(''.join({ls}))"]
        if d:
            out += [f"len({d})", f"{d}.get({self.expr(scope, STR, depth + 1)}, 0)", f"sum({d}.values())"]
        return out

    def _expr_str(self, scope: _Scope, depth: int) -> list[str]:
        s, i, ls, li, d = (self.pick(scope, k) for k in (STR, INT, LSTR, LINT, DICT))
        r = self.rng
        out = []
        if s:
            out += [
                f"{s}.upper()",
                f"{s}.lower()",
                f"{s}.strip()",
                f"{s}[::-1]",
                f"{s}.replace({self.lit(STR)}, {self.lit(STR)})",
                f"{s}.capitalize()",
                f"{s}.title()",
                f"{s}.swapcase()",
                f"{s}[{r.randint(0, 2)}:{r.randint(2, 5)}]",
                f"{s} + {self.expr(scope, STR, depth + 1)}",
                f"{s}.strip({self.lit(STR)})",
                f"{s}.center({r.randint(3, 9)}, '*')",
                f"{s}.zfill({r.randint(2, 6)})",
                f"''.join(sorted({s}))",
                f"''.join(c for c in {s} if c.isalpha())",
            ]
        if i:
            out += [f"str({i})", f"{self.lit(STR)} * ({i} % 3)"]
        if ls:
            out += [f"' '.join({ls})", f"'-'.join({ls})", f"''.join(w[:1] for w in {ls})"]
        if li:
            out += [f"','.join(str(x) for x in {li})"]
        if d:
            out += [f"''.join(sorted({d}))"]
        return out

    def _expr_list_int(self, scope: _Scope, depth: int) -> list[str]:
        li, i, s, d = (self.pick(scope, k) for k in (LINT, INT, STR, DICT))
        r = self.rng
        out = [f"list(range({r.randint(0, 6)}))"]
        if li:
            out += [
                f"sorted({li})",
                f"{li}[::-1]",
                f"[x * {r.randint(2, 3)} for x in {li}]",
                f"[x for x in {li} if x % 2 == 0]",
                f"{li}[{r.randint(0, 2)}:]",
                f"{li} + [{self.expr(scope, INT, depth + 1)}]",
                f"sorted({li}, reverse=True)",
                f"[abs(x) for x in {li}]",
                f"list(set({li}))",
                f"{li}.copy()",
            ]
        if i:
            out += [f"list(range({i} % 5))", f"[{i}] * {r.randint(1, 3)}"]
        if s:
            out += [f"[ord(c) % 10 for c in {s}]", f"[len(w) for w in {s}.split()]"]
        if d:
            out += [f"list({d}.values())", f"sorted({d}.values())"]
        return out

    def _expr_list_str(self, scope: _Scope, depth: int) -> list[str]:
        s, ls, d = (self.pick(scope, k) for k in (STR, LSTR, DICT))
        out = []
        if s:
            out += [
                f"{s}.split()",
                f"list({s})",
                f"{s}.split({self.rng.choice(repr_chars())})",
                f"[c for c in {s} if c.isalnum()]",
            ]
        if ls:
            out += [
                f"sorted({ls})",
                f"{ls}[::-1]",
                f"[w.upper() for w in {ls}]",
                f"[w for w in {ls} if len(w) > 1]",
                f"{ls}[1:]",
            ]
        if d:
            out += [f"list({d})", f"sorted({d}, key=lambda k: {d}[k])"]
        return out

    def _expr_dict(self, scope: _Scope, depth: int) -> list[str]:
        ls, li, s, d = (self.pick(scope, k) for k in (LSTR, LINT, STR, DICT))
        out = ["{}"]
        if ls and li:
            out += [f"dict(zip({ls}, {li}))"]
        if s:
            out += [f"{{c: {s}.count(c) for c in {s}}}", f"dict.fromkeys({s}, 0)"]
        if ls:
            out += [f"{{w: len(w) for w in {ls}}}"]
        if d:
            out += [
                f"dict({d})",
                f"{{k: v for k, v in {d}.items() if v > {self.lit(INT)}}}",
            ]
        return out

    def cond(self, scope: _Scope) -> str:
        r = self.rng
        i, s, li, ls, d = (self.pick(scope, k) for k in (INT, STR, LINT, LSTR, DICT))
        out = []
        if i:
            out += [
                f"{i} > {self.lit(INT)}",
                f"{i} % 2 == 0",
                f"{i} == {self.expr(scope, INT, 1)}",
                f"{i} < len({li})" if li else None,
            ]
        if s:
            out += [
                f"{s}.isdigit()",
                f"{s}.startswith({self.lit(STR)})",
                f"{self.lit(STR)} in {s}",
                f"len({s}) > {r.randint(1, 5)}",
                f"{s}.isupper()",
                f"{s}.isalpha()",
                f"not {s}",
            ]
        if li:
            out += [f"{self.expr(scope, INT, 1)} in {li}", f"len({li}) > {r.randint(0, 4)}", f"not {li}"]
        if ls:
            out += [f"{self.lit(STR)} in {ls}"]
        if d:
            out += [f"{self.expr(scope, STR, 1)} in {d}", f"len({d}) < {r.randint(1, 4)}"]
        chosen = [o for o in out if o]
        return str(r.choice(chosen)) if chosen else "True"

    # -- statements -------------------------------------------------------------------------------
    def new_name(self, scope: _Scope, kind: str) -> str:
        names = [n for n in _NAMES[kind] if n not in scope.vars]
        name = self.rng.choice(names) if names else f"{_NAMES[kind][0]}{len(scope.vars)}"
        return name

    def stmt(self, scope: _Scope, indent: int, budget: list[int], in_loop: bool) -> list[str]:
        r = self.rng
        pad = "    " * indent
        budget[0] -= 1
        roll = r.random()
        nested_ok = indent < 3 and budget[0] > 2
        if roll < 0.12 and nested_ok:
            return self.for_loop(scope, indent, budget)
        if roll < 0.2 and nested_ok:
            return self.if_block(scope, indent, budget, in_loop)
        if roll < 0.24 and nested_ok:
            return self.while_loop(scope, indent, budget)
        if roll < 0.29 and nested_ok:
            return self.try_block(scope, indent, budget, in_loop)
        if roll < 0.33 and self.helper_sigs:
            call = self.helper_call(scope)
            if call:
                return [pad + call]
        if roll < 0.62:
            return [pad + part for part in self.mutation(scope).split("\n")]
        kind = r.choice(TYPES)
        targets = scope.assignable(kind)
        name = r.choice(targets) if targets and r.random() < 0.4 else self.new_name(scope, kind)
        line = f"{pad}{name} = {self.expr(scope, kind)}"
        scope.vars[name] = kind
        return [line]

    def mutation(self, scope: _Scope) -> str:
        r = self.rng
        options = []
        for v in scope.assignable(INT):
            options += [f"{v} += {self.expr(scope, INT, 1)}", f"{v} -= 1", f"{v} *= 2"]
        for v in scope.assignable(STR):
            options += [f"{v} += {self.expr(scope, STR, 1)}", f"{v} = {v}.replace({self.lit(STR)}, {self.lit(STR)})"]
        for v in scope.of(LINT):
            options += [
                f"{v}.append({self.expr(scope, INT, 1)})",
                f"{v}.insert(0, {self.expr(scope, INT, 1)})",
                f"{v}.sort()",
                f"{v}.reverse()",
                f"{v}.extend({self.expr(scope, LINT, 1)})",
                f"if {v}:\n    {v}.pop()",
                "if {x} in {v}:\n    {v}.remove({x})".format(x=self.lit(INT), v=v),
            ]
        for v in scope.of(LSTR):
            options += [
                f"{v}.append({self.expr(scope, STR, 1)})",
                f"{v}.sort()",
                f"{v}.insert(0, {self.expr(scope, STR, 1)})",
            ]
        for v in scope.of(DICT):
            options += [
                f"{v}[{self.expr(scope, STR, 1)}] = {self.expr(scope, INT, 1)}",
                f"{v}[{self.expr(scope, STR, 1)}] = {v}.get({self.expr(scope, STR, 1)}, 0) + 1",
                f"{v}.pop({self.expr(scope, STR, 1)}, None)",
                f"{v}.update({self.expr(scope, DICT, 1)})",
            ]
        if not options:
            name = self.new_name(scope, INT)
            scope.vars[name] = INT
            return f"{name} = {self.lit(INT)}"
        text = r.choice(options)
        return text

    def body(self, scope: _Scope, indent: int, budget: list[int], in_loop: bool, n: int) -> list[str]:
        out: list[str] = []
        for _ in range(n):
            if budget[0] <= 0 and out:
                break
            out += self.stmt(scope, indent, budget, in_loop)
        return out

    def for_loop(self, scope: _Scope, indent: int, budget: list[int]) -> list[str]:
        r = self.rng
        pad = "    " * indent
        self.features.add("for")
        sources = [(f"range({self.expr(scope, INT, 1)} % 6)" if scope.of(INT) else f"range({r.randint(1, 5)})", INT)]
        for v in scope.of(STR):
            sources.append((v, STR))
        for v in scope.of(LINT):
            sources.append((v, INT))
            sources.append((f"enumerate({v})", "enum"))
        for v in scope.of(LSTR):
            sources.append((v, STR))
        for v in scope.of(DICT):
            sources.append((f"{v}.items()", "items"))
        src, kind = r.choice(sources)
        inner = scope.copy()
        if kind == "enum":
            a, b = "i", self.new_name(inner, INT)
            head = f"{pad}for {a}, {b} in {src}:"
            inner.vars[a] = INT
            inner.vars[b] = INT
            inner.loop_vars |= {a, b}
        elif kind == "items":
            head = f"{pad}for key, val in {src}:"
            inner.vars["key"] = STR
            inner.vars["val"] = INT
            inner.loop_vars |= {"key", "val"}
        else:
            var = (
                "ch"
                if kind == STR and "ch" not in inner.vars
                else ("i" if "i" not in inner.vars else self.new_name(inner, kind))
            )
            head = f"{pad}for {var} in {src}:"
            inner.vars[var] = kind
            inner.loop_vars.add(var)
        # a loop must not grow what it iterates over
        iterated = src.split("(")[-1].split(")")[0].split(".")[0]
        inner.loop_vars.add(iterated)
        lines = [head, *self.body(inner, indent + 1, budget, True, r.randint(1, 3))]
        if r.random() < 0.15:
            lines += [f"{pad}    if {self.cond(inner)}:", f"{pad}        break"]
            self.features.add("break")
        self._merge(scope, inner)
        return lines

    def while_loop(self, scope: _Scope, indent: int, budget: list[int]) -> list[str]:
        pad = "    " * indent
        self.features.add("while")
        counter = self.new_name(scope, INT)
        scope.vars[counter] = INT
        inner = scope.copy()
        inner.loop_vars.add(counter)
        limit = self.rng.randint(2, 5)
        lines = [f"{pad}{counter} = 0", f"{pad}while {counter} < {limit}:"]
        lines += self.body(inner, indent + 1, budget, True, self.rng.randint(1, 2))
        lines.append(f"{pad}    {counter} += 1")
        self._merge(scope, inner)
        return lines

    def if_block(self, scope: _Scope, indent: int, budget: list[int], in_loop: bool) -> list[str]:
        r = self.rng
        pad = "    " * indent
        self.features.add("if")
        lines = [f"{pad}if {self.cond(scope)}:"]
        a = scope.copy()
        lines += self.body(a, indent + 1, budget, in_loop, r.randint(1, 2))
        if in_loop and r.random() < 0.2:
            lines.append(f"{pad}    continue")
            self.features.add("continue")
        branches = [a]
        if r.random() < 0.3:
            b = scope.copy()
            lines.append(f"{pad}elif {self.cond(scope)}:")
            lines += self.body(b, indent + 1, budget, in_loop, 1)
            branches.append(b)
        if r.random() < 0.5:
            c = scope.copy()
            lines.append(f"{pad}else:")
            lines += self.body(c, indent + 1, budget, in_loop, r.randint(1, 2))
            branches.append(c)
        # names defined in only some branches stay out of scope afterwards
        common = set.intersection(*(set(b.vars) for b in branches)) if len(branches) > 1 and lines[-1] else set()
        for name in [n for n in branches[0].vars if n in common]:  # in order: a set's order depends on hashing
            if name not in scope.vars:
                scope.vars[name] = branches[0].vars[name]
        return lines

    def try_block(self, scope: _Scope, indent: int, budget: list[int], in_loop: bool) -> list[str]:
        r = self.rng
        pad = "    " * indent
        self.features.add("try")
        risky = []
        for v in scope.of(STR):
            risky += [
                (f"{self.new_name(scope, INT)} = int({v})", "ValueError", INT),
                (f"{self.new_name(scope, INT)} = {v}.index({self.lit(STR)})", "ValueError", INT),
            ]
        for v in scope.of(LINT):
            risky += [
                (f"{self.new_name(scope, INT)} = {v}[{r.randint(0, 6)}]", "IndexError", INT),
                (f"{self.new_name(scope, INT)} = {v}.index({self.lit(INT)})", "ValueError", INT),
            ]
        for v in scope.of(DICT):
            risky += [(f"{self.new_name(scope, INT)} = {v}[{self.lit(STR)}]", "KeyError", INT)]
        for v in scope.of(INT):
            risky += [(f"{self.new_name(scope, INT)} = {self.lit(INT)} // {v}", "ZeroDivisionError", INT)]
        if not risky:
            return [pad + part for part in self.mutation(scope).split("\n")]
        text, exc, kind = r.choice(risky)
        name = text.split(" = ")[0]
        lines = [f"{pad}try:", f"{pad}    {text}"]
        inner = scope.copy()
        inner.vars[name] = kind
        lines += self.body(inner, indent + 1, budget, in_loop, r.randint(0, 1))
        alias = " as e" if r.random() < 0.3 else ""
        lines.append(f"{pad}except {exc}{alias}:")
        lines.append(f"{pad}    {name} = {self.lit(INT)}")
        scope.vars[name] = kind
        return lines

    def _merge(self, outer: _Scope, inner: _Scope) -> None:
        """Loop bodies may run zero times: only names that existed before stay in scope."""
        for name, kind in inner.vars.items():
            if name in outer.vars and outer.vars[name] != kind:
                outer.vars[name] = kind

    def helper_call(self, scope: _Scope) -> str | None:
        name, params, ret = self.rng.choice(self.helper_sigs)
        args = []
        for kind in params:
            args.append(self.expr(scope, kind, 1))
        target = self.new_name(scope, ret)
        scope.vars[target] = ret
        self.features.add("call")
        return f"{target} = {name}({', '.join(args)})"

    # -- functions --------------------------------------------------------------------------------
    def function(
        self, name: str, params: list[tuple[str, str]], n_statements: int, ret_kind: str | None = None
    ) -> tuple[list[str], str]:
        scope = _Scope(dict(params))
        budget = [n_statements]
        lines = [f"def {name}({', '.join(p for p, _ in params)}):"]
        lines += self.body(scope, 1, budget, False, n_statements)
        kinds = [k for k in (ret_kind,) if k] or [self.rng.choice(list(dict.fromkeys(scope.vars.values())))]
        candidates = scope.of(kinds[0])
        ret = self.rng.choice(candidates) if candidates else self.expr(scope, kinds[0])
        if self.rng.random() < 0.2 and len(scope.vars) > 1:
            other = self.rng.choice([v for v in scope.vars if v != ret] or [ret])
            ret = f"{ret}, {other}"
            kinds = ["tuple"]
        lines.append(f"    return {ret}")
        return lines, kinds[0]

    def params(self, count: int) -> list[tuple[str, str]]:
        used: set[str] = set()
        out = []
        for _ in range(count):
            kind = self.rng.choice(TYPES)
            names = [n for n in _NAMES[kind] if n not in used]
            name = self.rng.choice(names)
            used.add(name)
            out.append((name, kind))
        return out


_RECURSIVE = [
    ("def {h}(n):\n    if n <= 1:\n        return 1\n    return n * {h}(n - 1)\n", [INT], INT, "abs({a}) % 6"),
    ("def {h}(xs):\n    if not xs:\n        return 0\n    return xs[0] + {h}(xs[1:])\n", [LINT], INT, "{a}"),
    ("def {h}(s):\n    if len(s) <= 1:\n        return s\n    return {h}(s[1:]) + s[0]\n", [STR], STR, "{a}"),
    ("def {h}(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n", [INT, INT], INT, "{a}"),
    ("def {h}(n):\n    if n < 2:\n        return n\n    return {h}(n - 1) + {h}(n - 2)\n", [INT], INT, "abs({a}) % 7"),
    (
        "def {h}(xs, target):\n    lo, hi = 0, len(xs) - 1\n    while lo <= hi:\n        mid = (lo + hi) // 2\n"
        "        if xs[mid] == target:\n            return mid\n"
        "        if xs[mid] < target:\n            lo = mid + 1\n"
        "        else:\n            hi = mid - 1\n    return -1\n",
        [LINT, INT],
        INT,
        "sorted({a})",
    ),
    (
        "def {h}(s):\n    if not s:\n        raise ValueError('empty input')\n    return s[0].upper() + s[1:]\n",
        [STR],
        STR,
        "{a}",
    ),
    (
        "def {h}(d, key):\n    if key not in d:\n        raise KeyError(key)\n    return d[key]\n",
        [DICT, STR],
        INT,
        "{a}",
    ),
    (
        "def {h}(xs):\n    out = []\n    for x in xs:\n"
        "        if isinstance(x, list):\n            out.extend({h}(x))\n"
        "        else:\n            out.append(x)\n    return out\n",
        [LINT],
        LINT,
        "{a}",
    ),
]


_PARAM_NAMES = {
    STR: ["text", "s", "string", "st", "sentence", "value", "msg"],
    LINT: ["nums", "array", "lst", "numbers", "arr", "values"],
    LSTR: ["words", "names", "strings", "lines", "tokens"],
    DICT: ["d", "dic", "counts", "mapping", "data", "table"],
    INT: ["n", "k", "num", "count", "size", "start"],
}
_SHORT_TYPES = {"s": STR, "l": LINT, "w": LSTR, "d": DICT, "n": INT}


def generate(seed: int) -> Program:
    """The program for `seed` (the same seed always gives the same program)."""
    rng = random.Random(seed)
    if rng.random() < 0.6:
        return _templated(seed, rng)
    return _soup(seed, rng)


def _templated(seed: int, rng: random.Random) -> Program:
    """A function chaining one to three idiomatic blocks (see templates.py)."""
    from neural_dap.corpus.templates import BLOCKS, out_name, render_block

    gen = _Gen(rng)
    first = rng.choice(BLOCKS)
    params: list[tuple[str, str]] = []
    scope: dict[str, str] = {}
    for need in dict.fromkeys(first.needs):
        kind = _SHORT_TYPES[need]
        count = first.needs.count(need)
        for _ in range(count):
            name = rng.choice([n for n in _PARAM_NAMES[kind] if n not in scope])
            scope[name] = kind
            params.append((name, kind))
    if rng.random() < 0.3:  # an extra parameter later blocks may use
        kind = rng.choice(TYPES)
        name = rng.choice([n for n in _PARAM_NAMES[kind] if n not in scope])
        scope[name] = kind
        params.append((name, kind))
    body: list[str] = []
    blocks = [first]
    for _ in range(rng.choice([0, 1, 1, 2])):
        usable = [b for b in BLOCKS if all(any(t == _SHORT_TYPES[n] for t in scope.values()) for n in b.needs)]
        blocks.append(rng.choice(usable))
    last_out = None
    helper_lines: list[str] = []
    imports: list[str] = []
    for k, block in enumerate(blocks):
        out = out_name(rng, block.out, scope)
        lines = render_block(block, rng, scope, out)
        if lines is None:
            continue
        if k == 0 and len(blocks) > 1 and rng.random() < 0.3:
            # the first block becomes a helper function called from f
            needed = [n for n in scope if any(re.search(rf"\b{re.escape(n)}\b", ln) for ln in lines) and n != out]
            helper_lines = (
                [f"def helper({', '.join(needed)}):"] + ["    " + ln for ln in lines] + [f"    return {out}", ""]
            )
            body.append(f"    {out} = helper({', '.join(needed)})")
            gen.features.add("helper")
        else:
            body += ["    " + ln for ln in lines]
        scope[out] = block.out
        last_out = out
        imports += [i for i in block.imports if i not in imports]
    if last_out is None:
        return _soup(seed, rng)
    ret = last_out
    if rng.random() < 0.15:
        other = rng.choice([n for n in scope if n != last_out] or [last_out])
        ret = f"{last_out}, {other}"
    header = [*imports, "", ""] if imports else []
    source = (
        "\n".join(header + helper_lines + [f"def f({', '.join(p for p, _ in params)}):", *body, f"    return {ret}"])
        + "\n"
    )
    features = {"template"} | gen.features | ({"stdlib-import"} if imports else set())
    text = source
    for word, feature in (("for ", "for"), ("while ", "while"), ("try:", "try"), ("if ", "if"), ("lambda", "lambda")):
        if word in text:
            features.add(feature)
    args = ", ".join(gen.input_value(kind) for _, kind in params)
    return Program(seed=seed, source=source, entry="f", args=args, features=tuple(sorted(features)))


def _soup(seed: int, rng: random.Random) -> Program:
    """A function of random well-typed statements (loops, branches, mutations, try/except, helpers)."""
    gen = _Gen(rng)
    parts: list[str] = []
    style = rng.random()
    if style < 0.3:
        # a helper (recursive or raising) called from f
        template, ptypes, ret, _ = rng.choice(_RECURSIVE)
        helper = rng.choice(["helper", "rec", "walk", "solve", "g", "inner", "step_fn"])
        text = template.format(h=helper)
        parts.append(text)
        gen.helper_sigs.append((helper, ptypes, ret))
        gen.features.add("recursion" if f"{helper}(" in text.split(":", 1)[1] else "helper")
        if "raise" in template:
            gen.features.add("raise")
    elif style < 0.45:
        params = gen.params(rng.randint(1, 2))
        lines, ret = gen.function("helper", params, rng.randint(1, 3))
        if ret != "tuple":
            parts.append("\n".join(lines) + "\n")
            gen.helper_sigs.append(("helper", [k for _, k in params], ret))
            gen.features.add("helper")
    params = gen.params(rng.randint(1, 3))
    lines, _ = gen.function("f", params, rng.randint(2, 7))
    if gen.helper_sigs and not any(
        "helper" in ln or any(h[0] + "(" in ln for h in gen.helper_sigs) for ln in lines[1:]
    ):
        # make sure the helper is used: call it early in f
        scope = _Scope(dict(params))
        call = gen.helper_call(scope)
        if call and any(h[2] != "tuple" for h in gen.helper_sigs):
            if "raise" in parts[0]:
                lines.insert(
                    1,
                    f"    try:\n        {call}\n    except (ValueError, KeyError) as err:\n"
                    f"        {call.split(' = ')[0]} = None",
                )
                gen.features.add("try")
            else:
                lines.insert(1, "    " + call)
    parts.append("\n".join(lines) + "\n")
    source = "\n".join(parts)
    args = ", ".join(gen.input_value(kind) for _, kind in params)
    return Program(seed=seed, source=source, entry="f", args=args, features=tuple(sorted(gen.features)))


def repr_chars() -> list[str]:
    return ["' '", "','", "'-'", "'a'", "'_'"]
