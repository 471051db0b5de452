"""Evaluate in a live copy of the program at the stop, through the real adapter: real objects, so
calls, methods, attributes, numpy indexing, module globals, f-strings and lambdas work as in
debugpy, while nothing an expression changes reaches the recording or the next expression."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.dap_helpers import adapter, start

PROGRAM = textwrap.dedent(
    """\
    import numpy as np

    SCALE = 10


    class Shape:
        def __init__(self, w):
            self._w = w

        def area(self):
            return self._w * self._w


    def work(rows):
        shape = Shape(3)
        grid = np.arange(12).reshape(3, 4)
        total = sum(rows)
        return total * SCALE + shape.area() + int(grid[1, 2])


    print(work(list(range(100))))
    """
)
STOP_LINE = 18


async def _evaluate_all(tmp_path: Path, expressions: list[str], **launch) -> dict[str, str]:
    program = tmp_path / "shapes.py"
    program.write_text(PROGRAM)
    answers = {}
    async with adapter() as client:
        await start(client, {"program": str(program), **launch}, breakpoints={str(program): [{"line": STOP_LINE}]})
        frames = (await client.call("stackTrace", {"threadId": 1}))["stackFrames"]
        assert frames[0]["line"] == STOP_LINE
        for expression in expressions:
            reply = await client.request(
                "evaluate", {"expression": expression, "frameId": frames[0]["id"], "context": "watch"}
            )
            answers[expression] = reply["body"]["result"] if reply["success"] else "ERROR " + reply["message"]
    return answers


async def test_expressions_run_on_real_objects_at_the_stop(tmp_path: Path) -> None:
    answers = await _evaluate_all(
        tmp_path,
        [
            "shape.area()",
            "shape._w",
            "len(rows)",
            "rows[73]",
            "grid[1, 2]",
            "grid.shape",
            "SCALE",
            "f'{total:>8}'",
            "(lambda x: x + 1)(2)",
            "isinstance(shape, Shape)",
            "shape.foo",
        ],
    )
    assert answers["shape.area()"] == "9"
    assert answers["shape._w"] == "3"
    assert answers["len(rows)"] == "100"
    assert answers["rows[73]"] == "73"  # past the 50 items a recorded value keeps
    assert answers["grid[1, 2]"] in ("6", "np.int64(6)")
    assert answers["grid.shape"] == "(3, 4)"
    assert answers["SCALE"] == "10"  # a module global, from inside a function
    assert answers["f'{total:>8}'"] == "'    4950'"
    assert answers["(lambda x: x + 1)(2)"] == "3"
    assert answers["isinstance(shape, Shape)"] == "True"
    assert answers["shape.foo"] == "ERROR AttributeError: 'Shape' object has no attribute 'foo'"


async def test_a_value_whose_repr_raises_shows_as_debugpy_shows_it(tmp_path: Path) -> None:
    answers = await _evaluate_all(tmp_path, ["type('Broken', (), {'__repr__': lambda self: 1 / 0})()"])
    assert answers["type('Broken', (), {'__repr__': lambda self: 1 / 0})()"].startswith("<__main__.Broken object at 0x")


async def test_what_an_expression_changes_is_thrown_away(tmp_path: Path) -> None:
    answers = await _evaluate_all(tmp_path, ["rows.append(-1) or len(rows)", "len(rows)", "rows.clear()", "sum(rows)"])
    assert answers["rows.append(-1) or len(rows)"] == "101"
    assert answers["len(rows)"] == "100"
    assert answers["sum(rows)"] == "4950"


@pytest.mark.slow
async def test_an_expression_that_hangs_or_grows_without_bound_is_stopped(tmp_path: Path) -> None:
    answers = await _evaluate_all(tmp_path, ["__import__('time').sleep(30)", "'x' * 10**11", "shape.area()"])
    assert "limit" in answers["__import__('time').sleep(30)"]
    assert answers["'x' * 10**11"].startswith("ERROR MemoryError")
    assert answers["shape.area()"] == "9"  # the live stop is still there


async def test_a_full_recording_keeps_values_and_answers_with_the_safe_evaluator(tmp_path: Path) -> None:
    answers = await _evaluate_all(tmp_path, ["len(rows)", "shape.area()"], recording="full")
    assert answers["len(rows)"] == "100"
    assert answers["shape.area()"].startswith("ERROR")  # no program to call it in


@pytest.mark.parametrize("threads", ["full", "skeletons"])
async def test_where_threads_ran_an_expression_the_values_cannot_answer_says_why(tmp_path: Path, threads: str) -> None:
    """A threaded run recorded to its end (`"live": false`) with every thread in full (`"threads":
    "full"`) has no program at its stops (a copy would hold one thread): a module, a call or
    `locals()` cannot be answered there, and the error says so: the module is shown (as debugpy
    shows it among the module's globals), but only as its text. With every thread as skeletons (the
    default of a live session; said here, where the run is recorded to its end first) a replay of
    the threads to the stop leaves a copy of the worker there, which answers with its real objects.
    (Where a live program is held at a stop, a copy of it made there answers:
    tests/test_live_sessions.py.)"""
    program = tmp_path / "worker.py"
    program.write_text(
        textwrap.dedent(
            """\
            import threading

            counter = {"value": 0}


            def bump(step):
                counter["value"] += step
                return counter["value"]


            worker = threading.Thread(target=bump, args=(2,))
            worker.start()
            worker.join()
            """
        )
    )
    answers = {}
    async with adapter() as client:
        launch = {"program": str(program), "live": False, "threads": threads}
        stopped = await start(client, launch, breakpoints={str(program): [{"line": 8}]})
        thread = stopped["body"]["threadId"]
        frames = (await client.call("stackTrace", {"threadId": thread}))["stackFrames"]
        for expression in ("step + 1", "threading.current_thread().name", "sorted(locals())"):
            reply = await client.request("evaluate", {"expression": expression, "frameId": frames[0]["id"]})
            answers[expression] = reply["body"]["result"] if reply["success"] else "ERROR " + reply["message"]
    assert answers["step + 1"] == "3"
    if threads == "skeletons":
        assert answers["threading.current_thread().name"] == "'Thread-1 (bump)'"
        assert answers["sorted(locals())"] == "['step']"
        return
    why = "only the values recorded at this stop are known (the program ran more than one thread"
    assert "<module 'threading' from" in answers["threading.current_thread().name"]
    assert "is only known as text" in answers["threading.current_thread().name"]
    assert why in answers["threading.current_thread().name"] and why in answers["sorted(locals())"]


def _processes_in(folder: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(entry, "cwd").resolve() == folder.resolve():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.mark.skipif(not Path("/proc/self/cwd").exists(), reason="reads /proc")
async def test_no_live_copy_outlives_the_session(tmp_path: Path) -> None:
    import anyio

    answers = await _evaluate_all(tmp_path, ["shape.area()"], cwd=str(tmp_path))
    assert answers["shape.area()"] == "9"
    with anyio.fail_after(10):
        while _processes_in(tmp_path):
            await anyio.sleep(0.1)


async def test_a_hover_reads_values_and_never_calls(tmp_path: Path) -> None:
    program = tmp_path / "shapes.py"
    program.write_text(PROGRAM)
    async with adapter() as client:
        await start(client, {"program": str(program)}, breakpoints={str(program): [{"line": STOP_LINE}]})
        frame = (await client.call("stackTrace", {"threadId": 1}))["stackFrames"][0]["id"]

        async def hover(expression: str) -> dict:
            return await client.request("evaluate", {"expression": expression, "frameId": frame, "context": "hover"})

        assert (await hover("shape._w"))["body"]["result"] == "3"  # the live object's attribute
        assert (await hover("rows[73]"))["body"]["result"] == "73"
        called = await hover("shape.area()")
        # no call from a hover: the recorded values have no methods to run
        assert not called["success"] and "'area' is not among the recorded attributes" in called["message"]
