"""One DAP stop round trip (next -> stopped -> stackTrace -> scopes -> variables), measured with the
same client on the same program for neural-dap (recorded world) and for debugpy's adapter, as shipped,
with TCP_NODELAY set on its sockets and with its adapter acknowledging at once, as the debugpy peer runs
it (debugpy leaves Nagle's algorithm on between its adapter and the debuggee, which stalls each small
message: microsoft/debugpy#2054; reality/debugpy_adapter.py). neural-dap runs twice: debugging the program while
it runs (the default: each stop past the last recorded event resumes the held program) and recorded
to its end first (`"live": false`). The "live" rows: a breakpoint hit in the running program, from
`continue` to its `stopped` event and first variables. Then `evaluate` of an expression that calls
functions, side by side: neural-dap answers it in a live copy of the program at the stop, made at the
stop's first expression (a replay from a checkpoint and a fork) and reused for the next ones.

Run: python benchmarks/dap_stop.py [--stops N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from neural_dap.dapwire.client import DapClient, adapter_command, spawn
from neural_dap.reality.debugpy_peer import debugpy_adapter_command

PROGRAM = textwrap.dedent(
    """
    def work(n):
        total = 0
        items = []
        for i in range(n):
            total += i * i
            items.append(total % 7)
            label = f"step {i}"
        return total, items, label

    print(work(400))
    """
)
# the same work in a worker thread the main thread waits for: every thread recorded in full from
# its start, and the program held at each stop (every other thread waiting at its next event)
THREADED = PROGRAM.replace(
    "print(work(400))", "import threading\nt = threading.Thread(target=work, args=(400,))\nt.start()\nt.join()"
)
NODELAY = textwrap.dedent(
    """
    import socket
    _connect, _accept = socket.socket.connect, socket.socket.accept
    def _nodelay(sock):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
    def connect(self, *a, **k):
        result = _connect(self, *a, **k)
        if self.family in (socket.AF_INET, socket.AF_INET6) and self.type == socket.SOCK_STREAM:
            _nodelay(self)
        return result
    def accept(self):
        conn, addr = _accept(self)
        _nodelay(conn)
        return conn, addr
    socket.socket.connect, socket.socket.accept = connect, accept
    """
)


async def round_trips(client: DapClient, stops: int, command: str = "next", thread: int = 1) -> list[float]:
    """Each stop of `stops` commands, to its first variables (in the thread that stops)."""
    timings = []
    for _ in range(stops):
        t = time.perf_counter()
        await client.call(command, {"threadId": thread})
        message = await client.wait_event({"stopped", "terminated"})
        if message["event"] != "stopped":
            break
        thread = message["body"].get("threadId", thread)
        frames = (await client.call("stackTrace", {"threadId": thread}))["stackFrames"]
        scopes = (await client.call("scopes", {"frameId": frames[0]["id"]}))["scopes"]
        await client.call("variables", {"variablesReference": scopes[0]["variablesReference"]})
        timings.append(time.perf_counter() - t)
    return timings


EXPRESSION = "sum(items) + len(label) + max(items, default=0)"


async def evaluations(client: DapClient, stops: int, thread: int = 1) -> tuple[list[float], list[float]]:
    """(the first evaluate at each new stop, a second one at the same stop)"""
    first, again = [], []
    for _ in range(stops):
        await client.call("next", {"threadId": thread})
        message = await client.wait_event({"stopped", "terminated"})
        if message["event"] != "stopped":
            break
        frame = (await client.call("stackTrace", {"threadId": thread}))["stackFrames"][0]["id"]
        for timings in (first, again):
            t = time.perf_counter()
            await client.call("evaluate", {"expression": EXPRESSION, "frameId": frame, "context": "watch"})
            timings.append(time.perf_counter() - t)
    return first, again


async def session(
    command: list[str], launch: dict, line: int, stops: int, env: dict | None = None
) -> tuple[list[float], list[float], list[float], list[float]]:
    async with spawn(command, env=env, timeout=60) as client:
        await client.call(
            "initialize",
            {
                "adapterID": "bench",
                "clientID": "bench",
                "linesStartAt1": True,
                "columnsStartAt1": True,
                "pathFormat": "path",
            },
        )
        seq = await client.send_request("launch", launch)
        await client.wait_event("initialized")
        await client.call("setBreakpoints", {"source": {"path": launch["program"]}, "breakpoints": [{"line": line}]})
        await client.call("configurationDone")
        await client.response(seq, "launch")
        thread = (await client.wait_event("stopped"))["body"].get("threadId", 1)  # (a worker's, with threads)
        hits = await round_trips(client, min(stops, 100), "continue", thread)  # the breakpoint, hit again and again
        await client.call("setBreakpoints", {"source": {"path": launch["program"]}, "breakpoints": []})
        await round_trips(client, 5, "next", thread)  # warm up
        timings = await round_trips(client, stops, "next", thread)
        first, again = await evaluations(client, max(10, stops // 5), thread)
        await client.request("disconnect", {"terminateDebuggee": True}, timeout=5)
        return timings, first, again, hits


LONG_LOOP = "import time\ntotal = 0\nfor i in range(12000):\n    total += i\n    time.sleep(0.01)\n"


async def tenth_hit(command: list[str], launch: dict) -> float:
    """A program that would run two minutes, a breakpoint with hit condition 10: seconds from
    configurationDone to the stop and its variables."""
    async with spawn(command, timeout=60) as client:
        await client.call("initialize", {"adapterID": "bench", "linesStartAt1": True, "columnsStartAt1": True})
        seq = await client.send_request("launch", launch)
        await client.wait_event("initialized")
        await client.call(
            "setBreakpoints",
            {"source": {"path": launch["program"]}, "breakpoints": [{"line": 4, "hitCondition": "10"}]},
        )
        t = time.perf_counter()
        await client.call("configurationDone")
        await client.wait_event("stopped", timeout=180)
        frames = (await client.call("stackTrace", {"threadId": 1}))["stackFrames"]
        scopes = (await client.call("scopes", {"frameId": frames[0]["id"]}))["scopes"]
        await client.call("variables", {"variablesReference": scopes[0]["variablesReference"]})
        took = time.perf_counter() - t
        await client.response(seq, "launch")
        await client.request("disconnect", {"terminateDebuggee": True}, timeout=5)
        return took


def describe(name: str, timings: list[float]) -> tuple[float, float]:
    ordered = sorted(timings)
    median = statistics.median(ordered) * 1e3
    p95 = ordered[int(0.95 * (len(ordered) - 1))] * 1e3
    print(f"{name:<44} n {len(timings):>4}   median {median:8.2f} ms   p95 {p95:8.2f} ms")
    return median, p95


async def main(stops: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        program = os.path.join(tmp, "work.py")
        Path(program).write_text(PROGRAM)
        hooks = os.path.join(tmp, "hooks")
        os.makedirs(hooks)
        Path(hooks, "sitecustomize.py").write_text(NODELAY)
        runs = {}
        runs["neural-dap (recorded)"] = await session(adapter_command(), {"program": program}, 6, stops)
        runs["neural-dap (recorded first)"] = await session(
            adapter_command(), {"program": program, "live": False}, 6, stops
        )
        debugpy = [sys.executable, "-m", "debugpy.adapter"]
        launch = {"program": program, "console": "internalConsole", "justMyCode": True}
        runs["debugpy (as shipped)"] = await session(debugpy, launch, 6, stops)
        env = {"PYTHONPATH": hooks + os.pathsep + os.environ.get("PYTHONPATH", "")}
        runs["debugpy (TCP_NODELAY)"] = await session(debugpy, {**launch, "env": env}, 6, stops, env=env)
        # the program untouched, its adapter acknowledging at once: how the debugpy peer runs it
        runs["debugpy (quick ACKs, the peer's)"] = await session(debugpy_adapter_command(), launch, 6, stops)
        threaded = os.path.join(tmp, "threaded.py")
        Path(threaded).write_text(THREADED)
        runs["neural-dap (recorded, a worker thread)"] = await session(
            adapter_command(), {"program": threaded}, 6, stops
        )
        runs["debugpy (TCP_NODELAY, a worker thread)"] = await session(
            debugpy, {**launch, "program": threaded, "env": env}, 6, stops, env=env
        )
        loop = os.path.join(tmp, "long_loop.py")
        Path(loop).write_text(LONG_LOOP)
        print("the 10th hit of a breakpoint in a program that would run 2 minutes, from configurationDone:")
        for name, command, launch in (
            ("neural-dap", adapter_command(), {"program": loop}),
            ("debugpy", debugpy, {"program": loop, "console": "internalConsole", "justMyCode": True}),
        ):
            print(f"  {name:<12} {await tenth_hit(command, launch):6.2f} s")
    results = {name: run[0] for name, run in runs.items()}
    print()
    print("live: continue to a breakpoint hit in the running program -> stopped -> variables:")
    live = {name: describe(f"{name}: live", run[3]) for name, run in runs.items() if "first" not in name}
    for name in ("debugpy (as shipped)", "debugpy (TCP_NODELAY)", "debugpy (quick ACKs, the peer's)"):
        print(f"ratio neural-dap / {name}: median {live['neural-dap (recorded)'][0] / live[name][0]:6.2f}x")
    threads = live["neural-dap (recorded, a worker thread)"][0] / live["debugpy (TCP_NODELAY, a worker thread)"][0]
    print(f"ratio neural-dap / debugpy (TCP_NODELAY), a worker thread: median {threads:6.2f}x")
    print()
    print(f"evaluate {EXPRESSION!r}:")
    for name, (_, first, again, _hits) in runs.items():
        describe(f"{name}: first at a stop", first)
        describe(f"{name}: again", again)
    print()
    summary = {name: describe(name, t) for name, t in results.items()}
    ours = summary["neural-dap (recorded)"][0]
    threads = (
        summary["debugpy (TCP_NODELAY, a worker thread)"][0] / summary["neural-dap (recorded, a worker thread)"][0]
    )
    print(f"ratio debugpy (TCP_NODELAY) / neural-dap, a worker thread: median {threads:6.1f}x")
    for name in ("debugpy (as shipped)", "debugpy (TCP_NODELAY)", "debugpy (quick ACKs, the peer's)"):
        print(
            f"ratio {name} / neural-dap: median {summary[name][0] / ours:6.1f}x   "
            f"p95 {summary[name][1] / summary['neural-dap (recorded)'][1]:6.1f}x"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stops", type=int, default=200)
    anyio.run(main, parser.parse_args().stops)
