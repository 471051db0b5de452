"""The training corpus: deterministic generated programs that run, never copies of CRUXEval."""

from __future__ import annotations

import os
import random
import re

import pytest

from neural_dap.core.source import SourceInfo
from neural_dap.corpus.dataset import DatasetConfig, build, merge, read_heldout, read_trajectories, shard_paths
from neural_dap.corpus.programs import generate
from neural_dap.corpus.stdlib import TARGETS, extract, generate_stdlib
from neural_dap.corpus.trajectories import Trajectory, sample
from neural_dap.format.tokens import END, FRAME_SEP
from neural_dap.trace.recorder import Limits, Program, record


def _normalized(code: str) -> str:
    return re.sub(r"\s+", " ", code).strip()


def test_programs_are_deterministic_from_their_seed_and_compile():
    for seed in range(200):
        a, b = generate(seed), generate(seed)
        assert (a.source, a.args) == (b.source, b.args)
        compile(a.source, "<generated>", "exec")
    assert len({generate(s).source for s in range(200)}) > 190


def test_no_generated_program_is_a_copy_of_a_cruxeval_dev_function(cruxeval_rows):
    crux = {_normalized(row["code"]) for row in cruxeval_rows}
    generated = [_normalized(generate(seed).source) for seed in range(3000)]
    assert not crux.intersection(generated)


def test_generated_programs_record_cleanly_and_cover_the_features():
    features: set[str] = set()
    outcomes = []
    for seed in range(120):
        p = generate(seed)
        rec = record(Program(f"/gen/{seed}.py", source=p.source, entry=p.entry, entry_args=p.args), Limits(wall_time=5))
        outcomes.append(rec.outcome.kind)
        features.update(p.features)
    assert outcomes.count("finished") > 100 and set(outcomes) <= {"finished", "raised"}
    assert {"for", "while", "if", "try", "helper", "recursion", "template"} <= features


def test_stdlib_functions_are_extracted_with_what_they_need_and_run():
    source = extract("colorsys", "hls_to_rgb")
    assert "def _v(" in source and "ONE_SIXTH" in source
    ran = 0
    for seed in range(40):
        p = generate_stdlib(seed)
        rec = record(
            Program(f"/stdlib/{seed}.py", source=p.source, entry=p.entry, entry_args=p.args), Limits(wall_time=5)
        )
        ran += rec.outcome.kind == "finished" and len(rec.states) > 1
    assert ran >= 36
    assert len(TARGETS) >= 15


def test_trajectories_mark_only_predicted_frames_and_end_with_a_separator():
    p = generate(7)
    rec = record(Program("/gen/7.py", source=p.source, entry=p.entry, entry_args=p.args))
    rng = random.Random(0)
    kinds = set()
    for _ in range(50):
        t = sample(rng, list(rec.states), SourceInfo(p.source))
        assert t.segments[-1] in (FRAME_SEP, END) and t.predicted[-1]
        assert not t.predicted[0] and len(t.indices) == len(t.actions) + 1
        assert Trajectory.from_json(t.to_json()).text() == t.text()
        kinds.update(t.actions)
    assert {"step_into", "step_over", "continue", "inv_step_return"} <= kinds


def test_the_dataset_builder_shards_holds_programs_out_and_counts_drops(tmp_path):
    manifest = build(
        str(tmp_path),
        DatasetConfig(programs=60, workers=1, heldout_every=10, trajectories_per_program=2),
        progress=False,
    )
    counts = manifest["counts"]
    assert counts["recorded"] + sum(v for k, v in counts.items() if k.startswith("dropped")) == 60
    heldout = read_heldout(str(tmp_path))
    assert len(heldout) == counts["heldout programs"] == 6
    trained = list(read_trajectories(str(tmp_path)))
    assert len(trained) == counts["trajectories"] > 50
    heldout_sources = {h["source"] for h in heldout}
    assert all(h["id"] % 10 == 0 for h in heldout) and heldout_sources


def _lines(data_dir: str) -> list[str]:
    import gzip

    out = []
    for path in shard_paths(data_dir):
        with gzip.open(path, "rt") as fh:
            out += fh.read().splitlines()
    return sorted(out)


def test_shards_made_apart_and_merged_equal_the_dataset_made_at_once(tmp_path):
    config = {"programs": 30, "workers": 2, "heldout_every": 7, "trajectories_per_program": 2}
    whole = build(str(tmp_path / "whole"), DatasetConfig(**config), progress=False)
    parts = []
    for index in (1, 0):  # the order parts finish in does not matter
        part = str(tmp_path / f"part{index}")
        build(part, DatasetConfig(**config, shard_index=index, num_shards=2), progress=False)
        parts.append(part)
    merged = merge(str(tmp_path / "merged"), parts)
    assert _lines(str(tmp_path / "merged")) == _lines(str(tmp_path / "whole"))
    assert read_heldout(str(tmp_path / "merged")) == sorted(
        read_heldout(str(tmp_path / "whole")), key=lambda r: r["id"]
    )
    assert merged["counts"] == whole["counts"]
    with pytest.raises(ValueError, match="not the 2 shards"):
        merge(str(tmp_path / "again"), parts[:1])


def test_programs_do_not_depend_on_the_processes_hash_seed():
    import subprocess
    import sys

    code = (
        "import hashlib\n"
        "from neural_dap.corpus.dataset import DatasetConfig, make_program\n"
        "c = DatasetConfig()\n"
        "print(hashlib.sha256(''.join(make_program(i, c).source for i in range(200)).encode()).hexdigest())\n"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": h},
        ).stdout
        for h in ("1", "2")
    }
    assert len(digests) == 1  # set iteration order once made the programs differ between workers
