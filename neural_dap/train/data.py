"""Training data: trajectories tokenized and packed into fixed-length sequences, streamed.

Each trajectory becomes token ids (text pieces through the tokenizer, special tokens by id, exactly
as prompts are built at inference) and labels (the ids of predicted frames, -100 elsewhere).
Whole trajectories are packed into sequences; one never spans two sequences. A background thread
reads shards, tokenizes (in Rust, off the GIL) and packs, so the accelerator never waits.
"""

from __future__ import annotations

import gzip
import json
import os
import queue
import random
import threading
from collections.abc import Iterator

from neural_dap.corpus.dataset import shard_paths

IGNORE = -100


def encode(
    rows: list[list[str]], backend, special: dict[str, int], pieces_ids: list[list[int]] | None = None
) -> tuple[list[int], list[int]]:
    """(input ids, labels) of one trajectory given as [[kind, text], ...] (see trajectories.py)."""
    ids: list[int] = []
    labels: list[int] = []
    texts = [text for kind, text in rows if kind in "tT"]
    encoded = (
        pieces_ids
        if pieces_ids is not None
        else [e.ids for e in backend.encode_batch(texts, add_special_tokens=False)]
        if texts
        else []
    )
    k = 0
    for kind, text in rows:
        if kind in "sS":
            piece = [special[text]]
        else:
            piece = encoded[k]
            k += 1
        ids.extend(piece)
        labels.extend(piece if kind.isupper() else [IGNORE] * len(piece))
    return ids, labels


def _read_shard(path: str) -> list[list[list[str]]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line)["t"] for line in fh]


class PackedStream:
    """Endless batches [(input_ids, labels)] of shape (batch, seq_len), epoch after epoch."""

    def __init__(
        self, data_dir: str, tokenizer, seq_len: int, batch_size: int, seed: int = 0, prefetch: int = 16
    ) -> None:
        from neural_dap.train.tokenizer import special_ids

        self.paths = shard_paths(data_dir)
        if not self.paths:
            raise FileNotFoundError(f"no train-*.jsonl.gz shards in {data_dir} (make them with `neural-dap dataset`)")
        self.backend = tokenizer.backend_tokenizer
        self.special = special_ids(tokenizer)
        self.pad = tokenizer.pad_token_id
        self.seq_len = seq_len
        self.batch_size = batch_size
        self.rng = random.Random(seed)
        self.epoch = 0
        self.examples_seen = 0
        self.truncated = 0
        self.queue: queue.Queue = queue.Queue(maxsize=prefetch)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._produce, name="neural-dap-data", daemon=True)
        self.thread.start()

    def _examples(self) -> Iterator[tuple[list[int], list[int]]]:
        while True:
            paths = list(self.paths)
            self.rng.shuffle(paths)
            for path in paths:
                trajectories = _read_shard(path)
                self.rng.shuffle(trajectories)
                for start in range(0, len(trajectories), 256):
                    chunk = trajectories[start : start + 256]
                    texts = [text for rows in chunk for kind, text in rows if kind in "tT"]
                    flat = [e.ids for e in self.backend.encode_batch(texts, add_special_tokens=False)] if texts else []
                    k = 0
                    for rows in chunk:
                        n = sum(1 for kind, _ in rows if kind in "tT")
                        yield encode(rows, self.backend, self.special, flat[k : k + n])
                        k += n
            self.epoch += 1

    def _produce(self) -> None:
        try:
            ids_rows: list[list[int]] = []
            label_rows: list[list[int]] = []
            ids: list[int] = []
            labels: list[int] = []
            for ex_ids, ex_labels in self._examples():
                self.examples_seen += 1
                if len(ex_ids) > self.seq_len:
                    ex_ids, ex_labels = ex_ids[: self.seq_len], ex_labels[: self.seq_len]
                    self.truncated += 1
                if len(ids) + len(ex_ids) > self.seq_len:
                    fill = self.seq_len - len(ids)
                    ids_rows.append(ids + [self.pad] * fill)
                    label_rows.append(labels + [IGNORE] * fill)
                    ids, labels = [], []
                    if len(ids_rows) == self.batch_size:
                        self.queue.put((ids_rows, label_rows))
                        ids_rows, label_rows = [], []
                ids += ex_ids
                labels += ex_labels
        except BaseException as exc:  # surfaced to the training loop
            self.error = exc
            self.queue.put(None)

    def next(self):
        item = self.queue.get()
        if item is None:
            raise RuntimeError(f"the data stream failed: {self.error!r}") from self.error
        return item


