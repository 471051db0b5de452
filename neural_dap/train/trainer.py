"""The training loop: a causal LM on nd-dialect trajectories, loss on predicted frames only.

From scratch (a small Llama), or fine-tuning any Hugging Face causal LM (`base`), fully or with LoRA
adapters (peft). On accelerate: one CPU, one GPU (bf16), or many processes under `torchrun` /
`accelerate launch` (DDP; FSDP through an accelerate config).
Deterministic from its seed; checkpoints every `checkpoint_every` steps and `--resume` continues
from the last one; a progress bar shows the loss and tokens per second.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from neural_dap.train.model import PRESETS, Preset, count_parameters, make_config
from neural_dap.train.tokenizer import special_ids


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
    lora: int | None = None  # LoRA rank: train adapters (and the new tokens' embeddings), not the base
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


def cpu_threads() -> int:
    """torch's threads for one process training on the CPU: every core, or as many as
    OMP_NUM_THREADS says (a machine shared with other work: OpenMP threads that spin on a core
    another process holds run many times slower than fewer threads would)."""
    asked = os.environ.get("OMP_NUM_THREADS", "")
    if asked.isdigit() and int(asked) > 0:
        return int(asked)
    return max(1, os.cpu_count() or 1)


def train(config: TrainConfig) -> dict:
    """Train on one device, or on many under `torchrun` / `accelerate launch` (DDP; FSDP from an
    accelerate config): every rank builds the same global batches from the seed and trains on its
    slice of rows, so N processes take the steps one process would; the main rank logs, evaluates,
    checkpoints and exports."""
    import torch
    from accelerate import Accelerator
    from accelerate.utils import broadcast_object_list, set_seed
    from transformers import LlamaForCausalLM

    from neural_dap.train.data import IGNORE, PackedStream, ShardPool, heldout_batches

    started = time.monotonic()
    use_cpu = config.device == "cpu" or not torch.cuda.is_available()
    accelerator = Accelerator(cpu=use_cpu, mixed_precision="no" if use_cpu else "bf16")
    main = accelerator.is_main_process
    rank, world = accelerator.process_index, accelerator.num_processes
    device = accelerator.device
    os.makedirs(config.out, exist_ok=True)
    random.seed(config.seed)
    set_seed(config.seed)  # the same initial weights on every rank
    preset = config.preset_values()
    if device.type == "cpu" and world == 1:
        torch.set_num_threads(cpu_threads())
    with accelerator.main_process_first():  # the main rank writes the run's tokenizer, the others read it
        tokenizer = prepare_tokenizer(config)
    if config.base:
        model = load_base(config.base, len(tokenizer), preset.seq_len)
    else:
        model_config = make_config(
            preset, len(tokenizer), tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id
        )
        model = LlamaForCausalLM(model_config)
    if config.lora:
        from neural_dap.train.lora import with_lora

        model = with_lora(model, config.lora, trainable_tokens=new_token_ids(config, tokenizer))
    n_params = count_parameters(model)
    n_trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad],
        lr=preset.lr,
        betas=(0.9, 0.95),
        weight_decay=0.1,
        fused=device.type == "cuda",
    )
    model, optimizer = accelerator.prepare(model, optimizer)
    step = 0
    history: list[dict] = []
    checkpoint_dir = os.path.join(config.out, "checkpoint")
    if config.resume and os.path.isfile(os.path.join(checkpoint_dir, "trainer_state.json")):
        accelerator.load_state(checkpoint_dir)
        with open(os.path.join(checkpoint_dir, "trainer_state.json")) as fh:
            state = json.load(fh)
        step, history = state["step"], state["history"]
        _log(f"resumed from step {step}") if main else None
    if preset.batch_tokens // preset.seq_len % world:
        raise ValueError(f"{preset.batch_tokens // preset.seq_len} rows a step do not split over {world} processes")
    batch_size = max(world, preset.batch_tokens // preset.seq_len)  # rows of one global batch
    tokenizer_file = os.path.join(config.out, "tokenizer", "tokenizer.json")
    workers = (
        config.data_workers
        if config.data_workers is not None
        else (max(1, (os.cpu_count() or 2) // world - 1) if device.type == "cuda" else 0)
    )
    stream: ShardPool | PackedStream
    if workers > 0:
        stream = ShardPool(
            config.data, tokenizer_file, preset.seq_len, batch_size, seed=config.seed + step, workers=workers
        )
    else:
        stream = PackedStream(config.data, tokenizer, preset.seq_len, batch_size, seed=config.seed + step)
    heldout = (
        heldout_batches(os.path.join(config.data.split(",")[0], "heldout.jsonl"), tokenizer, preset.seq_len, limit=64)
        if main
        else []
    )
    forward = model
    if config.compile and world == 1:
        try:
            forward = torch.compile(model)
        except Exception as exc:
            _log(f"torch.compile unavailable ({exc}); running eagerly")
    if main:
        _log(
            f"model: {n_params / 1e6:.1f}M parameters ({n_trainable / 1e6:.2f}M trained), preset {config.preset} "
            f"{preset.describe()}, {world} process{'es' if world > 1 else ''} on {device}"
        )

    planned = {"steps": preset.steps}

    def lr_at(s: int) -> float:
        total = planned["steps"]
        warmup = max(1, min(total // 20, 200))
        if s < warmup:
            return preset.lr * (s + 1) / warmup
        progress = (s - warmup) / max(1, total - warmup)
        return preset.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))

    def save_checkpoint() -> None:
        accelerator.save_state(checkpoint_dir)  # every rank takes part; the main one writes
        if main:
            with open(os.path.join(checkpoint_dir, "trainer_state.json"), "w") as fh:
                json.dump({"step": step, "history": history}, fh)

    def evaluate() -> float | None:
        if not heldout:
            return None
        inner = accelerator.unwrap_model(model)
        inner.eval()
        total, count = 0.0, 0
        with torch.no_grad(), accelerator.autocast():
            for ids, labels in heldout:
                x = torch.tensor([ids], device=device)
                y = torch.tensor([labels], device=device)
                if (y != IGNORE).sum() == 0:
                    continue
                total += float(inner(input_ids=x, labels=y).loss)
                count += 1
        inner.train()
        return total / max(1, count)

    initial_eval = evaluate() if step == 0 else None  # what the base (or random weights) knew
    bar = _bar(preset.steps, step) if main else _quiet
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
            x = torch.from_numpy(ids[rank::world].astype("int64")).to(device, non_blocking=True)
            mask = torch.from_numpy(labels[rank::world].astype("bool")).to(device, non_blocking=True)
            y = torch.where(mask, x, IGNORE)
        else:
            x = torch.tensor(ids[rank::world], device=device)
            y = torch.tensor(labels[rank::world], device=device)
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step)
        try:
            out = forward(input_ids=x, labels=y)
        except Exception as exc:
            if forward is model:
                raise
            _log(f"compiled model failed ({type(exc).__name__}: {exc}); running eagerly")
            forward = model
            out = forward(input_ids=x, labels=y)
        loss = out.loss
        optimizer.zero_grad(set_to_none=True)
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(model.parameters(), 1.0)
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
            plan = [max(step + 1, step + int(left / per_step))]
            broadcast_object_list(plan)  # every rank takes the main rank's plan
            planned["steps"] = plan[0]
            if main:
                bar(step, None, done=True)
                _log(
                    f"{per_step * 1e3:.0f} ms per step: planning {planned['steps']} steps "
                    f"for the {config.time_budget:g} s budget"
                )
                bar = _bar(planned["steps"], step)
        n_tokens = x.numel() * world
        tokens_done += n_tokens
        window_tokens += n_tokens
        if step % 10 == 0 or step == planned["steps"]:
            step_loss = float(accelerator.reduce(loss.detach(), reduction="mean"))
            elapsed = time.monotonic() - window_start
            rate = window_tokens / max(elapsed, 1e-9)
            record = {
                "step": step,
                "loss": round(step_loss, 4),
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
        if config.time_limit is not None:
            over = [time.monotonic() - started > config.time_limit]
            broadcast_object_list(over)
            if over[0]:
                _log(f"time limit reached at step {step}") if main else None
                stopped_early = True
                break
    bar(step, None, done=True)
    if isinstance(stream, ShardPool):
        stream.close()
    save_checkpoint()
    final_eval = evaluate()
    accelerator.wait_for_everyone()
    summary = {
        "preset": config.preset,
        "preset_values": preset.describe(),
        "parameters": n_params,
        "trained_parameters": n_trainable,
        "lora": config.lora,
        "processes": world,
        "steps": step,
        "stopped_early": stopped_early,
        "tokens": tokens_done,
        "epochs": stream.epoch,
        "examples_seen": stream.examples_seen,
        "truncated_examples": stream.truncated,
        "final_loss": history[-1]["loss"] if history else None,
        "initial_heldout_loss": initial_eval,
        "heldout_loss": final_eval,
        "seconds": round(time.monotonic() - started, 1),
        "device": str(device),
        "seed": config.seed,
        "history": history,
    }
    sharded = accelerator.distributed_type.name == "FSDP" and not config.lora
    whole = accelerator.get_state_dict(model) if sharded else None  # every rank takes part in gathering
    if main:
        inner = accelerator.unwrap_model(model)
        if config.lora:
            from neural_dap.train.lora import merged

            inner.save_pretrained(os.path.join(config.out, "adapter"))  # for vLLM's LoRA serving
            tokenizer.save_pretrained(os.path.join(config.out, "adapter"))
            inner = merged(inner)
        export(inner, tokenizer, os.path.join(config.out, "model"), config.save_dtype, whole)
        with open(os.path.join(config.out, "train_log.json"), "w") as fh:
            json.dump(summary, fh, indent=2)
    accelerator.wait_for_everyone()
    accelerator.end_training()
    return summary


def new_token_ids(config: TrainConfig, tokenizer) -> list[int]:
    """Ids of the trace-format tokens the base did not have (their embeddings must be trained)."""
    if not config.base:
        return []
    from transformers import AutoConfig

    base_vocab = int(getattr(AutoConfig.from_pretrained(config.base), "vocab_size", len(tokenizer)))
    return [i for t, i in special_ids(tokenizer).items() if i >= base_vocab]


def _quiet(*args, **kwargs) -> None:
    return None


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


def export(model, tokenizer, path: str, dtype: str = "float16", state_dict: dict | None = None) -> None:
    """safetensors + config + tokenizer: loads in transformers and in `vllm serve`. `state_dict`: the
    whole weights when the model's own are sharded across processes (FSDP)."""
    import torch

    os.makedirs(path, exist_ok=True)
    target = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[dtype]
    if state_dict is not None:
        weights = {k: v.to(target) if v.is_floating_point() else v for k, v in state_dict.items()}
        model.save_pretrained(path, state_dict=weights, safe_serialization=True, max_shard_size="15MB")
    else:
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
