"""`"subProcess": true` (issue 21, item 4): each Python program the debuggee starts records itself
while it runs as itself, and the client is asked (DAP `startDebugging`) to open it as a child
session, as debugpy hands children over; the child session is a second real adapter over stdio,
launched with the configuration the first one sent."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from tests.dap_helpers import adapter, where
from tests.test_child_real_world import VERSIONS, _interpreter

PARENT = textwrap.dedent(
    """\
    import os
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    command = [sys.executable, os.path.join(here, "child.py"), "3"]
    result = subprocess.run(command, input="from the parent\\n", capture_output=True, text=True)
    print("child said", result.stdout.split(), "exit", result.returncode)
    """
)
SYS = "<module 'sys' (built-in)>"
CHILD = textwrap.dedent(
    """\
    import sys

    n = int(sys.argv[1])
    heard = sys.stdin.readline().strip()
    total = 0
    for i in range(n):
        total += i
    print(total, heard.upper())
    sys.exit(2)
    """
)
POOL = textwrap.dedent(
    """\
    import multiprocessing as mp
    import sys


    def square(x):
        y = x * x
        return y


    if __name__ == "__main__":
        mp.set_start_method(sys.argv[1])
        with mp.Pool(2) as pool:
            print(pool.map(square, [1, 2, 3]))
    """
)


async def _initialize(client, start_debugging: bool = True) -> None:
    await client.call(
        "initialize",
        {"adapterID": "neural-dap", "linesStartAt1": True, "supportsStartDebuggingRequest": start_debugging},
    )
    await client.wait_event("initialized")


async def _run_parent(client, launch: dict) -> list[dict]:
    """Launch, run to the end; returns the startDebugging requests' arguments, answered yes."""
    asked: list[dict] = []

    async def answer(message: dict) -> dict | None:
        if message.get("command") != "startDebugging":
            return None
        asked.append(message["arguments"])
        return {}

    client.on_reverse_request = answer
    await _initialize(client)
    seq = await client.send_request("launch", {**launch, "stopAtEnd": True})
    await client.call("configurationDone")
    assert (await client.response(seq, "launch", timeout=60))["success"]
    stopped = await client.wait_event("stopped")
    # the program stopped at its end: a child stopping at a breakpoint is where the user looks
    assert stopped["body"]["reason"] == "end" and stopped["body"]["preserveFocusHint"] is True
    with anyio.fail_after(30):
        while not asked:
            await anyio.sleep(0.05)
    return asked


def _stdout(client) -> str:
    return "".join(
        e["body"]["output"] for e in client.events if e.get("event") == "output" and e["body"]["category"] == "stdout"
    )


@pytest.mark.parametrize("version", VERSIONS)  # (3.13's subprocess starts it with posix_spawn)
async def test_a_python_child_process_becomes_a_child_session_that_stops_at_its_breakpoint(
    tmp_path: Path, version: str
) -> None:
    (tmp_path / "parent.py").write_text(PARENT)
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    launch = {"program": str(tmp_path / "parent.py"), "subProcess": True}
    python = _interpreter(version)
    if python:
        launch["python"] = python
    async with adapter() as parent:
        asked = await _run_parent(parent, launch)
        # the child ran as itself: its stdin, its output read by the parent, its exit code
        assert "child said ['3', 'FROM', 'THE', 'PARENT'] exit 2" in _stdout(parent)
        assert len(asked) == 1 and asked[0]["request"] == "launch"
        configuration = asked[0]["configuration"]
        assert configuration["name"].startswith("child.py (pid ") and configuration["program"] == str(child)
        assert "subProcess" not in configuration
        async with adapter() as session:
            await _initialize(session, start_debugging=False)
            seq = await session.send_request("launch", configuration)
            await session.call("setBreakpoints", {"source": {"path": str(child)}, "breakpoints": [{"line": 7}]})
            await session.call("configurationDone")
            assert (await session.response(seq, "launch"))["success"]
            stop = await session.wait_event("stopped")
            assert stop["body"]["reason"] == "breakpoint"
            name, line, local = await where(session)
            assert (name, line, local["n"], local["heard"]) == ("<module>", 7, "3", "'from the parent'")
            await session.call("continue", {"threadId": 1})
            await session.wait_event("stopped")
            assert (await where(session))[2]["i"] == "1"  # the second pass
            await session.call("stepBack", {"threadId": 1})
            await session.wait_event("stopped")
            before_the_for = {"sys": SYS, "n": "3", "heard": "'from the parent'", "total": "0", "i": "0"}  # (1 next)
            assert (await where(session))[1:] == (6, before_the_for)
            await session.call("setBreakpoints", {"source": {"path": str(child)}, "breakpoints": []})
            await session.call("continue", {"threadId": 1})
            raised = await session.wait_event("stopped")  # sys.exit(2): an error code, as debugpy stops there
            assert raised["body"]["reason"] == "exception"
            await session.call("continue", {"threadId": 1})
            end = await session.wait_event("stopped")
            assert end["body"]["reason"] == "end" and "exit code 2" in end["body"]["description"]
            assert "3 FROM THE PARENT" in _stdout(session)


