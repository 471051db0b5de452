"""Debug while it runs (issue 34), through a real adapter over stdio: the launch answers at once, a
breakpoint stops the live program (a server's handler as a request arrives, a hit count in a long
loop), everything before the stop can be travelled, and going forward past the last recorded
event resumes the program. Nothing is left running after the session."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import textwrap
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from neural_dap.dapwire.client import DapError
from neural_dap.trace import journal

from .dap_helpers import adapter, where

pytestmark = pytest.mark.skipif(journal.library() is None, reason="live sessions need the journal (Linux)")

SERVER = textwrap.dedent(
    """\
    import http.server
    import sys

    served = 0


    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            global served
            served += 1
            name = self.path.strip("/") or "world"
            body = f"hello {name} #{served}".encode()
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass


    server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    print("serving", flush=True)
    server.serve_forever()
    """
)
HANDLER_NAME_LINE = 11  # name = ...

LOOP = textwrap.dedent(
    """\
    import time

    total = 0
    for i in range(12000):
        total += i
        time.sleep(0.01)
    print("total", total)
    """
)
LOOP_LINE = 5  # total += i


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def _listening(port: int) -> None:
    """Until a server of the program's accepts on `port` (it binds it while the session goes on)."""
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            await anyio.sleep(0.1)


async def _launch(client, launch: dict, breakpoints: dict[str, list[dict]]) -> float:
    """initialize, launch, breakpoints, configurationDone; returns how long the launch took to answer."""
    await client.call("initialize", {"adapterID": "neural-dap", "linesStartAt1": True, "columnsStartAt1": True})
    await client.wait_event("initialized")
    started = time.monotonic()
    seq = await client.send_request("launch", launch)
    for path, specs in breakpoints.items():
        await client.call("setBreakpoints", {"source": {"path": path}, "breakpoints": specs})
    await client.call("configurationDone")
    response = await client.response(seq, "launch", timeout=30)
    assert response["success"], response
    return time.monotonic() - started


async def _answered(client, answers: list[str], count: int) -> None:
    """Waits for the program to have answered `count` requests; on a timeout, fails with what the
    program printed (a handler's traceback, a crash) rather than a bare TimeoutError."""
    try:
        with anyio.fail_after(30):
            while len(answers) < count:
                await anyio.sleep(0.05)
    except TimeoutError:
        printed = "".join(e["body"].get("output", "") for e in client.events_named("output"))
        events = [e.get("event") for e in client.events if e.get("event") != "output"]
        pytest.fail(
            f"{len(answers)} of {count} requests answered; events {events[-20:]};"
            f" the program printed:\n{printed[-4000:]}"
        )


def _session() -> tuple[dict[str, str], str]:
    """An environment for the adapter that marks every process of its session: the other xdist
    worker runs recording children of its own meanwhile, which must not count as this session's."""
    mark = uuid.uuid4().hex
    return {"NEURAL_DAP_TEST_SESSION": mark}, mark


def _children(mark: str) -> set[str]:
    """The recording children (a held program's copies too) of the session marked `mark`."""
    out = subprocess.run(["pgrep", "-f", "neural_dap.trace.child"], capture_output=True, text=True).stdout
    found = set()
    for pid in out.split():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue  # (ended meanwhile)
        if f"NEURAL_DAP_TEST_SESSION={mark}".encode() in environ:
            found.add(pid)
    return found


