"""The special tokens of the trace format, and text/token-id segments.

A rendered trace is a list of *segments*: plain text, or a special token (a `Special`, which is a
`str` subclass so text rendering is a plain join). Turning segments into token ids asks a tokenizer
only for the text pieces and splices special ids in, so nothing depends on how a tokenizer treats
special-token strings that appear in text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from neural_dap.core.actions import ACTION_KINDS


class Special(str):
    """A special token, written as its string form (e.g. `<|frame_sep|>`)."""

    __slots__ = ()


Segment = str  # a Special or plain text

BEGIN = Special("<|begin_of_text|>")
END = Special("<|end_of_text|>")
FRAME_SEP = Special("<|frame_sep|>")
ACTION_SEP = Special("<|action_sep|>")
RETURN_SEP = Special("<|return_sep|>")
CALL_SEP = Special("<|call_sep|>")
LINE_SEP = Special("<|line_sep|>")
EXCEPTION_SEP = Special("<|exception_sep|>")
ARG_SEP = Special("<|arg_sep|>")
CONTEXT_START = Special("<|trace_context_start|>")

EVENT_TOKENS: dict[str, Special] = {
    "call": CALL_SEP,
    "line": LINE_SEP,
    "return": RETURN_SEP,
    "exception": EXCEPTION_SEP,
}
TOKEN_EVENTS: dict[str, str] = {tok: event for event, tok in EVENT_TOKENS.items()}

# The neural-debugger (`nd`) dialect writes the action that led to each predicted frame.
ACTION_TOKENS: dict[str, Special] = {kind: Special(f"<|{kind}|>") for kind in ACTION_KINDS}
TOKEN_ACTIONS: dict[str, str] = {tok: kind for kind, tok in ACTION_TOKENS.items()}

CWM_TOKENS: tuple[Special, ...] = (
    BEGIN,
    END,
    FRAME_SEP,
    ACTION_SEP,
    RETURN_SEP,
    CALL_SEP,
    LINE_SEP,
    EXCEPTION_SEP,
    ARG_SEP,
    CONTEXT_START,
)
ALL_SPECIALS: tuple[Special, ...] = CWM_TOKENS + tuple(ACTION_TOKENS.values())

# Token ids of Meta's Code World Model (Llama-3 tokenizer): 128000 + slot.
CWM_IDS: dict[str, int] = {
    BEGIN: 128000,
    END: 128001,
    FRAME_SEP: 128100,
    ACTION_SEP: 128101,
    RETURN_SEP: 128102,
    CALL_SEP: 128103,
    LINE_SEP: 128104,
    EXCEPTION_SEP: 128105,
    ARG_SEP: 128106,
    CONTEXT_START: 128107,
}


def to_text(segments: Iterable[Segment]) -> str:
    return "".join(segments)


def merge_text(segments: Iterable[Segment]) -> list[Segment]:
    """Adjacent text pieces joined, so a tokenizer sees each text run whole."""
    out: list[Segment] = []
    for seg in segments:
        if not seg:
            continue
        if out and not isinstance(seg, Special) and not isinstance(out[-1], Special):
            out[-1] = out[-1] + seg
        else:
            out.append(seg)
    return out


def to_ids(segments: Sequence[Segment], encode: Callable[[str], list[int]], special_ids: dict[str, int]) -> list[int]:
    """Token ids: text pieces through `encode`, special tokens by `special_ids`."""
    ids: list[int] = []
    for seg in merge_text(segments):
        if isinstance(seg, Special):
            try:
                ids.append(special_ids[seg])
            except KeyError:
                raise KeyError(f"the tokenizer has no id for special token {seg}") from None
        else:
            ids.extend(encode(seg))
    return ids


def split_specials(text: str, specials: Iterable[str] = ALL_SPECIALS) -> list[Segment]:
    """Split model output text into text pieces and `Special`s (the inverse of `to_text`)."""
    import re

    pattern = re.compile("(" + "|".join(re.escape(s) for s in sorted(set(specials), key=len, reverse=True)) + ")")
    out: list[Segment] = []
    for i, piece in enumerate(pattern.split(text)):
        if not piece:
            continue
        out.append(Special(piece) if i % 2 else piece)
    return out
