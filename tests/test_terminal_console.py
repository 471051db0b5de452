"""`"console": "integratedTerminal"` (issue 21, item 3): the program's input and output go through
the editor's terminal, as with debugpy. The client here is a real DAP client over stdio that does
what an editor does with `runInTerminal`: it runs the command it is given (with a pipe for the
terminal's keyboard), and the test types into it."""

from __future__ import annotations

import socket
import subprocess
import textwrap
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process

from neural_dap.dapwire.client import DapClient
from tests.dap_helpers import adapter, where

GREETER = textwrap.dedent(
    """\
    name = input("name? ")
    line = input("words? ")
    words = len(line.split())
    print(f"hello {name}: {words} words")
    """
)


class Terminal:
    """An editor's terminal for `runInTerminal`: runs the command with pipes for keyboard and screen."""

    def __init__(self, before_start=None) -> None:
        self.process: Process | None = None
        self.requests: list[dict] = []
        self.screen = b""
        self.before_start = before_start  # called with the request's arguments before the command runs
        self.started = anyio.Event()

    async def __call__(self, message: dict) -> dict | None:
        if message.get("command") != "runInTerminal":
            return None
        arguments = message["arguments"]
        self.requests.append(arguments)
        if self.before_start is not None:
            await self.before_start(arguments)
        self.process = await anyio.open_process(
            arguments["args"], cwd=arguments["cwd"], stdin=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        self.started.set()
        return {"processId": self.process.pid}

    async def type(self, text: str) -> None:
        assert self.process is not None and self.process.stdin is not None
        await self.process.stdin.send(text.encode())

    async def end_input(self) -> None:
        assert self.process is not None and self.process.stdin is not None
        await self.process.stdin.aclose()

    async def shows(self, text: str, timeout: float = 30) -> str:
        """Read the screen until `text` is on it; all it shows so far."""
        with anyio.fail_after(timeout):
            await self.started.wait()
            assert self.process is not None and self.process.stdout is not None
            while text.encode() not in self.screen:
                self.screen += await self.process.stdout.receive()
        return self.screen.decode()

    async def closes(self, timeout: float = 30) -> str:
        """Read the screen to its end (the relay has exited); all it showed."""
        assert self.process is not None and self.process.stdout is not None
        with anyio.fail_after(timeout):
            try:
                while True:
                    self.screen += await self.process.stdout.receive()
            except anyio.EndOfStream:
                pass
            await self.process.wait()
        return self.screen.decode()


async def _initialize(client: DapClient, terminal: Terminal | None, progress: bool = False) -> None:
    if terminal is not None:
        client.on_reverse_request = terminal
    await client.call(
        "initialize",
        {
            "adapterID": "neural-dap",
            "linesStartAt1": True,
            "supportsRunInTerminalRequest": terminal is not None,
            "supportsProgressReporting": progress,
        },
    )
    await client.wait_event("initialized")


def _outputs(client: DapClient, category: str) -> str:
    return "".join(e["body"]["output"] for e in client.events_named("output") if e["body"].get("category") == category)


# between its two questions the program runs thousands of lines: the states after the second are
# rebuilt by replays from a checkpoint taken after the first answer was read, and those replays
# must read the second answer from where the recording had read the input to
ASKS_TWICE = textwrap.dedent(
    """\
    def spin(n):
        total = 0
        for k in range(n):
            total += k
        return total


    name = input("name? ")
    spin(3000)
    line = input("words? ")
    spin(3000)
    words = len(line.split())
    print(f"hello {name}: {words} words")
    """
)


@pytest.mark.parametrize("recording", ["auto", "full"])
async def test_input_reads_what_is_typed_in_the_terminal_and_replays_read_it_again(tmp_path: Path, recording) -> None:
    program = tmp_path / "greeter.py"
    program.write_text(ASKS_TWICE)
    terminal = Terminal()
    async with adapter() as client:
        await _initialize(client, terminal)
        launch = await client.send_request(
            "launch", {"program": str(program), "console": "integratedTerminal", "recording": recording}
        )
        breakpoints = [{"line": 9}, {"line": 13}]
        await client.call("setBreakpoints", {"source": {"path": str(program)}, "breakpoints": breakpoints})
        await client.call("configurationDone")
        await terminal.shows("name? ")
        await anyio.sleep(1.0)  # the user thinks: the recording takes a checkpoint once the answer is read
        await terminal.type("Ada\n")
        await terminal.shows("words? ")
        await terminal.type("one two three\n")
        response = await client.response(launch, "launch", timeout=60)
        assert response["success"], response
        screen = await terminal.closes()  # the program has ended: the terminal is the user's again
        assert "name? words? hello Ada: 3 words" in screen
        assert terminal.requests[0]["kind"] == "integrated" and terminal.requests[0]["cwd"]

        async def stop_after(command: str) -> tuple[int, dict[str, str]]:
            await client.call(command, {"threadId": 1})
            await client.wait_event("stopped")
            _, line, values = await where(client)
            return line, values

        stop = await client.wait_event("stopped")
        assert stop["body"]["reason"] == "breakpoint"
        _, line, values = await where(client)
        assert (line, values["name"]) == (9, "'Ada'")
        line, values = await stop_after("continue")
        assert (line, values["line"], values["words"]) == (13, "'one two three'", "3")
        line, values = await stop_after("reverseContinue")  # back over the second input()...
        assert line == 9 and "line" not in values
        await stop_after("next")
        line, values = await stop_after("next")  # ...and forward over it again: it reads the same answer
        assert (line, values["line"]) == (11, "'one two three'")
        line, values = await stop_after("continue")
        assert (line, values["name"], values["words"]) == (13, "'Ada'", "3")
        await stop_after("continue")
    # as debugpy does with a terminal: the output is shown there, not a second time in the debug console
    assert "hello Ada" not in _outputs(client, "stdout")


async def test_a_client_without_a_terminal_is_told_that_input_reads_end_of_file(tmp_path: Path) -> None:
    program = tmp_path / "greeter.py"
    program.write_text(GREETER)
    async with adapter() as client:
        await _initialize(client, None)
        launch = await client.send_request(
            "launch", {"program": str(program), "console": "integratedTerminal", "stopAtEnd": False}
        )
        await client.call("setExceptionBreakpoints", {"filters": []})
        await client.call("configurationDone")
        assert (await client.response(launch, "launch"))["success"]
        await client.wait_event("terminated")
    important = _outputs(client, "important")
    assert "cannot open a terminal" in important and "input() reads end-of-file" in important
    assert "EOFError" in important and "name? " in _outputs(client, "stdout")  # the debug console shows its output


async def test_the_internal_console_says_where_input_comes_from(tmp_path: Path) -> None:
    program = tmp_path / "greeter.py"
    program.write_text(GREETER)
    terminal = Terminal()
    async with adapter() as client:
        await _initialize(client, terminal)
        launch = await client.send_request(
            "launch", {"program": str(program), "console": "internalConsole", "stopAtEnd": False}
        )
        await client.call("setExceptionBreakpoints", {"filters": []})
        await client.call("configurationDone")
        assert (await client.response(launch, "launch"))["success"]
        await client.wait_event("terminated")
    assert not terminal.requests
    important = _outputs(client, "important")
    assert important.count("input() reads end-of-file") == 1 and '"console": "integratedTerminal"' in important


async def test_a_run_without_debugging_reads_and_writes_the_terminal(tmp_path: Path) -> None:
    program = tmp_path / "greeter.py"
    program.write_text(GREETER)
    terminal = Terminal()
    async with adapter() as client:
        await _initialize(client, terminal)
        launch = await client.send_request(
            "launch", {"program": str(program), "console": "externalTerminal", "noDebug": True}
        )
        assert (await client.response(launch, "launch"))["success"]
        await client.call("configurationDone")
        await terminal.shows("name? ")
        await terminal.type("Bo\nx y\n")
        exited = await client.wait_event("exited")
        await terminal.shows("press Enter to close this window")  # its own window: the last words stay
        await terminal.type("\n")
        screen = await terminal.closes()
    assert terminal.requests[0]["kind"] == "external"
    assert "hello Bo: 2 words" in screen and exited["body"]["exitCode"] == 0
    assert "hello Bo" not in _outputs(client, "stdout")


async def test_only_the_relay_it_started_joins_the_terminal(tmp_path: Path) -> None:
    """The relay's socket is in a folder of the user's own; a connection that does not know the
    token the terminal was given is closed, and the real relay still joins."""
    program = tmp_path / "greeter.py"
    program.write_text(GREETER)
    strangers: list[socket.socket] = []

    async def intrude(arguments: dict) -> None:  # connects first, before the relay runs
        path = arguments["args"][3]
        assert (Path(path).parent.stat().st_mode & 0o777) == 0o700
        stranger = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stranger.connect(path)
        stranger.sendall(b"not-the-token\n")
        strangers.append(stranger)

    terminal = Terminal(before_start=intrude)
    async with adapter() as client:
        await _initialize(client, terminal)
        launch = await client.send_request(
            "launch", {"program": str(program), "console": "integratedTerminal", "stopAtEnd": False}
        )
        await client.call("configurationDone")
        await terminal.shows("name? ")
        await terminal.type("Cy\n\n")
        assert (await client.response(launch, "launch", timeout=60))["success"]
        assert "hello Cy: 0 words" in await terminal.closes()
    strangers[0].settimeout(10)
    assert strangers[0].recv(100) == b""  # closed without a word
    strangers[0].close()


async def test_what_the_programs_child_processes_write_shows_in_the_terminal_too(tmp_path: Path) -> None:
    program = tmp_path / "parent.py"
    program.write_text(
        "import subprocess, sys\n\n"
        "name = input('name? ')\n"
        "subprocess.run([sys.executable, '-c', 'print(\"child says hi\")'], check=True)\n"
        "print('parent done', name)\n"
    )
    terminal = Terminal()
    async with adapter() as client:
        await _initialize(client, terminal)
        launch = await client.send_request(
            "launch",
            {"program": str(program), "console": "integratedTerminal", "subProcess": True, "stopAtEnd": False},
        )
        await client.call("configurationDone")
        await terminal.shows("name? ")
        await terminal.type("Di\n")
        assert (await client.response(launch, "launch", timeout=60))["success"]
        screen = await terminal.closes()
        await client.wait_event("terminated")
    assert screen.index("child says hi") < screen.index("parent done Di")
    # `python -c CODE` is not a program of the user's files: it runs unrecorded, no child session is offered
    assert "subProcess" not in _outputs(client, "important") and "startDebugging" not in _outputs(client, "important")


async def test_pause_while_the_program_waits_for_input_opens_what_was_recorded(tmp_path: Path) -> None:
    program = tmp_path / "greeter.py"
    program.write_text(GREETER)
    terminal = Terminal()
    async with adapter() as client:
        await _initialize(client, terminal)
        launch = await client.send_request("launch", {"program": str(program), "console": "integratedTerminal"})
        await client.call("configurationDone")
        await terminal.shows("name? ")
        await terminal.type("Ed\n")
        await terminal.shows("words? ")
        await client.call("pause", {"threadId": 1})  # nobody answers the second question
        assert (await client.response(launch, "launch", timeout=60))["success"]
        await terminal.closes()  # the terminal is released
        end = await client.wait_event("stopped")
        assert end["body"]["reason"] == "end" and "paused" in end["body"]["description"]
        _, line, values = await where(client)
        assert (line, values["name"]) == (2, "'Ed'")


async def test_cancel_of_the_launch_progress_ends_the_recording_where_the_program_waits(tmp_path: Path) -> None:
    """VS Code disables Pause while the launch is open (the session is still starting), and offers
    Cancel on the launch's progress notification instead: that Cancel (`cancel` with the progressId)
    is the user's way to end the recording in the input() nobody answers."""
    program = tmp_path / "greeter.py"
    program.write_text(GREETER)
    terminal = Terminal()
    async with adapter() as client:
        await _initialize(client, terminal, progress=True)
        launch = await client.send_request("launch", {"program": str(program), "console": "integratedTerminal"})
        await client.call("configurationDone")
        await terminal.shows("name? ")
        await terminal.type("Flo\n")
        await terminal.shows("words? ")
        progress = await client.wait_event("progressStart")
        await client.call("cancel", {"progressId": progress["body"]["progressId"]})
        assert (await client.response(launch, "launch", timeout=60))["success"]
        await terminal.closes()
        end = await client.wait_event("stopped")
        assert end["body"]["reason"] == "end" and "paused" in end["body"]["description"]
        _, line, values = await where(client)
        assert (line, values["name"]) == (2, "'Flo'")


async def _launch_waiting_for_input(client, terminal: Terminal, program: Path) -> Path:
    """Launch in the terminal console until the program asks for input; returns the console's folder."""
    await _initialize(client, terminal)
    await client.send_request("launch", {"program": str(program), "console": "integratedTerminal"})
    await client.call("configurationDone")
    await terminal.shows("name? ")
    return Path(terminal.requests[0]["args"][3]).parent


async def test_ending_the_session_while_the_program_waits_releases_the_terminal(tmp_path: Path) -> None:
    program = tmp_path / "greeter.py"
    program.write_text(GREETER)
    terminal = Terminal()
    async with adapter() as client:
        folder = await _launch_waiting_for_input(client, terminal, program)
        assert folder.is_dir()
        await client.call("disconnect", {"terminateDebuggee": True})
        await terminal.closes()
    assert not folder.exists()  # the typed input is not left behind


@pytest.mark.parametrize("how", ["input closes", "SIGTERM"])
async def test_an_adapter_whose_client_goes_while_the_program_waits_ends_at_once(tmp_path: Path, how) -> None:
    """The editor's window closes (the adapter's input ends), or the editor ends the adapter, while
    the program waits for input: the recording is interrupted and the adapter ends, instead of
    waiting out the recording's 10-minute wall time."""
    program = tmp_path / "greeter.py"
    program.write_text(GREETER)
    terminal = Terminal()
    async with adapter() as client:
        folder = await _launch_waiting_for_input(client, terminal, program)
        process: Process = client.process  # type: ignore[attr-defined]
        if how == "SIGTERM":
            process.terminate()
        else:
            assert process.stdin is not None
            await process.stdin.aclose()
        with anyio.fail_after(15):
            await process.wait()
        assert process.returncode == 0
        await terminal.closes()
    assert not folder.exists()


async def test_a_launch_that_fails_releases_the_terminal_and_says_why(tmp_path: Path) -> None:
    program = tmp_path / "greeter.py"
    program.write_text(GREETER)
    terminal = Terminal()
    async with adapter() as client:
        await _initialize(client, terminal)
        response = await client.request(
            "launch", {"program": str(program), "console": "integratedTerminal", "limits": {"wallTime": -1}}
        )
        assert not response["success"] and "wallTime" in response["message"]
        await terminal.closes()
        folder = Path(terminal.requests[0]["args"][3]).parent
        assert (await client.request("threads"))["success"]  # the session goes on
    assert not folder.exists()


async def test_what_is_typed_ahead_before_the_program_asks_is_kept_for_it(tmp_path: Path) -> None:
    program = tmp_path / "greeter.py"
    program.write_text(GREETER)
    terminal = Terminal()
    async with adapter() as client:
        await _initialize(client, terminal)
        launch = await client.send_request(
            "launch", {"program": str(program), "console": "integratedTerminal", "stopAtEnd": False}
        )
        await client.call("configurationDone")
        with anyio.fail_after(30):
            await terminal.started.wait()
        await terminal.type("Flo\nsix seven\n")  # at once, as a paste: it may arrive with the relay's token
        await terminal.end_input()
        assert (await client.response(launch, "launch", timeout=60))["success"]
        assert "hello Flo: 2 words" in await terminal.closes()


async def test_redirect_output_shows_the_output_in_the_debug_console_too(tmp_path: Path) -> None:
    program = tmp_path / "greeter.py"
    program.write_text(GREETER)
    terminal = Terminal()
    async with adapter() as client:
        await _initialize(client, terminal)
        launch = await client.send_request(
            "launch",
            {"program": str(program), "console": "integratedTerminal", "redirectOutput": True, "stopAtEnd": False},
        )
        await client.call("configurationDone")
        await terminal.shows("name? ")
        await terminal.type("Gu\na b c d\n")
        assert (await client.response(launch, "launch", timeout=60))["success"]
        assert "hello Gu: 4 words" in await terminal.closes()
        await client.wait_event("terminated")
    assert "hello Gu: 4 words" in _outputs(client, "stdout")


async def test_a_console_that_does_not_exist_is_named(tmp_path: Path) -> None:
    program = tmp_path / "greeter.py"
    program.write_text(GREETER)
    async with adapter() as client:
        await _initialize(client, Terminal())
        response = await client.request("launch", {"program": str(program), "console": "integratedTermnial"})
    assert not response["success"] and "console" in response["message"]


async def test_a_what_if_branch_reads_the_same_typed_input_and_shows_its_output(tmp_path: Path) -> None:
    """A branch runs the program again: it reads what was typed the first time (from the log), and
    its output, which no terminal showed, goes to the debug console."""
    program = tmp_path / "greeter.py"
    program.write_text(GREETER)
    terminal = Terminal()
    async with adapter() as client:
        await _initialize(client, terminal)
        launch = await client.send_request("launch", {"program": str(program), "console": "integratedTerminal"})
        await client.call("setBreakpoints", {"source": {"path": str(program)}, "breakpoints": [{"line": 2}]})
        await client.call("configurationDone")
        await terminal.shows("name? ")
        await terminal.type("Ada\none two three\n")
        assert (await client.response(launch, "launch", timeout=60))["success"]
        assert "hello Ada: 3 words" in await terminal.closes()
        await client.wait_event("stopped")
        frames = (await client.call("stackTrace", {"threadId": 1}))["stackFrames"]
        scopes = (await client.call("scopes", {"frameId": frames[0]["id"]}))["scopes"]
        ref = scopes[0]["variablesReference"]
        await client.call("setVariable", {"variablesReference": ref, "name": "name", "value": "'Zed'"})
        stopped = await client.wait_event("stopped")
        assert "branch 1" in stopped["body"]["description"]
        await client.call("continue", {"threadId": 1})
        await client.wait_event("stopped")  # the branch's end
        _, _, values = await where(client)
        assert (values["name"], values["line"], values["words"]) == ("'Zed'", "'one two three'", "3")
    stdout = _outputs(client, "stdout")
    assert "hello Zed: 3 words" in stdout and "hello Ada" not in stdout  # the original's went to the terminal


THREADED = textwrap.dedent(
    """\
    import threading

    name = input("name? ")
    lengths = []
    worker = threading.Thread(target=lambda: lengths.append(len(name)))
    worker.start()
    worker.join()
    line = input("words? ")
    print(f"hello {name}: {lengths[0]} letters, {len(line.split())} words")
    """
)


async def test_a_program_that_starts_a_thread_runs_once_and_reads_what_is_typed_once(tmp_path: Path) -> None:
    """A second thread makes the recorder go on recording every thread, in the same run (it is not
    run again): what was typed is read once, and the program does not start over."""
    program = tmp_path / "threaded.py"
    program.write_text(THREADED)
    terminal = Terminal()
    async with adapter() as client:
        await _initialize(client, terminal)
        launch = await client.send_request(
            "launch", {"program": str(program), "console": "integratedTerminal", "stopAtEnd": True}
        )
        await client.call("configurationDone")
        await terminal.shows("name? ")
        await terminal.type("Ada\n")
        await terminal.shows("words? ")
        await terminal.type("one two\n")
        assert (await client.response(launch, "launch", timeout=60))["success"]
        screen = await terminal.closes()
        assert screen.count("hello Ada: 3 letters, 2 words") == 1
        assert screen.count("name? ") == 1 and "runs again" not in screen
        await client.wait_event("stopped")
        _, _, values = await where(client)
        assert (values["name"], values["line"]) == ("'Ada'", "'one two'")