async def test_a_server_stops_in_its_handler_as_a_request_arrives_and_serves_on(tmp_path: Path) -> None:
    program = tmp_path / "server.py"
    program.write_text(SERVER)
    port = _free_port()
    answers: list[str] = []

    def request(name: str) -> None:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/{name}", timeout=60) as response:
            answers.append(response.read().decode())

    env, mark = _session()
    async with adapter(env=env) as client:
        took = await _launch(
            client, {"program": str(program), "args": [str(port)]}, {str(program): [{"line": HANDLER_NAME_LINE}]}
        )
        assert _children(mark), "the session's processes are not found by their mark"
        assert took < 10  # the server never ends: the launch does not wait for it
        await _listening(port)  # (the server binds its port while the session goes on)
        threading.Thread(target=request, args=("ada",), daemon=True).start()
        stopped = await client.wait_event("stopped", timeout=30)
        assert stopped["body"]["reason"] == "breakpoint"
        function, line, _values = await where(client)
        assert (function, line) == ("do_GET", HANDLER_NAME_LINE)
        frame = (await client.call("stackTrace", {"threadId": 1}))["stackFrames"][0]["id"]
        path = await client.call("evaluate", {"expression": "self.path", "frameId": frame, "context": "watch"})
        assert path["result"] == "'/ada'"  # the request's own values
        await client.call("stepBack", {"threadId": 1})
        await client.wait_event("stopped")
        assert (await where(client))[1] == HANDLER_NAME_LINE - 1  # back inside the handler
        await client.call("next", {"threadId": 1})
        await client.wait_event("stopped")
        await client.call("next", {"threadId": 1})
        await client.wait_event("stopped")
        assert (await where(client))[2]["name"] == "'ada'"
        await client.call("setBreakpoints", {"source": {"path": str(program)}, "breakpoints": []})
        await client.call("continue", {"threadId": 1})
        await _answered(client, answers, 1)
        assert answers == ["hello ada #1"]  # the request got its answer after continue
        threading.Thread(target=request, args=("bob",), daemon=True).start()
        await _answered(client, answers, 2)
        assert answers[1] == "hello bob #2"  # and the server keeps serving
        await client.call("pause", {"threadId": 1})
        paused = await client.wait_event("stopped", timeout=30)
        assert paused["body"]["reason"] == "pause"
        assert (await where(client))[2]["served"] == "2"
    with anyio.fail_after(10):  # every process of the session ends with it
        while _children(mark):
            await anyio.sleep(0.1)


async def test_a_server_with_a_thread_per_request_stops_in_each_requests_thread(tmp_path: Path) -> None:
    """Every thread is recorded once a second one runs, and the program still stops while it runs:
    a breakpoint in a handler stops the request's own thread (every other thread held), steps go
    on in that thread, and the server answers once continued. (Before, a program that had started
    a second thread ran to its end before it could stop: a server never stopped.)"""
    program = tmp_path / "threaded_server.py"
    program.write_text(SERVER.replace("http.server.HTTPServer(", "http.server.ThreadingHTTPServer("))
    port = _free_port()
    answers: list[str] = []
    env, mark = _session()

    def request(name: str) -> None:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/{name}", timeout=60) as response:
            answers.append(response.read().decode())

    async with adapter(env=env) as client:
        await _launch(
            client, {"program": str(program), "args": [str(port)]}, {str(program): [{"line": HANDLER_NAME_LINE}]}
        )
        assert _children(mark), "the session's processes are not found by their mark"
        await _listening(port)
        threads_stopped = []
        for served, name in enumerate(("ada", "bob"), start=1):
            threading.Thread(target=request, args=(name,), daemon=True).start()
            stopped = await client.wait_event("stopped", timeout=30)
            assert stopped["body"]["reason"] == "breakpoint"
            thread = stopped["body"]["threadId"]
            threads_stopped.append(thread)
            names = {t["id"]: t["name"] for t in (await client.call("threads"))["threads"]}
            assert "process_request_thread" in names[thread]  # the request's own thread
            frames = (await client.call("stackTrace", {"threadId": thread}))["stackFrames"]
            assert (frames[0]["name"], frames[0]["line"]) == ("do_GET", HANDLER_NAME_LINE)
            path = await client.call(
                "evaluate", {"expression": "self.path", "frameId": frames[0]["id"], "context": "watch"}
            )
            assert path["result"] == f"'/{name}'"
            for command, line in (("next", HANDLER_NAME_LINE + 1), ("stepBack", HANDLER_NAME_LINE), ("next", 12)):
                await client.call(command, {"threadId": thread})
                assert (await client.wait_event("stopped", timeout=30))["body"]["threadId"] == thread
                frames = (await client.call("stackTrace", {"threadId": thread}))["stackFrames"]
                assert frames[0]["line"] == line, command
            assert answers == [f"hello {n} #{k}" for k, n in enumerate(("ada", "bob")[: served - 1], start=1)]
            await client.call("continue", {"threadId": thread})
            await _answered(client, answers, served)
            assert answers[-1] == f"hello {name} #{served}"
        assert threads_stopped[0] != threads_stopped[1]
        await client.call("setBreakpoints", {"source": {"path": str(program)}, "breakpoints": []})
        threading.Thread(target=request, args=("cy",), daemon=True).start()
        await _answered(client, answers, 3)
        await client.call("pause", {"threadId": 1})
        paused = await client.wait_event("stopped", timeout=30)
        assert paused["body"]["reason"] == "pause"
        assert (await where(client))[2]["served"] == "3"
    with anyio.fail_after(10):  # the held program (every thread waiting) ends with the session
        while _children(mark):
            await anyio.sleep(0.1)


