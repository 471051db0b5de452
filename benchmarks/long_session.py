"""A debug session on a long run, through the real adapter over stdio: a program of about 10^7 line
events, a breakpoint on its last line, then reverse-continue to the start, continue back to the
breakpoint, step back and evaluate. Prints the time of each request (the request, its `stopped`
event and the stack, scopes and variables a client then asks for) and the adapter's peak memory.

Run: python benchmarks/long_session.py [--iterations N] [--python PATH]
(`--python`: the interpreter that records the program, as the `python` launch key; default: this one)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from neural_dap.dap.client import DapClient, adapter_command, spawn

PROGRAM = textwrap.dedent(
    """
    def work(n):
        total = 0
        for i in range(n):
            total += i % 7
        return total

    print(work({n}))
    """
)
LAST_LINE = 6  # `return total`


async def stop_view(client: DapClient) -> dict:
    """What a client shows at a stop: the stack, the scopes of the top frame, its variables."""
    frames = (await client.call("stackTrace", {"threadId": 1}))["stackFrames"]
    scopes = (await client.call("scopes", {"frameId": frames[0]["id"]}))["scopes"]
    variables = (await client.call("variables", {"variablesReference": scopes[0]["variablesReference"]}))["variables"]
    return {"line": frames[0]["line"], "frame": frames[0]["id"], **{v["name"]: v["value"] for v in variables}}


async def timed_stop(client: DapClient, command: str) -> tuple[float, dict]:
    t = time.perf_counter()
    await client.call(command, {"threadId": 1})
    event = await client.wait_event({"stopped", "terminated"})
    assert event["event"] == "stopped", event
    view = await stop_view(client)
    return time.perf_counter() - t, view


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def main(iterations: int, python: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        program = os.path.join(tmp, "long.py")
        Path(program).write_text(PROGRAM.format(n=iterations))
        launch: dict = {"program": program}
        if python:
            launch["python"] = python
        async with spawn(adapter_command(), timeout=300) as client:
            pid = client.process.pid  # type: ignore[attr-defined]
            await client.call("initialize", {"adapterID": "bench", "linesStartAt1": True, "pathFormat": "path"})
            t = time.perf_counter()
            seq = await client.send_request("launch", launch)
            await client.wait_event("initialized")
            await client.call("setBreakpoints", {"source": {"path": program}, "breakpoints": [{"line": LAST_LINE}]})
            await client.call("configurationDone")
            await client.response(seq, "launch", timeout=300)
            await client.wait_event("stopped", timeout=300)
            view = await stop_view(client)
            first = time.perf_counter() - t
            assert view["line"] == LAST_LINE, view
            rows = [("launch: record, then stop at the breakpoint", first, view)]
            rows.append(("reverseContinue (to the start)", *await timed_stop(client, "reverseContinue")))
            rows.append(("continue (to the breakpoint)", *await timed_stop(client, "continue")))
            rows.append(("stepBack", *await timed_stop(client, "stepBack")))
            t = time.perf_counter()
            answer = await client.call("evaluate", {"expression": "total * 2", "frameId": rows[-1][2]["frame"]})
            rows.append(("evaluate total * 2", time.perf_counter() - t, {"result": answer["result"]}))
            peak = peak_rss_mib(pid)
            await client.request("disconnect", {"terminateDebuggee": True}, timeout=10)
    events = 2 * iterations + 4
    print(f"program: {iterations:,} loop iterations, about {events:,} events ({python or sys.executable})")
    for name, seconds, view in rows:
        shown = ", ".join(f"{k}={v}" for k, v in view.items() if k != "frame")
        print(f"  {name:<46} {seconds * 1e3:>9.0f} ms   {shown[:70]}")
    print(f"  adapter peak memory (VmHWM)                    {peak:>9.0f} MiB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=5_000_000)
    parser.add_argument("--python", help="the interpreter that records the program (the `python` launch key)")
    opts = parser.parse_args()
    anyio.run(main, opts.iterations, opts.python)
