"""The structure of a value as the recorder encodes it (what a stop's Variables shows of an object)
is the same whether the C walk (trace/_values.c) or its Python definition (child/values.py's
Reprs.structure_in_python) makes it: value for value, on every interpreter that runs the recording
child."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Run by each interpreter: builds objects of every shape a walk meets, prints the ones whose two
# structures differ (an empty list: none).
BATTERY = r"""
import gc, json, socket, sys, threading, types
from neural_dap.trace.child import values
from neural_dap.trace.child.values import Reprs

class Plain:
    pass

class Loud:
    def __repr__(self):
        return "Loud(at 0x1f)"

class Raises:
    def __repr__(self):
        raise ValueError("no repr")

class NotText:
    def __repr__(self):
        return 42

class Slotted:
    __slots__ = ("a", "b", "_c")

class SlottedChild(Slotted):
    __slots__ = ("d",)

class Meta(type):
    def __repr__(cls):
        return "Meta-made " + cls.__name__

class Made(metaclass=Meta):
    pass

class Weird:
    pass

Weird.__qualname__ = "Weird at 0xab\u3000name"

class NamedDict(dict):
    def items(self):
        return [("from_items", 1)]

class DictProperty:
    @property
    def __dict__(self):
        return {"made_by": "a property"}

def build():
    shared = [1, 2]
    o = Plain()
    o.short = "text"
    o.long = "x" * 500
    o.small, o.big, o.huge = 7, 10**30, 10**5000
    o.f, o.yes, o.nothing, o.b, o.long_b, o.c = 1.5, True, None, b"ab", b"y" * 500, 1 + 2j
    o.atoms = [1, "a", None, 2.5, b"z", (1, ("deep", 2))]
    o.mixed = [1, Plain()]
    o.long_list = list(range(50))
    o.nested = (1, (2, (3, (4,))))
    o.table = {"k": 1, 2: (3, "v")}
    o.odd_table = {"k": Plain()}
    o.a_set, o.frozen = {1, 2}, frozenset({"a"})
    o.address_in_text = ("see <obj at 0x1234>", "at 0x12;", "a at 0x1f, b", "c at 0xff:", "d at 0x1;")
    o.more_addresses = ["e at 0x1]", "f at 0x2)", "g at 0x3 h", "no at 0x", "i at 0xZ>", "j at 0x4"]
    o.cls, o.made_cls, o.meta = Plain, Made, Meta
    o.loud, o.raises, o.not_text = Loud(), Raises(), NotText()
    o.me = o
    o.first = o.second = shared
    o.twice_a = o.twice_b = Plain()
    o.weird = Weird()
    o.module, o.function = types, build
    o.event = threading.Event()
    o.sock = socket.socket()
    s = SlottedChild()
    s.a, s.d = [1], "d"
    o.slotted = s
    o.__dict__[3] = "an int name"
    n = Plain()
    n.__dict__ = NamedDict(hidden=1)
    o.named_dict = n
    o.dict_property = DictProperty()
    o.empty = Plain()
    o.deep = Plain()
    o.deep.inner = Plain()
    o.deep.inner.innermost = Plain()
    return o, s

def compare(limit, max_children):
    reprs = Reprs(limit, max_children)
    o, s = build()
    differ = []
    for name, value in [("object", o), ("slots", s), ("class", Plain), ("function", build), ("atom", 3), ("list", [o])]:
        for depth in (1, 2, 3):
            c = reprs.structure(value, depth, {})
            p = reprs.structure_in_python(value, depth, {})
            if c != p:
                differ.append([name, depth, limit, max_children, repr(c), repr(p)])
    # one memo shared by two walks (one event's: a local and a global showing the same socket)
    seen_c, seen_p = {}, {}
    pairs = [(reprs.structure(v, 2, seen_c), reprs.structure_in_python(v, 2, seen_p)) for v in (o, o.deep)]
    if pairs[0] != pairs[1] and [c for c, _ in pairs] != [p for _, p in pairs]:
        differ.append(["shared memo", 2, limit, max_children, repr(pairs), ""])
    o.sock.close()
    return differ

class Other:
    pass

SHOWN = [0]

class Bumps:  # (its repr rebinds an atom of the object being walked, as another thread may meanwhile)
    __slots__ = ()

    def __repr__(self):
        BUMPED[0].n += 1
        return "Bumps"

BUMPED = []

class Peek:  # (a repr that reads every list on the heap, as a memory profiler's may: none may be half made)
    def __repr__(self):
        for found in [x for x in gc.get_objects() if type(x) is list]:
            for item in found:
                pass
        return "Peek"

class Swap:  # (a repr that changes the class of the object being walked)
    def __repr__(self):
        SWAPPED[0].__class__ = Other if type(SWAPPED[0]) is Plain else Plain
        return "Swap"