THREADED_LOOP = textwrap.dedent(
    """\
    import threading
    import time

    total = 0


    def count():
        global total
        for i in range(12000):
            total += i
            time.sleep(0.01)


    worker = threading.Thread(target=count, name="counter")
    worker.start()
    worker.join()
    """
)


@pytest.mark.parametrize(
    ("text", "line", "thread_name"), [(LOOP, LOOP_LINE, "MainThread"), (THREADED_LOOP, 10, "counter")]
)
async def test_a_breakpoint_set_while_the_program_runs_stops_it(
    tmp_path: Path, text: str, line: int, thread_name: str
) -> None:
    """The breakpoint an editor sets while the program runs (no breakpoint at the launch) stops it
    at its next hit, in the thread that hits it. (Before, the continue in flight kept the lines it
    began with: the program stopped there and was at once sent on, as if by nobody.)"""
    program = tmp_path / "counting.py"
    program.write_text(text)

    async def round_here(thread: int) -> int:
        frames = (await client.call("stackTrace", {"threadId": thread}))["stackFrames"]
        assert frames[0]["line"] == line
        answer = await client.call("evaluate", {"expression": "i", "frameId": frames[0]["id"], "context": "watch"})
        return int(answer["result"])

    async with adapter() as client:
        await _launch(client, {"program": str(program)}, {})
        await anyio.sleep(1.0)  # (about 90 rounds of 10 ms: the program runs, no breakpoint yet)
        await client.call("setBreakpoints", {"source": {"path": str(program)}, "breakpoints": [{"line": line}]})
        stopped = await client.wait_event("stopped", timeout=30)
        assert stopped["body"]["reason"] == "breakpoint"
        thread = stopped["body"]["threadId"]
        names = {t["id"]: t["name"] for t in (await client.call("threads"))["threads"]}
        assert names[thread] == thread_name
        first = await round_here(thread)
        assert first >= 10  # the hit after the breakpoint was set, not the first of the run (round 0)
        await client.call("continue", {"threadId": thread})  # and the next hit, one round later
        assert (await client.wait_event("stopped", timeout=30))["body"]["reason"] == "breakpoint"
        assert await round_here(thread) == first + 1


HELD_WORKER = textwrap.dedent(
    """\
    import threading


    class Box:
        def __init__(self, n):
            self.n = n

        def double(self):
            return self.n * 2


    def work(out, box):
        try:
            raise KeyError("missing", 3)
        except KeyError as exc:
            problem = exc
            out.append(box.double())
        return problem


    def wait_for(event):
        event.wait()  # (idle here while the worker runs: no event of its own says it is alive)


    results = []
    done = threading.Event()
    waiter = threading.Thread(target=wait_for, args=(done,), name="waiter")
    waiter.start()
    t = threading.Thread(target=work, args=(results, Box(21)), name="worker")
    t.start()
    t.join()
    done.set()
    waiter.join()
    print(results)
    """
)


