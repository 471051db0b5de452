"""`neural-dap dataset`: generate programs, record them, sample debugger trajectories (nd dialect)."""

from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output folder (shards, heldout.jsonl, manifest.json)")
    parser.add_argument("--programs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trajectories", type=int, default=4, help="trajectories per program")
    parser.add_argument("--heldout-every", type=int, default=50, help="every Nth program is held out for evaluation")
    parser.add_argument("--workers", type=int, help="processes (default: one per CPU)")
    parser.add_argument("--shard-size", type=int, default=20000)
    parser.add_argument(
        "--script-fraction", type=float, default=0.35, help="share of whole scripts (the rest: functions with an input)"
    )
    parser.add_argument("--shard-index", type=int, default=0, help="make part I of --num-shards (a job array)")
    parser.add_argument("--num-shards", type=int, default=1, help="parts the programs are split into (by id)")
    parser.add_argument("--merge", nargs="+", metavar="PART", help="merge the parts made with --shard-index into --out")
    parser.add_argument("--quiet", action="store_true")


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    opts = parser.parse_args(argv)
    from neural_dap.corpus.dataset import DatasetConfig, build, merge

    if opts.merge:
        try:
            manifest = merge(opts.out, opts.merge)
        except (OSError, ValueError) as exc:
            parser.error(str(exc))
        print(json.dumps(manifest["counts"], indent=2))
        return 0

    config = DatasetConfig(
        programs=opts.programs,
        seed=opts.seed,
        trajectories_per_program=opts.trajectories,
        heldout_every=opts.heldout_every,
        shard_size=opts.shard_size,
        script_fraction=opts.script_fraction,
        shard_index=opts.shard_index,
        num_shards=opts.num_shards,
    )
    if opts.workers:
        config.workers = opts.workers
    try:
        manifest = build(opts.out, config, progress=not opts.quiet)
    except ValueError as exc:
        parser.error(str(exc))
    print(json.dumps(manifest["counts"], indent=2))
    return 0
