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
WORDS = ["ab", "x", "foo", "bar", "a", "ba", "zz", "12", "hi", "Ab", "cd", "-"]


@dataclass(frozen=True)
class Block:
    needs: tuple[str, ...]  # placeholder kinds read: s l w d n
    out: str  # output type: str list_int list_str dict int bool
    lines: tuple[str, ...]


def B(needs: str, out: str, text: str) -> Block:
    return Block(tuple(needs), out, tuple(text.strip("\n").split("\n")))


BLOCKS: list[Block] = [
    # --- strings -> strings ----------------------------------------------------------------------
    B("s", "str", "{out} = ''\nfor ch in {s}:\n    if ch.{P}():\n        {out} += ch.{T}()\n    else:\n        {out} += ch"),
    B("s", "str", "{out} = ''\nfor ch in {s}:\n    if ch in {W}:\n        continue\n    {out} += ch"),
    B("s", "str", "{out} = []\nfor i, ch in enumerate({s}):\n    if i % {K2} == 0:\n        {out}.append(ch.upper())\n    else:\n        {out}.append(ch)\n{out} = ''.join({out})"),
    B("s", "str", "{out} = {s}.replace({C}, {W}).strip()"),
    B("s", "str", "{out} = {s}\nwhile {out}.startswith({C}):\n    {out} = {out}[1:]"),
    B("s", "str", "{out} = {s}\nwhile {out} and {out}[-1] in {W}:\n    {out} = {out}[:-1]"),
    B("s", "str", "idx = {s}.find({C})\nif idx == -1:\n    {out} = {s}\nelse:\n    {out} = {s}[:idx] + {s}[idx + 1:]"),
    B("s", "str", "{out} = {s}.partition({C})[0] + {s}.partition({C})[2]"),
    B("s", "str", "parts = {s}.split({C})\n{out} = {W}.join(part[::-1] for part in parts)"),
    B("s", "str", "{out} = ''.join(sorted({s}, reverse=True))"),
    B("s", "str", "{out} = {s}[{K}:] + {s}[:{K}]"),
    B("s", "str", "if {s}.{P}():\n    {out} = {s}.{T}()\nelif len({s}) > {K}:\n    {out} = {s}[:{K}]\nelse:\n    {out} = {s} * 2"),
    B("s", "str", "{out} = {s}.center(len({s}) + {K2}, {C})"),
    B("s", "str", "chars = list({s})\nfor i in range(0, len(chars) - 1, 2):\n    chars[i], chars[i + 1] = chars[i + 1], chars[i]\n{out} = ''.join(chars)"),
    B("s", "str", "{out} = ''\nfor word in {s}.split():\n    {out} += word[0].upper() if word else ''"),
    B("sn", "str", "{out} = {s}\nfor _ in range({n} % 4):\n    {out} = {out}[-1:] + {out}[:-1]"),
    B("s", "str", "{out} = {s}.rjust({K2} + len({s}), {C}).ljust({K}, {C})"),
    B("w", "str", "{out} = ''\nfor word in {w}:\n    if len(word) > 1:\n        {out} += word[::-1]\n    else:\n        {out} += word.upper()"),
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
    B("l", "list_int", "{out} = []\nfor x in {l}:\n    if x % 2 == 0:\n        {out}.append(x * {K2})\n    else:\n        {out}.append(x - 1)"),
    B("l", "list_int", "{out} = {l}.copy()\n{out}.sort()\n{out} = {out}[::2]"),
    B("l", "list_int", "{out} = {l}[:]\nwhile {out} and {out}[-1] < {K}:\n    {out}.pop()"),
    B("l", "list_int", "{out} = list({l})\nif {K} in {out}:\n    {out}.remove({K})\n{out}.insert(0, {K2})"),
    B("l", "list_int", "seen = set()\n{out} = []\nfor x in {l}:\n    if x not in seen:\n        seen.add(x)\n        {out}.append(x)"),
    B("l", "list_int", "{out} = [{l}[i] + {l}[i + 1] for i in range(len({l}) - 1)]"),
    B("l", "list_int", "{out} = {l}[::-1]\n{out}.append(len({out}))"),
    B("l", "list_int", "{out} = []\nfor i in range(len({l})):\n    if i % {K2} == 0:\n        {out}.append({l}[i])"),
    B("l", "list_int", "{out} = sorted({l}, key=lambda x: (abs(x), x))"),
    B("l", "list_int", "{out} = list({l})\nfor i in range(len({out})):\n    {out}[i] = {out}[i] * i"),
    B("ll", "list_int", "{out} = [x for x in {l} if x not in {l2}] + {l2}"),
    B("l", "int", "{out} = 0\nfor i, x in enumerate({l}):\n    if i % 2 == 1:\n        {out} += x\n    else:\n        {out} -= x"),
    B("l", "int", "{out} = sum({l}) if {l} else {K}"),
    B("l", "int", "{out} = max({l}, default={K}) - min({l}, default=0)"),
    B("l", "int", "{out} = {l}.count({K}) + len({l})"),
    B("l", "int", "{out} = 0\nfor x in {l}:\n    if x > {K}:\n        break\n    {out} += 1"),
    B("l", "bool", "{out} = True\nfor i in range(len({l}) - 1):\n    if {l}[i] > {l}[i + 1]:\n        {out} = False\n        break"),
    B("l", "dict", "{out} = {{}}\nfor x in {l}:\n    key = 'even' if x % 2 == 0 else 'odd'\n    {out}[key] = {out}.get(key, 0) + x"),
    B("l", "str", "{out} = ', '.join(str(x) for x in sorted({l}))"),
    B("ln", "list_int", "{out} = [x for x in {l} if x > {n}]\n{out}.extend([{n}] * 2)"),
    # --- lists of strs --------------------------------------------------------------------------------------
    B("w", "list_str", "{out} = []\nfor word in {w}:\n    if word not in {out}:\n        {out}.append(word)"),
    B("w", "list_str", "{out} = [word.{T}() for word in {w} if word]"),
    B("w", "list_str", "{out} = sorted({w}, reverse=True)[:{K2}]"),
    B("w", "int", "{out} = sum(len(word) for word in {w})"),
    B("w", "dict", "{out} = {{}}\nfor word in {w}:\n    {out}[word] = {out}.get(word, 0) + 1"),
    # --- dicts -------------------------------------------------------------------------------------------------
    B("d", "dict", "{out} = {{}}\nfor key, value in {d}.items():\n    if value > {K}:\n        {out}[key] = value\n    else:\n        {out}[key.upper()] = value + 1"),
    B("d", "dict", "{out} = dict({d})\n{out}.pop({W}, None)\n{out}[{W}] = {K}"),
    B("d", "dict", "{out} = {{value: key for key, value in {d}.items()}}"),
    B("d", "list_str", "{out} = sorted({d}, key=lambda k: ({d}[k], k))"),
    B("d", "list_int", "{out} = [v for k, v in sorted({d}.items())]"),
    B("d", "int", "{out} = 0\nfor key in {d}:\n    if key.{P}():\n        {out} += {d}[key]"),
    B("d", "str", "{out} = max({d}, key={d}.get) if {d} else {W}"),
    B("d", "list_str", "{out} = []\nitems = dict({d})\nwhile items:\n    key, value = items.popitem()\n    {out}.append(key * (value % 2 + 1))"),
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
    B("l", "int", "try:\n    {out} = {l}[{K}] // ({l}[0] - {l}[0])\nexcept (IndexError, ZeroDivisionError):\n    {out} = {K2}"),
]

_TYPE_OF = {"s": "str", "l": "list_int", "w": "list_str", "d": "dict", "n": "int"}
_OUT_NAMES = {
    "str": ["result", "out", "new_text", "res", "text2", "s2", "joined", "line"],
    "int": ["count", "total", "index", "value", "n2", "acc", "k"],
    "list_int": ["result", "values", "nums2", "arr", "out", "items"],
    "list_str": ["words", "parts", "names", "tokens", "out"],
    "dict": ["counts", "table", "mapping", "result", "d2", "freq"],
    "bool": ["flag", "ok", "is_valid", "found"],
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
    if "{" in text and re.search(r"\{[a-zA-Z0-9]+\}", text):
        return None
    return text.split("\n")


def out_name(rng: random.Random, kind: str, scope: dict[str, str]) -> str:
    options = [n for n in _OUT_NAMES[kind] if n not in scope]
    return rng.choice(options) if options else f"{_OUT_NAMES[kind][0]}{len(scope)}"
