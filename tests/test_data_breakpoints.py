"""DAP data breakpoints in the recorded world, through the real adapter: continue stops at the next
change of a value (old -> new), reverseContinue at the last one; locals, attributes and items."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from .dap_helpers import adapter, start, where

PROGRAM = textwrap.dedent(
    """\
    class Bag:
        def __init__(self):
            self.items = []
            self.count = 0

        def add(self, x):
            self.items.append(x)
            self.count += 1


    def main():
        b = Bag()
        d = {"k": 1}
        x = 3
        for i in range(3):
            b.add(i)
            d["k"] += i
            x = x + 2
        return b.count


    main()
    """
)


@pytest.fixture()
def program(tmp_path: Path) -> str:
    path = tmp_path / "bag.py"
    path.write_text(PROGRAM)
    return str(path)


async def _stop_in_main(c, program: str, recording: str) -> int:
    await start(c, {"program": program, "recording": recording}, breakpoints={program: [{"line": 15}]})
    frames = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"]
    assert frames[0]["name"] == "main"
    return frames[0]["id"]


async def _watch(c, frame: int, *names: str) -> None:
    ids = []
    for name in names:
        info = await c.call("dataBreakpointInfo", {"name": name, "frameId": frame})
        assert info["dataId"] and info["accessTypes"] == ["write"] and info["canPersist"] is False, info
        ids.append({"dataId": info["dataId"], "accessType": "write"})
    answer = await c.call("setDataBreakpoints", {"breakpoints": ids})
    assert all(bp["verified"] for bp in answer["breakpoints"]), answer


async def _go(c, command: str) -> tuple[str, str | None, int]:
    await c.call(command, {"threadId": 1})
    stopped = (await c.wait_event("stopped"))["body"]
    return stopped["reason"], stopped.get("description"), (await where(c))[1]


@pytest.mark.parametrize("recording", ["full", "skeleton"])
async def test_continue_stops_at_each_write_and_reverse_continue_at_the_last(program, recording):
    async with adapter() as c:
        frame = await _stop_in_main(c, program, recording)
        await c.call("setBreakpoints", {"source": {"path": program}, "breakpoints": []})
        await _watch(c, frame, "x")
        by = " by `x = x + 2` (main, line 18)"
        # forward: stopped right after the write (the next line), told which statement wrote it
        assert await _go(c, "continue") == ("data breakpoint", "x: 3 \u2192 5" + by, 15)
        console = [e["body"] for e in c.events_named("output") if "\u2192" in e["body"]["output"]]
        assert console == [{"category": "console", "output": "x: 3 \u2192 5" + by + "\n"}]
        assert await _go(c, "continue") == ("data breakpoint", "x: 5 \u2192 7" + by, 15)
        assert await _go(c, "continue") == ("data breakpoint", "x: 7 \u2192 9" + by, 15)
        # backward: stopped at the statement that wrote it, before it ran (as gdb's reverse watch)
        assert await _go(c, "reverseContinue") == ("data breakpoint", "x: 7 \u2192 9" + by, 18)
        assert (await where(c))[2]["x"] == "7"
        assert await _go(c, "reverseContinue") == ("data breakpoint", "x: 5 \u2192 7" + by, 18)
        assert await _go(c, "reverseContinue") == ("data breakpoint", "x: 3 \u2192 5" + by, 18)
        # before the first write seen from here: the binding itself
        assert await _go(c, "reverseContinue") == (
            "data breakpoint",
            "x: (unset) \u2192 3 by `x = 3` (main, line 14)",
            14,
        )


@pytest.mark.parametrize("recording", ["full", "skeleton"])
async def test_an_attribute_and_an_item_changed_by_a_callee_and_in_place(program, recording):
    async with adapter() as c:
        frame = await _stop_in_main(c, program, recording)
        await c.call("setBreakpoints", {"source": {"path": program}, "breakpoints": []})
        await _watch(c, frame, "b.count", 'd["k"]')
        # the attribute is changed by the method: the stop is where that is done (add returning to
        # main's line 16), the description names the method's statement
        by_add = " by `self.count += 1` (add, line 8)"
        assert await _go(c, "continue") == ("data breakpoint", "b.count: 0 \u2192 1" + by_add, 16)
        assert (await where(c))[0] == "main"  # (a return is shown at its call, as debugpy's step out)
        # i == 0: d["k"] += 0 writes the same value, not a change
        assert await _go(c, "continue") == ("data breakpoint", "b.count: 1 \u2192 2" + by_add, 16)
        by_main = ' by `d["k"] += i` (main, line 17)'
        assert await _go(c, "continue") == ("data breakpoint", 'd["k"]: 1 \u2192 2' + by_main, 18)
        # back: first the write just made (its statement, before it ran), then the one in add
        assert await _go(c, "reverseContinue") == ("data breakpoint", 'd["k"]: 1 \u2192 2' + by_main, 17)
        assert await _go(c, "reverseContinue") == ("data breakpoint", "b.count: 1 \u2192 2" + by_add, 8)
        assert (await where(c))[2]["self"].startswith("<")


async def test_read_access_is_refused_and_a_line_breakpoint_that_comes_first_wins(program):
    async with adapter() as c:
        frame = await _stop_in_main(c, program, "skeleton")
        info = await c.call("dataBreakpointInfo", {"name": "x", "frameId": frame})
        answer = await c.call(
            "setDataBreakpoints",
            {"breakpoints": [{"dataId": info["dataId"], "accessType": "read"}, {"dataId": "garbage"}]},
        )
        assert [bp["verified"] for bp in answer["breakpoints"]] == [False, False]
        assert "only writes" in answer["breakpoints"][0]["message"]
        await c.call("setDataBreakpoints", {"breakpoints": [{"dataId": info["dataId"]}]})
        await c.call("setBreakpoints", {"source": {"path": program}, "breakpoints": [{"line": 17}]})
        assert (await _go(c, "continue"))[0] == "breakpoint"  # line 17 runs before x is written
        assert await _go(c, "continue") == ("data breakpoint", "x: 3 \u2192 5 by `x = x + 2` (main, line 18)", 15)


async def test_a_world_without_a_recording_gives_no_data_id(program):
    async with adapter() as c:
        caps = await c.call("initialize", {"adapterID": "t", "linesStartAt1": True, "columnsStartAt1": True})
        assert caps["supportsDataBreakpoints"] is True
        await c.wait_event("initialized")
        await c.call("launch", {"program": program, "world": "neural", "stopOnEntry": True, "model": "embedded"})
        await c.call("configurationDone")
        await c.wait_event("stopped", timeout=300)
        frames = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"]
        info = await c.call("dataBreakpointInfo", {"name": "x", "frameId": frames[0]["id"]})
        assert info["dataId"] is None and "recording" in info["description"]
