"""Questions asked of the whole recorded run over DAP, through the real adapter: valueHistory,
calls, travel, logpointHistory and gotoTargets listing each execution of a line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from neural_dap.dapwire.client import DapError

from .dap_helpers import adapter, start, where

PROGRAM = textwrap.dedent(
    """\
    def square(x):
        y = x * x
        return y


    def main(limit):
        total = 0
        for i in range(limit):
            total += square(i)
        return total


    main(4)
    """
)


@pytest.fixture()
def program(tmp_path: Path) -> str:
    path = tmp_path / "squares.py"
    path.write_text(PROGRAM)
    return str(path)


@pytest.mark.parametrize("recording", ["full", "skeleton"])
async def test_value_history_calls_and_logpoint_history(program, recording):
    async with adapter() as c:
        await start(c, {"program": program, "recording": recording}, breakpoints={program: [{"line": 10}]})
        frame = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"][0]["id"]
        page = await c.call("valueHistory", {"expression": "total", "frameId": frame})
        assert [(ch["old"], ch["new"]) for ch in page["items"]] == [(None, "0"), ("0", "1"), ("1", "5"), ("5", "14")]
        assert page["total"] == 4 and page["totalExact"] is True
        assert {ch["moment"]["function"] for ch in page["items"]} == {"main"}
        assert all(ch["call"] == 1 for ch in page["items"])
        second = await c.call("valueHistory", {"expression": "total", "frameId": frame, "start": 1, "count": 2})
        assert [ch["new"] for ch in second["items"]] == ["1", "5"] and second["start"] == 1

        calls = await c.call("calls", {"function": "square", "count": 3})
        assert calls["total"] == 4 and len(calls["items"]) == 3
        assert [(k["arguments"], k["value"], k["raised"]) for k in calls["items"]] == [
            ({"x": "0"}, "0", False),
            ({"x": "1"}, "1", False),
            ({"x": "2"}, "4", False),
        ]
        first = calls["items"][0]
        assert first["moment"]["line"] == 1 and first["returned"]["line"] == 3 and first["depth"] == 2

        logs = await c.call(
            "logpointHistory", {"source": {"path": program}, "line": 9, "logMessage": "i={i} total={total}"}
        )
        assert [(entry["hit"], entry["text"]) for entry in logs["items"]] == [
            (1, "i=0 total=0"),
            (2, "i=1 total=0"),
            (3, "i=2 total=1"),
            (4, "i=3 total=5"),
        ]

        # travel to the moment a change happened: the client is told with a `goto` stop
        moment = page["items"][2]["moment"]["index"]
        await c.call("travel", {"index": moment})
        stopped = await c.wait_event("stopped")
        assert stopped["body"]["reason"] == "goto"
        assert (await where(c))[2]["total"] == "5"
        with pytest.raises(DapError, match="no event"):
            await c.call("travel", {"index": 10**9})


async def test_goto_targets_list_each_execution_of_a_line(program):
    async with adapter() as c:
        await start(c, {"program": program, "stopAtEnd": True}, breakpoints={program: [{"line": 10}]})
        targets = (await c.call("gotoTargets", {"source": {"path": program}, "line": 2}))["targets"]
        assert targets[0]["label"] == "line 2"  # run to the line, as before
        labels = [t["label"] for t in targets[1:]]
        assert labels == [f"line 2, hit {n} (x = {n - 1})" for n in range(1, 5)]
        await c.call("goto", {"threadId": 1, "targetId": targets[3]["id"]})
        assert (await c.wait_event("stopped"))["body"]["reason"] == "goto"
        assert await where(c) == ("square", 2, {"x": "2"})
        await c.call("goto", {"threadId": 1, "targetId": targets[1]["id"]})  # back in time, too
        await c.wait_event("stopped")
        assert await where(c) == ("square", 2, {"x": "0"})


def test_the_terminal_front_end_asks_the_recording(program):
    import subprocess
    import sys

    script = "b 10; c; history total; last total; calls square; log 9 i={i}; travel 5; q"
    result = subprocess.run(
        [sys.executable, "-m", "neural_dap", "debug", program, "--do", script],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = result.stdout
    # history and last: each change with the statement that made it, where it ran
    made = "5 \u2192 14   by `total += square(i)` @"
    assert f"  {made}" in out and "squares.py:9 in main; seen from @" in out and "(call 1)" in out
    assert f"total: {made}" in out
    assert "square(x=3) -> 9" in out  # calls
    assert "[hit 4] i=3" in out  # log
    assert "[goto] squares.py:" in out  # travel


def test_export_writes_the_calls_as_a_perfetto_trace(program, tmp_path):
    import json
    import subprocess
    import sys

    out = tmp_path / "trace.json"
    subprocess.run(
        [sys.executable, "-m", "neural_dap", "export", "--perfetto", str(out), program], check=True, timeout=120
    )
    events = json.loads(out.read_text())["traceEvents"]
    squares = [e for e in events if e["name"] == "square"]
    assert len(squares) == 4 and all(e["ph"] == "X" and e["dur"] > 0 for e in squares)
    main = next(e for e in events if e["name"] == "main")
    assert all(main["ts"] < e["ts"] and e["ts"] + e["dur"] <= main["ts"] + main["dur"] for e in squares)
