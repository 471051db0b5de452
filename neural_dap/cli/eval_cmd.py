"""`neural-dap eval`: next-state accuracy and confidence calibration; CRUXEval-O / -I through the debugger.

neural-dap eval nextstate [--data DIR [--split all|calibration|evaluation]] [--real CRUXEVAL.jsonl|FOLDER ...]
                          [--model embedded|DIR|URL] [--calibration FILE|none] [--unconstrained] [--plot PNG]
                          [--values JSONL]
neural-dap eval calibrate --data DIR --real FOLDER ... --model DIR [--out FILE]   # fit the model's calibration
neural-dap eval calibrate --from-values JSONL ... --out FILE                       # the same from saved values
neural-dap eval cruxeval PATH --mode output|input [--method step|jump] [--model embedded|DIR|URL|recorded] [--json]

`calibrate` fits, per kind of value, the map from the model's probability to the share of right
values (format.calibration) on the held-out programs of the calibration split and the real code
given, and writes it where the model's clients find it (the model folder's calibration.json).
Fit on code that is neither training nor evaluation data: `nextstate --split evaluation` scores
the other half of the held-out programs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = __doc__
    parser.add_argument("what", choices=["nextstate", "calibrate", "cruxeval"])
    parser.add_argument("path", nargs="?", help="cruxeval: a JSONL file of {code, input, output, id}")
    parser.add_argument(
        "--data", help="nextstate, calibrate: a folder made by `neural-dap dataset` (its held-out programs are scored)"
    )
    parser.add_argument(
        "--split",
        choices=["all", "calibration", "evaluation"],
        help="which held-out programs of --data: alternate ones by id (calibration: the 1st, 3rd, ...); "
        "default: all for nextstate, calibration for calibrate",
    )
    parser.add_argument(
        "--real",
        action="append",
        default=[],
        metavar="PATH",
        help="nextstate, calibrate: real code too: a JSONL of functions on inputs (CRUXEval's form) "
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
    parser.add_argument(
        "--calibration",
        help="the confidence calibration to report through: a calibration.json, or none (the model's raw "
        "probabilities); default: the model folder's own",
    )
    parser.add_argument("--dialect", default="nd", choices=["nd", "cwm"])
    parser.add_argument("--mode", choices=["output", "input"], default="output")
    parser.add_argument(
        "--method", choices=["step", "jump"], default="step", help="output mode: step to the return, or one continue"
    )
    parser.add_argument("--limit", type=int, help="only the first N items / programs")
    parser.add_argument("--trajectories", type=int, default=2, help="nextstate: trajectories per held-out program")
    parser.add_argument("--samples", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    parser.add_argument("--out", help="also write the JSON result to this file (calibrate: where the calibration goes)")
    parser.add_argument(
        "--plot",
        help="nextstate: write a reliability diagram of value confidence to this PNG (and accuracy against "
        "lines skipped per jump next to it, NAME-jumps.png)",
    )
    parser.add_argument(
        "--values", help="nextstate, calibrate: also write every scored value and line (JSONL), to fit on later"
    )
    parser.add_argument(
        "--from-values",
        action="append",
        default=[],
        metavar="JSONL",
        help="calibrate: fit on values written by --values instead of running the model",
    )
    parser.add_argument(
        "--heldout-weight",
        type=float,
        help="calibrate: the held-out programs' total weight in the fit against the real code's (default "
        "eval.calibrate.HELDOUT_WEIGHT, 0.05: the fit is for real code, which users debug)",
    )
    parser.add_argument(
        "--shard",
        metavar="K/N",
        help="nextstate, calibrate: only every Nth program from the Kth (0-based), to run N processes at once "
        "(their --values then fit together: calibrate --from-values)",
    )
    parser.add_argument("--quiet", action="store_true")


def _settings(opts):
    from neural_dap.world.neural import ModelSettings

    return ModelSettings(
        url=opts.model,
        name=opts.model_name,
        dialect=opts.dialect,
        samples=opts.samples,
        calibration=getattr(opts, "calibration", None),
    )


def _client(opts):
    from neural_dap.world.factory import make_client

    return make_client(_settings(opts))


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    import anyio

    from neural_dap.core.world import WorldError
    from neural_dap.llm.base import ModelError

    opts = parser.parse_args(argv)
    if opts.what in ("nextstate", "calibrate"):
        if not opts.data and not opts.real and not opts.from_values:
            parser.error(f"{opts.what} needs --data (held-out programs) and/or --real (real code)")
        if opts.model == "recorded":
            parser.error(
                f"{opts.what} scores predictions against the recorded states themselves, so the recorded world "
                "is its 100% reference by construction; give a model (embedded, a folder or a URL)"
            )
        if opts.what == "calibrate":
            for path in opts.real:
                if "cruxeval" in os.path.basename(path).lower():
                    parser.error(f"{path}: CRUXEval is evaluation data; fit the calibration on other code")
            if opts.out is None and not os.path.isdir(opts.model):
                parser.error("calibrate writes the model folder's calibration.json: give --model DIR or --out FILE")
    elif not opts.path:
        parser.error("cruxeval needs the JSONL path")
    command = {"nextstate": _nextstate, "calibrate": _calibrate, "cruxeval": _cruxeval}[opts.what]
    try:
        result = anyio.run(command, opts)
    except (WorldError, ModelError) as exc:
        print(f"neural-dap eval: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=2)
    if opts.out and opts.what != "calibrate":
        with open(opts.out, "w") as fh:
            fh.write(text + "\n")
    if opts.json:
        print(text)
    return 0


def _groups(opts, split: str) -> dict[str, list]:
    """The subjects to score, by set: the held-out programs of `split`, and the real code."""
    from neural_dap.corpus.dataset import read_heldout
    from neural_dap.eval.nextstate import (
        split_heldout,
        subjects_from_cruxeval,
        subjects_from_heldout,
        subjects_from_scripts,
    )

    groups: dict[str, list] = {}
    if opts.data:
        groups["heldout"] = subjects_from_heldout(split_heldout(read_heldout(opts.data), split))[: opts.limit]
    for path in opts.real:
        found = subjects_from_cruxeval(path) if path.endswith(".jsonl") else subjects_from_scripts(path)
        groups.setdefault("real", []).extend(found[: opts.limit])
    if opts.shard:
        k, n = _shard(opts.shard)
        groups = {name: subjects[k::n] for name, subjects in groups.items()}
    return groups


def _shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise SystemExit(f"neural-dap eval: --shard takes K/N, not {text!r}") from None
    if not 0 <= k < n:
        raise SystemExit(f"neural-dap eval: --shard {text}: K must be in 0..N-1")
    return k, n


async def _score(opts, groups: dict[str, list], calibration, split: str) -> tuple[dict, dict]:
    """Each set's report (as `NextStateReport.to_dict`) and its reports' objects, by set."""
    from neural_dap.eval.nextstate import evaluate

    client = _client(opts)
    result: dict = {"model": client.describe(), "constrained": not opts.unconstrained}
    reports = {}
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
            subjects,
            client,
            trajectories=opts.trajectories,
            constrained=not opts.unconstrained,
            progress=progress,
            calibration=calibration,
        )
        if not opts.quiet:
            print(file=sys.stderr)
        result[name] = report.to_dict()
        reports[name] = report
    await client.close()
    if opts.values:
        with open(opts.values, "w") as fh:
            for name, report in reports.items():
                for row in _rows(opts, name, report, split):
                    fh.write(json.dumps(row) + "\n")
    return result, reports


def _rows(opts, name: str, report, split: str) -> list[dict]:
    """Every scored part of a set, with where its program came from (what a calibration was fitted on)."""
    import msgspec

    def origin(program: str) -> str:
        if name == "heldout":
            return f"held-out programs of {os.path.normpath(opts.data)} ({split} split)"
        return os.path.dirname(program)

    return [{"set": name, "origin": origin(part.program), **msgspec.to_builtins(part)} for part in report.parts]


async def _nextstate(opts) -> dict:
    from neural_dap.eval import calibrate as measure
    from neural_dap.eval.nextstate import plot, shown
    from neural_dap.world.factory import calibration_for

    calibration = calibration_for(_settings(opts))
    split = opts.split or "all"
    result, reports = await _score(opts, _groups(opts, split), calibration, split)
    # is each predicted value right, against the confidence shown: the real code's, else the held-out's
    measured = result.get("real") or result.get("heldout")
    if isinstance(measured, dict) and "calibration" in measured:
        result["calibration"] = measured["calibration"]
    if opts.plot:
        sets = {}
        for name, report in reports.items():
            values = [s for s in report.parts if s.kind != "line"]
            label = "held-out" if name == "heldout" else f"real: {', '.join(_short(p) for p in opts.real)}"
            sets[label] = ([shown(s, calibration) for s in values], [s.right for s in values])
            if calibration is not None:
                sets[f"{label}, raw"] = ([s.p for s in values], [s.right for s in values])
        shown_as = "calibrated" if calibration is not None else "raw"
        measure.plot(sets, opts.plot, f"value confidence ({shown_as}) against rightness")
        stem, ext = os.path.splitext(opts.plot)
        plot(result.get("heldout") or result["real"], f"{stem}-jumps{ext or '.png'}")
    if not opts.json:
        for name in reports:
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
            c = r["calibration"]
            if c["values"]:
                print(
                    f"confidence of {c['values']} values ({'calibrated' if c['calibrated'] else 'raw'}): "
                    f"ECE {c['ece']:.3f} (95% CI {c['ece_ci95'][0]:.3f}-{c['ece_ci95'][1]:.3f}), "
                    f"AUROC {_f3(c['auroc'])}, most confident half {100 * c['top_half_accuracy']:.1f}% right"
                )
    return result


async def _calibrate(opts) -> dict:
    """Fit the model's confidence calibration on the calibration split and the real code given."""
    from collections import defaultdict

    from neural_dap.eval import calibrate as measure
    from neural_dap.format import calibration as calib

    rows: list[dict] = []
    for path in opts.from_values:
        with open(path) as fh:
            rows += [json.loads(line) for line in fh if line.strip()]
    if opts.data or opts.real:
        split = opts.split or "calibration"
        _, reports = await _score(opts, _groups(opts, split), None, split)
        for name, report in reports.items():
            rows += _rows(opts, name, report, split)
    if not rows:
        raise SystemExit("neural-dap eval calibrate: no predicted values to fit on")
    # what it was fitted on, for the model card: values and programs per origin
    programs: dict[str, set] = defaultdict(set)
    counts: dict[str, int] = defaultdict(int)
    for r in rows:
        if r["kind"] != "line":
            programs[r["origin"]].add(r["program"])
            counts[r["origin"]] += 1
    fitted_on: dict[str, str | int | float] = {
        origin: f"{counts[origin]} values of {len(programs[origin])} programs" for origin in sorted(counts)
    }
    fitted_on["dialect"] = opts.dialect
    weight = measure.HELDOUT_WEIGHT if opts.heldout_weight is None else opts.heldout_weight
    fitted_on["heldout weight"] = weight
    fitted = measure.fit(
        [r["kind"] for r in rows],
        [r["p"] for r in rows],
        [r["right"] for r in rows],
        fitted_on,
        _weights([r["set"] for r in rows], weight),
    )
    out = opts.out or os.path.join(opts.model, calib.FILE_NAME)
    calib.dump(fitted, out)
    values = [r for r in rows if r["kind"] != "line"]
    in_sample = {}
    for name in sorted({r["set"] for r in values}):
        mine = [r for r in values if r["set"] == name]
        raw = measure.summary([r["p"] for r in mine], [r["right"] for r in mine], [r["program"] for r in mine])
        shown = [r["p"] if r.get("cut") else fitted.probability(r["kind"], r["p"]) for r in mine]
        after = measure.summary(shown, [r["right"] for r in mine], [r["program"] for r in mine])
        in_sample[name] = {"values": raw["values"], "raw": raw, "fitted": after}
        if not opts.quiet:
            print(
                f"{name}: {raw['values']} values of {raw['programs']} programs: ECE {raw['ece']:.3f} raw, "
                f"{after['ece']:.3f} fitted (in sample); AUROC {_f3(raw['auroc'])} -> {_f3(after['auroc'])}",
                file=sys.stderr,
            )
    if not opts.quiet:
        print(f"wrote {out}; score it on code it was not fitted on with `eval nextstate`", file=sys.stderr)
    return {"calibration": out, "fittedOn": fitted_on, "inSample": in_sample}


def _weights(sets: list[str], heldout_weight: float) -> list[float]:
    """Per value: 1 for real code; held-out programs together weigh `heldout_weight` times the real
    code, or 1 each where there is no real code to weigh against."""
    real = sum(1 for s in sets if s != "heldout")
    heldout = len(sets) - real
    each = heldout_weight * real / heldout if real and heldout else 1.0
    return [each if s == "heldout" else 1.0 for s in sets]


def _f3(value) -> str:
    return f"{value:.3f}" if value is not None else "-"


def _short(path: str) -> str:
    """A --real path as a plot's legend names it (its last two parts, without .jsonl)."""
    parts = os.path.normpath(path).split(os.sep)
    return "/".join(parts[-2:]).removesuffix(".jsonl")


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
        from neural_dap.world.factory import calibration_for, make_client
        from neural_dap.world.neural import NeuralWorld

        settings = _settings(opts)
        client = make_client(settings)
        calibration = calibration_for(settings)
        described = client.describe()

        class Shared(NeuralWorld):
            async def close(self) -> None:  # the client (and its loaded model) outlives each item
                pass

        def make_neural() -> Any:
            return Shared(client, settings, calibration)

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
