"""How sure the model was of each part of a predicted frame: its source line, each local, the value.

A part's confidence is the probability the model gave the exact text of that part: the product of
the probabilities of the tokens that write it (a token that also writes a neighbour, such as
`: "` before a value, counts for both). The product, not the mean: a value is right only if every
one of its tokens is, and a mean would rate a long runaway string (each repeated token nearly
certain once the loop has started) as sure. The tokens' probabilities are the model's own, before
program-aware decoding: where the constraint overrode the model, the override shows as a low
probability, except where the program refused the model's own pick: there the token's probability
is renormalised over the tokens the program allows (a line the program leaves no choice about is
not made doubtful by the model's preference for an impossible one). A local written `..`
(unchanged) is as sure as the value it repeats times the probability of `..` (`world.neural`
chains them). A returned or raised value's confidence includes its frame's event token: the frame
claims both that the function returned (or raised) and what (a module "returning None" where it
really raised is a wrong value, however sure the model is of `None` once it has chosen to return).
A value the client cut because the model looped on it (`llm.base.repeating`) has confidence 0
and is marked cut. These are the model's probabilities; `format.calibration` maps them to how
often such parts are right, which is what users are shown.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from neural_dap.format.tokens import ACTION_SEP, ARG_SEP, TOKEN_EVENTS, Special, split_specials

# Below this a predicted value is shown as a guess ("≈ value?"), not as a fact.
UNCERTAIN_BELOW = 0.5


@dataclass(frozen=True)
class FrameConfidence:
    line: float | None = None
    locals: dict[str, float] = field(default_factory=dict)
    value: float | None = None  # a return / exception frame's value
    cut_locals: frozenset[str] = frozenset()  # locals the client ended because the model looped
    cut_value: bool = False
    unchanged: frozenset[str] = frozenset()  # locals written `..` (the probability is of "unchanged")
    event: str | None = None  # the frame's event: which kind of value `value` is (a return or an exception)
    event_p: float | None = None  # the probability of the frame's event token


def frame_confidence(
    text: str, offsets: tuple[int, ...], logprobs: tuple[float, ...], cuts: tuple[int, ...] = ()
) -> FrameConfidence | None:
    """The confidence of each part of the completion `text` (None when the client gave no token
    probabilities). `offsets[i]` is where token i starts in `text`, `logprobs[i]` its log probability."""
    if not logprobs or len(offsets) != len(logprobs):
        return None
    ends = [*offsets[1:], len(text)]

    def prob(start: int, end: int) -> float:
        total = sum(lp for s, e, lp in zip(offsets, ends, logprobs, strict=True) if s < end and e > start)
        return math.exp(total)

    def was_cut(start: int, end: int) -> bool:
        return any(start <= c < end for c in cuts)

    spans = _spans(text)
    if spans is None:
        return None
    line_span, local_spans, value_span = spans
    event = _event(text)
    first = text.find(">") + 1 if text.startswith("<|") else 0
    unchanged = frozenset(name for name, (start, end) in local_spans.items() if text[start:end] == '".."')
    locals_: dict[str, float] = {}
    cut_locals = set()
    for name, (start, end) in local_spans.items():
        if was_cut(start, end):
            cut_locals.add(name)
            locals_[name] = 0.0
        else:
            locals_[name] = prob(start, end)
    value = None
    cut_value = False
    event_p = prob(0, first) if event is not None and first else None
    if value_span is not None:
        cut_value = was_cut(*value_span)
        # the frame says the function returned (or raised) this value: the event is part of the claim
        value = 0.0 if cut_value else prob(*value_span) * (event_p if event_p is not None else 1.0)
    return FrameConfidence(
        line=prob(*line_span) if line_span is not None else None,
        locals=locals_,
        value=value,
        cut_locals=frozenset(cut_locals),
        cut_value=cut_value,
        unchanged=unchanged,
        event=event,
        event_p=event_p,
    )


def _event(text: str) -> str | None:
    """The event of a frame: its first special token's."""
    first = next((seg for seg in split_specials(text) if isinstance(seg, Special)), None)
    return TOKEN_EVENTS.get(first) if first is not None else None


def _spans(text: str) -> tuple[tuple[int, int] | None, dict[str, tuple[int, int]], tuple[int, int] | None] | None:
    """Character spans of a frame's parts: (the source line, each local's value string with its
    quotes, the returned / raised value string with its quotes)."""
    pieces: list[tuple[str, int]] = []
    pos = 0
    for seg in split_specials(text):
        pieces.append((seg, pos))
        pos += len(seg)
    terminal = _event(text) in ("return", "exception")
    line_span = value_span = None
    local_spans: dict[str, tuple[int, int]] = {}
    seen_action = seen_arg = False
    for seg, start in pieces:
        if isinstance(seg, Special):
            seen_action |= seg == ACTION_SEP
            seen_arg |= seg == ARG_SEP
            continue
        if not seen_action and not terminal and seg.lstrip().startswith("{"):
            local_spans = _local_spans(seg, start)
        elif seen_action and not seen_arg:
            line_span = (start, start + len(seg))
        elif seen_arg:
            value_span = (start, start + len(seg))
    return line_span, local_spans, value_span


def _local_spans(text: str, base: int) -> dict[str, tuple[int, int]]:
    """Each key of a JSON object of strings -> the span of its value (quotes included); as far as
    the text is well formed."""
    out: dict[str, tuple[int, int]] = {}
    scan = json.decoder.scanstring  # type: ignore[attr-defined]
    i = text.find("{") + 1
    try:
        while i < len(text):
            while i < len(text) and text[i] in " ,\n\t":
                i += 1
            if i >= len(text) or text[i] != '"':
                break
            key, i = scan(text, i + 1)
            while i < len(text) and text[i] in " :":
                i += 1
            if i >= len(text) or text[i] != '"':
                break
            start = i
            _, i = scan(text, i + 1)
            out[key] = (base + start, base + i)
    except ValueError:
        pass
    return out
