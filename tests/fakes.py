"""A model client that answers from a script (unit tests may use recorded completions)."""

from __future__ import annotations

from collections.abc import Callable

from neural_dap.core.state import State
from neural_dap.format.tokens import ALL_SPECIALS
from neural_dap.format.trace import TraceText
from neural_dap.llm.base import Completion, CompletionResult, ModelError


def frame_text(state: State) -> str:
    """What a model writes for `state`: the frame with full values, without the separator."""
    segments = TraceText.frame_segments(None, state, None)  # type: ignore[arg-type]
    return "".join(segments[:-1])


class ScriptedClient:
    """Answers each completion request with the next item of `script`, a list of texts (one per
    sample) or a callable (prompt text, n) -> texts; a ModelError item is raised."""

    name = "scripted"

    def __init__(self, script: list | Callable[[str, int], list[str]]) -> None:
        self.script = script
        self.prompts: list[str] = []
        self.constraints: list = []  # the decoding constraint of each request (this fake ignores them)
        self.ids = {str(t): 200000 + i for i, t in enumerate(ALL_SPECIALS)}
        self.back = {v: k for k, v in self.ids.items()}

    def describe(self) -> dict:
        return {"client": "scripted"}

    async def special_ids(self, tokens: list[str]) -> dict[str, int]:
        missing = [t for t in tokens if t not in self.ids]
        if missing:
            raise ModelError(f"the served model has no special token {missing[0]}")
        return {t: self.ids[t] for t in tokens}

    async def tokenize(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    async def context_length(self) -> int | None:
        return None

    def decode(self, ids: list[int]) -> str:
        return "".join(self.back.get(i, chr(i) if i < 200000 else "?") for i in ids)

    async def complete(
        self, prompt, *, max_tokens, stop_ids, n=1, temperature=0.0, constraint=None
    ) -> CompletionResult:
        self.constraints.append(constraint)
        text = self.decode(prompt)
        self.prompts.append(text)
        if callable(self.script):
            answers = self.script(text, n)
        else:
            if not self.script:
                raise ModelError("the script ran out of answers")
            answers = self.script.pop(0)
        if isinstance(answers, Exception):
            raise answers
        if isinstance(answers, str):
            answers = [answers] * n
        return CompletionResult(
            tuple(Completion(a, "stop") for a in answers),
            len(prompt),
            sum(len(a) for a in answers),
            len(prompt) - 20,
            0.001,
        )

    async def close(self) -> None:
        pass
