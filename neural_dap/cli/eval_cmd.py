"""`neural-dap eval`: next-state accuracy on held-out programs; CRUXEval-O / -I through the debugger.

neural-dap eval nextstate [--data DIR] [--real CRUXEVAL.jsonl|FOLDER ...] [--model embedded|DIR|URL]
                          [--unconstrained] [--plot PNG]
neural-dap eval cruxeval PATH --mode output|input [--method step|jump] [--model embedded|DIR|URL|recorded] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = __doc__
    parser.add_argument("what", choices=["nextstate", "cruxeval"])
    parser.add_argument("path", nargs="?", help="cruxeval: a JSONL file of {code, input, output, id}")
    parser.add_argument(
        "--data", help="nextstate: a folder made by `neural-dap dataset` (its held-out programs are scored)"
    )
    parser.add_argument(
        "--real",
        action="append",
        default=[],
        metavar="PATH",
        help="nextstate: real code too: a CRUXEval JSONL (each function on its input) "
        "or a folder of scripts (e.g. examples/)",
    )
    parser.add_argument(
        "--unconstrained", action="store_true", help="nextstate: the model alone, without program-aware decoding"
    )
    parser.add_argument(
        "--model",
        default="embedded",
        help="embedded, a model folder, an OpenAI-compatible URL, or recorded (the reference)",
    )
    parser.add_argument("--model-name")
    parser.add_argument("--dialect", default="nd", choices=["nd", "cwm"])
    parser.add_argument("--mode", choices=["output", "input"], default="output")
    parser.add_argument(
        "--method", choices=["step", "jump"], default="step", help="output mode: step to the return, or one continue"
    )
    parser.add_argument("--limit", type=int, help="only the first N items / programs")
    parser.add_argument("--trajectories", type=int, default=2, help="nextstate: trajectories per held-out program")
    parser.add_argument("--samples", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    parser.add_argument("--out", help="also write the JSON result to this file")
    parser.add_argument("--plot", help="nextstate: write a PNG of accuracy against lines skipped per jump")
    parser.add_argument("--quiet", action="store_true")


def _settings(opts):
    from neural_dap.world.neural import ModelSettings

    return ModelSettings(url=opts.model, name=opts.model_name, dialect=opts.dialect, samples=opts.samples)


def _client(opts):
    from neural_dap.world.factory import make_client

    return make_client(_settings(opts))


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    import anyio

    from neural_dap.core.world import WorldError
    from neural_dap.llm.base import ModelError

    opts = parser.parse_args(argv)
    if opts.what == "nextstate":
        if not opts.data and not opts.real:
            parser.error("nextstate needs --data (held-out programs) and/or --real (real code)")
        if opts.model == "recorded":
            parser.error(
                "nextstate scores predictions against the recorded states themselves, so the recorded world "
                "is its 100% reference by construction; give a model (embedded, a folder or a URL)"
            )
    elif not opts.path:
        parser.error("cruxeval needs the JSONL path")
    try:
        result = anyio.run(_nextstate if opts.what == "nextstate" else _cruxeval, opts)
    except (WorldError, ModelError) as exc:
        print(f"neural-dap eval: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=2)
    if opts.out:
        with open(opts.out, "w") as fh:
            fh.write(text + "\n")
    if opts.json:
        print(text)
    return 0


async def _nextstate(opts) -> dict:
    from neural_dap.corpus.dataset import read_heldout
    from neural_dap.eval.nextstate import (
        evaluate,
        plot,
        subjects_from_cruxeval,
        subjects_from_heldout,
        subjects_from_scripts,
    )

    groups: dict[str, list] = {}
    if opts.data:
        groups["heldout"] = subjects_from_heldout(read_heldout(opts.data))[: opts.limit]
    for path in opts.real:
        found = subjects_from_cruxeval(path) if path.endswith(".jsonl") else subjects_from_scripts(path)
        groups.setdefault("real", []).extend(found[: opts.limit])
    client = _client(opts)
    result: dict = {"model": client.describe(), "constrained": not opts.unconstrained}
    for name, subjects in groups.items():

        def progress(report, name=name) -> None:
            if not opts.quiet:
                o = report.forward.report()
                print(
                    f"\r{name}: {report.programs} programs, {report.overall.frames} frames: "
                    f"forward exact {o['exact']}%, "
                    f"line {o['line']}%, valid {o['valid']}%",
                    end="",
                    file=sys.stderr,
                    flush=True,
                )

        report = await evaluate(
            subjects, client, trajectories=opts.trajectories, constrained=not opts.unconstrained, progress=progress
        )
        if not opts.quiet:
            print(file=sys.stderr)
        result[name] = report.to_dict()
    await client.close()
    # is each predicted value right, against its confidence: the real code's, else the held-out's
    measured = result.get("real") or result.get("heldout")
    if isinstance(measured, dict) and "calibration" in measured:
        result["calibration"] = measured["calibration"]
    if opts.plot:
        plot(result.get("heldout") or result["real"], opts.plot)
    if not opts.json:
        for name in groups:
            r = result[name]
            print(
                f"{name}: {r['programs']} programs "
                f"({'program-aware decoding' if result['constrained'] else 'unconstrained'})"
            )
            print(
                f"{'action':<16} {'frames':>7} {'exact':>7} {'event':>7} {'line':>7} {'locals':>7} {'value':>7} "
                f"{'valid':>7} {'ms':>7}"
            )
            rows = [("forward", r["forward"]), ("all", r["overall"]), *list(r["byAction"].items())]
            for label, row in rows:
                print(
                    f"{label:<16} {row['frames']:>7} {_f(row['exact'])} {_f(row['event'])} {_f(row['line'])} "
                    f"{_f(row['locals'])} "
                    f"{_f(row['value'])} {_f(row['valid'])} {_f(row['medianMs'])}"
                )
    return result


def _f(value) -> str:
    return f"{value:>7.1f}" if value is not None else f"{'-':>7}"


async def _cruxeval(opts) -> dict:
    from neural_dap.eval.cruxeval import pass_at_1
    from neural_dap.eval.cruxeval import run as run_items

    with open(opts.path) as fh:
        rows = [json.loads(line) for line in fh if line.strip()][: opts.limit]
    make: Callable[[], Any]
    if opts.model == "recorded":
        from neural_dap.world.recorded import RecordedWorld

        make = RecordedWorld
        described = {"world": "recorded"}
    else:
        from neural_dap.world.factory import make_client
        from neural_dap.world.neural import NeuralWorld

        settings = _settings(opts)
        client = make_client(settings)
        described = client.describe()

        class Shared(NeuralWorld):
            async def close(self) -> None:  # the client (and its loaded model) outlives each item
                pass

        def make_neural() -> Any:
            return Shared(client, settings)

        make = make_neural

    done = []

    def progress(item) -> None:
        done.append(item)
        if not opts.quiet:
            print(f"\r{len(done)}/{len(rows)} items, pass@1 {pass_at_1(done)}%", end="", file=sys.stderr, flush=True)

    items = await run_items(rows, make, opts.mode, opts.method, progress=progress)
    if not opts.quiet:
        print(file=sys.stderr)
    result = {
        "benchmark": f"CRUXEval-{'O' if opts.mode == 'output' else 'I'}",
        "method": opts.method if opts.mode == "output" else "inv_step_return",
        "model": described,
        "items": len(items),
        "pass@1": pass_at_1(items),
        "results": [item.__dict__ for item in items],
    }
    if not opts.json:
        print(f"{result['benchmark']} ({result['method']}) on {len(items)} items: pass@1 {result['pass@1']}%")
    return result