@pytest.mark.parametrize("method", ["spawn", "fork", "forkserver"])
async def test_multiprocessing_workers_are_child_sessions(tmp_path: Path, method: str) -> None:
    program = tmp_path / "pool.py"
    program.write_text(POOL)
    async with adapter() as parent:
        asked = await _run_parent(parent, {"program": str(program), "args": [method], "subProcess": True})
        assert "[1, 4, 9]" in _stdout(parent)
        await anyio.sleep(1.0)  # every worker that ran a task is offered (one may have had none)
        names = sorted(a["configuration"]["name"] for a in asked)
        workers = [a for a in asked if a["configuration"]["name"].startswith("multiprocessing worker (pid ")]
        # (the forkserver imports the main module: a session of its own, whose workers are its forks)
        assert len(workers) == len(asked) - (method == "forkserver"), names
        squared = []
        for arguments in workers:
            async with adapter() as session:
                await _initialize(session, start_debugging=False)
                seq = await session.send_request("launch", arguments["configuration"])
                await session.call("setBreakpoints", {"source": {"path": str(program)}, "breakpoints": [{"line": 7}]})
                await session.call("configurationDone")
                response = await session.response(seq, "launch")
                assert response["success"], response.get("message")
                stop = await session.wait_event("stopped")
                if stop["body"]["reason"] == "breakpoint":  # (a worker may have had no task)
                    name, line, local = await where(session)
                    assert (name, line) == ("square", 7)
                    squared.append((local["x"], local["y"]))
        assert squared and all(int(x) ** 2 == int(y) for x, y in squared)


async def test_without_subprocess_children_run_unrecorded_and_no_session_is_offered(tmp_path: Path) -> None:
    (tmp_path / "parent.py").write_text(PARENT)
    (tmp_path / "child.py").write_text(CHILD)
    async with adapter() as parent:
        asked: list[dict] = []

        async def answer(message: dict) -> dict:
            asked.append(message)
            return {}

        parent.on_reverse_request = answer
        await _initialize(parent)
        seq = await parent.send_request("launch", {"program": str(tmp_path / "parent.py")})
        await parent.call("configurationDone")
        assert (await parent.response(seq, "launch", timeout=60))["success"]
        stopped = await parent.wait_event("stopped")
        await anyio.sleep(0.5)
        assert "exit 2" in _stdout(parent) and asked == []
        assert "preserveFocusHint" not in stopped["body"]  # no child to leave the focus to


async def test_a_client_that_cannot_open_child_sessions_is_told_which_children_ran(tmp_path: Path) -> None:
    (tmp_path / "parent.py").write_text(PARENT)
    (tmp_path / "child.py").write_text(CHILD)
    async with adapter() as parent:
        await _initialize(parent, start_debugging=False)
        seq = await parent.send_request("launch", {"program": str(tmp_path / "parent.py"), "subProcess": True})
        await parent.call("configurationDone")
        assert (await parent.response(seq, "launch", timeout=60))["success"]
        await parent.wait_event("stopped")
        with anyio.fail_after(30):
            while "does not answer startDebugging" not in (important := _important(parent)):
                await anyio.sleep(0.05)
        assert "child.py (pid " in important


