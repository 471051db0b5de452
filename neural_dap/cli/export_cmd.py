"""`neural-dap export --perfetto OUT.json PROGRAM [ARGS...]`: the recorded run's calls as a trace
for the Perfetto UI (ui.perfetto.dev) or chrome://tracing.

The program is recorded once (as the debugger's recorded world does), and every call becomes one
Chrome trace event `{"name", "ph": "X", "ts", "dur", "pid", "tid", "args"}`. Time is the run's
event index, written as microseconds (`ts` = the call's event, `dur` = events until its return):
the recording counts events, not wall time, so widths show how much code ran, not how long it took.
Nesting follows from the intervals, as Perfetto draws it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import anyio

from neural_dap.cli.args import parse_with_program
from neural_dap.core.world import LaunchSpec, WorldError
from neural_dap.trace.actions import EXCEPTION
from neural_dap.world.recorded import RecordedWorld

OPTIONS_WITH_VALUE = {"--perfetto", "--python", "--recording", "--max-calls"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program", help="the Python file to run")
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="arguments for the program")
    parser.add_argument("--perfetto", required=True, metavar="OUT.json", help="write a Chrome trace of the calls")
    parser.add_argument("--python", help="the interpreter that records the program (default: this one)")
    parser.add_argument("--recording", choices=["auto", "full", "skeleton"], default="auto")
    parser.add_argument("--max-calls", type=int, default=2_000_000, help="write at most this many calls")


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    opts = parse_with_program(parser, argv, OPTIONS_WITH_VALUE)
    launch = LaunchSpec(
        program=os.path.abspath(opts.program),
        args=tuple(opts.argv),
        cwd=os.getcwd(),
        python=opts.python,
        options={"recording": opts.recording},
    )
    try:
        written, total, events = anyio.run(export, launch, opts.perfetto, opts.max_calls)
    except WorldError as exc:
        print(f"neural-dap export: {exc}", file=sys.stderr)
        return 1
    cut = f" (the first {written} of {total})" if written < total else ""
    print(f"{opts.perfetto}: {written} calls{cut} over {events} events (ts and dur count events, as microseconds)")
    return 0


async def export(launch: LaunchSpec, out: str, max_calls: int) -> tuple[int, int, int]:
    world = RecordedWorld()
    try:
        await world.start(launch)
        cols = world.queries.semantics.columns
        total = len(cols.call_index)
        last = len(cols.kinds) - 1
        with open(out, "w", encoding="utf-8") as fh:
            fh.write('{"traceEvents": [\n')
            written = min(total, max(0, max_calls))
            for k in range(written):
                start, end = int(cols.call_index[k]), int(cols.end_index[k])
                name, path = cols.codes[int(cols.code_of[k])]
                args = {"file": path, "line": int(cols.lines[start]), "call event": start}
                if end < 0:
                    args["ended"] = "not when the recording did"
                elif int(cols.kinds[end]) == EXCEPTION:
                    args["raised"] = True
                event = {
                    "name": name,
                    "cat": os.path.basename(path),
                    "ph": "X",
                    "ts": start,
                    "dur": max((end if end >= 0 else last) - start, 1),
                    "pid": 1,
                    "tid": 1,
                    "args": args,
                }
                fh.write(("," if k else "") + json.dumps(event) + "\n")
            fh.write("]}\n")
        return written, total, last + 1
    finally:
        await world.close()