SWAPPED = []

def deep(n, walk):
    # the program deep in a recursion when a line is recorded: a repr may fail for want of stack
    try:
        return deep(n - 1, walk) if n else walk()
    except RecursionError:
        return None

def renamed(attributes):
    return {("on" if name == "flag" else name): value for name, value in attributes.items()}

class Shown:  # (its text changes with no change to its attributes)
    def __repr__(self):
        return f"Shown {SHOWN[0]}"

def set_x(o, x):  # (called in a loop: 3.12+ specialise the store, 3.13 into the object's inline values)
    o.x = x

def over_time():
    # One Reprs walks the same objects again and again (as a recording walks a handler's `self` at
    # every line: its sockets' texts and the objects' structures are kept between walks), each change
    # in place between two walks; every walk must still be what the definition gives at that moment.
    reprs = Reprs(60, 20)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    o, inner = Plain(), Plain()
    o.n, o.f, o.flag, o.text, o.items, o.inner, o.sock = 1, 0.0, True, "t", [1], inner, listener
    inner.count = 0
    long = Plain()
    long.big = "y" * 100  # (an atom too long to keep: this object is walked whole each time)
    o.long = long
    warm = [Plain() for _ in range(3)]
    for _ in range(2000):
        for w in warm:
            set_x(w, 1)
    w = warm[0]
    o.warm = w
    o.shown = Shown()
    o.shown.a = 1
    client = socket.socket()

    def connect():
        listener.listen()
        client.connect(listener.getsockname())
        o.peer = listener.accept()[0]
        o.client = client

    def patch_repr():
        socket.socket.__repr__ = lambda self: "patched socket"

    steps = [
        ("nothing", lambda: None),
        ("an int rebound", lambda: setattr(o, "n", 2)),
        ("an int rebound back", lambda: setattr(o, "n", 1)),
        ("an int rebound again", lambda: setattr(o, "n", 2)),
        ("an atom become a list", lambda: setattr(o, "n", [2])),
        ("a list become an atom", lambda: setattr(o, "n", 2)),
        ("0.0 to -0.0", lambda: setattr(o, "f", -0.0)),
        ("True to 1", lambda: setattr(o, "flag", 1)),
        ("a list grown in place", lambda: o.items.append(2)),
        ("an object below changed", lambda: setattr(inner, "count", 1)),
        ("a name deleted, another added", lambda: (delattr(o, "text"), setattr(o, "other", "t"))),
        ("a name moved to the end", lambda: (delattr(o, "n"), setattr(o, "n", 2))),
        ("a name renamed in its place", lambda: setattr(o, "__dict__", renamed(vars(o)))),
        ("a text changed, not its attributes", lambda: SHOWN.__setitem__(0, 1)),
        ("the class changed", lambda: setattr(o, "__class__", Other)),
        ("the class renamed", lambda: setattr(Other, "__name__", "Renamed")),
        ("an equal dict put in", lambda: setattr(o, "__dict__", dict(o.__dict__))),
        ("a long atom changed", lambda: setattr(long, "big", "z" * 100)),
        ("a specialised store", lambda: [set_x(w, k) for k in range(2, 50)]),
        ("a socket listening and connected", connect),
        ("a socket closed", lambda: o.peer.close()),
        ("the socket repr patched", patch_repr),
    ]
    differ = []
    original = socket.socket.__repr__
    try:
        for what, change in steps:
            change()
            for depth in (1, 2):
                for _ in range(2):
                    c = reprs.structure(o, depth, {})
                    p = reprs.structure_in_python(o, depth, {})
                    if c != p:
                        differ.append(["over time: " + what, depth, 60, 20, repr(c), repr(p)])
    finally:
        socket.socket.__repr__ = original
        for s in (listener, client, getattr(o, "peer", listener)):
            s.close()
    # what the repr reads of its class, patched as unittest.mock.patch.object patches it
    patched_socket = socket.socket()
    sockets = Plain()
    sockets.sock = patched_socket
    saved = {name: socket.socket.__dict__.get(name) for name in ("getpeername",)}
    saved_name = socket.socket.__qualname__
    try:
        reprs.structure(sockets, 1, {})
        socket.socket.getpeername = lambda self: ("10.0.0.1", 80)
        socket.socket.__qualname__ = "Sock"
        c, p = reprs.structure(sockets, 1, {}), reprs.structure_in_python(sockets, 1, {})
        if c != p:
            differ.append(["over time: the socket class patched", 1, 60, 20, repr(c), repr(p)])
    finally:
        socket.socket.__qualname__ = saved_name
        for name, value in saved.items():
            if value is None:
                delattr(socket.socket, name)
            else:
                setattr(socket.socket, name, value)
    # a repr that failed for want of stack is made again at the next walk, as the definition makes it
    short = Plain()
    short.sock, short.b = patched_socket, b"ab"
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(200)
        for n in range(150, 200):
            fresh = Reprs(60, 20)
            if deep(n, lambda: fresh.structure(short, 1, {})) is None:
                continue
            c, p = fresh.structure(short, 1, {}), fresh.structure_in_python(short, 1, {})
            if c != p:
                differ.append(["over time: a text made near the recursion limit", n, 60, 20, repr(c), repr(p)])
    finally:
        sys.setrecursionlimit(limit)
        patched_socket.close()
    peeked = Plain()
    peeked.n, peeked.peek = 1, Peek()
    for _ in range(2):
        c, p = reprs.structure(peeked, 1, {}), reprs.structure_in_python(peeked, 1, {})
        if c != p:
            differ.append(["over time: a repr reading the heap", 1, 60, 20, repr(c), repr(p)])
    swapped = Plain()
    swapped.s = Swap()
    SWAPPED.append(swapped)
    for _ in range(2):
        swapped.__class__ = Plain
        c = reprs.structure(swapped, 1, {})
        swapped.__class__ = Plain
        p = reprs.structure_in_python(swapped, 1, {})
        if c != p:
            differ.append(["over time: a repr changing the walked object's class", 1, 60, 20, repr(c), repr(p)])
    # an object whose structure is too big to keep (the recorder's memory stays bounded): walked whole,
    # whether it was big at its first walk or grew big since
    wide = Reprs(1000, 50)
    for first, then in ((200, 200), (1, 200)):
        big = Plain()
        for k in range(30):
            setattr(big, f"p{k}", Plain())
        for size in (first, then):
            for k in range(30):
                for j in range(30):
                    setattr(getattr(big, f"p{k}"), f"a{j}", "t" * size)
            c, p = wide.structure(big, 2, {}), wide.structure_in_python(big, 2, {})
            if c != p:
                differ.append(["over time: an object too big to keep", size, 1000, 50, repr(c)[:200], repr(p)[:200]])
            if size > 1 and any(node[0]() is big for node in list(wide.nodes.values())):
                differ.append(["over time: an object too big to keep", size, 1000, 50, "a node kept", ""])
    # the node's own mark, reached by the program (through gc, or the Reprs' dict), as a value
    marked = Plain()
    marked.x = [1]
    reprs.structure(marked, 1, {})
    mark = [a for node in list(reprs.nodes.values()) for a in node[2] if type(a) is str and a == "<not kept>"]
    if mark:
        marked.x = mark[0]
        c, p = reprs.structure(marked, 1, {}), reprs.structure_in_python(marked, 1, {})
        if c != p:
            differ.append(["over time: the node's mark as a value", 1, 60, 20, repr(c), repr(p)])
    bumped = Plain()
    bumped.n, bumped.bumps = 0, Bumps()
    BUMPED.append(bumped)
    for _ in range(3):  # each walk from the same moment: the text of `n` is the one it read
        start = bumped.n
        c = reprs.structure(bumped, 1, {})
        bumped.n = start
        p = reprs.structure_in_python(bumped, 1, {})
        if c != p:
            differ.append(["over time: an atom rebound while walked", 1, 60, 20, repr(c), repr(p)])
    return differ

