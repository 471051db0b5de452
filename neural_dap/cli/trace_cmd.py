"""`neural-dap trace PROGRAM [ARGS...]` and `neural-dap trace FILE --entry f --args "..."`."""

from __future__ import annotations

import argparse
import json
import sys

from neural_dap.cli.args import parse_with_program

OPTIONS_WITH_VALUE = {
    "--entry",
    "--args",
    "--format",
    "--python",
    "--max-events",
    "--timeout",
    "--max-repr",
    "--engine",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program", help="the Python file to run")
    parser.add_argument(
        "argv", nargs=argparse.REMAINDER, help="arguments for the program (after `--` if they look like options)"
    )
    parser.add_argument("--entry", help="call this function instead of running the file as a script")
    parser.add_argument(
        "--args", default="", help='the call\'s arguments as Python literal text, e.g. "[3, 1], key=None"'
    )
    parser.add_argument(
        "--format",
        choices=["json", "cwm", "nd"],
        default="json",
        help="output: one JSON object per state (default), or trace text",
    )
    parser.add_argument(
        "--comprehension-frames",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="record a comprehension's own frame, its `.0` iterator among its locals, as CPython 3.11 runs "
        "it (3.12+ inlines comprehensions: there are none); default: with --format cwm, as CWM's traces have "
        "them, else one step on every version",
    )
    parser.add_argument(
        "--python", help="interpreter to record with (default: this one; 3.12+ records through sys.monitoring)"
    )
    parser.add_argument("--engine", choices=["auto", "ctrace", "cmonitoring", "settrace", "monitoring"], default="auto")
    parser.add_argument("--max-events", type=int, default=200_000)
    parser.add_argument("--timeout", type=float, default=10.0, help="wall-time limit in seconds")
    parser.add_argument("--max-repr", type=int, default=1000, help="characters kept of one repr")


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    opts = parse_with_program(parser, argv, OPTIONS_WITH_VALUE)
    from neural_dap.core.actions import STEP_INTO
    from neural_dap.core.source import SourceInfo
    from neural_dap.core.state import as_traced
    from neural_dap.format.settrace import as_settrace
    from neural_dap.format.trace import render_trace
    from neural_dap.trace.recorder import Limits, Program, RecorderError, record

    # CWM's traces are 3.11 settrace traces, comprehension frames included: the cwm format is written
    # from a recording that keeps them, as a cwm debug session's reality does (world.reconciled)
    frames = opts.comprehension_frames if opts.comprehension_frames is not None else opts.format == "cwm"
    program = Program(
        path=opts.program, argv=tuple(opts.argv), entry=opts.entry, entry_args=opts.args, comprehensions=frames
    )
    limits = Limits(max_events=opts.max_events, wall_time=opts.timeout, max_repr=opts.max_repr)
    try:
        rec = record(program, limits, python=opts.python, engine=opts.engine)
    except RecorderError as exc:
        print(f"neural-dap trace: {exc}", file=sys.stderr)
        return 2
    out = sys.stdout
    if opts.format == "json":
        for state in rec.states:
            row = {
                "event": state.event,
                "line": state.line,
                "source": state.source,
                "function": state.function,
                "depth": state.depth,
                "invocation": state.invocation,
                "locals": as_traced(state).locals,  # (as the text trace: a module's data only)
                "value": state.value,
            }
            if state.path:
                row["path"] = state.path
            if state.stdout:
                row["stdout"] = state.stdout
            if state.stderr:
                row["stderr"] = state.stderr
            if state.caught:
                row["caught"] = state.caught
            out.write(json.dumps(row) + "\n")
    elif len(rec.states):
        states = list(rec.states)
        main = rec.main_path
        mine = [s for s in states if s.path == main] if any(s.path != main for s in states) else states
        if opts.format == "cwm":
            mine = as_settrace(mine)  # CWM's traces have every exception event settrace reports
        trace = render_trace(
            mine, opts.format, SourceInfo(rec.sources.get(main, "")), path=main, actions=[STEP_INTO] * len(mine)
        )
        out.write(trace.text())
        if rec.outcome.kind in ("finished", "raised", "exited"):
            out.write("<|end_of_text|>")
        out.write("\n")
    print(f"neural-dap trace: {len(rec.states)} states; {rec.outcome.describe()}", file=sys.stderr)
    return 0
