"""The training loop: a Llama causal LM from scratch on nd-dialect trajectories, loss on predicted frames.

The same command runs on a 2-core CPU (preset `cpu`) and on a GPU (preset `gpu`, bf16 autocast).
Deterministic from its seed; checkpoints every `checkpoint_every` steps and `--resume` continues
from the last one; a progress bar shows the loss and tokens per second.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from neural_dap.train.model import PRESETS, Preset, count_parameters, make_config


@dataclass
class TrainConfig:
    data: str
    out: str
    preset: str = "cpu"
    steps: int | None = None  # default: the preset's
    seed: int = 0
    resume: bool = False
    tokenizer: str | None = None  # an existing tokenizer folder; default: train one on the data
    base: str | None = None  # a model folder to start from (its weights and tokenizer) instead of random weights
    vocab_size: int = 4096
    checkpoint_every: int = 200
    eval_every: int = 100
    device: str | None = None
    compile: bool = False
    time_limit: float | None = None  # seconds: stop (and save) early when the budget runs out
    time_budget: float | None = None  # seconds of training: the step count is set from the measured speed
    data_workers: int | None = None  # processes packing data (default: all but one CPU on a GPU machine, none on a CPU)
    save_dtype: str = "float16"
    extra: dict = field(default_factory=dict)

    def preset_values(self) -> Preset:
        base = PRESETS[self.preset]
        values = asdict(base)
        values.update({k: v for k, v in self.extra.items() if k in values})
        if self.steps is not None:
            values["steps"] = self.steps
        return Preset(**values)


def _log(*parts) -> None:
    print(*parts, file=sys.stderr, flush=True)


def prepare_tokenizer(config: TrainConfig):
    from neural_dap.corpus.dataset import read_trajectories
    from neural_dap.train.tokenizer import add_missing_specials, load_tokenizer, save, text_pieces, train_tokenizer

    target = os.path.join(config.out, "tokenizer")
    if os.path.isfile(os.path.join(target, "tokenizer.json")):
        return load_tokenizer(target)
    if config.tokenizer or config.base:
        tokenizer = load_tokenizer(str(config.tokenizer or config.base))
        added = add_missing_specials(tokenizer)
        if added:
            _log(f"added {added} trace-format special tokens to the tokenizer")
        save(tokenizer, target)  # the run folder always holds the tokenizer it trains with
        return tokenizer
    _log(f"training a {config.vocab_size}-token byte-level BPE tokenizer on the data")
    tokenizer = train_tokenizer(text_pieces(read_trajectories(config.data), limit=30000), vocab_size=config.vocab_size)
    save(tokenizer, target)
    return tokenizer


def train(config: TrainConfig) -> dict:
    import torch
    from transformers import LlamaForCausalLM

    from neural_dap.train.data import IGNORE, PackedStream, ShardPool, heldout_batches

    started = time.monotonic()
    os.makedirs(config.out, exist_ok=True)
    random.seed(config.seed)
    torch.manual_seed(config.seed)
    preset = config.preset_values()
    device = torch.device(config.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cpu":
        torch.set_num_threads(max(1, os.cpu_count() or 1))
    tokenizer = prepare_tokenizer(config)
    checkpoint_path = os.path.join(config.out, "checkpoint.pt")
    if config.base:
        model = load_base(config.base, len(tokenizer), preset.seq_len).to(device)
    else:
        model_config = make_config(
            preset, len(tokenizer), tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id
        )
        model = LlamaForCausalLM(model_config).to(device)  # type: ignore[arg-type]  # transformers' typing of .to
    n_params = count_parameters(model)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=preset.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=device.type == "cuda"
    )
    step = 0
    history: list[dict] = []
    if config.resume and os.path.isfile(checkpoint_path):
        state = torch.load(checkpoint_path, map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = state["step"]
        history = state.get("history", [])
        random.setstate(state["python_rng"])
        torch.set_rng_state(state["torch_rng"])
        _log(f"resumed from step {step}")
    batch_size = max(1, preset.batch_tokens // preset.seq_len)
    tokenizer_file = os.path.join(config.out, "tokenizer", "tokenizer.json")
    workers = (
        config.data_workers
        if config.data_workers is not None
        else (max(1, (os.cpu_count() or 2) - 1) if device.type == "cuda" else 0)
    )
    stream: ShardPool | PackedStream
    if workers > 0:
        stream = ShardPool(
            config.data, tokenizer_file, preset.seq_len, batch_size, seed=config.seed + step, workers=workers
        )
    else:
        stream = PackedStream(config.data, tokenizer, preset.seq_len, batch_size, seed=config.seed + step)
    heldout = heldout_batches(
        os.path.join(config.data.split(",")[0], "heldout.jsonl"), tokenizer, preset.seq_len, limit=64
    )
    forward = model
    if config.compile:
        try:
            forward = torch.compile(model)
        except Exception as exc:
            _log(f"torch.compile unavailable ({exc}); running eagerly")
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else contextlib.nullcontext()
    _log(f"model: {n_params / 1e6:.1f}M parameters, preset {config.preset} {preset.describe()}, device {device}")

    planned = {"steps": preset.steps}

    def lr_at(s: int) -> float:
        total = planned["steps"]
        warmup = max(1, min(total // 20, 200))
        if s < warmup:
            return preset.lr * (s + 1) / warmup
        progress = (s - warmup) / max(1, total - warmup)
        return preset.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))

    def save_checkpoint() -> None:
        torch.save(
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "step": step,
                "history": history,
                "python_rng": random.getstate(),
                "torch_rng": torch.get_rng_state(),
            },
            checkpoint_path + ".tmp",
        )
        os.replace(checkpoint_path + ".tmp", checkpoint_path)

    def evaluate() -> float | None:
        if not heldout:
            return None
        model.eval()
        total, count = 0.0, 0
        with torch.no_grad(), autocast:
            for ids, labels in heldout:
                x = torch.tensor([ids], device=device)
                y = torch.tensor([labels], device=device)
                if (y != IGNORE).sum() == 0:
                    continue
                out = forward(input_ids=x, labels=y)
                total += float(out.loss)
                count += 1
        model.train()
        return total / max(1, count)

    bar = _bar(preset.steps, step)
    model.train()
    train_started = None
    measure_from = step + 5  # the first steps include compilation and warm-up
    tokens_done = 0
    window_start = time.monotonic()
    window_tokens = 0
    stopped_early = False
    while step < planned["steps"]:
        ids, labels = stream.next()
        if isinstance(stream, ShardPool):  # numpy arrays: ids, and a mask of predicted tokens
            x = torch.from_numpy(ids.astype("int64")).to(device, non_blocking=True)
            y = torch.where(torch.from_numpy(labels.astype("bool")).to(device, non_blocking=True), x, IGNORE)
        else:
            x = torch.tensor(ids, device=device)
            y = torch.tensor(labels, device=device)
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step)
        try:
            with autocast:
                out = forward(input_ids=x, labels=y)
        except Exception as exc:
            if forward is model:
                raise
            _log(f"compiled model failed ({type(exc).__name__}: {exc}); running eagerly")
            forward = model
            with autocast:
                out = forward(input_ids=x, labels=y)
        loss = out.loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        step += 1
        if step == measure_from:
            if device.type == "cuda":
                torch.cuda.synchronize()
            train_started = time.monotonic()
        elif config.time_budget is not None and train_started is not None and step == measure_from + 20:
            if device.type == "cuda":
                torch.cuda.synchronize()
            per_step = (time.monotonic() - train_started) / 20
            left = config.time_budget - (time.monotonic() - started)
            planned["steps"] = max(step + 1, step + int(left / per_step))
            bar(step, None, done=True)
            _log(
                f"{per_step * 1e3:.0f} ms per step: planning {planned['steps']} steps "
                f"for the {config.time_budget:g} s budget"
            )
            bar = _bar(planned["steps"], step)
        n_tokens = x.numel()
        tokens_done += n_tokens
        window_tokens += n_tokens
        if step % 10 == 0 or step == planned["steps"]:
            elapsed = time.monotonic() - window_start
            rate = window_tokens / max(elapsed, 1e-9)
            record = {
                "step": step,
                "loss": round(loss.item(), 4),
                "lr": lr_at(step),
                "tokens_per_s": round(rate),
                "epoch": stream.epoch,
            }
            if step % config.eval_every == 0 or step == planned["steps"]:
                record["heldout_loss"] = evaluate()
            history.append(record)
            bar(step, record)
            window_start, window_tokens = time.monotonic(), 0
        if step % config.checkpoint_every == 0:
            save_checkpoint()
        if config.time_limit is not None and time.monotonic() - started > config.time_limit:
            _log(f"time limit reached at step {step}")
            stopped_early = True
            break
    bar(step, None, done=True)
    if isinstance(stream, ShardPool):
        stream.close()
    save_checkpoint()
    final_eval = evaluate()
    export_dir = os.path.join(config.out, "model")
    export(model, tokenizer, export_dir, config.save_dtype)
    summary = {
        "preset": config.preset,
        "preset_values": preset.describe(),
        "parameters": n_params,
        "steps": step,
        "stopped_early": stopped_early,
        "tokens": tokens_done,
        "epochs": stream.epoch,
        "examples_seen": stream.examples_seen,
        "truncated_examples": stream.truncated,
        "final_loss": history[-1]["loss"] if history else None,
        "heldout_loss": final_eval,
        "seconds": round(time.monotonic() - started, 1),
        "device": str(device),
        "seed": config.seed,
        "history": history,
    }
    with open(os.path.join(config.out, "train_log.json"), "w") as fh:
        json.dump(summary, fh, indent=2)
    return summary


def load_base(path: str, vocab_size: int, seq_len: int):
    """A pretrained causal LM to continue training: its own architecture, the run's tokenizer size,
    and a position limit of at least the training sequence length (RoPE models extend to it)."""
    import torch
    from transformers import AutoModelForCausalLM

    model: Any = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    if model.get_input_embeddings().num_embeddings < vocab_size:
        model.resize_token_embeddings(vocab_size)
    if int(getattr(model.config, "max_position_embeddings", seq_len)) < seq_len:
        model.config.max_position_embeddings = seq_len
    return model


def export(model, tokenizer, path: str, dtype: str = "float16") -> None:
    """safetensors + config + tokenizer: loads in transformers and in `vllm serve`."""
    import torch

    os.makedirs(path, exist_ok=True)
    target = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[dtype]
    original = next(model.parameters()).dtype
    model.to(target)
    model.save_pretrained(path, safe_serialization=True, max_shard_size="15MB")  # small files travel well
    model.to(original)
    tokenizer.save_pretrained(path)


def _bar(total: int, start: int):
    try:
        from tqdm import tqdm

        bar = tqdm(total=total, initial=start, unit="step", file=sys.stderr, dynamic_ncols=True)

        def update(step: int, record: dict | None, done: bool = False) -> None:
            bar.n = step
            if record:
                post = {"loss": record["loss"], "tok/s": record["tokens_per_s"]}
                if record.get("heldout_loss") is not None:
                    post["heldout"] = round(record["heldout_loss"], 4)
                bar.set_postfix(post, refresh=False)
            bar.refresh()
            if done:
                bar.close()

        return update
    except ImportError:

        def update(step: int, record: dict | None, done: bool = False) -> None:
            if record:
                _log(f"step {step}/{total} loss {record['loss']} tokens/s {record['tokens_per_s']}")

        return update