def heldout_batches(heldout_file: str, tokenizer, seq_len: int, limit: int = 256) -> list[tuple[list[int], list[int]]]:
    """Examples of held-out programs, each on its own (for an evaluation loss)."""
    from neural_dap.train.tokenizer import special_ids

    if not os.path.isfile(heldout_file):
        return []
    special = special_ids(tokenizer)
    out = []
    with open(heldout_file) as fh:
        for line in fh:
            program = json.loads(line)
            for rows in program.get("trajectories", []):
                ids, labels = encode(rows, tokenizer.backend_tokenizer, special)
                out.append((ids[:seq_len], labels[:seq_len]))
                if len(out) >= limit:
                    return out
    return out


def _pack_shard(args: tuple[str, str, int, int]):
    """Worker: one shard -> (ids, mask) arrays of packed sequences (mask: the token is predicted)."""
    import numpy as np
    from tokenizers import Tokenizer

    path, tokenizer_file, seq_len, seed = args
    tokenizer = Tokenizer.from_file(tokenizer_file)
    special: dict[str, int] = {t: tokenizer.token_to_id(t) or 0 for t in _special_strings()}
    pad = tokenizer.token_to_id("<|pad|>") or 0
    trajectories = _read_shard(path)
    random.Random(seed).shuffle(trajectories)
    rows_ids: list[list[int]] = []
    rows_mask: list[list[int]] = []
    ids: list[int] = []
    mask: list[int] = []
    for start in range(0, len(trajectories), 512):
        chunk = trajectories[start : start + 512]
        texts = [text for rows in chunk for kind, text in rows if kind in "tT"]
        flat = [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)] if texts else []
        k = 0
        for rows in chunk:
            n = sum(1 for kind, _ in rows if kind in "tT")
            ex_ids, ex_labels = encode(rows, tokenizer, special, flat[k : k + n])
            k += n
            ex_ids, ex_mask = ex_ids[:seq_len], [int(label != IGNORE) for label in ex_labels[:seq_len]]
            if len(ids) + len(ex_ids) > seq_len:
                rows_ids.append(ids + [pad] * (seq_len - len(ids)))
                rows_mask.append(mask + [0] * (seq_len - len(mask)))
                ids, mask = [], []
            ids += ex_ids
            mask += ex_mask
    if ids:
        rows_ids.append(ids + [pad] * (seq_len - len(ids)))
        rows_mask.append(mask + [0] * (seq_len - len(mask)))
    return np.asarray(rows_ids, dtype=np.uint16 if tokenizer.get_vocab_size() < 65536 else np.int32), np.asarray(
        rows_mask, dtype=np.uint8
    )


def _special_strings() -> list[str]:
    from neural_dap.train.tokenizer import SPECIAL_TOKENS

    return SPECIAL_TOKENS


class ShardPool:
    """Batches packed by worker processes, one shard each (for fast accelerators); epoch after epoch."""

    def __init__(
        self, data_dir: str, tokenizer_file: str, seq_len: int, batch_size: int, seed: int = 0, workers: int = 4
    ) -> None:
        import multiprocessing as mp

        import numpy as np

        self.np = np
        self.data_dir = data_dir
        self.paths = shard_paths(data_dir)
        if not self.paths:
            raise FileNotFoundError(f"no train-*.jsonl.gz shards in {data_dir} (make them with `neural-dap dataset`)")
        self.tokenizer_file = tokenizer_file
        self.seq_len = seq_len
        self.batch_size = batch_size
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.epoch = 0
        self.examples_seen = 0
        self.truncated = 0
        self.pool = mp.get_context("spawn").Pool(max(1, workers))
        self.ids = np.zeros((0, seq_len), dtype=np.uint16)
        self.mask = np.zeros((0, seq_len), dtype=np.uint8)
        self.cursor = 0
        self.rows_in_epoch = 0
        self._submit()

    def _submit(self) -> None:
        self.paths = shard_paths(self.data_dir) or self.paths  # shards written meanwhile join the next epoch
        order = list(self.paths)
        random.Random(self.seed + self.epoch).shuffle(order)
        jobs = [
            (p, self.tokenizer_file, self.seq_len, self.seed * 1000 + self.epoch * 100 + i) for i, p in enumerate(order)
        ]
        self.pending = self.pool.imap_unordered(_pack_shard, jobs)
        self.left = len(jobs)

    def _refill(self) -> None:
        np = self.np
        if self.left == 0:
            self.epoch += 1
            self._submit()
        ids, mask = next(self.pending)
        self.left -= 1
        rest_ids, rest_mask = self.ids[self.cursor :], self.mask[self.cursor :]
        ids = np.concatenate([rest_ids, ids.astype(self.ids.dtype)])
        mask = np.concatenate([rest_mask, mask])
        perm = self.rng.permutation(len(ids))
        self.ids, self.mask, self.cursor = ids[perm], mask[perm], 0

    def next(self):
        while len(self.ids) - self.cursor < self.batch_size:
            self._refill()
        k = self.cursor
        self.cursor += self.batch_size
        return self.ids[k : self.cursor], self.mask[k : self.cursor]

    def close(self) -> None:
        self.pool.terminate()
