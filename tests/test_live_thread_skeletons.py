"""A live session (the default launch) of a program that runs threads: every thread is recorded as
skeleton records from the second one on, and the program still stops while it runs. A stop's own
event is captured as the program makes it; the program is held there (every other thread at its
next event) and a copy of it answers expressions; the other moments are rebuilt by replaying the
threads in the recorded order. The program runs once: what it writes is written once."""

from __future__ import annotations

import tempfile
import textwrap
from pathlib import Path

import anyio
import pytest

from .dap_helpers import adapter, start
from .test_child_real_world import _interpreter

PROGRAM = textwrap.dedent(
    """\
    import threading

    tally = {"done": 0}
    lock = threading.Lock()


    def work(name, n, log):
        for k in range(n):
            with open(log, "a") as fh:
                fh.write(f"{name} {k}\\n")
            with lock:
                tally["done"] += 1
        return n


    threads = [threading.Thread(target=work, args=(f"w{i}", 3, "LOG"), name=f"w{i}") for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(tally["done"])
    """
)
WRITE_LINE = 10  # fh.write(...)


async def _top(client, thread: int) -> tuple[str, int, dict[str, str]]:
    frames = (await client.call("stackTrace", {"threadId": thread}))["stackFrames"]
    scopes = (await client.call("scopes", {"frameId": frames[0]["id"]}))["scopes"]
    shown = {}
    for scope in scopes:
        variables = (await client.call("variables", {"variablesReference": scope["variablesReference"]}))["variables"]
        shown.update({f"{scope['name']}.{v['name']}": v["value"] for v in variables})
    return frames[0]["name"], frames[0]["line"], shown


async def _evaluate(client, thread: int, expression: str) -> str:
    frames = (await client.call("stackTrace", {"threadId": thread}))["stackFrames"]
    reply = await client.call("evaluate", {"expression": expression, "frameId": frames[0]["id"], "context": "repl"})
    return reply["result"]


async def _go(client, command: str, thread: int) -> dict:
    await client.call(command, {"threadId": thread})
    return (await client.wait_event("stopped", timeout=60))["body"]


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
async def test_a_live_session_of_threads_stops_steps_travels_back_and_changes_the_world_once(tmp_path, version):
    log = tmp_path / "work.log"
    program = tmp_path / "live_threads.py"
    program.write_text(PROGRAM.replace('"LOG"', repr(str(log))))
    launch = {"program": str(program), "stopOnEntry": False}
    python = _interpreter(version)
    if python:
        launch["python"] = python
    async with adapter() as client:
        body = (await start(client, launch, {str(program): [{"line": WRITE_LINE}]}))["body"]
        assert body["reason"] == "breakpoint"
        first = body["threadId"]
        function, line, shown = await _top(client, first)
        assert (function, line) == ("work", WRITE_LINE) and shown["Locals.k"] == "0"
        # held there: the copy of the program answers with its real objects, and the module's
        # globals are the program's as they are now
        assert await _evaluate(client, first, "threading.current_thread().name") == f"'{shown['Locals.name'][1:-1]}'"
        done_now = await _evaluate(client, first, "tally['done']")
        assert shown["Globals.tally"] == f"{{'done': {done_now}}}"

        # a step in the stopping thread (out of the `with` body: its line again, for the file's
        # closing), and back
        body = await _go(client, "next", first)
        assert body["threadId"] == first and (await _top(client, first))[1] == WRITE_LINE - 1
        body = await _go(client, "stepBack", first)
        assert body["threadId"] == first and (await _top(client, first))[1] == WRITE_LINE
        assert (await _top(client, first))[2]["Locals.k"] == "0"

        # continue: every hit of both workers, each with its own values, in some order
        seen = [((await _top(client, first))[2]["Locals.name"], "0")]
        thread = first
        for _ in range(5):
            body = await _go(client, "continue", thread)
            assert body["reason"] == "breakpoint"
            thread = body["threadId"]
            _function, _line, shown = await _top(client, thread)
            seen.append((shown["Locals.name"], shown["Locals.k"]))
        assert sorted(seen) == [(f"'w{i}'", str(k)) for i in range(2) for k in range(3)]

        # back over the threads: the hit before, rebuilt by a replay in the recorded order, with a
        # copy of the program there too
        body = await _go(client, "reverseContinue", thread)
        assert body["reason"] == "breakpoint"
        _function, _line, shown = await _top(client, body["threadId"])
        assert (shown["Locals.name"], shown["Locals.k"]) == seen[-2]
        assert await _evaluate(client, body["threadId"], "k + 100") == str(100 + int(seen[-2][1]))

        # on to the end, with no breakpoint left: the program ends as it would have
        await client.call("setBreakpoints", {"source": {"path": str(program)}, "breakpoints": []})
        assert (await _go(client, "continue", body["threadId"]))["reason"] == "end"
        assert "6\n" in "".join(e["body"]["output"] for e in client.events_named("output"))
    # the program ran once: each worker wrote each of its lines once
    lines = log.read_text().splitlines() if log.exists() else []
    assert sorted(lines) == [f"w{i} {k}" for i in range(2) for k in range(3)]


