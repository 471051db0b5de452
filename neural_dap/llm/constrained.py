"""Token-level constrained decoding: a decoding constraint (an automaton over special tokens and
bytes, see `llm.base.Constraint`) turned into masks over a tokenizer's vocabulary.

Each token is a *piece*: a special token (by its string) or the UTF-8 bytes of its text (for a
byte-level BPE, the bytes it stands for, so tokens that split a character are judged correctly).
Decoding is lazy: the token the model prefers is checked by walking its bytes (a few steps); only
when it is refused is the whole mask computed, and masks are cached per automaton state. A mask is
computed by walking a byte trie of the vocabulary, pruned as soon as the automaton refuses; inside
a JSON string, where almost every token is allowed, the tokens made only of plain bytes are
allowed at once and only the rest are walked. Greedy decoding with the mask gives exactly what
greedy decoding gives when the model's choice is always allowed; sampling from the model and
resampling from the masked distribution when refused samples from the masked distribution.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

Piece = str | bytes  # a special token's string, or a text token's bytes
SHARED_MASKS = 2048  # masks kept across predictions (a vocabulary of 4096 tokens: 4 KiB each)


def byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet, reversed: the character a byte-level BPE writes -> the byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs, strict=False)}


def token_pieces(tokenizer: Any) -> list[Piece | None]:
    """The piece of every token id of a Hugging Face tokenizer (None for ids it does not use)."""
    size = len(tokenizer)
    special = set(getattr(tokenizer, "all_special_tokens", []) or [])
    try:
        added = tokenizer.get_added_vocab()
    except AttributeError:
        added = {}
    special |= {t for t in added if t.startswith("<|") and t.endswith("|>")}
    tokens = tokenizer.convert_ids_to_tokens(list(range(size)))
    decoder = byte_decoder()
    byte_level = _is_byte_level(tokenizer)
    out: list[Piece | None] = []
    for _i, token in enumerate(tokens):
        if token is None:
            out.append(None)
        elif token in special:
            out.append(token)
        elif token in added:
            out.append(token.encode())
        elif byte_level and all(ch in decoder for ch in token):
            out.append(bytes(decoder[ch] for ch in token))
        elif token.startswith("<0x") and token.endswith(">") and len(token) == 6:  # sentencepiece byte fallback
            out.append(bytes([int(token[3:5], 16)]))
        else:
            out.append(tokenizer.convert_tokens_to_string([token]).encode() if not byte_level else token.encode())
    return out


def _is_byte_level(tokenizer: Any) -> bool:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    decoder = getattr(backend, "decoder", None)
    return decoder is not None and ("ByteLevel" in type(decoder).__name__ or "ByteLevel" in repr(decoder))


class TokenIndex:
    """The vocabulary as pieces, a byte trie over the text tokens, and cached masks per state."""

    def __init__(self, pieces: list[Piece | None]) -> None:
        import numpy as np

        self.pieces = pieces
        self.size = len(pieces)
        self.special_ids: dict[str, int] = {p: i for i, p in enumerate(pieces) if isinstance(p, str)}
        self.trie: dict = {}
        plain = np.zeros(self.size, dtype=bool)
        self.unplain: list[int] = []
        from neural_dap.format.grammar import is_plain

        for i, piece in enumerate(pieces):
            if not isinstance(piece, bytes) or not piece:
                continue
            node = self.trie
            for byte in piece:
                node = node.setdefault(byte, {})
            node.setdefault(None, []).append(i)
            if all(is_plain(b) for b in piece):
                plain[i] = True
            else:
                self.unplain.append(i)
        self.plain = plain
        # masks per constraint (held weakly: a constraint lives for one prediction) and state; a
        # constraint with a `mask_key` (the program and frame shape it allows) shares them with every
        # later constraint of the same key, so a session computes each mask once
        self._masks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._shared: OrderedDict = OrderedDict()

    def advance(self, constraint: Any, state: Hashable, token: int) -> Hashable | None:
        piece = self.pieces[token] if 0 <= token < self.size else None
        if piece is None:
            return None
        if isinstance(piece, str):
            return constraint.step_special(state, piece)
        return constraint.step_bytes(state, piece)

    def mask(self, constraint: Any, state: Hashable):
        """A boolean array: which tokens the constraint allows in `state`."""
        shared_key = getattr(constraint, "mask_key", None)
        if shared_key is not None:
            key = (shared_key, state)
            found = self._shared.get(key)
            if found is not None:
                self._shared.move_to_end(key)
                return found
            found = self._compute(constraint, state)
            self._shared[key] = found
            if len(self._shared) > SHARED_MASKS:
                self._shared.popitem(last=False)
            return found
        cache = self._masks.get(constraint)
        if cache is None:
            cache = self._masks[constraint] = {}
        found = cache.get(state)
        if found is None:
            found = cache[state] = self._compute(constraint, state)
        return found

    def _compute(self, constraint: Any, state: Hashable):
        import numpy as np

        allowed = np.zeros(self.size, dtype=bool)
        for special, i in self.special_ids.items():
            if constraint.step_special(state, special) is not None:
                allowed[i] = True
        if constraint.free_text(state):
            allowed |= self.plain
            for i in self.unplain:
                if constraint.step_bytes(state, self.pieces[i]) is not None:
                    allowed[i] = True
        else:
            self._walk(constraint, self.trie, state, allowed)
        return allowed

    def toward_mask(self, target: bytes):
        """The text tokens that begin `target` (the shortest way out of a segment); None if none do."""
        import numpy as np

        allowed = np.zeros(self.size, dtype=bool)
        node: dict | None = self.trie
        for byte in target:
            node = node.get(byte) if node is not None else None
            if node is None:
                break
            allowed[node.get(None, [])] = True
        return allowed if allowed.any() else None

    def _walk(self, constraint: Any, node: dict, state: Hashable, allowed) -> None:
        stack = [(node, state)]
        while stack:
            node, state = stack.pop()
            for byte, child in node.items():
                if byte is None:
                    continue
                nxt = constraint.step_byte(state, byte)
                if nxt is None:
                    continue
                ends = child.get(None)
                if ends:
                    allowed[ends] = True
                stack.append((child, nxt))

    def forget(self, constraint: Any) -> None:
        """Drop the masks cached for a constraint that is done with."""
        self._masks.pop(constraint, None)
