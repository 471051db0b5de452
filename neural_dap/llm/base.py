"""What the neural world model needs from a language model: token ids in, completions out."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import msgspec


class ModelError(Exception):
    """The model could not answer: down, too slow, or it answered something that is not a completion."""


class Completion(msgspec.Struct, frozen=True):
    text: str  # special tokens kept as their strings; the stop token is not included
    finish_reason: str | None = None
    token_count: int = 0


class CompletionResult(msgspec.Struct, frozen=True):
    completions: tuple[Completion, ...]
    prompt_tokens: int
    generated_tokens: int
    cached_tokens: int | None  # prompt tokens served from a cache (None: the server does not say)
    seconds: float


@runtime_checkable
class ModelClient(Protocol):
    name: str

    async def special_ids(self, tokens: list[str]) -> dict[str, int]:
        """The id of each special token in this model's vocabulary (ModelError if one is missing)."""
        ...

    async def tokenize(self, text: str) -> list[int]: ...

    async def context_length(self) -> int | None:
        """The most tokens (prompt + completion) the model reads, when known."""
        ...

    async def complete(
        self,
        prompt: list[int],
        *,
        max_tokens: int,
        stop_ids: list[int],
        n: int = 1,
        temperature: float = 0.0,
    ) -> CompletionResult: ...

    def describe(self) -> dict: ...

    async def close(self) -> None: ...
