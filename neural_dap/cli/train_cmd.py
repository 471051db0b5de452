"""`neural-dap train`: train the embedded neural debugger on a dataset made by `neural-dap dataset`."""

from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from neural_dap.train.model import PRESETS

    parser.add_argument("--data", required=True, help="a folder made by `neural-dap dataset`")
    parser.add_argument(
        "--out", required=True, help="run folder: tokenizer/, checkpoint/, model/, adapter/ (LoRA), train_log.json"
    )
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="cpu",
        help="tiny (CI), cpu (~2 h on 2 cores), gpu (one H200, minutes)",
    )
    parser.add_argument("--steps", type=int, help="optimizer steps (default: the preset's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resume", action="store_true", help="continue from the run folder's checkpoint")
    parser.add_argument("--tokenizer", help="use this tokenizer folder instead of training one")
    parser.add_argument(
        "--base", help="start from this model folder (weights and tokenizer), e.g. neural_dap/train/embedded"
    )
    parser.add_argument(
        "--lora",
        type=int,
        metavar="RANK",
        help="with --base: train LoRA adapters of this rank (peft)",
    )
    parser.add_argument("--vocab-size", type=int, default=4096)
    parser.add_argument("--device", help="cpu or cuda (default: cuda when present)")
    parser.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile the model (about 25%% faster on a CPU after a minute of compiling)",
    )
    parser.add_argument("--time-limit", type=float, help="seconds; stop early and save when reached")
    parser.add_argument(
        "--time-budget", type=float, help="seconds of training; the step count follows from the measured speed"
    )
    parser.add_argument("--checkpoint-every", type=int, default=200)
    parser.add_argument("--eval-every", type=int, default=100, help="steps between held-out losses")
    parser.add_argument(
        "--data-workers", type=int, help="processes packing data (default: all but one CPU with a GPU, none on a CPU)"
    )
    parser.add_argument("--save-dtype", choices=["float16", "bfloat16", "float32"], default="float16")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override a preset value, e.g. --set lr=1e-3"
    )


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    opts = parser.parse_args(argv)
    if opts.lora and not opts.base:
        parser.error("--lora fine-tunes a pretrained model: give it with --base")
    from neural_dap.train.trainer import TrainConfig, train

    extra = {}
    for item in opts.set:
        key, _, value = item.partition("=")
        extra[key] = float(value) if "." in value or "e" in value else int(value)
    config = TrainConfig(
        data=opts.data,
        out=opts.out,
        preset=opts.preset,
        steps=opts.steps,
        seed=opts.seed,
        resume=opts.resume,
        tokenizer=opts.tokenizer,
        base=opts.base,
        lora=opts.lora,
        vocab_size=opts.vocab_size,
        device=opts.device,
        compile=opts.compile,
        time_limit=opts.time_limit,
        time_budget=opts.time_budget,
        checkpoint_every=opts.checkpoint_every,
        eval_every=opts.eval_every,
        data_workers=opts.data_workers,
        save_dtype=opts.save_dtype,
        extra=extra,
    )
    summary = train(config)
    summary.pop("history", None)
    print(json.dumps(summary, indent=2))
    return 0
