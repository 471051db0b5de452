"""Fine-tuning pretrained causal LMs into neural debuggers, and training on several processes.

The bases are tiny randomly initialised Llama- and Qwen2-style models with a tokenizer that has
never seen the trace format (made here, nothing downloaded): fine-tuning adds the format's tokens,
trains fully or with LoRA adapters, and the result drives a neural debug session in process.
Two CPU processes under torchrun (DDP over gloo) take the steps one process takes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neural_dap.core.actions import Action
from neural_dap.core.world import Entry, LaunchSpec
from neural_dap.corpus.dataset import DatasetConfig, build
from neural_dap.train.trainer import TrainConfig, train

from .conftest import EXAMPLES

pytestmark = pytest.mark.slow
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "neural_dap", "train"]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("data")
    build(str(folder), DatasetConfig(programs=60, workers=1, heldout_every=20, trajectories_per_program=3), False)
    return folder


def make_base(folder: Path, arch: str) -> Path:
    """A pretrained-looking base: its own byte-level BPE (no trace tokens) and random weights."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    text = [p.read_text() for p in EXAMPLES.glob("*.py")]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600, special_tokens=["<s>", "</s>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator(text, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>")
    shape = {
        "vocab_size": len(tokenizer),
        "hidden_size": 64,
        "intermediate_size": 160,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "max_position_embeddings": 2048,  # its small vocabulary spends tokens: room for a whole program
        "bos_token_id": 0,
        "eos_token_id": 1,
    }
    model = LlamaForCausalLM(LlamaConfig(**shape)) if arch == "llama" else Qwen2ForCausalLM(Qwen2Config(**shape))
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# each architecture once and each mode once (full fine-tuning, LoRA merged): what one of them does the
# other does through the same code (trainer.py picks neither by architecture)
@pytest.mark.parametrize(("arch", "lora"), [("llama", None), ("qwen2", 8)])
async def test_a_pretrained_base_learns_the_trace_format_and_then_debugs(tmp_path, data, arch, lora):
    base = make_base(tmp_path / "base", arch)
    run = tmp_path / "run"
    summary = train(
        TrainConfig(
            data=str(data),
            out=str(run),
            preset="tiny",
            steps=30,
            base=str(base),
            lora=lora,
            device="cpu",
            eval_every=30,
            extra={"lr": 5e-3 if lora else 3e-3},
        )
    )
    assert summary["heldout_loss"] < summary["initial_heldout_loss"] - 0.5, summary["history"]
    if lora:
        assert summary["trained_parameters"] < summary["parameters"] / 3  # adapters and the new tokens only
        assert (run / "adapter" / "adapter_config.json").is_file()
    from transformers import AutoConfig, PreTrainedTokenizerFast

    model = run / "model"
    tokenizer = PreTrainedTokenizerFast.from_pretrained(model)
    assert tokenizer.convert_tokens_to_ids("<|step_over|>") >= 600  # added to the base's own vocabulary
    assert AutoConfig.from_pretrained(model).model_type == arch
    assert not any(p.name.startswith("adapter") for p in model.iterdir())  # merged: one plain folder

    from neural_dap.llm.inprocess import InProcessClient
    from neural_dap.world.neural import ModelSettings, NeuralWorld

    world = NeuralWorld(InProcessClient(str(model)), ModelSettings(url=str(model), retries=1))
    program = str(EXAMPLES / "bubble_sort.py")
    try:
        stop = await world.start(LaunchSpec(program=program, entry=Entry("bubble_sort", "[3, 1, 2]")))
        for _ in range(3):
            stop = await world.act(Action("step_into"))
        assert stop.predicted and stop.state.function  # every predicted frame is one the program allows
    finally:
        await world.close()


def test_two_processes_under_torchrun_take_the_steps_one_process_takes(tmp_path, data):
    single = tmp_path / "one"
    common = ["--data", str(data), "--preset", "tiny", "--steps", "10", "--device", "cpu", "--eval-every", "10"]
    first = subprocess.run(
        [sys.executable, "-m", "neural_dap", "train", "--out", str(single), "--vocab-size", "1024", *common],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert first.returncode == 0, first.stderr[-3000:]
    double = tmp_path / "two"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    second = subprocess.run(
        [*TORCHRUN, "--out", str(double), "--tokenizer", str(single / "tokenizer"), *common],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert second.returncode == 0, second.stderr[-3000:]
    one = json.loads((single / "train_log.json").read_text())
    two = json.loads((double / "train_log.json").read_text())
    assert two["processes"] == 2 and one["processes"] == 1
    assert two["steps"] == one["steps"] == 10 and two["tokens"] == one["tokens"]
    assert two["final_loss"] == pytest.approx(one["final_loss"], rel=0.02)
    assert two["heldout_loss"] == pytest.approx(one["heldout_loss"], rel=0.02)
    assert (double / "model" / "config.json").is_file()
