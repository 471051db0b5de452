"""Ship a trained model as the embedded model: copy its files into the package and write its card.

python -m neural_dap.train.card RUN_DIR --data DATA_DIR [--eval results.json ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

EMBEDDED = Path(__file__).resolve().parent / "embedded"
MODEL_FILES = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "calibration.json",  # the confidence calibration fitted for this model (scripts/fit_calibration.sh)
)


def ship(run: Path, target: Path = EMBEDDED) -> list[str]:
    model = run / "model"
    if not (model / "config.json").is_file():
        raise SystemExit(f"no exported model in {model}")
    target.mkdir(parents=True, exist_ok=True)
    for old in target.iterdir():
        if old.name != "MODEL_CARD.md":
            old.unlink()
    copied = []
    for path in sorted(model.iterdir()):
        if path.name in MODEL_FILES or path.suffix == ".safetensors" or path.name.endswith(".safetensors.index.json"):
            shutil.copy2(path, target / path.name)
            copied.append(path.name)
    return copied


def _table(rows: list[tuple[str, str]]) -> str:
    out = ["| | |", "|---|---|"]
    out += [f"| {a} | {b} |" for a, b in rows]
    return "\n".join(out)


def _row(name: str, r: dict) -> str:
    cells = [f"{r[k]:.1f}%" if r[k] is not None else "-" for k in ("exact", "event", "line", "locals", "value")]
    return f"| {name} | " + " | ".join(cells) + " |"


def _pair(a: dict | None, b: dict | None, key: str) -> str:
    def one(r: dict | None) -> str:
        return f"{r[key]:.1f}%" if r is not None and r.get(key) is not None else "-"

    return f"{one(a)} / {one(b)}"


def _side_by_side(result: dict) -> list[str]:
    """Held-out generated programs beside real code, per action: the gap the corpus alone hides."""
    heldout, real = result.get("heldout"), result.get("real")
    decoding = "program-aware decoding" if result.get("constrained", True) else "unconstrained decoding"
    described = []
    if heldout:
        described.append(f"{heldout['programs']} held-out generated programs ({heldout['overall']['frames']} frames)")
    if real:
        described.append(
            f"real code: CRUXEval-dev functions on their inputs and the scripts of `examples/` "
            f"({real['programs']} programs, {real['overall']['frames']} frames)"
        )
    lines = [
        "",
        f"Next-state accuracy, teacher-forced, {decoding}, held-out / real: " + "; ".join(described) + ".",
        "",
        "| action | whole frame | event | line | locals | value | valid frame | ms per prediction |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [("forward actions", "forward"), ("all actions", "overall")]
    actions = sorted(set((heldout or {}).get("byAction", {})) | set((real or {}).get("byAction", {})))
    for label, key in rows + [(a, a) for a in actions]:
        a = (heldout or {}).get(key) if key in ("forward", "overall") else (heldout or {}).get("byAction", {}).get(key)
        b = (real or {}).get(key) if key in ("forward", "overall") else (real or {}).get("byAction", {}).get(key)
        cells = [_pair(a, b, k) for k in ("exact", "event", "line", "locals", "value", "valid")]
        ms = _pair(a, b, "medianMs").replace("%", "")
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {ms} |")
    return lines


def _calibration(result: dict) -> list[str]:
    """Is the confidence shown a probability: per set, as shown (calibrated) and the model's raw."""
    figures = [
        (name, result[name]["calibration"]) for name in ("heldout", "real") if result.get(name, {}).get("calibration")
    ]
    figures = [(name, c) for name, c in figures if c.get("values")]
    if not figures:
        return []
    lines = [
        "",
        "Confidence shown on each predicted value (each local of a frame, each returned value) against",
        "whether the value is right: calibrated (`calibration.json`), with the model's raw probability",
        "(the product of the value's tokens' probabilities) beside it:",
        "",
        "| | values (programs) | right | AUROC | ECE (10 bins, 95% CI) | most confident half right | raw: AUROC, ECE |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, c in figures:
        label = "held-out" if name == "heldout" else "real code"
        raw = c.get("raw") or {}
        interval = c.get("ece_ci95")
        ece = f"{c['ece']:.3f}" + (f" ({interval[0]:.3f}-{interval[1]:.3f})" if interval else "")
        lines.append(
            f"| {label} | {c['values']} ({c.get('programs', '?')}) | {100 * c['accuracy']:.1f}% | {_3(c.get('auroc'))} "
            f"| {ece} | {100 * c['top_half_accuracy']:.1f}% | {_3(raw.get('auroc'))}, {_3(raw.get('ece'))} |"
        )
    return lines


def _3(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "-"


def _passes(epochs: int) -> str:
    return "less than one pass over the data" if epochs == 0 else f"{epochs} full passes over the data"


def card(
    run: Path,
    data: Path,
    evals: list[dict],
    target: Path = EMBEDDED,
    note: str = "",
    wall_minutes: float | None = None,
    reproduce: str = "",
) -> str:
    log = json.loads((run / "train_log.json").read_text())
    manifest = json.loads((data / "manifest.json").read_text()) if (data / "manifest.json").is_file() else {}
    preset = log["preset_values"]
    size = sum(p.stat().st_size for p in target.iterdir() if p.suffix == ".safetensors")
    lines = [
        "# The embedded neural debugger",
        "",
        "A small Llama-architecture causal language model trained from scratch by neural-dap's own",
        "pipeline to predict Python program states after debugger actions, in the `nd` trace dialect.",
        'It is what `model: "embedded"` loads (in process, on the CPU); the same folder serves under vLLM.',
        "",
        "## Model",
        _table(
            [
                (
                    "architecture",
                    f"LlamaForCausalLM, {preset['layers']} layers, width {preset['hidden']}, {preset['heads']} heads, MLP {preset['ffn']}",
                ),
                ("parameters", f"{log['parameters'] / 1e6:.1f} M ({size / 1e6:.1f} MB of safetensors)"),
                ("context", f"{preset['seq_len']} tokens"),
                ("tokenizer", "byte-level BPE, 4096 tokens, every trace-format token special"),
                *(
                    [
                        (
                            "calibration",
                            "`calibration.json`: the probability shown for a predicted value, from the model's",
                        )
                    ]
                    if (target / "calibration.json").is_file()
                    else []
                ),
            ]
        ),
        "",
        "## Training",
        _table(
            [
                (
                    "data",
                    f"generated programs and standard-library functions, recorded and walked by the mixed random policy (docs/training.md); {manifest.get('counts', {}).get('trajectories', '?')} trajectories of {manifest.get('counts', {}).get('recorded', '?')} programs made, never CRUXEval",
                ),
                # every batch is packed full, so steps x batch tokens counts a resumed run's tokens too
                ("tokens trained", f"{log['steps'] * preset['batch_tokens'] / 1e6:.1f} M ({_passes(log['epochs'])})"),
                (
                    "steps",
                    f"{log['steps']} of {preset['batch_tokens']} tokens, peak learning rate {preset['lr']}, cosine decay",
                ),
                ("seed", str(log["seed"])),
                ("hardware", f"{log['device']}, {wall_minutes or log['seconds'] / 60:.0f} minutes"),
                (
                    "final loss",
                    f"train {log['final_loss']}, held-out {round(log['heldout_loss'], 4) if log['heldout_loss'] else '?'} (predicted frames only)",
                ),
                *([("reproduce", reproduce)] if reproduce else []),
            ]
        ),
        "",
        *([note, ""] if note else []),
        "## Measured accuracy (`neural-dap eval`)",
    ]
    for result in evals:
        if "heldout" in result or "real" in result:
            lines += _side_by_side(result)
            lines += _calibration(result)
        elif "overall" in result:
            f, o = result["forward"], result["overall"]
            lines += [
                "",
                f"Next-state accuracy on {result['programs']} held-out generated programs ({o['frames']} predicted frames, teacher forcing):",
                "",
                "| | whole frame | event | line | locals | value |",
                "|---|---|---|---|---|---|",
                _row("forward actions", f),
                _row("all actions", o),
            ]
            lines += [_row(action, r) for action, r in result["byAction"].items()]
        elif "benchmark" in result:
            who = (
                "the recorded world (reference)" if result.get("model", {}).get("world") == "recorded" else "this model"
            )
            failures = sorted({r["error"] for r in result["results"] if not r["passed"] and r.get("error")})
            why = f" (failures: {'; '.join(failures)})" if who != "this model" and failures else ""
            lines += [
                "",
                f"{result['benchmark']} ({result['method']}), {who}, on {result['items']} CRUXEval-dev items: **pass@1 {result['pass@1']}%**{why}",
            ]
    lines += [
        "",
        "Reference points: the paper's 1.8B model trained from scratch reached 57.7% on CRUXEval-O, its",
        "32B fine-tuned CWM 83.2% (O) and 66.5% (I).",
        "",
        "## Limits",
        "A model of this size learns the format, the events and much of the control flow, and the",
        "values of string and list operations much less well; long jumps (continue, breakpoints far",
        "ahead) are harder than single steps, and errors compound when it runs free. Program-aware",
        "decoding makes every frame one the program allows (a real line, names the scope can hold), not",
        "a right one: on real code about half of its single steps are exactly right, and a value it",
        "cannot predict can come out as plausible-looking nonsense. Check its predictions against",
        "reality (`reconcile`), and train the `gpu` preset (`scripts/gpu_train.sh`) or serve a large",
        "model for real use.",
    ]
    text = "\n".join(lines) + "\n"
    (target / "MODEL_CARD.md").write_text(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument(
        "--eval", type=Path, action="append", default=[], help="JSON written by `neural-dap eval ... --out`"
    )
    parser.add_argument("--no-copy", action="store_true", help="only rewrite the card")
    parser.add_argument("--note", default="", help="a paragraph about this run, placed after the training table")
    parser.add_argument("--reproduce", default="", help="the commands that made this run, for the card")
    parser.add_argument(
        "--wall-minutes", type=float, help="the run's wall time when it was resumed (the log counts the last part only)"
    )
    opts = parser.parse_args()
    if not opts.no_copy:
        print("copied:", ", ".join(ship(opts.run)))
    evals = [json.loads(p.read_text()) for p in opts.eval if p.is_file()]
    card(opts.run, opts.data, evals, note=opts.note, wall_minutes=opts.wall_minutes, reproduce=opts.reproduce)
    print(f"wrote {os.path.relpath(EMBEDDED / 'MODEL_CARD.md')}")


if __name__ == "__main__":
    main()
