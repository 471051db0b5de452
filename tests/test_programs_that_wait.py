"""Programs that wait (a server, a sleep loop): debugged while they run, `pause` stops them where
they are (issue 34); recorded to their end first (batch, `"live": false`), the wall-time limit keeps
what was recorded and `pause` ends the recording there and opens it (issue 21, item 6)."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import anyio

from tests.dap_helpers import adapter, where

SERVER = textwrap.dedent(
    """\
    import time


    def handle(n):
        return n * 2


    total = 0
    for i in range(5):
        total += handle(i)
    print("ready", total, flush=True)
    while True:
        time.sleep(0.05)
    """
)


async def _launch(client, launch: dict, pause_after: float | None = None) -> tuple[dict, float]:
    await client.call("initialize", {"adapterID": "tests", "linesStartAt1": True})
    await client.wait_event("initialized")
    started = time.monotonic()
    seq = await client.send_request("launch", launch)
    await client.call("configurationDone")
    if pause_after is not None:
        await anyio.sleep(pause_after)
        await client.call("pause", {"threadId": 1})
    response = await client.response(seq, "launch")
    return response, time.monotonic() - started


async def test_the_wall_time_limit_keeps_what_was_recorded(tmp_path: Path) -> None:
    program = tmp_path / "server.py"
    program.write_text(SERVER)
    async with adapter() as client:
        response, _ = await _launch(client, {"program": str(program), "limits": {"wallTime": 2}})
        assert response["success"], response
        end = await client.wait_event("stopped")
        assert end["body"]["reason"] == "end" and "wall-time limit" in end["body"]["description"]
        assert (await where(client))[0] == "<module>"
        await client.call("reverseContinue", {"threadId": 1})
        await client.wait_event("stopped")
        lines = []
        for _ in range(3):  # the recorded start is there to travel through
            await client.call("next", {"threadId": 1})
            await client.wait_event("stopped")
            lines.append((await where(client))[1])
        assert lines[-2:] == [4, 8]


async def test_pause_while_a_batch_recording_runs_opens_what_was_recorded(tmp_path: Path) -> None:
    program = tmp_path / "server.py"
    program.write_text(SERVER)
    async with adapter() as client:
        response, took = await _launch(client, {"program": str(program), "live": False}, pause_after=1.5)
        assert response["success"], response
        assert took < 20  # not the 60 s wall-time limit
        end = await client.wait_event("stopped")
        assert end["body"]["reason"] == "end" and "paused" in end["body"]["description"]
        _, _, values = await where(client)
        assert values["total"] == "20"
        output = "".join(e["body"]["output"] for e in client.events if e.get("event") == "output")
        assert "ready 20" in output


async def test_pause_stops_a_program_that_runs_while_it_is_debugged(tmp_path: Path) -> None:
    """Debug while it runs (the default): the launch answers at once; pause stops the running
    program where it is, and everything before can be travelled."""
    program = tmp_path / "server.py"
    program.write_text(SERVER)
    async with adapter() as client:
        response, took = await _launch(client, {"program": str(program)})
        assert response["success"], response
        assert took < 10  # the launch does not wait for the program (which never ends)
        await anyio.sleep(1.5)  # (no breakpoint: it runs)
        await client.call("pause", {"threadId": 1})
        paused = await client.wait_event("stopped", timeout=30)
        assert paused["body"]["reason"] == "pause"
        _, _, values = await where(client)
        assert values["total"] == "20"
        output = "".join(e["body"]["output"] for e in client.events if e.get("event") == "output")
        assert "ready 20" in output
        await client.call("reverseContinue", {"threadId": 1})
        assert (await client.wait_event("stopped"))["body"]["reason"] == "entry"
