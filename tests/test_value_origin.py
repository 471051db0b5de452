"""valueOrigin through the real adapter: where a value came from, followed back through copies,
attribute and item stores and arguments to the statement that computed it; each step a moment the
client can travel to, and an honest end where the chain cannot go on (a literal, a global, library
code). Also the terminal's `origin` command."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from neural_dap.dapwire.client import DapError

from .dap_helpers import adapter, start, where

PROGRAM = textwrap.dedent(
    """\
    import json

    COUNT = 7


    class Box:
        def __init__(self):
            self.x = None


    def compute(n):
        return n * 6


    def f(p):
        q = p
        return q


    def g(v):
        return v


    def h(w):
        return w


    def main():
        a = compute(7)
        b = a
        obj = Box()
        obj.x = b
        r = f(obj.x)
        lit = 42
        s = lit
        t = g(s)
        glob = COUNT
        lib = json.loads("[1, 2]")
        k = lib
        d = {}
        d["k"] = k
        xs = [0, 0, 0, 0]
        i = 3
        xs[i] = a
        m = list(map(h, [5]))
        return r, t, glob, k, m


    main()
    """
)


def _line(fragment: str) -> int:
    return next(k for k, text in enumerate(PROGRAM.splitlines(), 1) if fragment in text)


@pytest.fixture()
def program(tmp_path: Path) -> str:
    path = tmp_path / "origins.py"
    path.write_text(PROGRAM)
    return str(path)


async def _frame(c) -> int:
    return (await c.call("stackTrace", {"threadId": 1}))["stackFrames"][0]["id"]


@pytest.mark.parametrize("recording", ["full", "skeleton"])
async def test_a_parameter_is_followed_through_copies_a_store_and_the_call_to_the_computing_line(program, recording):
    async with adapter() as c:
        await start(
            c, {"program": program, "recording": recording}, breakpoints={program: [{"line": _line("return q")}]}
        )
        origin = await c.call("valueOrigin", {"expression": "q", "frameId": await _frame(c)})
        assert origin["expression"] == "q" and origin["value"] == "42"
        steps = [
            (s["kind"], s["expression"], s["value"], s["statement"], s["moment"]["function"], s["moment"]["line"])
            for s in origin["steps"]
        ]
        assert steps == [
            ("assigned", "q", "42", "q = p", "f", _line("q = p")),
            ("argument", "p", "42", "r = f(obj.x)", "main", _line("r = f(obj.x)")),
            ("assigned", "obj.x", "42", "obj.x = b", "main", _line("obj.x = b")),
            ("assigned", "b", "42", "b = a", "main", _line("b = a")),
            ("assigned", "a", "42", "a = compute(7)", "main", _line("a = compute(7)")),
            # into the call that made it: its return, and where the name it computes from was set
            ("returned", "n * 6", "42", "return n * 6", "compute", _line("return n * 6")),
            ("operand", "n", "7", "a = compute(7)", "main", _line("a = compute(7)")),
        ]
        assert origin["end"] == "computed" and "`n * 6`" in origin["reason"]
        assert all(s["moment"]["path"] == program and s["moment"]["thread"] == 1 for s in origin["steps"])

        # every step is a moment: travel to the statement that called compute, the line about to run
        await c.call("travel", {"index": origin["steps"][4]["moment"]["index"]})
        assert (await c.wait_event("stopped"))["body"]["reason"] == "goto"
        function, line, names = await where(c)
        assert (function, line) == ("main", _line("a = compute(7)")) and "a" not in names
        # and asked from there, the value is gone: it has not been computed yet
        unbound = await c.call("valueOrigin", {"expression": "a", "frameId": await _frame(c)})
        assert unbound["value"] is None and unbound["end"] == "unbound" and unbound["steps"] == []


async def test_a_literal_ends_the_chain_at_its_line(program):
    async with adapter() as c:
        await start(c, {"program": program}, breakpoints={program: [{"line": _line("return v")}]})
        origin = await c.call("valueOrigin", {"expression": "v", "frameId": await _frame(c)})
        assert [(s["kind"], s["statement"]) for s in origin["steps"]] == [
            ("argument", "t = g(s)"),
            ("assigned", "s = lit"),
            ("assigned", "lit = 42"),
        ]
        assert origin["end"] == "literal" and "42" in origin["reason"]


async def test_globals_library_code_and_items_end_with_the_reason(program):
    async with adapter() as c:
        await start(c, {"program": program}, breakpoints={program: [{"line": _line("return r, t")}]})
        frame = await _frame(c)

        glob = await c.call("valueOrigin", {"expression": "glob", "frameId": frame})
        assert [s["statement"] for s in glob["steps"]] == ["glob = COUNT"]
        assert glob["end"] == "global" and "COUNT" in glob["reason"]

        item = await c.call("valueOrigin", {"expression": 'd["k"]', "frameId": frame})
        assert [s["statement"] for s in item["steps"]] == ['d["k"] = k', "k = lib", 'lib = json.loads("[1, 2]")']
        assert item["value"] == "[1, 2]"
        assert item["end"] == "library" and "not recorded" in item["reason"] and "json.loads" in item["reason"]

        # an item stored under a name's key (i = 3): read from the recorded value of i
        indexed = await c.call("valueOrigin", {"expression": "xs[3]", "frameId": frame})
        assert [s["statement"] for s in indexed["steps"] if s["kind"] != "operand"] == [
            "xs[i] = a",
            "a = compute(7)",
            "return n * 6",
        ]
        assert indexed["end"] == "computed"

        with pytest.raises(DapError, match="not a local"):
            await c.call("valueOrigin", {"expression": "a + 1", "frameId": frame})

        # a global asked in a function: where to ask instead; in the module's frame, it is followed
        hint = await c.call("valueOrigin", {"expression": "COUNT", "frameId": frame})
        assert hint["end"] == "unbound" and "frame of its module" in hint["reason"]
        module = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"][-1]
        assert module["name"] == "<module>"
        count = await c.call("valueOrigin", {"expression": "COUNT", "frameId": module["id"]})
        assert [s["statement"] for s in count["steps"]] == ["COUNT = 7"] and count["end"] == "literal"


async def test_an_argument_passed_by_library_code_ends_there(program):
    async with adapter() as c:
        await start(c, {"program": program}, breakpoints={program: [{"line": _line("return w")}]})
        origin = await c.call("valueOrigin", {"expression": "w", "frameId": await _frame(c)})
        assert [(s["kind"], s["statement"]) for s in origin["steps"]] == [("argument", "m = list(map(h, [5]))")]
        assert origin["end"] == "library" and "passed to code that was not recorded" in origin["reason"]


def test_the_terminal_prints_the_origin_chain(program):
    script = f"b {_line('return q')}; c; origin q; origin nothing; q"
    result = subprocess.run(
        [sys.executable, "-m", "neural_dap", "debug", program, "--do", script],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = result.stdout
    assert "q = 42 came from:" in out
    assert "r = f(obj.x)   \u2192 p = 42 (argument)   @" in out
    assert f"origins.py:{_line('r = f(obj.x)')} in main" in out
    assert "a = compute(7)   \u2192 a = 42   @" in out
    assert "return n * 6   \u2192 n * 6 = 42 (returned)   @" in out
    assert "a = compute(7)   \u2192 n = 7 (operand: where it was set)   @" in out
    assert "[computed] computed: `n * 6`" in out
    assert "`nothing` is not a local of f here" in out


INSIDE = textwrap.dedent(
    """\
    import threading


    class Box:
        def __init__(self, x):
            self.x = x

        def set(self, val):
            self.x = val


    def make():
        return 5


    def work(n):
        r = n
        return r


    def main():
        base = make()
        box = Box(base)
        other = Box(0)
        other.set(base)
        worker = threading.Thread(target=work, args=(base,))
        worker.start()
        worker.join()
        return box, other


    main()
    """
)


def _inside_line(fragment: str) -> int:
    return next(k for k, text in enumerate(INSIDE.splitlines(), 1) if fragment in text)


@pytest.mark.parametrize("recording", ["full", "skeleton"])
async def test_a_value_set_inside_a_call_is_followed_into_it_and_back_through_its_argument(tmp_path: Path, recording):
    program = tmp_path / "inside.py"
    program.write_text(INSIDE)
    async with adapter() as c:
        launch = {"program": str(program), "recording": recording}
        await start(c, launch, breakpoints={str(program): [{"line": _inside_line("return box")}]})
        frame = await _frame(c)
        for expression, call, store, parameter in (
            ("box.x", "box = Box(base)", "self.x = x", "x"),
            ("other.x", "other.set(base)", "self.x = val", "val"),
        ):
            origin = await c.call("valueOrigin", {"expression": expression, "frameId": frame})
            assert [(s["kind"], s["expression"], s["statement"], s["moment"]["function"]) for s in origin["steps"]] == [
                ("call", expression, call, "main"),
                ("assigned", "self.x", store, "__init__" if parameter == "x" else "set"),
                ("argument", parameter, call, "main"),
                ("assigned", "base", "base = make()", "main"),
                ("returned", "5", "return 5", "make"),  # into the call that made it
            ]
            assert origin["value"] == "5" and origin["end"] == "literal" and "`5`" in origin["reason"]


async def test_a_thread_started_by_library_code_ends_at_its_argument_with_the_thread_named(tmp_path: Path):
    program = tmp_path / "inside.py"
    program.write_text(INSIDE)
    async with adapter() as c:
        stopped = await start(
            c, {"program": str(program)}, breakpoints={str(program): [{"line": _inside_line("return r")}]}
        )
        thread = stopped["body"]["threadId"]
        assert thread == 2  # the worker: the second thread that ran traced code
        frames = (await c.call("stackTrace", {"threadId": thread}))["stackFrames"]
        origin = await c.call("valueOrigin", {"expression": "r", "frameId": frames[0]["id"]})
        assert [(s["statement"], s["moment"]["thread"]) for s in origin["steps"]] == [("r = n", 2)]
        assert origin["end"] == "library" and "not recorded" in origin["reason"]


ARGUMENTS = textwrap.dedent(
    """\
    import functools


    def logged(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            return fn(*args)

        return wrapper


    @logged
    def wrapped(w):
        return w


    def pair(a, b=10, *, c=20):
        return a + b + c


    def main():
        p, q = 3, len("four")
        q, p = p, q
        first = pair(p, c=q)
        second = pair(p - 1)
        third = wrapped(p)
        return first, second, third


    main()
    """
)


async def test_arguments_by_keyword_and_default_a_swap_and_a_wrapper(tmp_path: Path):
    program = tmp_path / "arguments.py"
    program.write_text(ARGUMENTS)
    line = next(k for k, text in enumerate(ARGUMENTS.splitlines(), 1) if "return a + b + c" in text)
    inner = next(k for k, text in enumerate(ARGUMENTS.splitlines(), 1) if text.strip() == "return w")
    async with adapter() as c:
        await start(c, {"program": str(program)}, breakpoints={str(program): [{"line": line}, {"line": inner}]})
        frame = await _frame(c)

        async def origin(expression: str) -> tuple[list[str], str, str]:
            answer = await c.call("valueOrigin", {"expression": expression, "frameId": frame})
            return [s["statement"] for s in answer["steps"]], answer["end"], answer["reason"]

        # pair(p, c=q) after the swap: p came from len("four"), c (a keyword) from the literal 3
        assert await origin("a") == (
            ["first = pair(p, c=q)", "q, p = p, q", 'p, q = 3, len("four")'],
            "library",
            "returned by code that was not recorded: `len('four')`",
        )
        steps, end, _ = await origin("c")
        assert steps == ["first = pair(p, c=q)", "q, p = p, q", 'p, q = 3, len("four")'] and end == "literal"
        assert await origin("b") == (
            ["first = pair(p, c=q)", "def pair(a, b=10, *, c=20):"],  # the default, at its def line
            "literal",
            "the default value of `b`: `10`",
        )

        await c.call("continue", {"threadId": 1})
        await c.wait_event("stopped")
        frame = await _frame(c)
        steps, end, reason = await origin("a")  # pair(p - 1): arithmetic, with where p was set
        assert steps == ["second = pair(p - 1)", "q, p = p, q"] and end == "computed" and "p - 1" in reason

        await c.call("continue", {"threadId": 1})
        await c.wait_event("stopped")
        frame = await _frame(c)
        steps, end, reason = await origin("w")  # called by the decorator's wrapper as fn(*args)
        assert steps == ["return fn(*args)"] and end == "complex" and "not called by its name" in reason


async def test_a_long_chain_stops_at_the_limit_and_goes_on_from_its_last_step(tmp_path: Path):
    copies = "\n".join(f"    v{k} = v{k - 1}" for k in range(1, 41))
    program = tmp_path / "copies.py"
    program.write_text(f"def main():\n    v0 = len('seed')\n{copies}\n    return v40\n\n\nmain()\n")
    async with adapter() as c:
        await start(c, {"program": str(program)}, breakpoints={str(program): [{"line": 43}]})
        origin = await c.call("valueOrigin", {"expression": "v40", "frameId": await _frame(c)})
        assert len(origin["steps"]) == 32 and origin["end"] == "limit" and "ask again" in origin["reason"]
        assert origin["steps"][-1]["statement"] == "v9 = v8"
        # travel to the last step, step over it, and ask again: the rest of the chain
        await c.call("travel", {"index": origin["steps"][-1]["moment"]["index"]})
        await c.wait_event("stopped")
        await c.call("next", {"threadId": 1})
        await c.wait_event("stopped")
        rest = await c.call("valueOrigin", {"expression": "v9", "frameId": await _frame(c)})
        assert [s["statement"] for s in rest["steps"]][-2:] == ["v1 = v0", "v0 = len('seed')"]
        assert len(rest["steps"]) == 10 and rest["end"] == "library"