@pytest.mark.parametrize("threads", ["skeletons", "full"])
async def test_a_worker_held_at_a_stop_answers_expressions_with_its_real_objects(tmp_path: Path, threads: str) -> None:
    """Where the program is held, every thread recorded, a copy of it made at the stop evaluates the
    user's expressions as debugpy does: a method call, the running thread, an exception's args (also
    in the Variables view), and the program's threads as the program has them (a fork keeps one).
    The Threads view lists a thread that waits idle (it has no event to say it is alive). A moment
    travelled back to: every thread as skeletons (the default), a replay of the threads in the
    recorded order leaves a copy there that answers; every thread in full, it has no program, and
    says so."""
    program = tmp_path / "held.py"
    program.write_text(HELD_WORKER)
    async with adapter() as client:
        await _launch(client, {"program": str(program), "threads": threads}, {str(program): [{"line": 17}]})
        thread = (await client.wait_event("stopped", timeout=30))["body"]["threadId"]
        frames = (await client.call("stackTrace", {"threadId": thread}))["stackFrames"]
        assert (frames[0]["name"], frames[0]["line"]) == ("work", 17)

        async def evaluate(expression: str) -> str:
            answer = await client.call(
                "evaluate", {"expression": expression, "frameId": frames[0]["id"], "context": "repl"}
            )
            return answer["result"]

        names = [t["name"] for t in (await client.call("threads"))["threads"]]
        # (numbered as each first ran the user's code: the two threads race to theirs)
        assert names[0] == "MainThread" and sorted(names) == ["MainThread", "waiter", "worker"]
        assert await evaluate("box.double()") == "42"
        assert await evaluate("threading.current_thread().name") == "'worker'"
        assert await evaluate("sorted(t.name for t in threading.enumerate() if t.is_alive())") == (
            "['MainThread', 'waiter', 'worker']"
        )
        assert await evaluate("threading.main_thread().name") == "'MainThread'"
        assert await evaluate("problem.args") == "('missing', 3)"
        scopes = (await client.call("scopes", {"frameId": frames[0]["id"]}))["scopes"]
        variables = (await client.call("variables", {"variablesReference": scopes[0]["variablesReference"]}))[
            "variables"
        ]
        problem = next(v for v in variables if v["name"] == "problem")
        children = (await client.call("variables", {"variablesReference": problem["variablesReference"]}))["variables"]
        assert ("args", "('missing', 3)") in [(c["name"], c["value"]) for c in children]
        await client.call("stepBack", {"threadId": thread})
        await client.wait_event("stopped", timeout=30)
        frames = (await client.call("stackTrace", {"threadId": thread}))["stackFrames"]
        assert (frames[0]["name"], frames[0]["line"]) == ("work", 16)
        if threads == "skeletons":
            assert await evaluate("box.double()") == "42"
            assert await evaluate("threading.current_thread().name") == "'worker'"
            return
        with pytest.raises(DapError, match="nothing of the program runs here"):
            await evaluate("box.double()")


async def test_a_disconnect_while_the_program_runs_ends_it_at_once(tmp_path: Path) -> None:
    """The session ends while the program runs (no stop held): the program is stopped as a pause
    stops it and ends there (it ran on until the adapter gave up on it, 6 s, before)."""
    program = tmp_path / "loop.py"
    program.write_text(LOOP)
    env, mark = _session()
    async with adapter(env=env) as client:
        await _launch(client, {"program": str(program)}, {})
        assert _children(mark), "the session's processes are not found by their mark"
        await anyio.sleep(0.3)
        with anyio.fail_after(3):
            await client.call("disconnect", {"terminateDebuggee": True})
    with anyio.fail_after(10):
        while _children(mark):
            await anyio.sleep(0.1)


def _loop_recorded_live(tmp_path: Path, wall_time: float) -> tuple[Any, list, threading.Thread]:
    """LOOP recorded live in a thread of the test's, as a session records it: (its LiveControl, the
    list the finished recording goes into, the thread)."""
    from neural_dap.trace.live_recording import LiveControl
    from neural_dap.trace.recorder import Limits, Program, record_skeleton

    program = tmp_path / "loop.py"
    program.write_text(LOOP)
    control = LiveControl()
    ended: list = []
    recorder = threading.Thread(
        target=lambda: ended.append(record_skeleton(Program(str(program)), Limits(wall_time=wall_time), live=control))
    )
    recorder.start()
    return control, ended, recorder


