"""Launches the way debugpy users write them, through the real adapter over stdio: a module
(`pytest`), an envFile, keys this server does not honour, sys.exit(0), exceptionInfo, and the
program's output when the session ends without a stop at the end."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from tests.conftest import FAILING_PYTEST_SUITE
from tests.dap_helpers import adapter, start, where


async def _launch_and_end(client, launch: dict, filters: list[str] | None = None) -> list[dict]:
    """Launch with no stop wanted and collect every event up to `terminated`."""
    await client.call("initialize", {"adapterID": "tests", "linesStartAt1": True})
    await client.wait_event("initialized")
    seq = await client.send_request("launch", launch)
    if filters is not None:
        await client.call("setExceptionBreakpoints", {"filters": filters})
    await client.call("configurationDone")
    response = await client.response(seq, "launch")
    assert response["success"], response
    await client.wait_event("terminated")
    return list(client.events)


def _outputs(events: list[dict], category: str | None = None) -> str:
    return "".join(
        e["body"]["output"]
        for e in events
        if e.get("event") == "output" and (category is None or e["body"].get("category") == category)
    )


async def test_a_pytest_module_launch_stops_in_the_test_and_runs_the_suite(tmp_path: Path) -> None:
    test_file = tmp_path / "test_calc.py"
    test_file.write_text(FAILING_PYTEST_SUITE)
    async with adapter() as client:
        stop = await start(
            client,
            {"module": "pytest", "args": ["-q", "-p", "no:cacheprovider", "test_calc.py"], "cwd": str(tmp_path)},
            breakpoints={str(test_file): [{"line": 6}]},
        )
        assert stop["body"]["reason"] == "breakpoint"
        assert (await where(client))[:2] == ("test_add", 6)
        await client.call("next", {"threadId": 1})
        await client.wait_event("stopped")
        name, line, local = await where(client)
        assert (name, line, local["total"]) == ("test_add", 7, "4")
        await client.call("continue", {"threadId": 1})
        end = await client.wait_event("stopped")
        assert end["body"]["reason"] == "end"
        assert "exit code 1" in end["body"]["description"]
        assert "1 failed, 1 passed" in _outputs(client.events, "stdout")


async def test_a_module_that_does_not_exist_is_an_error_naming_it(tmp_path: Path) -> None:
    async with adapter() as client:
        await client.call("initialize", {"adapterID": "tests"})
        response = await client.request("launch", {"module": "no_such_module_here", "cwd": str(tmp_path)})
        assert not response["success"]
        assert "no_such_module_here" in response["message"]


async def test_env_file_is_read_and_env_overrides_it(tmp_path: Path) -> None:
    program = tmp_path / "show_env.py"
    program.write_text("import os\nprint(os.environ['FROM_FILE'], os.environ['BOTH'])\n")
    (tmp_path / ".env").write_text("# settings\nexport FROM_FILE='from the file'\nBOTH=file\n")
    async with adapter() as client:
        events = await _launch_and_end(
            client,
            {
                "program": str(program),
                "envFile": ".env",
                "env": {"BOTH": "env"},
                "cwd": str(tmp_path),
                "stopAtEnd": False,
            },
        )
    assert "from the file env\n" in _outputs(events, "stdout")


async def test_keys_this_server_does_not_honour_are_named(tmp_path: Path) -> None:
    program = tmp_path / "p.py"
    program.write_text("print('ran')\n")
    async with adapter() as client:
        events = await _launch_and_end(
            client,
            {"program": str(program), "console": "integratedTerminal", "gevent": True, "stopAtEnd": False},
        )
    important = _outputs(events, "important")
    assert "console='integratedTerminal'" in important and "input() reads end-of-file" in important
    assert "gevent=True" in important
    assert "justMyCode" not in important  # not written by the user: nothing to say


async def test_sys_exit_zero_is_no_exception_stop_and_output_arrives_without_a_stop_at_the_end(tmp_path: Path) -> None:
    program = tmp_path / "cli.py"
    program.write_text("import sys\n\n\ndef main():\n    print('done')\n    sys.exit(0)\n\n\nmain()\n")
    async with adapter() as client:
        events = await _launch_and_end(client, {"program": str(program), "stopAtEnd": False}, filters=["uncaught"])
    assert not [e for e in events if e.get("event") == "stopped"]
    assert "done\n" in _outputs(events, "stdout")
    assert [e["body"]["exitCode"] for e in events if e.get("event") == "exited"] == [0]


async def test_exception_info_reads_as_debugpy_reports_it(tmp_path: Path) -> None:
    program = tmp_path / "boom.py"
    program.write_text("def parse(text):\n    return int(text)\n\n\ndef main():\n    return parse('x1')\n\n\nmain()\n")
    async with adapter() as client:
        stop = await start(client, {"program": str(program)}, exception_filters=["uncaught"])
        assert stop["body"]["reason"] == "exception"
        info = await client.call("exceptionInfo", {"threadId": 1})
    assert info["exceptionId"] == "ValueError"
    assert info["breakMode"] == "unhandled"
    details = info["details"]
    assert details["typeName"] == "ValueError" and details["fullTypeName"] == "ValueError"
    assert "invalid literal for int()" in details["message"]
    trace = details["stackTrace"]
    assert trace.index("in main") < trace.index("in parse"), trace  # innermost call last, as Python prints it
    assert "return int(text)" in trace


async def test_python_args_reach_a_run_without_debugging(tmp_path: Path) -> None:
    program = tmp_path / "flags.py"
    program.write_text("import sys\nprint('optimize', sys.flags.optimize)\n")
    async with adapter() as client:
        events = await _launch_and_end(
            client, {"program": str(program), "noDebug": True, "pythonArgs": ["-O"], "python": sys.executable}
        )
    assert "optimize 1" in _outputs(events, "stdout")


STDIN_PROGRAM = textwrap.dedent(
    """\
    import sys

    name = input("name? ")
    count = 0
    for line in sys.stdin:
        count += len(line.split())
    print(f"hello {name}: {count} words")
    """
)


async def test_the_program_reads_its_stdin_file_and_replays_read_it_the_same(tmp_path: Path) -> None:
    program = tmp_path / "words.py"
    program.write_text(STDIN_PROGRAM)
    (tmp_path / "input.txt").write_text("Ada\none two\nthree four five\n")
    async with adapter() as client:
        stop = await start(
            client, {"program": str(program), "stdin": "input.txt", "cwd": str(tmp_path)}, {str(program): [{"line": 7}]}
        )
        assert stop["body"]["reason"] == "breakpoint"
        values = (await where(client))[2]
        assert (values["name"], values["count"]) == ("'Ada'", "5")
        for _ in range(2):  # back into the loop: states rebuilt by replays that read the file again
            await client.call("stepBack", {"threadId": 1})
            await client.wait_event("stopped")
        assert (await where(client))[2]["count"] == "2"
        for _ in range(2):  # to the breakpoint again, then to the end
            await client.call("continue", {"threadId": 1})
            await client.wait_event("stopped")
        assert "name? hello Ada: 5 words\n" in _outputs(client.events, "stdout")


async def test_a_stdin_file_that_does_not_exist_is_named(tmp_path: Path) -> None:
    program = tmp_path / "words.py"
    program.write_text(STDIN_PROGRAM)
    async with adapter() as client:
        await client.call("initialize", {"adapterID": "tests"})
        response = await client.request("launch", {"program": str(program), "stdin": str(tmp_path / "nope.txt")})
    assert not response["success"] and "nope.txt" in response["message"]
