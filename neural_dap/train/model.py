"""Model presets: a Llama-architecture causal LM, small enough to ship and to run on a CPU."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Preset:
    hidden: int
    layers: int
    heads: int
    ffn: int
    seq_len: int
    batch_tokens: int  # tokens per optimizer step
    lr: float
    steps: int

    def describe(self) -> dict:
        return asdict(self)


PRESETS: dict[str, Preset] = {
    # a few steps that must reduce the loss (CI)
    "tiny": Preset(hidden=64, layers=2, heads=2, ffn=176, seq_len=512, batch_tokens=4096, lr=3e-3, steps=30),
    # trains on a 2-core CPU in about two hours (with --compile; the shipped model); whole scripts need 1024 tokens
    "cpu": Preset(hidden=256, layers=6, heads=4, ffn=704, seq_len=1024, batch_tokens=16384, lr=1.5e-3, steps=2000),
    # one H200 in a few minutes; about 23M parameters, ~46 MB in fp16
    "gpu": Preset(hidden=384, layers=12, heads=6, ffn=1024, seq_len=2048, batch_tokens=131072, lr=1.2e-3, steps=3000),
}


def make_config(preset: Preset, vocab_size: int, bos: int, eos: int, pad: int):
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=preset.hidden,
        intermediate_size=preset.ffn,
        num_hidden_layers=preset.layers,
        num_attention_heads=preset.heads,
        num_key_value_heads=preset.heads,
        max_position_embeddings=preset.seq_len,
        rope_theta=10000.0,  # type: ignore[call-arg]  # transformers 5 reads it into rope_parameters
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        bos_token_id=bos,
        eos_token_id=eos,
        pad_token_id=pad,
        attention_bias=False,
        mlp_bias=False,
    )


def count_parameters(model) -> int:
    seen = set()
    total = 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total
