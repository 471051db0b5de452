"""The embedded-model pipeline at toy size: dataset -> tokenizer -> a few training steps -> export
-> in-process client -> evaluation. (The shipped model is not retrained here.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neural_dap.corpus.dataset import DatasetConfig, build
from neural_dap.train.trainer import TrainConfig, train

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def toy_data(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("data")
    build(
        str(data), DatasetConfig(programs=80, workers=1, heldout_every=20, trajectories_per_program=3), progress=False
    )
    return data


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory, toy_data) -> Path:
    data = toy_data
    run = tmp_path_factory.mktemp("run")
    summary = train(
        TrainConfig(data=str(data), out=str(run), preset="tiny", steps=25, vocab_size=1024, device="cpu", eval_every=25)
    )
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def test_a_few_steps_reduce_the_loss_and_export_a_loadable_model(toy_run):
    summary = json.loads((toy_run / "summary.json").read_text())
    history = summary["history"]
    assert history[0]["loss"] > history[-1]["loss"] + 0.5
    assert summary["heldout_loss"] is not None and summary["parameters"] > 0
    model = toy_run / "model"
    assert (model / "config.json").is_file() and (model / "tokenizer.json").is_file()
    assert any(p.suffix == ".safetensors" for p in model.iterdir())
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast.from_pretrained(model)
    assert tokenizer.convert_tokens_to_ids("<|frame_sep|>") != tokenizer.unk_token_id
    assert AutoModelForCausalLM.from_pretrained(model).config.num_hidden_layers == 2


def test_resume_continues_from_the_checkpoint(toy_run, toy_data, tmp_path):
    data = str(toy_data)
    summary = train(
        TrainConfig(data=data, out=str(toy_run), preset="tiny", steps=30, resume=True, device="cpu", eval_every=100)
    )
    assert summary["steps"] == 30 and summary["history"][-1]["step"] == 30


async def test_the_in_process_client_reuses_its_kv_cache_and_the_evaluations_run(toy_run, toy_data):
    from neural_dap.corpus.dataset import read_heldout
    from neural_dap.eval.nextstate import evaluate
    from neural_dap.llm.inprocess import InProcessClient

    client = InProcessClient(str(toy_run / "model"))
    prompt = (await client.tokenize("def f(x):\n    return x\n" * 4))[:60]
    first = await client.complete(prompt, max_tokens=5, stop_ids=[0])
    second = await client.complete([*prompt, 5, 6, 7], max_tokens=5, stop_ids=[0])
    assert first.cached_tokens == 0 and second.cached_tokens >= len(prompt)
    report = await evaluate(read_heldout(str(toy_data))[:2], client, trajectories=1)
    result = report.to_dict()
    assert result["programs"] >= 1 and result["overall"]["frames"] > 0
    frames = result["overall"]["frames"]
    assert sum(r["frames"] for r in result["byAction"].values()) == frames  # every frame counted once by action...
    assert sum(r["frames"] for r in result["byLinesSkipped"].values()) == frames  # ...and once by jump length
    assert result["overall"]["valid"] == 100.0  # program-aware decoding: every frame is one the program allows


def test_eval_cli_writes_json_and_a_plot(toy_run, toy_data, tmp_path, cruxeval_rows):
    from neural_dap.cli.main import main

    out = tmp_path / "nextstate.json"
    png = tmp_path / "accuracy.png"
    assert (
        main(
            [
                "eval",
                "nextstate",
                "--data",
                str(toy_data),
                "--model",
                str(toy_run / "model"),
                "--limit",
                "1",
                "--trajectories",
                "1",
                "--out",
                str(out),
                "--plot",
                str(png),
                "--quiet",
            ]
        )
        == 0
    )
    assert json.loads(out.read_text())["heldout"]["overall"]["frames"] > 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    crux = tmp_path / "crux.jsonl"
    crux.write_text("\n".join(json.dumps(r) for r in cruxeval_rows[:2]) + "\n")
    out = tmp_path / "crux.json"
    assert (
        main(
            [
                "eval",
                "cruxeval",
                str(crux),
                "--mode",
                "input",
                "--model",
                str(toy_run / "model"),
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    result = json.loads(out.read_text())
    assert result["benchmark"] == "CRUXEval-I" and len(result["results"]) == 2 and "pass@1" in result
