"""The `userUnhandled` exception filter ("User Uncaught Exceptions", as debugpy has it), through the
real adapter over stdio: it stops where an exception leaves the user's code into code that is not
the user's (a failing assertion caught by pytest), and nowhere the user's own code catches it."""

from __future__ import annotations

import textwrap
from pathlib import Path

from neural_dap.core.state import Frame, State
from neural_dap.core.world import Stop
from neural_dap.dap.session import exception_info
from neural_dap.debugger.launch import LaunchRequest, build_launch
from neural_dap.trace.execution import FullExecution, SkeletonExecution
from neural_dap.trace.recorder import Limits, Program, record, record_skeleton
from tests.dap_helpers import adapter, start, where

FAILING_TEST = textwrap.dedent(
    """\
    def double(v):
        return v * 2


    def test_ok():
        assert double(2) == 4


    def test_bad():
        x = double(3)
        assert x == 7


    def test_after():
        y = 1
        assert y == 1
    """
)

LAST_TEST_FAILS = textwrap.dedent(
    """\
    def test_ok():
        assert 1 + 1 == 2


    def test_last():
        z = 40 + 2
        assert z == 41
    """
)

CATCHES_ITS_OWN = textwrap.dedent(
    """\
    def parse(text):
        return int(text)


    def safe(text):
        try:
            return parse(text)
        except ValueError:
            return None


    result = safe("nope")
    try:
        raise KeyError("k")
    except KeyError:
        pass
    print(result)
    """
)


def _pytest(tmp_path: Path, name: str) -> dict:
    return {"module": "pytest", "args": ["-q", "-p", "no:cacheprovider", name], "cwd": str(tmp_path)}


