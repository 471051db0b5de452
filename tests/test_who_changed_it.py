"""Who changed it (issue 35), through the real adapter: a change is the statement that changed the
object, wherever and under whatever name it ran (an alias in a callee, a method on `self`), with
the moment the new value shows; a write data breakpoint run backwards stops at that statement.
Both recordings answer alike; every state of a run, return and exception moments included, is the
state a fresh capture at that event shows."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from .dap_helpers import adapter, start, where

PROGRAM = textwrap.dedent(
    """\
    def add(xs, x):
        ys = xs
        ys.append(x)
        return ys


    def fill(xs):
        xs.append(7)


    class Box:
        def __init__(self):
            self.items = [1]

        def put(self, v):
            self.items.append(v)


    def settle(settings):
        settings.update(mode="fast")


    a = [0]
    b = add(a, 5)
    fill(a)
    box = Box()
    box.put(2)
    config = {"mode": "slow"}
    settle(config)
    print(a, b, box.items, config)
    """
)


def line_of(fragment: str) -> int:
    return next(k for k, text in enumerate(PROGRAM.splitlines(), 1) if fragment in text)


END = line_of("print(a, b")
FILL = line_of("xs.append(7)")


@pytest.fixture()
def program(tmp_path: Path) -> str:
    path = tmp_path / "aliases.py"
    path.write_text(PROGRAM)
    return str(path)


def made_by(change: dict) -> tuple[str, int, str, str | None, str | None]:
    statement = change["statement"]
    return statement["function"], statement["line"], change["code"], change["old"], change["new"]


@pytest.mark.parametrize("recording", ["full", "skeleton"])
async def test_the_last_change_names_the_statement_in_the_function_that_made_it(program, recording):
    async with adapter() as c:
        await start(c, {"program": program, "recording": recording}, breakpoints={program: [{"line": END}]})
        frame = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"][0]["id"]

        async def last(expression: str) -> dict:
            return (await c.call("lastChange", {"expression": expression, "frameId": frame}))["change"]

        # b is a; the last change was made in fill, through its parameter
        assert made_by(await last("b")) == ("fill", line_of("xs.append(7)"), "xs.append(7)", "[0, 5]", "[0, 5, 7]")
        # an attribute changed by a method
        items = await last("box.items")
        assert made_by(items) == ("put", line_of("self.items.append(v)"), "self.items.append(v)", "[1]", "[1, 2]")
        # a dict changed by a C method called in another function
        settled = made_by(await last('config["mode"]'))
        assert settled == ("settle", line_of("settings.update"), 'settings.update(mode="fast")', "'slow'", "'fast'")

        # the history of a list changed in two callees, each change where it was made
        page = await c.call("valueHistory", {"expression": "a", "frameId": frame})
        assert [made_by(ch) for ch in page["items"]] == [
            ("<module>", line_of("a = [0]"), "a = [0]", None, "[0]"),
            ("add", line_of("ys.append(x)"), "ys.append(x)", "[0]", "[0, 5]"),
            ("fill", line_of("xs.append(7)"), "xs.append(7)", "[0, 5]", "[0, 5, 7]"),
        ]
        assert page["total"] == 3 and page["totalExact"] is True

        # travelling to the statement shows the value before it ran; to the moment, after
        await c.call("travel", {"index": items["statement"]["index"]})
        await c.wait_event("stopped")
        function, line, _values = await where(c)
        assert (function, line) == ("put", line_of("self.items.append(v)"))
        evaluated = await c.call("evaluate", {"expression": "self.items", "context": "watch"})
        assert evaluated["result"] == "[1]"
        await c.call("travel", {"index": items["moment"]["index"]})
        await c.wait_event("stopped")
        top = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"][0]["id"]
        evaluated = await c.call("evaluate", {"expression": "box.items", "frameId": top, "context": "watch"})
        assert evaluated["result"] == "[1, 2]"


async def test_a_write_data_breakpoint_run_backwards_stops_at_the_statement_in_the_callee(program):
    async with adapter() as c:
        await start(c, {"program": program}, breakpoints={program: [{"line": END}]})
        frame = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"][0]["id"]
        info = await c.call("dataBreakpointInfo", {"name": "b", "frameId": frame})
        await c.call("setDataBreakpoints", {"breakpoints": [{"dataId": info["dataId"], "accessType": "write"}]})
        await c.call("setBreakpoints", {"source": {"path": program}, "breakpoints": []})
        await c.call("reverseContinue", {"threadId": 1})
        stopped = (await c.wait_event("stopped"))["body"]
        assert stopped["reason"] == "data breakpoint"
        assert stopped["description"] == f"b: [0, 5] \u2192 [0, 5, 7] by `xs.append(7)` (fill, line {FILL})"
        function, line, values = await where(c)
        assert (function, line, values["xs"]) == ("fill", line_of("xs.append(7)"), "[0, 5]")  # before it ran
        await c.call("reverseContinue", {"threadId": 1})
        stopped = (await c.wait_event("stopped"))["body"]
        binding = f"b: (unset) \u2192 [0, 5] by `b = add(a, 5)` (<module>, line {line_of('b = add')})"
        assert stopped["description"] == binding
        assert (await where(c))[:2] == ("<module>", line_of("b = add(a, 5)"))
        # and forward again: each write once more, now seen after it ran
        await c.call("continue", {"threadId": 1})
        stopped = (await c.wait_event("stopped"))["body"]
        assert stopped["description"].startswith("b: (unset) \u2192 [0, 5] by `b = add(a, 5)`")
        await c.call("continue", {"threadId": 1})
        stopped = (await c.wait_event("stopped"))["body"]
        assert stopped["description"] == f"b: [0, 5] \u2192 [0, 5, 7] by `xs.append(7)` (fill, line {FILL})"
        # (fill's last statement made it: its return, shown at the call as a step out shows it)
        assert (await where(c))[:2] == ("<module>", line_of("fill(a)"))


def test_every_state_is_the_state_a_fresh_capture_shows(tmp_path: Path):
    """A window replayed from far before each event and a window that starts at it (every frame's
    locals captured whole there) show the same state: return and exception moments show what the
    frame's last statement did, callers what their callees changed."""
    from neural_dap.trace.program import Program
    from neural_dap.trace.recorder import record_skeleton

    path = tmp_path / "moments.py"
    path.write_text(
        PROGRAM
        + textwrap.dedent(
            """\
            def fails(xs):
                xs.append(1)
                raise ValueError(len(xs))


            try:
                fails(a)
            except ValueError:
                pass
            """
        )
    )
    recording = record_skeleton(Program(str(path)))
    try:
        whole = recording._materialise(0, 0, len(recording) - 1)
        kinds = set()
        for i in range(len(recording)):
            fresh = recording._materialise(0, i, i)
            long_state, fresh_state = whole.state(i), fresh.state(0)
            assert (long_state.locals, long_state.values) == (fresh_state.locals, fresh_state.values), i
            kinds.add(long_state.event)
        assert {"return", "exception"} <= kinds
    finally:
        recording.close()
