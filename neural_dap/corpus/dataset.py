"""Build a training set: generate programs, record them, sample trajectories, write shards.

Output folder:
  train-00000.jsonl.gz ...   one trajectory a line: {"p": program id, "t": [[kind, text], ...]}
  heldout.jsonl               held-out programs (never trained on): source, entry, args, trajectories
  manifest.json               counts: programs made, recorded, dropped (by reason), trajectories
A program is held out by its id (every `heldout_every`-th), so no trajectory of it reaches training.
"""

from __future__ import annotations

import gzip
import json
import multiprocessing as mp
import os
import random
import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

from neural_dap.core.source import SourceInfo
from neural_dap.corpus.programs import Program, generate
from neural_dap.corpus.scripts import generate_script
from neural_dap.corpus.stdlib import generate_stdlib
from neural_dap.corpus.trajectories import Policy, sample
from neural_dap.trace.recorder import Limits, RecorderError, record
from neural_dap.trace.recorder import Program as RecordedProgram

RECORD_LIMITS = Limits(max_events=3000, wall_time=5.0, max_repr=300, max_output=10_000, memory_mb=2048)


@dataclass
class DatasetConfig:
    programs: int = 1000
    seed: int = 0
    trajectories_per_program: int = 4
    heldout_every: int = 50
    stdlib_fraction: float = 0.05
    script_fraction: float = 0.35  # whole modules traced from their first line (corpus/scripts.py)
    max_states: int = 1500  # longer executions are dropped (too long to learn from whole)
    shard_size: int = 20000  # trajectories per shard
    workers: int = max(1, (os.cpu_count() or 2))
    policy: Policy = field(default_factory=Policy)
    shard_index: int = 0  # this part makes the programs whose id % num_shards == shard_index
    num_shards: int = 1

    def program_ids(self) -> range:
        return range(self.shard_index, self.programs, self.num_shards)


def make_program(program_id: int, config: DatasetConfig) -> Program | None:
    rng = random.Random(f"kind-{config.seed}-{program_id}")
    seed = config.seed * 1_000_000_007 + program_id
    roll = rng.random()
    if roll < config.stdlib_fraction:
        return generate_stdlib(seed)
    if roll < config.stdlib_fraction + config.script_fraction:
        return generate_script(seed)
    return generate(seed)


def process(program_id: int, config: DatasetConfig) -> dict:
    """Record one program and sample its trajectories (runs in a worker process)."""
    program = make_program(program_id, config)
    if program is None:
        return {"id": program_id, "dropped": "no program"}
    try:
        rec = record(
            RecordedProgram(
                f"/corpus/p{program_id}.py", source=program.source, entry=program.entry, entry_args=program.args
            ),
            RECORD_LIMITS,
        )
    except RecorderError as exc:
        return {"id": program_id, "dropped": f"recorder: {exc}"}
    if rec.outcome.kind not in ("finished", "raised"):
        return {"id": program_id, "dropped": rec.outcome.kind}
    if len(rec.states) < 2:
        return {"id": program_id, "dropped": "too short"}
    if len(rec.states) > config.max_states:
        return {"id": program_id, "dropped": "too long"}
    states = list(rec.states)
    source = SourceInfo(program.source)
    rng = random.Random(f"traj-{config.seed}-{program_id}")
    trajectories = []
    for _ in range(config.trajectories_per_program):
        t = sample(rng, states, source, config.policy)
        if t is not None:
            trajectories.append(t.to_json())
    return {
        "id": program_id,
        "outcome": rec.outcome.kind,
        "features": list(program.features),
        "source": program.source,
        "entry": program.entry,
        "args": program.args,
        "states": len(states),
        "trajectories": trajectories,
    }


def _worker(args: tuple[list[int], DatasetConfig]) -> list[dict]:
    ids, config = args
    return [process(i, config) for i in ids]


def _chunks(config: DatasetConfig, size: int = 20) -> Iterator[tuple[list[int], DatasetConfig]]:
    ids = config.program_ids()
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size]), config


