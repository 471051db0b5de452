"""What the neural world model needs from a language model: token ids in, completions out."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import msgspec

# Tokens kept for the end of a constrained frame: in the locals or a value with fewer left than
# this, decoding takes the shortest way out, so the source line and the separator still fit.
CLOSING_ROOM = 48
# Tokens one string value may take before it is ended: the datasets keep reprs to 300 characters
# (corpus.dataset.RECORD_LIMITS), about 100 tokens, so a longer one is a model repeating itself.
MAX_VALUE_TOKENS = 160
# A string value whose last tokens are one short cycle (1 to 4 tokens) repeated over this many tokens
# is a model looping ('ABcqpppppp…'): it is ended there, and its value reported as cut (uncertain).
REPEAT_RUN = 32
REPEAT_PERIODS = (1, 2, 3, 4)


class ModelError(Exception):
    """The model could not answer: down, too slow, or it answered something that is not a completion."""


class Completion(msgspec.Struct, frozen=True):
    text: str  # special tokens kept as their strings; the stop token is not included
    finish_reason: str | None = None
    token_count: int = 0
    # Where the model says how sure it was (empty where it does not): for each generated token of
    # `text`, the character offset where it starts and the natural log of the probability it had
    # (under the decoding constraint, if any: the model's distribution renormalised over the tokens
    # the constraint allowed). `cuts`: character offsets where a looping value was ended by the client.
    offsets: tuple[int, ...] = ()
    logprobs: tuple[float, ...] = ()
    cuts: tuple[int, ...] = ()


def repeating(ids: list[int], run: int = REPEAT_RUN) -> bool:
    """Do the last `run` token ids repeat one cycle of 1 to 4 tokens?"""
    if len(ids) < run:
        return False
    tail = ids[-run:]
    return any(all(tail[i] == tail[i - p] for i in range(p, run)) for p in REPEAT_PERIODS)


class CompletionResult(msgspec.Struct, frozen=True):
    completions: tuple[Completion, ...]
    prompt_tokens: int
    generated_tokens: int
    cached_tokens: int | None  # prompt tokens served from a cache (None: the server does not say)
    seconds: float
    constrained: int = 0  # choices the constraint changed (the model's own pick was not allowed)
    requests: int = 1  # model calls made (a server constrained segment by segment takes several)


# A constraint's state: any hashable value the constraint defines (masks are cached per state).
ConstraintState = Any


class Constraint(Protocol):
    """What a completion may be, as an automaton over special tokens (by their strings) and the
    UTF-8 bytes of text. States are hashable. `neural_dap.format.grammar.FrameConstraint` is one."""

    def start(self) -> ConstraintState: ...

    def step_special(self, state: ConstraintState, token: str) -> ConstraintState | None: ...

    def step_byte(self, state: ConstraintState, byte: int) -> ConstraintState | None: ...

    def step_bytes(self, state: ConstraintState | None, data: bytes) -> ConstraintState | None: ...

    def free_text(self, state: ConstraintState) -> bool:
        """Every plain byte (not a quote, backslash or control byte) is accepted in this state."""
        ...

    def done(self, state: ConstraintState) -> bool: ...

    def in_values(self, state: ConstraintState) -> bool:
        """In the locals object or a value, before its end (text a model can make as long as it likes)."""
        ...

    def accepts(self, text: str) -> bool:
        """A whole completion (special tokens as their strings, the stop token left out)."""
        ...

    def run(self, text: str, *, complete: bool = True) -> ConstraintState | None: ...

    def segment(self, state: ConstraintState) -> tuple[str, object]:
        """For servers: ("special", specials) | ("regex", pattern) | ("choice", strings) next."""
        ...

    def forced_rest(self, state: ConstraintState) -> bytes | None:
        """The rest of the completion where only one is left: its text, the stop token implied
        (b"": only the stop); None where there is still a choice."""
        ...

    def forced_ending(self, state: ConstraintState | None) -> str | None:
        """The rest of the completion from `state` where nothing is left to choose (special tokens
        as their strings, the stop token implied); None where something is."""
        ...

    def frame_regex(self, *, head_only: bool = False) -> str | None:
        """For servers: the whole completion as one regex, special tokens as their strings; with
        `head_only`, it may end where the rest is forced (`forced_ending` gives it). None where
        no completion is possible."""
        ...

    def close_segment(self, state: ConstraintState) -> bytes | None:
        """The shortest bytes that finish the text segment `state` is in (b"" at a segment's end);
        None where none can. A server's constrained output cut off by its token budget ends this way."""
        ...


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
        constraint: Constraint | None = None,
    ) -> CompletionResult:
        """Complete `prompt` up to a stop token; with a constraint, every completion is one it accepts
        (or a ModelError says why none could be made)."""
        ...

    def describe(self) -> dict: ...

    async def close(self) -> None: ...