def _important(client) -> str:
    return "".join(
        e["body"]["output"]
        for e in client.events
        if e.get("event") == "output" and e["body"]["category"] == "important"
    )


async def test_a_child_recording_outside_a_children_folder_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "123.events"
    fake.write_bytes(b"not a recording")
    (tmp_path / "p.py").write_text("x = 1\n")
    async with adapter() as session:
        await _initialize(session, start_debugging=False)
        response = await session.request("launch", {"program": str(tmp_path / "p.py"), "childRecording": str(fake)})
        assert not response["success"]
        assert "not a child process's recording" in response["message"]


def test_which_commands_are_python_programs_of_the_user() -> None:
    from neural_dap.trace.child.descendants import rewritten, split_python_command

    python = sys.executable
    assert split_python_command([python, "-u", "-W", "error", "x.py", "a"]) == (["-u", "-W", "error"], ["x.py", "a"])
    assert split_python_command([python, "-m", "pytest", "-q"]) == ([], ["-m", "pytest", "-q"])
    # no program of a file: the REPL, a program read from stdin, --version; not Python at all
    for command in ([python], [python, "-"], [python, "--version"], ["ls", "x.py"], [python, "-um", "x"]):
        assert split_python_command(command) is None, command
    assert rewritten([python, "-c", "print(1)"], "spec", "/own") is None  # (not the user's files)
    spawn = [
        python,
        "-c",
        "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5)",
        "--multiprocessing-fork",
    ]
    new = rewritten(spawn, "/f/spec.json", "/own")
    assert new is not None and new[:2] == [python, "-c"] and new[3:] == ["/f/spec.json", *spawn[1:]]
    python2 = Path("/root/.pyenv/versions/2.7.18/bin/python2")
    if python2.exists():  # an interpreter our recorder cannot run in is left alone
        assert rewritten([str(python2), "x.py"], "spec", "/own") is None


def test_a_recorded_child_sees_what_a_plain_run_of_it_sees(tmp_path: Path) -> None:
    import subprocess

    from neural_dap.trace.children import list_children, new_children_folder
    from neural_dap.trace.program import Program
    from neural_dap.trace.recorder import record_skeleton

    (tmp_path / "look.py").write_text(
        "import atexit, os, sys\n"
        "print(sys.path[:2], sys.argv, __name__, sys.stdin.read(), sys.stdout.isatty(), os.environ.get('PYTHONPATH'))\n"
        "atexit.register(print, 'atexit ran')\n"
        "left_open = open('out.txt', 'w')\n"
        "left_open.write('data')\n"
        "sys.exit(3)\n"
    )
    parent = tmp_path / "parent.py"
    parent.write_text(
        "import subprocess, sys\n"
        "done = subprocess.run([sys.executable, 'look.py', 'x'], input='in', capture_output=True, text=True)\n"
        "print(done.stdout, done.returncode)\n"
    )
    plain = subprocess.run([sys.executable, str(parent)], capture_output=True, text=True, cwd=tmp_path).stdout
    assert (tmp_path / "out.txt").read_text() == "data"
    (tmp_path / "out.txt").unlink()
    folder = new_children_folder()
    recorded = record_skeleton(Program(str(parent), cwd=str(tmp_path), children=folder))
    try:
        # it ends as the interpreter ends it: its atexit functions run, the file it left open is written
        assert recorded.stdout == plain and "atexit ran" in plain and plain.rstrip().endswith("3")
        assert (tmp_path / "out.txt").read_text() == "data"
        assert [child.name.split(" ")[0] for child in list_children(folder)] == ["look.py"]
    finally:
        recorded.close()
