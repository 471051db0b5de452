"""Queries over a whole recording (`RecordedWorld.queries`): where a line ran, when a function was
called, where a local changed; the same answers from full and skeleton recordings."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from neural_dap.core.world import LaunchSpec
from neural_dap.trace.execution import FullExecution, SkeletonExecution
from neural_dap.trace.queries import MAX_MATERIALISED_SPAN, QueryError, RecordingQueries
from neural_dap.trace.recorder import Limits, Program, record, record_skeleton
from neural_dap.world.recorded import RecordedWorld

from .conftest import EXAMPLES

PROGRAM = textwrap.dedent(
    """\
    def grow(items, n):
        for k in range(n):
            items.append(k)
        return len(items)


    def main():
        items = []
        count = 0
        for round in range(3):
            count = grow(items, round)
            count = count
        del count
        return items


    main()
    """
)


@pytest.fixture(params=["full", "skeleton"])
def recorded(request, tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    program = Program(str(path))
    if request.param == "full":
        execution: FullExecution | SkeletonExecution = FullExecution(record(program, Limits(wall_time=10)))
    else:
        execution = SkeletonExecution(record_skeleton(program, Limits(wall_time=10)))
    yield str(path), execution, RecordingQueries(execution)
    execution.close()


def test_hits_are_the_line_events_of_that_file_and_line(recorded):
    path, execution, queries = recorded
    hits = queries.hits(path, 3)
    assert len(hits) == 0 + 1 + 2
    assert all((execution.state(int(k)).line, execution.state(int(k)).path) == (3, path) for k in hits)
    assert np.array_equal(queries.hits("", 3), hits)
    assert len(queries.hits("/another/file.py", 3)) == 0
    assert [queries.hit_number(int(k)) for k in hits] == [1, 2, 3]
    assert queries.nth_hit(path, 3, 2) == int(hits[1]) and queries.nth_hit(path, 3, 4) is None
    with pytest.raises(ValueError):
        hits[0] = 0  # shared with the actions: read-only


def test_calls_are_each_invocations_call_and_end(recorded):
    path, execution, queries = recorded
    calls = queries.calls("grow")
    assert len(calls) == 3
    for call, end in calls:
        assert end is not None
        assert (execution.state(call).event, execution.state(call).function) == ("call", "grow")
        assert (execution.state(end).event, execution.state(end).invocation) == (
            "return",
            execution.state(call).invocation,
        )
    assert [execution.state(end).value for _, end in calls] == ["0", "1", "3"]
    assert queries.calls("grow", path) == calls and queries.calls("grow", "/elsewhere.py") == []
    assert queries.calls("nothing") == []
    ((module_call, module_end),) = queries.calls("<module>")
    assert (module_call, module_end) == (0, execution.last)


def test_changes_are_where_a_local_takes_another_value(recorded):
    _path, execution, queries = recorded
    (main_call, _) = queries.calls("main")[0]
    main_inv = execution.state(main_call).invocation
    changed = queries.changes("items", main_inv)
    shown = [execution.state(k).locals.get("items") for k in changed]
    assert shown == ["[]", "[0]", "[0, 0, 1]"]  # bound, then grown by the callee (seen back in main)
    count = queries.changes("count", main_inv)
    # `count = count` changes nothing, nor does round 0's grow returning 0, the value count had
    assert [execution.state(k).locals.get("count") for k in count] == ["0", "1", "3", None]  # None: deleted
    # a callee's local, every invocation of it: k in each call of grow
    ks = queries.changes("k")
    assert [execution.state(k).locals["k"] for k in ks] == ["0", "0", "1"]
    # a range: only the changes within it
    middle = queries.changes("k", start=ks[1], end=ks[2])
    assert middle == ks[1:]
    with pytest.raises(QueryError):
        queries.changes("k", start=5, end=execution.last + 1)


def test_both_recordings_answer_the_same():
    for source in sorted(EXAMPLES.glob("*.py")):
        if "missing" in source.name:
            continue
        program = Program(str(source))
        full = FullExecution(record(program, Limits(wall_time=10)))
        skeleton = SkeletonExecution(record_skeleton(program, Limits(wall_time=10)))
        try:
            a, b = RecordingQueries(full), RecordingQueries(skeleton)
            names = sorted({name for s in full.tree.states for name in s.locals})[:6]
            functions = sorted({s.function for s in full.tree.states})
            points = sorted({(s.path, s.line) for s in full.tree.states if s.event == "line"})
            for path, line in points:
                assert np.array_equal(a.hits(path, line), b.hits(path, line)), (source, line)
            for function in functions:
                assert a.calls(function) == b.calls(function), (source, function)
            for name in names:
                assert a.changes(name) == b.changes(name), (source, name)
        finally:
            skeleton.close()


def test_a_skeleton_refuses_a_range_too_long_to_rebuild(tmp_path):
    path = tmp_path / "long.py"
    path.write_text("total = 0\nfor i in range(150_000):\n    total += i\n")
    skeleton = SkeletonExecution(record_skeleton(Program(str(path)), Limits(max_events=1_000_000, wall_time=30)))
    try:
        queries = RecordingQueries(skeleton)
        assert len(skeleton) > MAX_MATERIALISED_SPAN
        with pytest.raises(QueryError, match="at most"):
            queries.changes("total")
        assert len(queries.changes("total", start=skeleton.last - 100)) > 40  # a range near a stop is fine
        assert len(queries.hits(str(path), 3)) == 150_000  # lines and calls need no states
    finally:
        skeleton.close()


async def test_the_recorded_world_offers_the_queries(tmp_path):
    path = Path(tmp_path / "prog.py")
    path.write_text(PROGRAM)
    world = RecordedWorld()
    await world.start(LaunchSpec(program=str(path), options={"recording": "full"}))
    try:
        assert len(world.queries.calls("grow")) == 3
        assert world.queries is world.queries
    finally:
        await world.close()
