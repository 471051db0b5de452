"""A compact decoder for small Llama-architecture models on the CPU (the embedded model is one).

Why: a step of the embedded model (5.9M parameters) is ~45 small matrix-vector products, about
2 ms of arithmetic on one core; through `transformers` a step cost ~4 ms more: module dispatch,
mask and output objects, and the KV cache grown by `torch.cat` at every token (a copy of the
whole cache per layer per token). Here the same operations, in the same order and precision, run
on preallocated KV buffers: a step writes one position, and taking tokens back is setting a length.

The arithmetic is that of `transformers`' Llama (RMSNorm in float32, default RoPE, SDPA attention,
SiLU gated MLP), so greedy decoding gives the same tokens (tests/test_decoding_speed_and_confidence
compares sessions' frames with frames captured from the transformers path). A model this does not
describe exactly (another architecture, RoPE scaling, biases, grouped KV heads with a different
layout) is refused by `supports`, and the client uses transformers as before.
"""

from __future__ import annotations

from typing import Any


def supports(model: Any) -> bool:
    """Is `model` a plain Llama causal LM this decoder computes exactly like transformers does?"""
    config = getattr(model, "config", None)
    if config is None or getattr(config, "model_type", None) != "llama":
        return False
    rope = getattr(config, "rope_parameters", None) or {}
    scaling = getattr(config, "rope_scaling", None) or {}  # transformers 5 names rope_parameters so too
    if rope.get("rope_type", "default") != "default" or scaling.get("rope_type", "default") != "default":
        return False
    if getattr(config, "attention_bias", False) or getattr(config, "mlp_bias", False):
        return False
    if getattr(config, "hidden_act", "silu") != "silu" or getattr(config, "pretraining_tp", 1) != 1:
        return False
    inner = getattr(model, "model", None)
    return inner is not None and hasattr(inner, "layers") and hasattr(model, "lm_head")


class FastLlama:
    """Forward passes with a KV cache held in preallocated buffers (one per layer, K and V)."""

    def __init__(self, model: Any, max_len: int | None = None) -> None:
        import torch

        config = model.config
        self.torch = torch
        self.heads = config.num_attention_heads
        self.kv_heads = getattr(config, "num_key_value_heads", None) or self.heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.max_len = max_len or config.max_position_embeddings
        self.eps = config.rms_norm_eps
        inner = model.model
        self.embed = inner.embed_tokens.weight
        # q, k and v as one matrix, gate and up as one: each output is the same dot product of a row
        # with the input (bitwise the same as three products), with fewer calls
        self.layers = [
            (
                layer.input_layernorm.weight,
                torch.cat(
                    (layer.self_attn.q_proj.weight, layer.self_attn.k_proj.weight, layer.self_attn.v_proj.weight)
                ).contiguous(),
                layer.self_attn.o_proj.weight,
                layer.post_attention_layernorm.weight,
                torch.cat((layer.mlp.gate_proj.weight, layer.mlp.up_proj.weight)).contiguous(),
                layer.mlp.down_proj.weight,
            )
            for layer in inner.layers
        ]
        self.q_heads = self.heads
        self.qk_heads = self.heads + self.kv_heads
        self.intermediate = config.intermediate_size
        self.norm = inner.norm.weight
        self.head = model.lm_head.weight
        dtype = self.embed.dtype
        shape = (1, self.kv_heads, self.max_len, self.head_dim)
        self.keys = [torch.zeros(shape, dtype=dtype) for _ in self.layers]
        self.values = [torch.zeros(shape, dtype=dtype) for _ in self.layers]
        self.length = 0  # positions held in the buffers
        # RoPE tables for every position, computed as transformers computes them
        base = (getattr(config, "rope_parameters", None) or {}).get("rope_theta") or getattr(
            config, "rope_theta", 10000.0
        )
        inv_freq = 1.0 / (base ** (torch.arange(0, self.head_dim, 2, dtype=torch.float) / self.head_dim))
        positions = torch.arange(self.max_len, dtype=torch.float)[None, :, None]
        freqs = positions * inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        self.cos = emb.cos().to(dtype)[0]
        self.sin = emb.sin().to(dtype)[0]
        self.scale = self.head_dim**-0.5

    def crop(self, keep: int) -> None:
        self.length = min(self.length, max(0, keep))

    def _rms(self, x, weight):
        torch = self.torch
        dtype = x.dtype
        if dtype != torch.float32:
            x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return weight * (x if dtype == torch.float32 else x.to(dtype))

    def _rope(self, x, cos, sin):
        half = x.shape[-1] // 2
        rotated = self.torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos + rotated * sin

    def forward(self, ids: list[int]):
        """Run `ids` after the cached positions; returns the logits of the last one (a 1-D tensor)."""
        torch = self.torch
        F = torch.nn.functional
        count = len(ids)
        start = self.length
        end = start + count
        if end > self.max_len:
            raise ValueError(f"{end} positions do not fit the cache of {self.max_len}")
        x = F.embedding(torch.tensor([ids]), self.embed)
        cos = self.cos[start:end][None, None]
        sin = self.sin[start:end][None, None]
        mask = None
        if count > 1 and start:  # a chunk after cached positions: each token sees the past and itself
            mask = torch.ones(count, end, dtype=torch.bool).tril(diagonal=start)[None, None]
        shape = (1, count, -1, self.head_dim)
        qk, inter = self.qk_heads, self.intermediate
        for k, (ln1, wqkv, wo, ln2, wgu, wd) in enumerate(self.layers):
            h = self._rms(x, ln1)
            qkv = F.linear(h, wqkv).view(shape).transpose(1, 2)
            rotated = self._rope(qkv[:, :qk], cos, sin)  # q and k heads at once (elementwise: the same)
            q = rotated[:, : self.q_heads]
            key = rotated[:, self.q_heads :]
            value = qkv[:, qk:]
            self.keys[k][:, :, start:end] = key
            self.values[k][:, :, start:end] = value
            keys = self.keys[k][:, :, :end]
            values = self.values[k][:, :, :end]
            if count > 1:  # laid out as transformers' cache is, so the kernel sums in the same order
                keys, values = keys.contiguous(), values.contiguous()
            if self.kv_heads != self.heads:
                rep = self.heads // self.kv_heads
                keys = keys.repeat_interleave(rep, dim=1)
                values = values.repeat_interleave(rep, dim=1)
            attn = F.scaled_dot_product_attention(
                q, keys, values, attn_mask=mask, is_causal=count > 1 and not start, scale=self.scale
            )
            x = x + F.linear(attn.transpose(1, 2).reshape(1, count, -1), wo)
            h = self._rms(x, ln2)
            gu = F.linear(h, wgu)
            x = x + F.linear(F.silu(gu[..., :inter]) * gu[..., inter:], wd)
        self.length = end
        # the head over every row, as transformers computes it (a matrix product sums in another order
        # than a vector product: the last row alone would differ in the last bits)
        return F.linear(self._rms(x, self.norm), self.head)[0, -1]
