"""An in-process model client on transformers (the embedded model, on the CPU).

It keeps the KV cache between calls: a new prompt that extends the previous one (the history of a
debugging session only grows) recomputes only the tokens after their common prefix. Generation
runs in a worker thread and stops at a stop token, at `max_tokens`, or when cancelled. A
constraint masks the logits token by token (`llm.constrained`), so what it generates is a valid
frame by construction.

Speed (profiled; docs/design-notes.md, "Fast decoding and honest confidence"): a small model runs
on one intra-op thread (two threads on a shared 2-core machine made a 4 ms step cost 35-230 ms
while other processes ran), and a plain Llama model (the embedded one) runs through
`llm.fastllama`, the same arithmetic without transformers' per-call overhead and with a
preallocated KV cache; other models go through transformers with a `DynamicCache`.

Every generated token's probability (the model's own, before the constraint) comes back with the
completion, and a string value the model loops on is ended (`llm.base.repeating`).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any

import anyio

from neural_dap.llm.base import (
    CLOSING_ROOM,
    MAX_VALUE_TOKENS,
    Completion,
    CompletionResult,
    Constraint,
    ModelError,
    repeating,
)

# Models smaller than this run on one intra-op thread: their matrix-vector products are too small
# to share, and a thread pool spinning on a shared machine costs far more than it saves.
ONE_THREAD_PARAMETERS = 50_000_000


# transformers imports its classes lazily, and not safely from two threads at once: two clients
# loading together (a language server opening two files) made one fail with "cannot import name
# 'AutoModelForCausalLM'". One load at a time, process-wide, as the import machinery is.
_LOADING = threading.Lock()


class InProcessClient:
    def __init__(self, path: str, *, device: str = "cpu", threads: int | None = None, seed: int = 0) -> None:
        self.path = path
        self.name = os.path.basename(os.path.normpath(path))
        self.device = device
        self.threads = threads
        self.seed = seed
        self._model: Any = None  # a transformers causal LM, loaded on first use
        self._tokenizer: Any = None
        self._cache: Any = None
        self._cached_ids: list[int] = []
        self._lock = threading.Lock()
        self._load_lock = anyio.Lock()
        self._index = None  # TokenIndex of the vocabulary, made on the first call
        self._fast: Any = None  # llm.fastllama.FastLlama, for a plain Llama model
        self._last_logits: Any = None
        self._threads: int | None = None

    def describe(self) -> dict:
        return {"client": "inprocess", "path": self.path, "model": self.name, "device": self.device}

    async def _ensure(self) -> None:
        async with self._load_lock:
            if self._model is None:
                await anyio.to_thread.run_sync(self._load)

    def _load(self) -> None:
        with _LOADING:
            self._load_alone()

    def _load_alone(self) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast
        except ImportError as exc:
            raise ModelError(
                f"the embedded model needs torch and transformers ({exc}); install neural-dap[model]"
            ) from None
        if not os.path.isfile(os.path.join(self.path, "config.json")):
            raise ModelError(f"no model at {self.path} (config.json missing)")
        from neural_dap.llm.fastllama import FastLlama, supports

        _quiet_transformers()
        self._tokenizer = PreTrainedTokenizerFast.from_pretrained(self.path)
        try:
            model: Any = AutoModelForCausalLM.from_pretrained(self.path, dtype=torch.float32)
        except TypeError:
            model = AutoModelForCausalLM.from_pretrained(self.path, torch_dtype=torch.float32)
        self._model = model.to(self.device).eval()
        # the intra-op threads while this client decodes (set per call and restored: the setting is
        # process-wide, and training in the same process wants its own)
        self._threads = self.threads or (
            1 if self.device == "cpu" and sum(p.numel() for p in model.parameters()) < ONE_THREAD_PARAMETERS else None
        )
        if self.device == "cpu" and supports(self._model):
            self._fast = FastLlama(self._model)
        self._generator = torch.Generator(device="cpu").manual_seed(self.seed)

    async def tokenize(self, text: str) -> list[int]:
        await self._ensure()
        return self._tokenizer.backend_tokenizer.encode(text, add_special_tokens=False).ids  # type: ignore[union-attr]

    async def context_length(self) -> int | None:
        await self._ensure()
        return getattr(self._model.config, "max_position_embeddings", None)  # type: ignore[union-attr]

    async def special_ids(self, tokens: list[str]) -> dict[str, int]:
        await self._ensure()
        out = {}
        for token in tokens:
            token_id = self._tokenizer.convert_tokens_to_ids(token)  # type: ignore[union-attr]
            if token_id is None or token_id == self._tokenizer.unk_token_id:  # type: ignore[union-attr]
                raise ModelError(f"the model at {self.path} has no special token {token}")
            out[token] = token_id
        return out

    async def complete(
        self,
        prompt: list[int],
        *,
        max_tokens: int,
        stop_ids: list[int],
        n: int = 1,
        temperature: float = 0.0,
        constraint: Constraint | None = None,
    ) -> CompletionResult:
        await self._ensure()
        cancel = threading.Event()
        try:
            return await anyio.to_thread.run_sync(
                lambda: self._complete(prompt, max_tokens, stop_ids, n, temperature, cancel, constraint),
                abandon_on_cancel=True,
            )
        except BaseException:
            cancel.set()
            raise

    def _token_index(self):
        if self._index is None:
            from neural_dap.llm.constrained import TokenIndex, token_pieces

            pieces = token_pieces(self._tokenizer)
            size = self._model.get_output_embeddings().weight.shape[0]  # type: ignore[union-attr]
            self._index = TokenIndex(pieces[:size] + [None] * max(0, size - len(pieces)))
        return self._index

    def _complete(
        self,
        prompt: list[int],
        max_tokens: int,
        stop_ids: list[int],
        n: int,
        temperature: float,
        cancel: threading.Event,
        constraint: Constraint | None = None,
    ) -> CompletionResult:
        import torch

        if not prompt:
            raise ModelError("empty prompt")
        limit = getattr(self._model.config, "max_position_embeddings", 2048)  # type: ignore[union-attr]
        if len(prompt) >= limit:
            raise ModelError(f"the prompt has {len(prompt)} tokens; the model reads at most {limit}")
        with self._lock, torch.inference_mode(), _threads(self._threads):
            started = time.monotonic()
            reused = self._prefill(prompt)
            prompt_cache_len = len(prompt)
            completions = []
            generated_total = 0
            changed_total = 0
            last_logits = self._last_logits
            try:
                for k in range(n):
                    if k > 0:
                        self._crop(prompt_cache_len)
                        self._cached_ids = list(prompt)
                    ids, changed, logprobs, cuts, rest = self._generate(
                        last_logits, min(max_tokens, limit - len(prompt) - 1), stop_ids, temperature, cancel, constraint
                    )
                    generated_total += len(ids)
                    changed_total += changed
                    kept = [i for i in ids if i not in stop_ids]
                    text = self._tokenizer.decode(
                        kept,
                        skip_special_tokens=False,
                        clean_up_tokenization_spaces=False,
                    )  # type: ignore[union-attr]
                    finish = "stop" if (ids and ids[-1] in stop_ids) or rest is not None else "length"
                    offsets = self._offsets(kept)
                    kept_logprobs = logprobs[: len(kept)]
                    if rest:  # the text the frame left no choice about: certain, written without the model
                        offsets.append(len(text))
                        kept_logprobs.append(0.0)
                        text += rest.decode()
                    completions.append(
                        Completion(
                            text,
                            finish,
                            len(ids),
                            offsets=tuple(offsets),
                            logprobs=tuple(kept_logprobs),
                            cuts=tuple(offsets[c] for c in cuts if c < len(offsets)),
                        )
                    )
            finally:
                if constraint is not None and self._index is not None:
                    self._index.forget(constraint)
            return CompletionResult(
                tuple(completions),
                len(prompt),
                generated_total,
                reused,
                time.monotonic() - started,
                constrained=changed_total,
            )

    def _prefill(self, prompt: list[int]) -> int:
        """Run the prompt through the model, reusing the cached prefix; returns how many were reused."""
        import torch
        from transformers import DynamicCache

        common = 0
        for a, b in zip(self._cached_ids, prompt, strict=False):
            if a != b:
                break
            common += 1
        common = min(common, len(prompt) - 1)  # the last prompt token must run to give logits
        if self._fast is not None:
            self._fast.crop(common)
            self._last_logits = self._fast.forward(prompt[self._fast.length :])
            self._cached_ids = list(prompt)
            return common
        if self._cache is None or common == 0:
            self._cache = DynamicCache()
            common = 0
        else:
            _crop(self._cache, common)
        new = torch.tensor([prompt[common:]], device=self.device)
        out = self._model(input_ids=new, past_key_values=self._cache, use_cache=True)  # type: ignore[misc]
        self._cache = out.past_key_values
        self._cached_ids = list(prompt)
        self._last_logits = out.logits[0, -1]
        return common

    def _generate(
        self,
        logits,
        max_tokens: int,
        stop_ids: list[int],
        temperature: float,
        cancel: threading.Event,
        constraint: Constraint | None = None,
    ) -> tuple[list[int], int, list[float], list[int], bytes | None]:
        """Token ids up to a stop token; how many choices the constraint changed; the log probability
        the model gave each token (before the constraint); the steps where a looping value was ended;
        and the rest of the completion where the constraint left only one (None where the model
        wrote it all). That rest (a source line once one candidate is left, the stop after it) is
        not decoded token by token: a forward pass per token for text with no choice in it was a
        fifth of a stop."""
        import torch

        ids: list[int] = []
        logprobs: list[float] = []
        cuts: list[int] = []
        stops = set(stop_ids)
        index = self._token_index() if constraint is not None else None
        state = constraint.start() if constraint is not None else None
        changed = 0
        in_text = 0  # tokens written inside the current string value
        run: list[int] = []  # those tokens
        for step in range(max(0, max_tokens)):
            if cancel.is_set():
                raise ModelError("cancelled")
            token = self._pick(logits, temperature)
            free = constraint is not None and constraint.free_text(state)
            in_text = in_text + 1 if free else 0
            if not free:
                run = []
            looping = free and repeating(run)
            if (
                index is not None
                and constraint is not None
                and (max_tokens - step <= CLOSING_ROOM or in_text > MAX_VALUE_TOKENS or looping)
                and constraint.in_values(state)
            ):
                # about to run out of room in the locals or a value, or a value running on past any
                # repr the model was trained on or looping on one short cycle of tokens: take the
                # shortest way out (end the string, write only the keys still required, close the
                # object), so the frame still completes
                way_out = constraint.close_segment(state)
                closing = index.toward_mask(way_out) if way_out else None
                if closing is not None and not closing[token]:
                    token = self._pick(logits, temperature, torch.from_numpy(closing))
                    changed += 1
                if looping or in_text > MAX_VALUE_TOKENS:
                    cuts.append(step)
            allowed = None
            if index is not None:
                nxt = index.advance(constraint, state, token)
                if nxt is None:  # the model's choice is not possible here: choose among what is
                    mask = index.mask(constraint, state)
                    if not mask.any():
                        raise ModelError(f"the decoding constraint allows no token here ({str(state)[:200]})")
                    allowed = torch.from_numpy(mask)
                    token = self._pick(logits, temperature, allowed)
                    nxt = index.advance(constraint, state, token)
                    changed += 1
                state = nxt
            # the model's probability of the token; where the program refused the model's own pick,
            # renormalised over what the program allows (the mask is known there)
            total = torch.logsumexp(logits if allowed is None else logits[allowed], 0)
            logprobs.append(float(logits[token]) - float(total))
            ids.append(token)
            if free:
                run.append(token)
            if token in stops:
                break
            if constraint is not None:
                rest = constraint.forced_rest(state)
                if rest is not None:
                    return ids, changed, logprobs, cuts, rest
            logits = self._step(token)
        return ids, changed, logprobs, cuts, None

    def _step(self, token: int):
        """Run one token after the cache; the logits of the next."""
        import torch

        self._cached_ids.append(token)
        if self._fast is not None:
            return self._fast.forward([token])
        out = self._model(
            input_ids=torch.tensor([[token]], device=self.device), past_key_values=self._cache, use_cache=True
        )  # type: ignore[misc]
        self._cache = out.past_key_values
        return out.logits[0, -1]

    def _crop(self, keep: int) -> None:
        if self._fast is not None:
            self._fast.crop(keep)
        elif self._cache is not None:
            _crop(self._cache, keep)

    def _offsets(self, ids: list[int]) -> list[int]:
        """The character offset in the decoded text where each token starts."""
        pieces = self._token_index().pieces
        data = b""
        starts = []
        for token in ids:
            starts.append(len(data))
            piece = pieces[token] if 0 <= token < len(pieces) else None
            data += piece.encode() if isinstance(piece, str) else (piece or b"")
        return [len(data[:start].decode("utf-8", errors="ignore")) for start in starts]

    def _pick(self, logits, temperature: float, mask=None) -> int:
        import torch

        if mask is not None:
            logits = logits.masked_fill(~mask.to(logits.device), float("-inf"))
        if temperature <= 0:
            return int(torch.argmax(logits))
        probs = torch.softmax(logits.float() / temperature, dim=-1)
        return int(torch.multinomial(probs, 1, generator=self._generator))

    async def close(self) -> None:
        self._model = None
        self._cache = None
        self._fast = None


@contextlib.contextmanager
def _threads(count: int | None):
    """torch's intra-op threads set to `count` for the block (unchanged for None)."""
    if not count:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _quiet_transformers() -> None:
    """Nothing on stderr from loading: an editor (nvim-dap) logs an adapter's stderr as errors."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except (ImportError, AttributeError):
        pass


def _crop(cache, keep: int) -> None:
    """Keep the first `keep` positions (a negative count removes tokens, in every transformers 4.4x-5.x)."""
    current = cache.get_seq_length()
    if keep < current:
        cache.crop(keep - current)