def test_an_end_right_behind_a_run_ends_the_program_the_run_let_go(tmp_path: Path) -> None:
    """The session's end sent right behind a run command, both read while the program is still
    held (as when a loaded adapter sent `run` late and a disconnect's end right after): the program
    stops again as a pause stops it and ends there. (The end was read by no one: the program ran
    on, here for the recording's whole wall-time limit, and a disconnect waited 6 s.)"""
    control, ended, recorder = _loop_recorded_live(tmp_path, wall_time=20)
    assert control.next_stop(timeout=30) is not None  # held at its first event
    started = time.monotonic()
    # both in one write, so the child reads them together (no stop asked for: it would run two minutes)
    run = {"at": -1, "within": -1, "exit": -1, "exceptions": False, "breakpoints": {}, "resumes": -1}
    os.write(
        control.command_write, json.dumps({"run": run}).encode() + b"\n" + json.dumps({"end": True}).encode() + b"\n"
    )
    control.end()  # (the session's own end closes the pipe)
    recorder.join(timeout=30)
    assert ended and time.monotonic() - started < 10
    assert ended[0].outcome.kind == "paused", ended[0].outcome


def test_breakpoints_set_while_the_program_runs_hold_once_the_program_says_so(tmp_path: Path) -> None:
    """A breakpoint set while the program runs (no stop held) is taken by a thread of the
    recorder's, which waits for the GIL: the program says when it holds (the session answers
    setBreakpoints then), and from then on its next hit stops there. (A request made right after the
    answer met a breakpoint the session had removed, on a loaded machine: CI, once.)"""
    control, ended, recorder = _loop_recorded_live(tmp_path, wall_time=60)
    program = tmp_path / "loop.py"
    try:
        assert control.next_stop(timeout=30) is not None  # held at its first event
        run = {"at": -1, "within": -1, "exit": -1, "exceptions": False, "breakpoints": {}, "resumes": -1}
        os.write(control.command_write, json.dumps({"run": run}).encode() + b"\n")  # it runs on, no stop
        time.sleep(0.2)
        assert control.next_stop(timeout=0.1) is None  # (running, no breakpoint)
        control.set_breakpoints({str(program): [LOOP_LINE]})
        assert control.breakpoints_taken(10.0)
        stop = control.next_stop(timeout=10)
        assert stop is not None and stop[1] == "breakpoint"
    finally:
        control.end()
        recorder.join(timeout=30)
    assert ended and ended[0].outcome.kind == "paused", ended


async def test_a_hit_count_stops_a_long_loop_at_once_and_travels_both_ways(tmp_path: Path) -> None:
    program = tmp_path / "loop.py"
    program.write_text(LOOP)
    async with adapter() as client:
        started = time.monotonic()
        await _launch(client, {"program": str(program)}, {str(program): [{"line": LOOP_LINE, "hitCondition": "10"}]})
        stopped = await client.wait_event("stopped", timeout=30)
        assert time.monotonic() - started < 10  # the program would run two minutes
        assert stopped["body"]["reason"] == "breakpoint"
        assert (await where(client))[2]["i"] == "9"  # the tenth hit
        await client.call("setBreakpoints", {"source": {"path": str(program)}, "breakpoints": [{"line": LOOP_LINE}]})
        await client.call("reverseContinue", {"threadId": 1})
        await client.wait_event("stopped")
        assert (await where(client))[2]["i"] == "8"  # back over the recorded past
        for expected in ("9", "10", "11"):  # forward: through the recorded past, then past its end
            await client.call("continue", {"threadId": 1})
            await client.wait_event("stopped")
            assert (await where(client))[2]["i"] == expected
        await client.call("stepBack", {"threadId": 1})
        await client.wait_event("stopped")
        await client.call("next", {"threadId": 1})  # lands on the last recorded event itself
        await client.wait_event("stopped")
        assert (await where(client))[1:] == (
            LOOP_LINE,
            {"time": "<module 'time' (built-in)>", "total": "55", "i": "11"},
        )
        await client.call("setBreakpoints", {"source": {"path": str(program)}, "breakpoints": []})
        await client.call("continue", {"threadId": 1})
        await anyio.sleep(0.5)
        await client.call("pause", {"threadId": 1})
        paused = await client.wait_event("stopped", timeout=30)
        assert paused["body"]["reason"] == "pause"
        assert int((await where(client))[2]["i"]) > 11  # it ran on