def build(out_dir: str, config: DatasetConfig, progress: bool = True) -> dict:
    if not 0 <= config.shard_index < config.num_shards:
        raise ValueError(f"shard index {config.shard_index} is not in 0..{config.num_shards - 1}")
    os.makedirs(out_dir, exist_ok=True)
    counts: Counter = Counter()
    features: Counter = Counter()
    shard = None
    shard_index = 0
    in_shard = 0
    heldout = open(os.path.join(out_dir, "heldout.jsonl"), "w")
    started = time.monotonic()
    bar = _progress(len(config.program_ids()), progress)

    shard_path = ""

    def close_shard():
        # a shard appears under its name only when complete: a trainer may be reading the folder
        if shard is not None:
            shard.close()
            os.replace(shard_path + ".tmp", shard_path)

    def open_shard():
        nonlocal shard, shard_index, in_shard, shard_path
        close_shard()
        shard_path = os.path.join(out_dir, f"train-{shard_index:05d}.jsonl.gz")
        shard = gzip.open(shard_path + ".tmp", "wt", encoding="utf-8")
        shard_index += 1
        in_shard = 0

    open_shard()
    ctx = mp.get_context("spawn")
    with ctx.Pool(config.workers) as pool:
        for results in pool.imap_unordered(_worker, _chunks(config)):
            for r in results:
                bar(1)
                if "dropped" in r:
                    counts[f"dropped: {r['dropped']}"] += 1
                    continue
                counts["recorded"] += 1
                counts[f"outcome: {r['outcome']}"] += 1
                features.update(r["features"])
                if r["id"] % config.heldout_every == 0:
                    heldout.write(json.dumps(r) + "\n")
                    counts["heldout programs"] += 1
                    continue
                for t in r["trajectories"]:
                    if in_shard >= config.shard_size:
                        open_shard()
                    assert shard is not None
                    shard.write(json.dumps({"p": r["id"], "t": t}, separators=(",", ":")) + "\n")
                    in_shard += 1
                    counts["trajectories"] += 1
    close_shard()
    heldout.close()
    bar(0, done=True)
    manifest = {
        "config": {k: v for k, v in asdict(config).items() if k != "workers"},
        "counts": dict(sorted(counts.items())),
        "features": dict(features.most_common()),
        "seconds": round(time.monotonic() - started, 1),
        "shards": shard_index,
    }
    with open(os.path.join(out_dir, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=2)
    return manifest


def _progress(total: int, enabled: bool):
    """A progress bar on stderr (tqdm when installed)."""
    if not enabled:
        return lambda n, done=False: None
    try:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="program", file=sys.stderr)

        def update(n: int, done: bool = False) -> None:
            bar.update(n)
            if done:
                bar.close()

        return update
    except ImportError:
        seen = [0]

        def update(n: int, done: bool = False) -> None:
            seen[0] += n
            if done or seen[0] % 200 == 0:
                print(f"\r{seen[0]}/{total} programs", end="\n" if done else "", file=sys.stderr, flush=True)

        return update


def merge(out_dir: str, parts: list[str]) -> dict:
    """One dataset from the parts `--shard-index I --num-shards N` made (a job array on a cluster).

    The parts must be all N of one configuration. Their shards are hard-linked into `out_dir` (copied
    across file systems), held-out programs are gathered in id order, and the counts are summed.
    """
    manifests = []
    for part in parts:
        with open(os.path.join(part, "manifest.json")) as fh:
            manifests.append(json.load(fh))
    configs = [dict(m["config"]) for m in manifests]
    shape = {k: v for k, v in configs[0].items() if k != "shard_index"}
    if any({k: v for k, v in c.items() if k != "shard_index"} != shape for c in configs):
        raise ValueError("the parts were made with different settings")
    indices = sorted(c.get("shard_index", 0) for c in configs)
    if indices != list(range(shape.get("num_shards", 1))):
        raise ValueError(f"parts {indices} are not the {shape.get('num_shards', 1)} shards of one dataset")
    os.makedirs(out_dir, exist_ok=True)
    files = 0
    heldout: list[dict] = []
    counts: Counter = Counter()
    features: Counter = Counter()
    for part, manifest in zip(parts, manifests, strict=True):
        index = manifest["config"].get("shard_index", 0)
        for k, path in enumerate(shard_paths(part)):
            target = os.path.join(out_dir, f"train-{index:04d}-{k:05d}.jsonl.gz")
            try:
                os.link(path, target)
            except OSError:
                shutil.copyfile(path, target)
            files += 1
        heldout += read_heldout(part)
        counts.update(manifest["counts"])
        features.update(manifest.get("features", {}))
    with open(os.path.join(out_dir, "heldout.jsonl"), "w") as fh:
        for record in sorted(heldout, key=lambda r: r["id"]):
            fh.write(json.dumps(record) + "\n")
    merged = {
        "config": {**shape, "shard_index": 0, "num_shards": 1, "merged_from": shape.get("num_shards", 1)},
        "counts": dict(sorted(counts.items())),
        "features": dict(features.most_common()),
        "seconds": max(m.get("seconds", 0) for m in manifests),
        "shards": files,
    }
    with open(os.path.join(out_dir, "manifest.json"), "w") as fh:
        json.dump(merged, fh, indent=2)
    return merged


def shard_paths(data_dirs: str) -> list[str]:
    """The complete shards of one folder, or of several separated by commas."""
    out = []
    for data_dir in data_dirs.split(","):
        if os.path.isdir(data_dir):
            out += sorted(
                os.path.join(data_dir, n)
                for n in os.listdir(data_dir)
                if n.startswith("train-") and n.endswith(".jsonl.gz")
            )
    return out


def read_trajectories(data_dirs: str) -> Iterator[list[list[str]]]:
    for path in shard_paths(data_dirs):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                yield json.loads(line)["t"]


def read_heldout(data_dir_or_file: str) -> list[dict]:
    path = data_dir_or_file if data_dir_or_file.endswith(".jsonl") else os.path.join(data_dir_or_file, "heldout.jsonl")
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]