async def test_user_unhandled_stops_at_the_failing_assert_of_a_pytest_test(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(FAILING_TEST)
    async with adapter() as client:
        stop = await start(client, _pytest(tmp_path, "test_x.py"), exception_filters=["userUnhandled"])
        caps = next(r for r in client.responses if r.get("command") == "initialize")["body"]
        offered = {f["filter"]: f for f in caps["exceptionBreakpointFilters"]}
        assert offered["userUnhandled"]["label"] == "User Uncaught Exceptions"
        assert offered["userUnhandled"]["default"] is False
        assert stop["body"]["reason"] == "exception"
        assert "AssertionError" in stop["body"]["text"]
        name, line, local = await where(client)
        assert (name, line, local["x"]) == ("test_bad", 11, "6")
        info = await client.call("exceptionInfo", {"threadId": 1})
        assert info["breakMode"] == "userUnhandled"
        assert info["exceptionId"] == "AssertionError"
        # the next test runs on, and no other exception leaves the user's code
        await client.call("continue", {"threadId": 1})
        end = await client.wait_event("stopped")
        assert end["body"]["reason"] == "end"


async def test_without_the_filter_a_failing_test_does_not_stop(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(FAILING_TEST)
    async with adapter() as client:
        stop = await start(client, _pytest(tmp_path, "test_x.py"), exception_filters=["uncaught"])
        assert stop["body"]["reason"] == "end"
        assert "exit code 1" in stop["body"]["description"]


async def test_the_last_test_failing_is_user_unhandled_not_the_end_of_the_program(tmp_path: Path) -> None:
    """The recording's last event is the failing test's exception exit, but pytest caught it and
    exited with its own code: `uncaught` does not stop there, `userUnhandled` does."""
    (tmp_path / "test_last.py").write_text(LAST_TEST_FAILS)
    async with adapter() as client:
        stop = await start(client, _pytest(tmp_path, "test_last.py"), exception_filters=["uncaught"])
        assert stop["body"]["reason"] == "end"
    async with adapter() as client:
        stop = await start(client, _pytest(tmp_path, "test_last.py"), exception_filters=["userUnhandled"])
        assert stop["body"]["reason"] == "exception"
        assert (await where(client))[:2] == ("test_last", 7)
        info = await client.call("exceptionInfo", {"threadId": 1})
        assert info["breakMode"] == "userUnhandled"


async def test_an_exception_the_script_catches_itself_does_not_stop(tmp_path: Path) -> None:
    script = tmp_path / "catches.py"
    script.write_text(CATCHES_ITS_OWN)
    async with adapter() as client:
        stop = await start(client, {"program": str(script)}, exception_filters=["userUnhandled"])
        assert stop["body"]["reason"] == "end"
        assert "exit code 0" in stop["body"]["description"]


async def test_the_exception_that_ends_a_script_is_uncaught_not_user_unhandled(tmp_path: Path) -> None:
    script = tmp_path / "crash.py"
    script.write_text("def f():\n    raise ValueError('boom')\n\n\nf()\n")
    async with adapter() as client:
        stop = await start(client, {"program": str(script)}, exception_filters=["userUnhandled"])
        assert stop["body"]["reason"] == "end"
    async with adapter() as client:
        stop = await start(client, {"program": str(script)}, exception_filters=["uncaught", "userUnhandled"])
        assert stop["body"]["reason"] == "exception"
        assert (await where(client))[:2] == ("f", 2)
        info = await client.call("exceptionInfo", {"threadId": 1})
        assert info["breakMode"] == "unhandled"


async def test_continuing_from_the_last_tests_failure_stops_at_the_end_so_it_can_be_stepped_back(
    tmp_path: Path,
) -> None:
    """The failure is the recording's last event: continuing from it still gives the end stop once
    (stopAtEnd), from which reverse-continue goes back to the failure, and only then does it end."""
    (tmp_path / "test_last.py").write_text(LAST_TEST_FAILS)
    async with adapter() as client:
        stop = await start(client, _pytest(tmp_path, "test_last.py"), exception_filters=["userUnhandled"])
        assert stop["body"]["reason"] == "exception"
        await client.call("continue", {"threadId": 1})
        end = await client.wait_event({"stopped", "terminated"})
        assert end["event"] == "stopped" and end["body"]["reason"] == "end"
        await client.call("stepBack", {"threadId": 1})
        back = await client.wait_event("stopped")
        assert (await where(client))[:2] == ("test_last", 7) and back["body"]["reason"] == "step"
        await client.call("continue", {"threadId": 1})
        assert (await client.wait_event({"stopped", "terminated"}))["body"]["reason"] == "exception"
        await client.call("continue", {"threadId": 1})
        assert (await client.wait_event({"stopped", "terminated"}))["body"]["reason"] == "end"
        await client.call("continue", {"threadId": 1})
        assert (await client.wait_event({"stopped", "terminated"}))["event"] == "terminated"


async def test_reverse_continue_stops_at_the_exceptions_the_filters_stop_at(tmp_path: Path) -> None:
    """Backwards as forwards: from the end of a script that raised, reverse-continue stops where the
    uncaught exception was raised; with `raised`, at each exception before that (where it was
    caught, where it left a function)."""
    script = tmp_path / "crash.py"
    script.write_text(
        "def parse(t):\n    return int(t)\n\n\ntry:\n    parse('x')\nexcept ValueError:\n    pass\n\n\n"
        "def f():\n    raise KeyError('boom')\n\n\nf()\n"
    )
    async with adapter() as client:
        stop = await start(client, {"program": str(script)}, exception_filters=[])
        assert stop["body"]["reason"] == "end"
        await client.call("setExceptionBreakpoints", {"filters": ["uncaught"]})
        await client.call("reverseContinue", {"threadId": 1})
        back = await client.wait_event("stopped")
        assert back["body"]["reason"] == "exception" and (await where(client))[:2] == ("f", 12)
        await client.call("setExceptionBreakpoints", {"filters": ["raised"]})
        await client.call("reverseContinue", {"threadId": 1})
        back = await client.wait_event("stopped")
        # where the ValueError was caught, then where it left parse (each a `raised` stop)
        assert back["body"]["reason"] == "exception" and "ValueError" in back["body"]["text"]
        assert (await where(client))[0] == "<module>"
        await client.call("reverseContinue", {"threadId": 1})
        back = await client.wait_event("stopped")
        assert back["body"]["reason"] == "exception" and (await where(client))[0] == "parse"


async def test_a_custom_step_tells_the_client_the_program_ran(tmp_path: Path) -> None:
    """stepBackInto, stepBackOut and travel are not DAP's own: a `continued` event before their stop
    lets a client (VS Code) drop the old stop's reason, as it does for its own steps."""
    script = tmp_path / "calls.py"
    script.write_text("def f(v):\n    w = v + 1\n    return w\n\n\nx = f(1)\ny = x\n")
    async with adapter() as client:
        await start(client, {"program": str(script), "stopOnEntry": True})
        for _ in range(3):
            await client.call("next", {"threadId": 1})
            await client.wait_event("stopped")
        seen = len(client.events_named("continued"))
        await client.call("stepBackInto", {"threadId": 1})
        await client.wait_event("stopped")
        assert len(client.events_named("continued")) == seen + 1
        await client.call("next", {"threadId": 1})
        await client.wait_event("stopped")
        assert len(client.events_named("continued")) == seen + 1  # DAP's own steps: the client knows


def test_exception_info_break_modes() -> None:
    def stop(depth: int, at_end: bool = False) -> Stop:
        state = State("exception", 3, "", "t", depth, depth, value="AssertionError('no')")
        frames = tuple(Frame("t", 3, "", k, "/x.py", {}, {}) for k in range(depth + 1))
        return Stop(state=state, stack=frames, at_end=at_end, hit_exception=True)

    assert exception_info(stop(0), frozenset({"userUnhandled"}))["breakMode"] == "userUnhandled"
    assert exception_info(stop(0), frozenset({"raised", "userUnhandled"}))["breakMode"] == "userUnhandled"
    assert exception_info(stop(1), frozenset({"raised", "userUnhandled"}))["breakMode"] == "always"
    assert exception_info(stop(0, at_end=True), frozenset({"userUnhandled"}))["breakMode"] == "unhandled"


def _program(launch: dict) -> Program:
    spec = build_launch(
        LaunchRequest(
            program=launch.get("program"),
            module=launch.get("module"),
            args=tuple(launch.get("args", ())),
            cwd=launch.get("cwd"),
            env={},
            env_file=None,
            entry=None,
            world="recorded",
            python=None,
            python_args=(),
            options={},
        )
    ).spec
    return Program(
        path=spec.program, source=spec.source, argv=spec.args, cwd=spec.cwd, env=spec.env, module=spec.module
    )


def test_full_and_skeleton_recordings_agree_on_every_filter(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(FAILING_TEST)
    (tmp_path / "test_last.py").write_text(LAST_TEST_FAILS)
    (tmp_path / "catches.py").write_text(CATCHES_ITS_OWN)
    (tmp_path / "crash.py").write_text("def f():\n    raise ValueError('boom')\n\n\nf()\n")
    launches = [
        _pytest(tmp_path, "test_x.py"),
        _pytest(tmp_path, "test_last.py"),
        {"program": str(tmp_path / "catches.py"), "cwd": str(tmp_path)},
        {"program": str(tmp_path / "crash.py"), "cwd": str(tmp_path)},
    ]
    found = []
    for launch in launches:
        program = _program(launch)
        full = FullExecution(record(program, Limits(wall_time=30)))
        skeleton = SkeletonExecution(record_skeleton(program, Limits(wall_time=30)))
        try:
            assert full.user_unhandled == skeleton.user_unhandled
            assert full.uncaught == skeleton.uncaught
            for kind in ("raised", "uncaught", "userUnhandled"):
                assert full.first_exception(0, full.last, frozenset({kind})) == skeleton.first_exception(
                    0, skeleton.last, frozenset({kind})
                )
            found.append(
                [(full.state(k).function, full.state(k).line) for k in full.user_unhandled] + [len(full.uncaught)]
            )
        finally:
            skeleton.close()
    assert found == [[("test_bad", 11), 0], [("test_last", 7), 0], [0], [1]]