COUNTED = textwrap.dedent(
    """\
    def bump(total, i):
        return total + i

    total = 0
    for i in range(30000):
        total = bump(total, i)
    print("total", total)
    """
)
COUNTED_LINE = 2  # return total + i


async def test_the_live_program_runs_past_the_hits_a_hit_condition_rules_out(tmp_path: Path) -> None:
    """A hit condition counts the hits of the whole run, and the live program runs past the hits it
    rules out without stopping for each (a round trip each made `==20000` a three-minute wait); a
    reverse-continue over the recorded hits obeys it too."""
    program = tmp_path / "counted.py"
    program.write_text(COUNTED)
    async with adapter() as client:
        started = time.monotonic()
        await _launch(
            client, {"program": str(program)}, {str(program): [{"line": COUNTED_LINE, "hitCondition": "==20000"}]}
        )
        await client.wait_event("stopped", timeout=60)
        assert (await where(client))[1:] == (COUNTED_LINE, {"total": str(sum(range(19999))), "i": "19999"})
        assert time.monotonic() - started < 60
        spec = {"line": COUNTED_LINE, "hitCondition": "%4000"}
        await client.call("setBreakpoints", {"source": {"path": str(program)}, "breakpoints": [spec]})
        await client.call("continue", {"threadId": 1})  # past the frontier: the 24000th hit
        await client.wait_event("stopped", timeout=60)
        assert (await where(client))[2]["i"] == "23999"
        await client.call("reverseContinue", {"threadId": 1})  # back over the recorded ones: the 20000th
        await client.wait_event("stopped", timeout=60)
        assert (await where(client))[2]["i"] == "19999"
        spec = {"line": COUNTED_LINE, "hitCondition": ">29998"}
        await client.call("setBreakpoints", {"source": {"path": str(program)}, "breakpoints": [spec]})
        for expected in ("29998", "29999"):  # the recorded hits are ruled out, then the live ones
            await client.call("continue", {"threadId": 1})
            await client.wait_event("stopped", timeout=60)
            assert (await where(client))[2]["i"] == expected
        assert time.monotonic() - started < 60


STEPPED_OFF = textwrap.dedent(
    """\
    import pathlib
    import sys


    def job(n):
        return n * 2


    print(job(1))
    pathlib.Path(sys.argv[1]).write_text("ran")
    print("end")
    """
)


@pytest.mark.parametrize("command", ["next", "stepOut"])
async def test_a_step_off_a_return_stops_before_the_callers_next_line_runs(tmp_path: Path, command: str) -> None:
    """The step off a function's exit is decided by the event after it; the held program had left
    the frame, so it was asked to stop on a frame that was gone and ran on: the caller's next line
    (here, writing a file) ran before the stop there was shown."""
    from .dap_helpers import step

    program, written = tmp_path / "stepped_off.py", tmp_path / "written.txt"
    program.write_text(STEPPED_OFF)
    async with adapter() as client:
        await _launch(client, {"program": str(program), "args": [str(written)]}, {str(program): [{"line": 6}]})
        await client.wait_event("stopped", timeout=60)
        _reason, (name, line, _local) = await step(client, command)
        if (name, line) == ("<module>", 9):  # (a step out shows the return at the call)
            assert not written.exists()
            _reason, (name, line, _local) = await step(client, "next")
        assert (name, line) == ("<module>", 10)
        assert not written.exists()  # (the line is about to run)
        await step(client, "next")
        assert written.read_text() == "ran"


async def test_live_false_records_to_the_end_first(tmp_path: Path) -> None:
    program = tmp_path / "short.py"
    program.write_text("total = 0\nfor i in range(3):\n    total += i\nprint(total)\n")
    async with adapter() as client:
        await _launch(client, {"program": str(program), "live": False, "stopOnEntry": True}, {})
        await client.wait_event("stopped")
        frame = (await client.call("stackTrace", {"threadId": 1}))["stackFrames"][0]["id"]
        history = await client.call("valueHistory", {"expression": "total", "frameId": frame})
        assert history["total"] == 3  # the whole run is there at the first stop
