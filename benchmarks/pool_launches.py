"""Launches of a program with a fork-started multiprocessing pool, through the real adapter, over and
over: how many answer (the launch, then the stop at the end) and how long each takes. A rare hang
here was two signal races (docs/design-notes.md, issue 33): a SIGTERM the pool sends a worker just
before the worker blocks on its task queue, and a thread switch asked for just before the main
thread blocks in a join.

Run: python benchmarks/pool_launches.py [--runs N] [--method fork|spawn|forkserver]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from neural_dap.dapwire.client import DapError, adapter_command, spawn

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
ANSWER_SECONDS = 40.0


async def launch_once(program: str, method: str) -> float | None:
    """Seconds from the launch to the stop at the end, or None when either did not come."""
    async with spawn(adapter_command()) as client:

        async def answer(message: dict) -> dict | None:
            return {} if message.get("command") == "startDebugging" else None

        client.on_reverse_request = answer
        await client.call(
            "initialize", {"adapterID": "neural-dap", "linesStartAt1": True, "supportsStartDebuggingRequest": True}
        )
        await client.wait_event("initialized")
        started = time.perf_counter()
        seq = await client.send_request(
            "launch", {"program": program, "args": [method], "subProcess": True, "stopAtEnd": True}
        )
        await client.call("configurationDone")
        try:
            await client.response(seq, "launch", timeout=ANSWER_SECONDS)
            await client.wait_event("stopped", timeout=ANSWER_SECONDS)
        except DapError:
            return None
        return time.perf_counter() - started


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--method", default="fork", choices=["fork", "spawn", "forkserver"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "pool.py"
        program.write_text(POOL)
        times, hangs = [], 0
        for _ in range(args.runs):
            seconds = await launch_once(str(program), args.method)
            if seconds is None:
                hangs += 1
            else:
                times.append(seconds)
    print(f"{args.method}: {len(times)} of {args.runs} launches answered, {hangs} did not within {ANSWER_SECONDS:g} s")
    if times:
        median, worst = statistics.median(times) * 1000, max(times) * 1000
        print(f"launch to the stop at the end: median {median:.0f} ms, max {worst:.0f} ms")


if __name__ == "__main__":
    anyio.run(main)
