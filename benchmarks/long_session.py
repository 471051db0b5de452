"""A debug session on a long run, through the real adapter over stdio: a program of about 10^7 line
events, a breakpoint on its last line, then reverse-continue to the start, continue back to the
breakpoint, step back and evaluate; then questions asked of the whole run (issue 23): where `seed`
(set at the start) last changed, the first page of the history of `total` (changed ~10^6 times), of
the calls of `step` (called n/2 times), of a log point over the n/2 runs of line 14, and who changed
`seen`, a list appended to through another name in `note` a few times in the run (issue 35). Prints the
time of each request (the request, its `stopped` event and the stack, scopes and variables a client
then asks for) and the adapter's peak memory (after the launch and after each question).

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

from neural_dap.dapwire.client import DapClient, DapError, adapter_command, spawn

PROGRAM = textwrap.dedent(
    """
    def step(total, i):
        return total + i % 7

    def note(entries, i):
        entries.append(i)

    def work(n):
        seed = 12345
        total = 0
        seen = []
        for i in range(n):
            if i % 2 == 0:
                total = step(total, i)
            if i % 500_000 == 0:
                note(seen, i)
        return total + seed + len(seen)

    print(work({n}))
    """
)
LAST_LINE = 17  # `return total + seed + len(seen)`
STEP_LINE = 14  # `total = step(total, i)`: run n/2 times, and `step` called as often


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


def _last(answer: dict) -> dict:
    change = answer.get("change") or {}
    statement = change.get("statement") or {}
    return {
        "at": (change.get("moment") or {}).get("index"),
        "new": change.get("new"),
        "by": f"{statement.get('function')}:{statement.get('line')}" if statement else None,
    }


def _page(answer: dict) -> dict:
    items = answer["items"]
    bound = "" if answer.get("totalExact", True) else ">="
    return {"items": len(items), "total": f"{bound}{answer['total']:,}"}


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
            peaks = {rows[0][0]: peak_rss_mib(pid)}  # the adapter's peak memory after each question
            rows.append(("reverseContinue (to the start)", *await timed_stop(client, "reverseContinue")))
            rows.append(("continue (to the breakpoint)", *await timed_stop(client, "continue")))
            rows.append(("stepBack", *await timed_stop(client, "stepBack")))
            t = time.perf_counter()
            answer = await client.call("evaluate", {"expression": "total * 2", "frameId": rows[-1][2]["frame"]})
            rows.append(("evaluate total * 2", time.perf_counter() - t, {"result": answer["result"]}))
            frame = rows[-2][2]["frame"]
            for name, command, arguments, shown in (
                ("lastChange seed (set at the start)", "lastChange", {"expression": "seed", "frameId": frame}, _last),
                (
                    "valueHistory total, first page of 100",
                    "valueHistory",
                    {"expression": "total", "frameId": frame},
                    _page,
                ),
                ("calls step, first page of 100", "calls", {"function": "step"}, _page),
                # a list changed only through another name, in a callee, a few times in the run
                ("lastChange seen (changed in note)", "lastChange", {"expression": "seen", "frameId": frame}, _last),
                ("valueHistory seen, first page", "valueHistory", {"expression": "seen", "frameId": frame}, _page),
                (
                    "logpointHistory line 10, first page of 100",
                    "logpointHistory",
                    {"source": {"path": program}, "line": STEP_LINE, "logMessage": "i={i} total={total}"},
                    _page,
                ),
            ):
                t = time.perf_counter()
                try:
                    answer = await client.call(command, arguments, timeout=300)
                except DapError as refused:  # a question past the recording's limits says so: shown as it is
                    rows.append((name, time.perf_counter() - t, {"refused": refused.message}))
                else:
                    rows.append((name, time.perf_counter() - t, shown(answer)))
                peaks[name] = peak_rss_mib(pid)
            peak = peak_rss_mib(pid)
            await client.request("disconnect", {"terminateDebuggee": True}, timeout=10)
    events = 5 * iterations + 6
    print(f"program: {iterations:,} loop iterations, about {events:,} events ({python or sys.executable})")
    for name, seconds, view in rows:
        shown = ", ".join(f"{k}={v}" for k, v in view.items() if k != "frame")
        peak_text = f"{peaks[name]:>5.0f} MiB" if name in peaks else " " * 9
        print(f"  {name:<46} {seconds * 1e3:>9.0f} ms {peak_text}   {shown if 'refused' in view else shown[:70]}")
    print("  (each question of the whole run should answer in under 1 s)")
    print(f"  adapter peak memory (VmHWM)                    {peak:>9.0f} MiB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=2_500_000)
    parser.add_argument("--python", help="the interpreter that records the program (the `python` launch key)")
    opts = parser.parse_args()
    anyio.run(main, opts.iterations, opts.python)