assert values._structure_in_c is not None, "the C walk is not built"
print(json.dumps(compare(1000, 100) + compare(12, 3) + compare(3, 1) + over_time()))
"""


def _interpreter(version: str) -> str | None:
    if sys.version.startswith(version):
        return sys.executable
    for candidate in sorted((Path.home() / ".pyenv" / "versions").glob(f"{version}.*/bin/python")):
        return str(candidate)
    return None


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_the_c_walk_gives_what_the_python_definition_gives_value_for_value(version):
    pytest.importorskip("neural_dap.trace._values", reason="the C walk is not built here")
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} here")
    done = subprocess.run(
        [python, "-c", BATTERY], cwd=ROOT, capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(ROOT)}
    )
    assert done.returncode == 0, done.stderr
    differ = json.loads(done.stdout)
    assert differ == [], "\n".join(" | ".join(map(str, row)) for row in differ)


def test_a_cut_repr_and_an_address_read_as_the_python_definition_writes_them():
    """The two cases most easily got wrong in C, shown as a user sees them."""
    from neural_dap.trace.child import values

    pytest.importorskip("neural_dap.trace._values", reason="the C walk is not built here")

    class Box:
        pass

    box = Box()
    box.label = "a label longer than ten"
    box.pair = ("at 0x1f>", Box())
    reprs = values.Reprs(10, 5)
    walked = reprs.structure(box, 2, {})
    assert walked == reprs.structure_in_python(box, 2, {})
    assert walked[1] == "Box" and " at 0x" not in walked[0]
    children = dict(walked[2])
    assert children["label"] == "'a label l\u2026"
