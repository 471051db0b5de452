"""The actions, defined once over a recording's columns (`trace.actions`): full and skeleton
recordings agree on every action from every event and on every breakpoint hit, with real paths
and several files; breakpoints are (file, line) pairs; hit numbers are facts of the run."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest

from neural_dap.core.actions import ACTION_KINDS, Action, Target
from neural_dap.core.world import LaunchSpec, Stop
from neural_dap.trace.execution import FullExecution, SkeletonExecution
from neural_dap.trace.recorder import Limits, Program, record, record_skeleton
from neural_dap.world.recorded import RecordedWorld

from .conftest import EXAMPLES

MAIN = textwrap.dedent(
    """\
    import helper


    def run():
        total = helper.work(3)
        print("total", total)
        for k in range(2):
            total += helper.twice(k)
        return total


    run()
    """
)
# helper.py's line 6 runs too: a breakpoint at main.py:6 must not stop there
HELPER = textwrap.dedent(
    """\
    def work(n):
        acc = 0
        for i in range(n):
            acc += twice(i)
        if acc > 0:
            acc += 1
        return acc


    def twice(x):
        y = x * 2
        return y
    """
)


def write_program(folder: Path) -> Program:
    (folder / "helper.py").write_text(HELPER)
    main = folder / "main.py"
    main.write_text(MAIN)
    return Program(str(main))


def both(program: Program) -> tuple[FullExecution, SkeletonExecution]:
    full = FullExecution(record(program, Limits(wall_time=10)))
    skeleton = SkeletonExecution(record_skeleton(program, Limits(wall_time=10)))
    assert len(full) == len(skeleton), program.path
    return full, skeleton


def line_points(execution: FullExecution) -> list[Target]:
    """Every (path, line) a line event of the run is at."""
    return sorted({(s.path, s.line) for s in execution.tree.states if s.event == "line"})


def oracle_hits(execution: FullExecution, start: int, end: int, targets: tuple[Target, ...]) -> list[int]:
    """Breakpoint hits by their definition, one state at a time."""
    lo, hi = (start + 1, end) if end > start else (end, start - 1)
    found = [
        k
        for k in range(lo, hi + 1)
        if (s := execution.state(k)).event == "line"
        and any(line == s.line and path in ("", s.path) for path, line in targets)
    ]
    return found if end > start else found[::-1]


def target_sets(rng: random.Random, points: list[Target], count: int) -> list[tuple[Target, ...]]:
    """Targets with real paths, with an empty path, at a line of another file, at a file the run
    never saw, and single ones."""
    paths = sorted({p for p, _ in points})
    lines = sorted({line for _, line in points})
    out: list[tuple[Target, ...]] = [((p, line),) for p, line in points]
    for _ in range(count):
        picked = rng.sample(points, k=min(2, len(points)))
        out.append(tuple(picked))
        out.append(((rng.choice(paths), rng.choice(lines)), ("", rng.choice(lines))))
        out.append((("/nowhere/else.py", rng.choice(lines)), (rng.choice(paths), rng.choice(lines))))
    return out


def compare(full: FullExecution, skeleton: SkeletonExecution, rng: random.Random, sample: int | None = None) -> int:
    """Every action from every event (or a sample), the breakpoint hits between events and the hit
    number of every event: skeleton against full, and the breakpoints against their definition."""
    points = line_points(full)
    targets = target_sets(rng, points, 4)
    indices = list(range(len(full)))
    if sample is not None and len(indices) > sample:
        indices = sorted(rng.sample(indices, sample))
    for i in indices:
        for kind in ACTION_KINDS:
            chosen = [rng.choice(targets)] if kind in ("breakpoint", "inv_breakpoint") else [()]
            for t in chosen:
                action = Action(kind, t)
                assert skeleton.apply(i, action) == full.apply(i, action), (full.recording.main_path, i, action)
        for t in rng.sample(targets, k=min(3, len(targets))):
            for j in (full.last, 0, rng.randrange(len(full))):
                expected = oracle_hits(full, i, j, t)
                assert full.hits(i, j, t) == expected, (i, j, t)
                assert skeleton.hits(i, j, t) == expected, (i, j, t)
            forward = full.apply(i, Action("breakpoint", t))
            assert forward == (oracle_hits(full, i, full.last, t) or [full.last])[0]
            backward = full.apply(i, Action("inv_breakpoint", t))
            assert backward == (oracle_hits(full, i, 0, t) or [0])[0]
    seen: dict[Target, int] = {}
    for k in range(len(full)):
        s = full.state(k)
        expected_number = None
        if s.event == "line":
            expected_number = seen[(s.path, s.line)] = seen.get((s.path, s.line), 0) + 1
        assert full.semantics.hit_number(k) == expected_number, k
        assert skeleton.semantics.hit_number(k) == expected_number, k
    return len(indices)


def test_a_breakpoint_stops_only_at_its_own_file(tmp_path):
    full, skeleton = both(write_program(tmp_path))
    main, helper = str(tmp_path / "main.py"), str(tmp_path / "helper.py")
    try:
        targets = ((main, 6), (helper, 2))
        for execution in (full, skeleton):
            stops, i = [], 0
            while True:
                i = execution.apply(i, Action("breakpoint", targets))
                if i == execution.last:
                    break
                s = execution.state(i)
                stops.append((Path(s.path).name, s.line))
            assert stops == [("helper.py", 2), ("main.py", 6)]
            back, i = [], execution.last
            while True:
                i = execution.apply(i, Action("inv_breakpoint", targets))
                if i == 0:
                    break
                s = execution.state(i)
                back.append((Path(s.path).name, s.line))
            assert back == [("main.py", 6), ("helper.py", 2)]
            # an empty path still means that line in any file
            anywhere = [Path(execution.state(k).path).name for k in execution.hits(0, execution.last, (("", 6),))]
            assert anywhere == ["helper.py", "main.py"]
    finally:
        skeleton.close()


def test_full_and_skeleton_agree_on_every_action_and_hit_in_a_program_of_several_files(tmp_path):
    full, skeleton = both(write_program(tmp_path))
    try:
        assert len({s.path for s in full.tree.states}) == 2
        assert compare(full, skeleton, random.Random(0)) == len(full)
    finally:
        skeleton.close()


def test_full_and_skeleton_agree_on_every_example():
    rng = random.Random(1)
    for path in sorted(EXAMPLES.glob("*.py")):
        if "missing" in path.name:
            continue
        full, skeleton = both(Program(str(path)))
        try:
            compare(full, skeleton, rng, sample=150)
        finally:
            skeleton.close()


# (the CRUXEval sweep of `compare` runs in test_skeleton_recording's, on the same recordings)


LOOP = "total = 0\nfor i in range(10):\n    total += i\nprint(total)\n"


@pytest.mark.parametrize("recording", ["full", "skeleton"])
def test_hit_numbers_are_facts_of_the_run(tmp_path, recording):
    path = tmp_path / "loop.py"
    path.write_text(LOOP)
    program = Program(str(path))
    if recording == "full":
        execution: FullExecution | SkeletonExecution = FullExecution(record(program, Limits(wall_time=10)))
    else:
        execution = SkeletonExecution(record_skeleton(program, Limits(wall_time=10)))
    try:
        semantics = execution.semantics
        hits = execution.hits(0, execution.last, ((str(path), 3),))
        assert len(hits) == 10
        assert [semantics.hit_number(k) for k in hits] == list(range(1, 11))
        assert [execution.state(k).locals["i"] for k in hits] == [str(n) for n in range(10)]
        assert semantics.hit_number(0) is None  # the module's call event is no line's run
        assert semantics.nth_hit((str(path), 3), 3) == hits[2]
        assert semantics.nth_hit((str(path), 3), 11) is None
        assert semantics.nth_hit(("", 3), 1) == hits[0]
        assert semantics.nth_hit(("/elsewhere.py", 3), 1) is None
    finally:
        execution.close()


@pytest.mark.parametrize("recording", ["full", "skeleton"])
async def test_a_hit_condition_means_the_same_nth_hit_forward_and_in_reverse(tmp_path, recording):
    """hitCondition "3" as the debugger core will ask it: the accept callback asks `hit_number`."""
    path = tmp_path / "loop.py"
    path.write_text(LOOP)
    world = RecordedWorld()
    first = await world.start(LaunchSpec(program=str(path), options={"recording": recording}))
    try:
        target = ((str(path), 3),)

        def third(stop: Stop) -> bool:
            return world.hit_number(stop) == 3

        stop = await world.act(Action("breakpoint", target), accept=third)
        assert (stop.state.line, stop.state.locals["i"], stop.hit_breakpoint) == (3, "2", True)
        third_index = stop.index
        assert (await world.act(Action("inv_breakpoint", ()), accept=third)).at_start  # back to the start
        again = await world.act(Action("breakpoint", target), accept=third)
        assert again.index == third_index  # the 3rd hit again, not the 6th
        end = await world.act(Action("continue"))
        assert end.at_end
        back = await world.act(Action("inv_breakpoint", target), accept=third)  # reverse: the same 3rd hit
        assert back.index == third_index and world.hit_number(back) == 3
        assert world.hit_number(first) is None
    finally:
        await world.close()
