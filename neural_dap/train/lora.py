"""LoRA fine-tuning with peft: adapters on every linear layer of a pretrained base, and trainable
embeddings for the trace-format tokens the base did not have (their rows start random)."""

from __future__ import annotations

from typing import Any


def with_lora(model: Any, rank: int, trainable_tokens: list[int]) -> Any:
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(
        r=rank,
        lora_alpha=2 * rank,
        lora_dropout=0.0,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
        trainable_token_indices=_token_rows(model, trainable_tokens) or None,
    )
    return get_peft_model(model, config)


def _token_rows(model: Any, ids: list[int]) -> dict[str, list[int]]:
    """The new tokens' rows of the input embeddings, and of the output layer when it is not tied to
    them (else the model could read the new tokens but never learn to write them)."""
    if not ids:
        return {}
    names = {id(module): name.rsplit(".", 1)[-1] for name, module in model.named_modules()}
    rows = {names[id(model.get_input_embeddings())]: ids}
    output = model.get_output_embeddings()
    if output is not None and not getattr(model.config, "tie_word_embeddings", False):
        rows[names[id(output)]] = ids
    return rows


def merged(model: Any) -> Any:
    """The base with the adapters folded in: one folder that transformers loads and vLLM serves."""
    return model.merge_and_unload()
