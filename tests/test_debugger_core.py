"""The debugger core on its own, without a socket or any protocol: a recorded world underneath,
breakpoints, hit counts and why each stop is made."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from neural_dap.core.world import LaunchSpec
from neural_dap.debugger.core import Busy, Debugger
from neural_dap.world.factory import create_world

LOOP = textwrap.dedent(
    """\
    total = 0
    for i in range(10):
        total += i
    print("total", total)
    """
)


@dataclass(frozen=True)
class Line:
    line: int
    condition: str | None = None
    hit_condition: str | None = None
    log_message: str | None = None


async def _debugger(path: Path, recording: str = "auto", **launch) -> Debugger:
    debugger = Debugger(create_world)
    await debugger.start(LaunchSpec(program=str(path), options={"recording": recording}, **launch))
    return debugger


@pytest.mark.parametrize("recording", ["full", "skeleton"])
async def test_a_hit_condition_means_the_nth_hit_of_the_run_whatever_the_travel(tmp_path: Path, recording) -> None:
    program = tmp_path / "loop.py"
    program.write_text(LOOP)
    debugger = await _debugger(program, recording)
    try:
        debugger.breakpoints.set_lines(str(program), [Line(3, hit_condition="3")], LOOP)
        first = await debugger.first_stop()
        assert (first.reason, first.stop.state.line, first.stop.state.locals["i"]) == ("breakpoint", 3, "2")
        back = await debugger.execute("reverseContinue")
        assert back.reason == "entry" and back.stop.at_start
        again = await debugger.execute("continue")
        assert (again.reason, again.stop.state.locals["i"]) == ("breakpoint", "2")  # the 3rd hit, again
        past = await debugger.execute("continue")
        assert past.reason == "end"
        reverse = await debugger.execute("reverseContinue")
        assert (reverse.reason, reverse.stop.state.locals["i"]) == ("breakpoint", "2")  # and backwards too
    finally:
        await debugger.close()


def test_the_next_hit_a_hit_condition_can_stop_at_is_the_first_it_is_met_at() -> None:
    """What a run skips to (`next_hit_met`) agrees with the rule itself (`hit_condition_met`), hit
    by hit, for every form VS Code offers; None where it is never met again."""
    from neural_dap.debugger.breakpoints import hit_condition_met, next_hit_met

    for condition in (None, "", "7", "==7", ">=7", ">7", "<=7", "<7", "%7", "%1", "%0", "==0", "<1", "junk"):
        for after in range(30):
            met = [n for n in range(after + 1, 60) if hit_condition_met(condition, n)]
            assert next_hit_met(condition, after) == (met[0] if met else None), (condition, after)
    # a count of 5000 digits from a client is unreadable (never hides a stop), not an error
    assert hit_condition_met(">" + "9" * 5000, 3) is True and next_hit_met(">" + "9" * 5000, 3) == 4


@pytest.mark.parametrize("recording", ["full", "skeleton"])
async def test_a_breakpoint_stops_only_at_its_own_file_and_line(tmp_path: Path, recording) -> None:
    (tmp_path / "helper.py").write_text(
        "def work():\n    a = 1\n    b = 2\n    c = 3\n    d = 4\n    return a + b + c + d\n"
    )
    main = tmp_path / "main.py"
    main.write_text("import helper\n\n\ndef run():\n    x = helper.work()\n    y = x + 1\n    return y\n\n\nrun()\n")
    debugger = await _debugger(main, recording)
    try:
        debugger.breakpoints.set_lines(str(main), [Line(6)], main.read_text())
        debugger.breakpoints.set_lines(str(tmp_path / "helper.py"), [Line(2)], (tmp_path / "helper.py").read_text())
        stops = [await debugger.first_stop()]
        while stops[-1].reason != "end":
            stops.append(await debugger.execute("continue"))
        where = [(Path(r.stop.state.path).name, r.stop.state.line, r.reason) for r in stops]
        assert where[:2] == [("helper.py", 2, "breakpoint"), ("main.py", 6, "breakpoint")]
        assert where[2][2] == "end"
    finally:
        await debugger.close()


async def test_log_points_and_program_output_come_with_the_report_in_order(tmp_path: Path) -> None:
    program = tmp_path / "loop.py"
    program.write_text(LOOP)
    debugger = await _debugger(program)
    try:
        debugger.breakpoints.set_lines(str(program), [Line(3, log_message="i={i}")], LOOP)
        debugger.stop_at_end = False
        report = await debugger.first_stop()
        assert report.finished
        texts = [text for _category, text in report.output]
        assert texts[:10] == [f"i={i}\n" for i in range(10)]
        assert ("stdout", "total 45\n") in report.output
    finally:
        await debugger.close()


async def test_one_execution_at_a_time(tmp_path: Path) -> None:
    program = tmp_path / "loop.py"
    program.write_text(LOOP)
    debugger = await _debugger(program)
    try:
        async with debugger._lock:  # as if a request were running
            with pytest.raises(Busy):
                await debugger.execute("next")
        report = await debugger.execute("next")
        assert report.reason == "step"
    finally:
        await debugger.close()


OBJECTS = textwrap.dedent(
    """\
    class Box:
        def __init__(self, n):
            self.n = n


    total = 0
    for i in range(4):
        box = Box(i)
        total += box.n
    print(total)
    """
)


@pytest.mark.parametrize("recording", ["full", "skeleton"])
async def test_a_condition_on_an_object_decides_on_it_or_never_stops(tmp_path: Path, recording) -> None:
    """A skeleton recording asks the program at the hit (its real object); a full one keeps only the
    object's text, so the condition cannot be decided there: it never stops the program (said once),
    while one on a plain local is decided on the recorded value in both."""
    program = tmp_path / "boxes.py"
    program.write_text(OBJECTS)
    debugger = await _debugger(program, recording)
    try:
        debugger.breakpoints.set_lines(
            str(program), [Line(9, condition="box.n == 2"), Line(10, condition="total == 6")], OBJECTS
        )
        first = await debugger.first_stop()
        said = [text for _category, text in first.output if "cannot be evaluated" in text]
        if recording == "skeleton":
            assert (first.reason, first.stop.state.line, first.stop.state.locals["i"]) == ("breakpoint", 9, "2")
            assert not said
            first = await debugger.execute("continue")
        else:
            assert len(said) == 1 and "box.n == 2" in said[0]
        assert (first.reason, first.stop.state.line, first.stop.state.locals["total"]) == ("breakpoint", 10, "6")
    finally:
        await debugger.close()