HELD = textwrap.dedent(
    """\
    import threading

    tally = {"done": 0}


    def work(n):
        for k in range(n):
            tally["done"] += 1
            print(k)
        return n


    worker = threading.Thread(target=work, args=(3,), name="worker")
    worker.start()
    worker.join()
    """
)
PRINT_LINE = 9  # print(k)


@pytest.mark.anyio
async def test_a_held_stops_own_values_and_globals_need_no_replay_and_a_moment_that_does_not_rebuild_says_so(
    tmp_path,
):
    """Where the program is held at a stop in a worker, the stop's frames are its own event's (captured
    as the program made it) and the module's globals are the program's there: neither needs a replay
    of the threads, so a stop shows whole even where the other moments do not rebuild (here: the
    recording's checkpoints are gone), and asking for one of those (the main thread's frames, which a
    replay rebuilds) is refused with the reason, never an internal error."""
    program = tmp_path / "held.py"
    program.write_text(HELD)
    # (the session's own temporary folder, short: a checkpoint's socket path has at most 107 bytes)
    with tempfile.TemporaryDirectory(prefix="nd-") as where:
        await _held_without_checkpoints(program, Path(where))


async def _held_without_checkpoints(program: Path, folder: Path) -> None:
    async with adapter(env={"TMPDIR": str(folder)}) as client:
        body = (await start(client, {"program": str(program)}, {str(program): [{"line": PRINT_LINE}]}))["body"]
        worker = body["threadId"]
        gone = list(folder.glob("neural-dap-rec-*/cp-*.sock"))
        assert gone, "the recording keeps its checkpoints as sockets in its folder"
        for path in gone:
            path.unlink()
        body = await _go(client, "continue", worker)
        assert body["reason"] == "breakpoint" and body["threadId"] == worker
        function, line, shown = await _top(client, worker)
        assert (function, line) == ("work", PRINT_LINE) and shown["Locals.k"] == "1"
        assert shown["Globals.tally"] == "{'done': 2}"
        assert await _evaluate(client, worker, "tally['done'] * 10") == "20"
        reply = await client.request("stackTrace", {"threadId": 1})
        assert not reply["success"] and "cannot be rebuilt" in reply["message"], reply
        assert "internal error" not in reply["message"]


IDLE_SERVER = textwrap.dedent(
    """\
    import http.server
    import sys
    import threading

    served = {"n": 0}


    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            served["n"] += 1
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass


    server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Event().wait()
    """
)


@pytest.mark.anyio
async def test_a_pause_where_every_thread_waits_shows_the_program_at_once(tmp_path):
    """A server in a thread, the main thread waiting for ever, three requests served: a pause stops
    the program there and shows its latest event, the values of which a replay of the threads
    rebuilds up to the recording's very last event, where every thread of the replay waits as the
    program did (no next event ends the replay's window: it took the checkpoint's 60 s limit)."""
    import urllib.request

    from .test_live_sessions import _free_port, _launch, _listening

    program = tmp_path / "idle_server.py"
    program.write_text(IDLE_SERVER)
    port = _free_port()
    async with adapter() as client:
        await _launch(client, {"program": str(program), "args": [str(port)]}, {})
        await _listening(port)
        for k in range(3):
            await anyio.to_thread.run_sync(lambda k=k: urllib.request.urlopen(f"http://127.0.0.1:{port}/{k}").read())
        await client.call("pause", {"threadId": 1})
        body = (await client.wait_event("stopped", timeout=15))["body"]
        assert body["reason"] == "pause"
        names = [t["name"] for t in (await client.call("threads"))["threads"]]
        assert "MainThread" in names and any("serve_forever" in name for name in names)
        assert await _evaluate(client, 1, "served['n']") == "3"
        await client.call("disconnect")
