"""Idiomatic building blocks for generated functions: the loops, string building, counting,
filtering and dict bookkeeping that small real-world functions (and CRUXEval) are made of.

A block reads variables of given types and defines one new variable of its output type. A function
chains one to three blocks, so later blocks work on earlier results. Placeholders: `{s}` a str
variable, `{l}` a list of ints, `{w}` a list of strs, `{d}` a dict str->int, `{n}` an int,
`{out}` the new variable; `{C}` a one-character literal, `{W}` a short word literal, `{K}` a small
int literal, `{P}` a str predicate method, `{T}` a str transform method.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

PREDICATES = ["isdigit", "isalpha", "isupper", "islower", "isspace", "isalnum", "isnumeric"]
TRANSFORMS = ["upper", "lower", "swapcase", "capitalize", "title", "strip"]
CHARS = ["a", "b", "e", "x", " ", "-", "1", "A", ".", "o", "z", ",", "_"]
# f-string braces in block texts, so they never mix with the `{placeholder}` syntax
FSTRING_OPEN, FSTRING_CLOSE = "\u27e8", "\u27e9"
WORDS = ["ab", "x", "foo", "bar", "a", "ba", "zz", "12", "hi", "Ab", "cd", "-"]


@dataclass(frozen=True)
class Block:
    needs: tuple[str, ...]  # placeholder kinds read: s l w d n
    out: str  # output type: str list_int list_str dict int bool, or "other" (never read by a later block)
    lines: tuple[str, ...]
    imports: tuple[str, ...] = ()  # module-level import statements the block needs


def B(needs: str, out: str, text: str, *imports: str) -> Block:
    return Block(tuple(needs), out, tuple(text.strip("\n").split("\n")), tuple(imports))


BLOCKS: list[Block] = [
    # --- strings -> strings ----------------------------------------------------------------------
    B(
        "s",
        "str",
        "{out} = ''\nfor ch in {s}:\n    if ch.{P}():\n        {out} += ch.{T}()\n    else:\n        {out} += ch",
    ),
    B("s", "str", "{out} = ''\nfor ch in {s}:\n    if ch in {W}:\n        continue\n    {out} += ch"),
    B(
        "s",
        "str",
        "{out} = []\nfor i, ch in enumerate({s}):\n    if i % {K2} == 0:\n        {out}.append(ch.upper())\n    else:\n        {out}.append(ch)\n{out} = ''.join({out})",
    ),
    B("s", "str", "{out} = {s}.replace({C}, {W}).strip()"),
    B("s", "str", "{out} = {s}\nwhile {out}.startswith({C}):\n    {out} = {out}[1:]"),
    B("s", "str", "{out} = {s}\nwhile {out} and {out}[-1] in {W}:\n    {out} = {out}[:-1]"),
    B("s", "str", "idx = {s}.find({C})\nif idx == -1:\n    {out} = {s}\nelse:\n    {out} = {s}[:idx] + {s}[idx + 1:]"),
    B("s", "str", "{out} = {s}.partition({C})[0] + {s}.partition({C})[2]"),
    B("s", "str", "parts = {s}.split({C})\n{out} = {W}.join(part[::-1] for part in parts)"),
    B("s", "str", "{out} = ''.join(sorted({s}, reverse=True))"),
    B("s", "str", "{out} = {s}[{K}:] + {s}[:{K}]"),
    B(
        "s",
        "str",
        "if {s}.{P}():\n    {out} = {s}.{T}()\nelif len({s}) > {K}:\n    {out} = {s}[:{K}]\nelse:\n    {out} = {s} * 2",
    ),
    B("s", "str", "{out} = {s}.center(len({s}) + {K2}, {C})"),
    B(
        "s",
        "str",
        "chars = list({s})\nfor i in range(0, len(chars) - 1, 2):\n    chars[i], chars[i + 1] = chars[i + 1], chars[i]\n{out} = ''.join(chars)",
    ),
    B("s", "str", "{out} = ''\nfor word in {s}.split():\n    {out} += word[0].upper() if word else ''"),
    B("sn", "str", "{out} = {s}\nfor _ in range({n} % 4):\n    {out} = {out}[-1:] + {out}[:-1]"),
    B("s", "str", "{out} = {s}.rjust({K2} + len({s}), {C}).ljust({K}, {C})"),
    B(
        "w",
        "str",
        "{out} = ''\nfor word in {w}:\n    if len(word) > 1:\n        {out} += word[::-1]\n    else:\n        {out} += word.upper()",
    ),
    B("w", "str", "{out} = {C}.join(sorted({w}, key=len))"),
    B("l", "str", "{out} = ''.join(str(x % 10) for x in {l})"),
    B("d", "str", "{out} = ''\nfor key in sorted({d}):\n    {out} += key * ({d}[key] % 3)"),
    # --- strings -> numbers / lists / dicts ------------------------------------------------------------
    B("s", "int", "{out} = 0\nfor ch in {s}:\n    if ch.{P}():\n        {out} += 1"),
    B("s", "int", "{out} = {s}.count({C}) + {s}.count({W})"),
    B("s", "int", "{out} = -1\nfor i in range(len({s})):\n    if {s}[i] == {C}:\n        {out} = i\n        break"),
    B("s", "int", "{out} = len({s}.split()) * {K2} - {s}.find({C})"),
    B("s", "list_str", "{out} = [w for w in {s}.split({C}) if w]"),
    B("s", "list_str", "{out} = {s}.split()\n{out}.sort(key=lambda w: (len(w), w))"),
    B("s", "list_int", "{out} = [ord(ch) % {K3} for ch in {s}]"),
    B("s", "list_int", "{out} = []\nfor i, ch in enumerate({s}):\n    if ch.{P}():\n        {out}.append(i)"),
    B("s", "dict", "{out} = {}\nfor ch in {s}:\n    {out}[ch] = {out}.get(ch, 0) + 1"),
    B("s", "dict", "{out} = {{}}\nfor word in {s}.split():\n    {out}[word] = len(word)"),
    B("s", "bool", "{out} = {s} == {s}[::-1]"),
    B("s", "bool", "{out} = all(ch.{P}() for ch in {s})"),
    B("s", "bool", "{out} = {s}.startswith({C}) or {s}.endswith({W})"),
    # --- lists of ints ------------------------------------------------------------------------------------
    B(
        "l",
        "list_int",
        "{out} = []\nfor x in {l}:\n    if x % 2 == 0:\n        {out}.append(x * {K2})\n    else:\n        {out}.append(x - 1)",
    ),
    B("l", "list_int", "{out} = {l}.copy()\n{out}.sort()\n{out} = {out}[::2]"),
    B("l", "list_int", "{out} = {l}[:]\nwhile {out} and {out}[-1] < {K}:\n    {out}.pop()"),
    B("l", "list_int", "{out} = list({l})\nif {K} in {out}:\n    {out}.remove({K})\n{out}.insert(0, {K2})"),
    B(
        "l",
        "list_int",
        "seen = set()\n{out} = []\nfor x in {l}:\n    if x not in seen:\n        seen.add(x)\n        {out}.append(x)",
    ),
    B("l", "list_int", "{out} = [{l}[i] + {l}[i + 1] for i in range(len({l}) - 1)]"),
    B("l", "list_int", "{out} = {l}[::-1]\n{out}.append(len({out}))"),
    B("l", "list_int", "{out} = []\nfor i in range(len({l})):\n    if i % {K2} == 0:\n        {out}.append({l}[i])"),
    B("l", "list_int", "{out} = sorted({l}, key=lambda x: (abs(x), x))"),
    B("l", "list_int", "{out} = list({l})\nfor i in range(len({out})):\n    {out}[i] = {out}[i] * i"),
    B("ll", "list_int", "{out} = [x for x in {l} if x not in {l2}] + {l2}"),
    B(
        "l",
        "int",
        "{out} = 0\nfor i, x in enumerate({l}):\n    if i % 2 == 1:\n        {out} += x\n    else:\n        {out} -= x",
    ),
    B("l", "int", "{out} = sum({l}) if {l} else {K}"),
    B("l", "int", "{out} = max({l}, default={K}) - min({l}, default=0)"),
    B("l", "int", "{out} = {l}.count({K}) + len({l})"),
    B("l", "int", "{out} = 0\nfor x in {l}:\n    if x > {K}:\n        break\n    {out} += 1"),
    B(
        "l",
        "bool",
        "{out} = True\nfor i in range(len({l}) - 1):\n    if {l}[i] > {l}[i + 1]:\n        {out} = False\n        break",
    ),
    B(
        "l",
        "dict",
        "{out} = {{}}\nfor x in {l}:\n    key = 'even' if x % 2 == 0 else 'odd'\n    {out}[key] = {out}.get(key, 0) + x",
    ),
    B("l", "str", "{out} = ', '.join(str(x) for x in sorted({l}))"),
    B("ln", "list_int", "{out} = [x for x in {l} if x > {n}]\n{out}.extend([{n}] * 2)"),
    # --- lists of strs --------------------------------------------------------------------------------------
    B("w", "list_str", "{out} = []\nfor word in {w}:\n    if word not in {out}:\n        {out}.append(word)"),
    B("w", "list_str", "{out} = [word.{T}() for word in {w} if word]"),
    B("w", "list_str", "{out} = sorted({w}, reverse=True)[:{K2}]"),
    B("w", "int", "{out} = sum(len(word) for word in {w})"),
    B("w", "dict", "{out} = {{}}\nfor word in {w}:\n    {out}[word] = {out}.get(word, 0) + 1"),
    # --- dicts -------------------------------------------------------------------------------------------------
    B(
        "d",
        "dict",
        "{out} = {{}}\nfor key, value in {d}.items():\n    if value > {K}:\n        {out}[key] = value\n    else:\n        {out}[key.upper()] = value + 1",
    ),
    B("d", "dict", "{out} = dict({d})\n{out}.pop({W}, None)\n{out}[{W}] = {K}"),
    B("d", "dict", "{out} = {{value: key for key, value in {d}.items()}}"),
    B("d", "list_str", "{out} = sorted({d}, key=lambda k: ({d}[k], k))"),
    B("d", "list_int", "{out} = [v for k, v in sorted({d}.items())]"),
    B("d", "int", "{out} = 0\nfor key in {d}:\n    if key.{P}():\n        {out} += {d}[key]"),
    B("d", "str", "{out} = max({d}, key={d}.get) if {d} else {W}"),
    B(
        "d",
        "list_str",
        "{out} = []\nitems = dict({d})\nwhile items:\n    key, value = items.popitem()\n    {out}.append(key * (value % 2 + 1))",
    ),
    # --- ints ----------------------------------------------------------------------------------------------------
    B("n", "int", "{out} = 0\nfor i in range(abs({n}) % 6):\n    {out} += i * {K2}"),
    B("n", "int", "{out} = {n}\nwhile {out} > {K3}:\n    {out} = {out} // 2"),
    B("n", "str", "{out} = str(abs({n}))[::-1] + {C}"),
    B("n", "list_int", "{out} = [i * i for i in range(abs({n}) % 7)]"),
    B("sn", "str", "{out} = {s}[{n} % (len({s}) + 1):] if {s} else {W}"),
    B("n", "bool", "{out} = {n} % {K2} == 0 and {n} > {K}"),
    # --- exceptions ---------------------------------------------------------------------------------------------
    B("s", "int", "try:\n    {out} = int({s})\nexcept ValueError:\n    {out} = len({s})"),
    B("l", "int", "try:\n    {out} = {l}.index({K})\nexcept ValueError:\n    {out} = -1"),
    B("d", "int", "try:\n    {out} = {d}[{W}]\nexcept KeyError:\n    {out} = 0"),
    B(
        "l",
        "int",
        "try:\n    {out} = {l}[{K}] // ({l}[0] - {l}[0])\nexcept (IndexError, ZeroDivisionError):\n    {out} = {K2}",
    ),
    # --- the standard library: collections, itertools, math, re, string, functools ---------------------------
    B("s", "dict", "{out} = dict(Counter({s}))", "from collections import Counter"),
    B("s", "str", "{out} = Counter({s}).most_common(1)[0][0] if {s} else {W}", "from collections import Counter"),
    B(
        "w",
        "list_str",
        "{out} = [word for word, _ in Counter({w}).most_common({K2})]",
        "from collections import Counter",
    ),
    B(
        "w",
        "other",
        "groups = defaultdict(list)\nfor word in {w}:\n    groups[len(word)].append(word)\n{out} = dict(groups)",
        "from collections import defaultdict",
    ),
    B(
        "s",
        "dict",
        "{out} = defaultdict(int)\nfor ch in {s}:\n    {out}[ch] += 1\n{out} = dict({out})",
        "from collections import defaultdict",
    ),
    B(
        "w",
        "list_str",
        "seen = OrderedDict()\nfor word in {w}:\n    seen[word] = True\n{out} = list(seen)",
        "from collections import OrderedDict",
    ),
    B(
        "l",
        "list_int",
        "window = deque(maxlen={K2})\n{out} = []\nfor x in {l}:\n    window.append(x)\n    {out}.append(sum(window))",
        "from collections import deque",
    ),
    B("l", "list_int", "{out} = list(itertools.accumulate({l}))", "import itertools"),
    B("s", "list_int", "{out} = [len(list(group)) for _, group in itertools.groupby({s})]", "import itertools"),
    B("s", "str", "{out} = ''.join(key for key, _ in itertools.groupby({s}))", "import itertools"),
    B("w", "int", "{out} = len(set(itertools.chain.from_iterable({w})))", "import itertools"),
    B(
        "l",
        "list_int",
        "{out} = [a - b for a, b in itertools.zip_longest({l}, {l}[1:], fillvalue=0)]",
        "import itertools",
    ),
    B("n", "int", "{out} = math.factorial(abs({n}) % 7)", "import math"),
    B("ln", "int", "{out} = math.gcd({n}, sum({l}))", "import math"),
    B("l", "int", "{out} = math.isqrt(sum(x * x for x in {l}))", "import math"),
    B("n", "int", "{out} = math.ceil(abs({n}) / {K2}) + math.floor({n} / 3)", "import math"),
    B("s", "list_str", "{out} = re.findall(r'[a-z]+', {s})", "import re"),
    B("s", "str", "{out} = re.sub(r'\\s+', {C}, {s}.strip())", "import re"),
    B("s", "int", "{out} = len(re.findall(r'\\d', {s}))", "import re"),
    B("s", "list_str", "{out} = [part for part in re.split(r'[ ,.-]+', {s}) if part]", "import re"),
    B("s", "str", "{out} = ''.join(ch for ch in {s} if ch in ascii_letters)", "from string import ascii_letters"),
    B(
        "s",
        "str",
        "shift = {K}\ntable = str.maketrans(ascii_lowercase, ascii_lowercase[shift:] + ascii_lowercase[:shift])\n"
        "{out} = {s}.translate(table)",
        "from string import ascii_lowercase",
    ),
    B(
        "s",
        "int",
        "{out} = sum(1 for ch in {s} if ch in punctuation + whitespace)",
        "from string import punctuation, whitespace",
    ),
    B("l", "int", "{out} = functools.reduce(lambda acc, x: acc * 2 + x, {l}, 0)", "import functools"),
    B("w", "str", "{out} = functools.reduce(lambda a, b: a if len(a) >= len(b) else b, {w}, '')", "import functools"),
    B("l", "list_int", "{out} = sorted({l}, key=functools.cmp_to_key(lambda a, b: b - a))", "import functools"),
    # --- f-strings and formatting ----------------------------------------------------------------------------
    B("sn", "str", "{out} = f'⟨{s}⟩-⟨{n}⟩'"),
    B("l", "str", "{out} = f'⟨len({l})⟩ items, max ⟨max({l}, default=0)⟩'"),
    B("w", "list_str", "{out} = [f'⟨i⟩:⟨word⟩' for i, word in enumerate({w})]"),
    B("d", "list_str", "{out} = []\nfor key, value in sorted({d}.items()):\n    {out}.append(f'⟨key⟩=⟨value⟩')"),
]

_TYPE_OF = {"s": "str", "l": "list_int", "w": "list_str", "d": "dict", "n": "int"}
_OUT_NAMES = {
    "str": ["result", "out", "new_text", "res", "text2", "s2", "joined", "line"],
    "int": ["count", "total", "index", "value", "n2", "acc", "k"],
    "list_int": ["result", "values", "nums2", "arr", "out", "items"],
    "list_str": ["words", "parts", "names", "tokens", "out"],
    "dict": ["counts", "table", "mapping", "result", "d2", "freq"],
    "bool": ["flag", "ok", "is_valid", "found"],
    "other": ["groups", "buckets", "by_length", "grouped"],
}


def _literal(rng: random.Random, kind: str) -> str:
    if kind == "C":
        return repr(rng.choice(CHARS))
    if kind == "W":
        return repr(rng.choice(WORDS))
    if kind == "K":
        return str(rng.choice([0, 1, 2, 3, 4, 5, 7, 10]))
    if kind == "K2":
        return str(rng.choice([2, 3, 4]))
    if kind == "K3":
        return str(rng.choice([5, 7, 10, 13, 26]))
    if kind == "P":
        return rng.choice(PREDICATES)
    if kind == "T":
        return rng.choice(TRANSFORMS)
    raise ValueError(kind)


def render_block(block: Block, rng: random.Random, scope: dict[str, str], out: str) -> list[str] | None:
    """The block's lines with variables of `scope` (name -> type) bound, or None if it cannot bind."""
    binding: dict[str, str] = {}
    for need in block.needs:
        if need in binding and need + "2" not in binding:
            # a second list of the same kind: another variable, or the same one
            options = [n for n, t in scope.items() if t == _TYPE_OF[need] and n != binding[need]]
            binding[need + "2"] = rng.choice(options) if options else binding[need]
            continue
        options = [n for n, t in scope.items() if t == _TYPE_OF[need]]
        if not options:
            return None
        binding[need] = rng.choice(options)
    text = "\n".join(block.lines)
    text = re.sub(r"\{(C|W|K|K2|K3|P|T)\}", lambda m: _literal(rng, m.group(1)), text)
    text = text.replace("{{", "\x00").replace("}}", "\x01")
    text = text.replace("{out}", out)
    for key, name in binding.items():
        text = text.replace("{" + key + "}", name)
    text = text.replace("\x00", "{").replace("\x01", "}")
    text = text.replace(FSTRING_OPEN, "{").replace(FSTRING_CLOSE, "}")  # f-string braces, kept apart from placeholders
    if "{" in text and re.search(r"\{[a-zA-Z0-9]+\}", text):
        return None
    return text.split("\n")


def out_name(rng: random.Random, kind: str, scope: dict[str, str]) -> str:
    options = [n for n in _OUT_NAMES[kind] if n not in scope]
    return rng.choice(options) if options else f"{_OUT_NAMES[kind][0]}{len(scope)}"
