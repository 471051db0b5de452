"""From the probability the model gave a predicted part's text to the probability that it is right.

The product of a value's token probabilities (`format.confidence`) ranks values well (a right value
usually gets more than a wrong one) but is not the chance of being right: on code unlike its
training corpus the model is sure of many wrong values, so a raw `p=0.9` was right far less often
than nine times in ten. A calibration maps the raw probability to the share of right parts measured
at that probability on code the model was neither trained nor evaluated on (`neural-dap eval
calibrate` fits it; a model folder's `calibration.json` ships it with the model, and every world
and front end shows the calibrated figure).

One curve per kind of part, because each kind errs differently: an argument of a call; a local's
value, told apart by what the program says about it (`core.writes`: can the code that ran since
the invocation's previous frame change that name?): a new value where it can (`local`) or cannot
(`local_unwritten`: a change nothing made, usually wrong), `..` where it cannot (`unchanged`:
nearly always right) or can (`unchanged_written`: the model's doubtful case); a returned value; a
raised exception; the source line. Each curve is non-decreasing and piecewise linear between its
knots (flat beyond them), so within a kind it never reverses which of two parts is surer. A kind
with too few values to fit alone uses its base kind's curve (`local` for `local_unwritten`), else
the curve of all values pooled (`fallback`).
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import replace

import msgspec

from neural_dap.core.state import State
from neural_dap.core.writes import ProgramWrites
from neural_dap.format.confidence import FrameConfidence
from neural_dap.format.trace import TraceText

FILE_NAME = "calibration.json"  # in a model folder, next to config.json
KINDS = ("argument", "local", "local_unwritten", "unchanged", "unchanged_written", "return", "exception", "line")


class Curve(msgspec.Struct, frozen=True):
    """A non-decreasing map from a raw probability to the probability of being right."""

    x: list[float]  # raw probabilities, increasing
    y: list[float]  # the probability of being right at each, non-decreasing
    n: int = 0  # parts it was fitted on

    def __call__(self, p: float) -> float:
        if not self.x:
            return p
        i = bisect.bisect_left(self.x, p)
        if i == 0:
            return self.y[0]
        if i == len(self.x):
            return self.y[-1]
        x0, x1, y0, y1 = self.x[i - 1], self.x[i], self.y[i - 1], self.y[i]
        return y0 + (y1 - y0) * (p - x0) / (x1 - x0)


class Calibration(msgspec.Struct, frozen=True, kw_only=True):
    curves: dict[str, Curve]  # per kind (KINDS)
    fallback: Curve | None = None  # every value pooled: for a kind without a curve of its own
    method: str = "isotonic"
    fitted_on: dict[str, str | int | float] = {}  # what it was fitted on, for the model card

    def probability(self, kind: str, p: float) -> float:
        curve = self.curves.get(kind) or self.curves.get(kind.split("_")[0])
        if curve is None and kind != "line":
            curve = self.fallback
        return curve(p) if curve is not None else p


def value_kind(event: str | None, *, unchanged: bool = False, written: bool | None = None) -> str:
    """The kind of a predicted value: an argument (a local of a call frame: the model copies it from
    the call), a local of a line frame (by `..` or not, and whether the code that ran can write it;
    None: not known), or the value of a return or exception frame."""
    if event in ("return", "exception"):
        return event
    if event == "call":
        return "argument"
    if unchanged:
        return "unchanged_written" if written else "unchanged"
    return "local_unwritten" if written is False else "local"


def written_since(trace: TraceText, state: State, action: str, writes: ProgramWrites) -> frozenset[str] | None:
    """The names the code that ran between `state` and the frame its `..` refers to (the latest
    call or line frame of its invocation in `trace`) can write; None where that is not known. A
    single step between consecutive frames of the invocation ran the statement the earlier of the
    two stops at: the previous frame's going forward, `state`'s going back. Anything else (a jump:
    continue, a breakpoint, step out; or a return frame of the invocation in between) may have run
    any statement of the function."""
    if state.event != "line":
        return None
    mine = [s for s in trace.states if s.invocation == state.invocation]
    previous = next((s for s in reversed(mine) if s.event in ("call", "line")), None)
    if previous is None:
        return None
    if previous is mine[-1] and action in ("step_into", "step_over"):
        return frozenset() if previous.event == "call" else writes.at(previous.line)
    if previous is mine[-1] and action in ("inv_step_into", "inv_step_over"):
        return writes.at(state.line)
    return writes.within(state.line)


def calibrate(
    confidence: FrameConfidence,
    calibration: Calibration | None,
    written: frozenset[str] | None = None,
    event: str | None = None,
) -> FrameConfidence:
    """The same confidence with every part's probability calibrated; `written`: what the code that
    ran can write (`written_since`); `event`: the frame's, where the prompt forced it (the
    completion then does not say it). A value cut because the model looped on it keeps 0: it was
    ended by the client, not chosen by the model."""
    if calibration is None:
        return confidence
    event = confidence.event or event

    def kind(name: str) -> str:
        wrote = None if written is None else name in written
        return value_kind(event, unchanged=name in confidence.unchanged, written=wrote)

    locals_ = {
        name: 0.0 if name in confidence.cut_locals else calibration.probability(kind(name), p)
        for name, p in confidence.locals.items()
    }
    value = confidence.value
    if value is not None and not confidence.cut_value:
        value = calibration.probability(value_kind(event), value)
    line = confidence.line
    if line is not None:
        line = calibration.probability("line", line)
    return replace(confidence, locals=locals_, value=value, line=line)


def load(folder: str) -> Calibration | None:
    """The calibration shipped in a model folder (None: the folder has none, so raw probabilities
    are shown). A file that is not a calibration is an error, not silently ignored."""
    path = os.path.join(folder, FILE_NAME) if os.path.isdir(folder) else folder
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        return msgspec.json.decode(data, type=Calibration)
    except msgspec.DecodeError as exc:
        raise ValueError(f"{path} is not a confidence calibration: {exc}") from None


def dump(calibration: Calibration, path: str) -> None:
    """Write a calibration as JSON a person can read: one line per curve's knots."""
    text = msgspec.json.format(msgspec.json.encode(calibration), indent=1).decode()
    text = re.sub(r"\[\s*([-0-9.e,\s]+?)\s*\]", lambda m: "[" + re.sub(r",\s*", ", ", m.group(1)) + "]", text)
    with open(path, "w") as fh:
        fh.write(text + "\n")
