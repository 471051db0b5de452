"""A byte-level BPE tokenizer (the `tokenizers` library) with every trace-format token special."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from neural_dap.format.tokens import ALL_SPECIALS, BEGIN, END

PAD = "<|pad|>"
SPECIAL_TOKENS: list[str] = [str(t) for t in ALL_SPECIALS] + [PAD]


def train_tokenizer(texts: Iterable[str], vocab_size: int = 4096, min_frequency: int = 2):
    """Train on text pieces (special tokens are never part of the text) and return a fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return wrap(tok)


def wrap(tok):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=str(BEGIN),
        eos_token=str(END),
        pad_token=PAD,
        additional_special_tokens=[t for t in SPECIAL_TOKENS if t not in (str(BEGIN), str(END), PAD)],
        clean_up_tokenization_spaces=False,
    )


def load_tokenizer(path: str):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast.from_pretrained(path)


def special_ids(tokenizer) -> dict[str, int]:
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    missing = [t for t, i in ids.items() if i is None or i == tokenizer.unk_token_id]
    if missing:
        raise ValueError(f"the tokenizer lacks special tokens {missing}")
    return ids


def add_missing_specials(tokenizer) -> int:
    """Register the trace format's tokens that a tokenizer (a pretrained base's) does not have yet."""
    vocab = tokenizer.get_vocab()
    missing = [t for t in SPECIAL_TOKENS if t not in vocab]
    if not missing:
        return 0
    try:
        added = tokenizer.add_special_tokens({"additional_special_tokens": missing}, replace_extra_special_tokens=False)
    except TypeError:  # transformers 4.x names the flag differently
        added = tokenizer.add_special_tokens(
            {"additional_special_tokens": missing}, replace_additional_special_tokens=False
        )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = PAD
    return added


def text_pieces(trajectories: Iterable[list[list[str]]], limit: int) -> Iterator[str]:
    """Text pieces (not special tokens) of up to `limit` trajectories, for tokenizer training."""
    for n, rows in enumerate(trajectories):
        if n >= limit:
            return
        for kind, text in rows:
            if kind in "tT":
                yield text


def save(tokenizer, path: str) -> None:
    os.makedirs(path, exist_ok=True)
    tokenizer.save_pretrained(path)
