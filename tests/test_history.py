"""The protocol-free query API (debugger/history.py) on both recordings: value histories of locals,
attributes and items over every invocation, who set a value, calls, retroactive log points, travel."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from neural_dap.core.world import LaunchSpec, WorldError
from neural_dap.debugger import asking
from neural_dap.debugger.core import Debugger
from neural_dap.world.recorded import RecordedWorld

PROGRAM = textwrap.dedent(
    """\
    class Bag:
        def __init__(self):
            self.items = []

        def add(self, x):
            self.items.append(x)


    def fill(n, bag):
        count = 0
        for i in range(n):
            bag.add(i * 10)
            count += 1
        return count


    def main():
        b = Bag()
        d = {"k": 0}
        fill(2, b)
        d["k"] = fill(3, b)
        keep = 5
        for _ in range(4):
            d["k"] += 0
        return keep


    main()
    """
)


@pytest.fixture(params=["full", "skeleton"])
async def debugger(request, tmp_path: Path):
    path = tmp_path / "bag.py"
    path.write_text(PROGRAM)
    d = Debugger(lambda launch: RecordedWorld())
    await d.start(LaunchSpec(program=str(path), options={"recording": request.param}))
    yield d
    await d.close()


def _line_of(d: Debugger, fragment: str) -> int:
    text = d.source(d.launch.program) or ""
    return next(k for k, line in enumerate(text.splitlines(), 1) if fragment in line)


async def _travel_to_line(d: Debugger, line: int, hit: int = 1) -> None:
    index = d.world.queries.nth_hit(d.launch.program, line, hit)  # type: ignore[union-attr]
    report = await asking.travel(d, index)
    assert report.reason == "goto" and report.stop.state.line == line


async def test_value_history_spans_every_invocation_of_the_function(debugger):
    d = debugger
    await _travel_to_line(d, _line_of(d, "return count"), hit=2)
    page = await asking.value_history(d, "count")
    rows = [(c.old, c.new, c.call) for c in page.items]
    assert rows == [
        (None, "0", 1),
        ("0", "1", 1),
        ("1", "2", 1),
        (None, "0", 2),
        ("0", "1", 2),
        ("1", "2", 2),
        ("2", "3", 2),
    ]
    assert page.total == 7 and page.total_exact
    assert {c.moment.function for c in page.items} == {"fill"}
    assert page.items[1].moment.line == _line_of(d, "for i in range(n)")  # dated after `count += 1`
    # paging: a slice, the same total
    second = await asking.value_history(d, "count", start=5, count=10)
    assert [c.new for c in second.items] == ["2", "3"] and second.start == 5 and second.total == 7


async def test_an_attribute_changed_by_a_callee_and_an_item(debugger):
    d = debugger
    await _travel_to_line(d, _line_of(d, "return keep"))
    items = await asking.value_history(d, "b.items")
    # read in main's frame, changed in Bag.add (called by fill): each append is a change, dated at
    # the statement that made it, in the function that ran it
    assert [c.new for c in items.items] == [
        "[]",
        "[0]",
        "[0, 10]",
        "[0, 10, 0]",
        "[0, 10, 0, 10]",
        "[0, 10, 0, 10, 20]",
    ]
    assert items.total == 6 and items.total_exact
    made = items.items[1:]
    assert {(c.statement.function, c.statement.line, c.code) for c in made} == {
        ("add", _line_of(d, "self.items.append(x)"), "self.items.append(x)")
    }
    # the new value is visible from the moment after the statement (add's return), never before it
    assert all(c.moment.index > c.statement.index and c.moment.function == "add" for c in made)
    assert items.items[0].statement.function == "main" and items.items[0].code == "b = Bag()"
    k = await asking.value_history(d, 'd["k"]')
    assert [(c.old, c.new) for c in k.items] == [(None, "0"), ("0", "3")]  # += 0 is no change
    with pytest.raises(WorldError, match="literal"):
        await asking.value_history(d, "d[b]")


async def test_last_change_is_who_set_the_value_far_back(debugger):
    d = debugger
    await _travel_to_line(d, _line_of(d, "return keep"))
    change = await asking.last_change(d, "keep")
    assert change is not None and (change.old, change.new) == (None, "5")
    assert change.moment.line == _line_of(d, "for _ in range(4)")
    k = await asking.last_change(d, 'd["k"]')
    assert k is not None and (k.old, k.new) == ("0", "3")
    assert await asking.last_change(d, "nothing_here") is None
    # before a given moment
    earlier = await asking.last_change(d, "b.items", before=k.moment.index - 1)
    # (fill(2, b) appended twice, in Bag.add: the second append is the change before that moment)
    assert earlier is not None and (earlier.old, earlier.new) == ("[0]", "[0, 10]")
    assert earlier.statement is not None and earlier.statement.function == "add"


async def test_calls_and_a_retroactive_log_point(debugger):
    d = debugger
    page = await asking.calls(d, "fill")
    assert page.total == 2
    assert [(c.arguments["n"], c.value, c.raised, c.call) for c in page.items] == [
        ("2", "2", False, 1),
        ("3", "3", False, 2),
    ]
    assert page.items[0].returned is not None and page.items[0].returned.index > page.items[0].moment.index
    adds = await asking.calls(d, "add", start=3, count=1)
    assert adds.total == 5 and [c.arguments["x"] for c in adds.items] == ["10"] and adds.items[0].call == 4
    line = _line_of(d, "bag.add(i * 10)")
    logs = await asking.logpoint(d, d.launch.program, line, "i={i} x10={i * 10}", start=1, count=2)
    assert logs.total == 5 and [(entry.hit, entry.text) for entry in logs.items] == [
        (2, "i=1 x10=10"),
        (3, "i=0 x10=0"),
    ]


async def test_other_worlds_are_refused_with_a_reason(tmp_path: Path):
    class Plain:
        name = "neural"

    d = Debugger(lambda launch: RecordedWorld())
    d.world = Plain()  # type: ignore[assignment]
    with pytest.raises(WorldError, match="cannot be asked about the whole run"):
        await asking.calls(d, "f")
