"""Next-state accuracy: given the true history and an action, is the predicted frame right?

Programs are recorded, trajectories sampled with the training policy (random entry points, the
mixed random policy), and every frame reached by an action is predicted from the true prompt
before it (teacher forcing) and scored: whole-frame exact match, event, line, each local, the
value; whether the frame is *valid* (one the program allows after that action: the oracle is the
program-aware constraint, `world.landing`); and the seconds per prediction. Scores are broken down
by action and by how many lines the action skipped in the real execution.

What is scored:
  - held-out programs of the training generator (`neural-dap dataset` keeps them out of training);
  - real code: every function of a CRUXEval file called on its input, and whole scripts (a folder
    of .py files, e.g. `examples/`), which the generator never made.
Decoding is program-aware by default (`constrained=False` measures the model alone).

Calibration: every value the model predicted (each local of a call / line frame, the value of a
return / exception frame) is scored right or wrong against the confidence shown for it: the
model's (`format.confidence`) through the model's calibration (`format.calibration`), as a user
sees it. `eval.calibrate` measures AUROC (does a right value get more confidence than a wrong one),
ECE (ten equal-width bins: how far the confidence is from the accuracy; with a bootstrap interval)
and the accuracy of the most confident half; the raw figures are reported beside them. Every
scored part (the source line too) is kept as a `PartScore`, what `eval calibrate` fits on.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field

import msgspec

from neural_dap.core.flow import ProgramFlow
from neural_dap.core.source import SourceInfo
from neural_dap.core.state import State
from neural_dap.core.writes import ProgramWrites
from neural_dap.corpus.dataset import RECORD_LIMITS
from neural_dap.corpus.trajectories import Policy, Trajectory, sample
from neural_dap.eval import calibrate as measure
from neural_dap.format.calibration import Calibration, value_kind, written_since
from neural_dap.format.confidence import frame_confidence
from neural_dap.format.tokens import END, FRAME_SEP, TOKEN_EVENTS, Special, merge_text, split_specials
from neural_dap.format.trace import FormatError, TraceText, open_chain, window_from
from neural_dap.llm.base import ModelClient, ModelError
from neural_dap.trace.recorder import Limits, Program, record
from neural_dap.world.landing import frame_constraint

MAX_FRAME_TOKENS = 256  # the generation budget of one predicted frame


@dataclass(frozen=True)
class Subject:
    """One program to trace: a function called on an input (`entry`), or a whole script."""

    name: str
    source: str
    entry: str | None
    args: str = ""


def subjects_from_heldout(programs: list[dict]) -> list[Subject]:
    return [
        Subject(f"heldout/{p.get('id', k)}", p["source"], p.get("entry"), p.get("args", ""))
        for k, p in enumerate(programs)
    ]


def split_heldout(programs: list[dict], split: str) -> list[dict]:
    """The held-out programs of a split: in id order, the 1st, 3rd, ... are the calibration split
    (what `eval calibrate` fits on), the 2nd, 4th, ... the evaluation split; "all" keeps them all."""
    if split == "all":
        return programs
    ordered = sorted(programs, key=lambda p: p.get("id", 0))
    return ordered[0 if split == "calibration" else 1 :: 2]


def subjects_from_cruxeval(path: str) -> list[Subject]:
    """Every CRUXEval function called on its input (an evaluation set: never trained on)."""
    with open(path) as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [Subject(f"cruxeval/{r['id']}", r["code"], "f", r["input"]) for r in rows]


def subjects_from_scripts(folder: str) -> list[Subject]:
    """Every .py file of a folder, run as a whole script."""
    out = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            with open(os.path.join(folder, name), encoding="utf-8") as fh:
                out.append(Subject(f"{os.path.normpath(folder)}/{name}", fh.read(), None))
    return out


@dataclass
class Score:
    frames: int = 0
    exact: int = 0
    event: int = 0
    line: int = 0
    locals_right: int = 0
    locals_total: int = 0
    value_right: int = 0
    value_total: int = 0
    valid: int = 0
    seconds: list[float] = field(default_factory=list)

    def add(self, other: Score) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def report(self) -> dict:
        def pct(a: int, b: int) -> float | None:
            return round(100 * a / b, 2) if b else None

        return {
            "frames": self.frames,
            "exact": pct(self.exact, self.frames),
            "event": pct(self.event, self.frames),
            "line": pct(self.line, self.frames),
            "locals": pct(self.locals_right, self.locals_total),
            "value": pct(self.value_right, self.value_total),
            "valid": pct(self.valid, self.frames),
            "medianMs": round(1000 * statistics.median(self.seconds), 1) if self.seconds else None,
        }


@dataclass
class FrameParts:
    event: str | None
    line_text: str | None
    local_reprs: dict | None
    value: str | None


def parts(text: str) -> FrameParts:
    segs = split_specials(text)
    event = (
        TOKEN_EVENTS.get(segs[0])
        if segs and isinstance(segs[0], Special)
        else ("end" if segs and segs[0] == END else None)
    )
    texts = [s for s in segs if not isinstance(s, Special)]
    local_reprs = value = line_text = None
    try:
        if event in ("call", "line") and len(texts) >= 2:
            local_reprs = json.loads(texts[0])
            line_text = texts[1]
        elif event in ("return", "exception") and len(texts) >= 2:
            line_text = texts[0]
            value = json.loads(texts[1])
    except (ValueError, RecursionError):
        pass
    return FrameParts(
        event,
        line_text,
        local_reprs if isinstance(local_reprs, dict) else None,
        value if isinstance(value, str) else None,
    )


def score_frame(predicted: str, expected: str) -> Score:
    s = Score(frames=1)
    p, e = parts(predicted), parts(expected)
    s.exact = int(predicted == expected)
    s.event = int(p.event == e.event)
    s.line = int(p.event == e.event and p.line_text == e.line_text)
    if e.local_reprs is not None:
        s.locals_total = len(e.local_reprs)
        if p.local_reprs is not None:
            s.locals_right = sum(1 for k, v in e.local_reprs.items() if p.local_reprs.get(k) == v)
    if e.value is not None:
        s.value_total = 1
        s.value_right = int(p.value == e.value)
    return s


class PartScore(msgspec.Struct, frozen=True):
    """One predicted part (a value, or a frame's source line) against the truth."""

    program: str  # the subject it came from (the bootstrap resamples whole programs)
    kind: str  # format.calibration.KINDS
    p: float  # the model's own confidence (format.confidence), before calibration
    right: bool
    text: str = ""  # what the model wrote (a value's repr; `..` for unchanged)
    cut: bool = False  # a value the client ended because the model looped on it (shown at 0)
    event: str = ""  # the predicted frame's event
    action: str = ""  # the action it was predicted after


@dataclass
class NextStateReport:
    overall: Score = field(default_factory=Score)
    forward: Score = field(default_factory=Score)
    by_action: dict[str, Score] = field(default_factory=lambda: defaultdict(Score))
    by_skip: dict[int, Score] = field(default_factory=lambda: defaultdict(Score))
    programs: int = 0
    errors: int = 0
    error_messages: list[str] = field(default_factory=list)
    constrained_choices: int = 0
    parts: list[PartScore] = field(default_factory=list)  # every scored value and line
    calibration: Calibration | None = None  # the model's, applied to what is reported

    def to_dict(self) -> dict:
        return {
            "calibration": calibration_report(self.parts, self.calibration),
            "programs": self.programs,
            "errors": self.errors,
            "errorMessages": self.error_messages,
            "constrainedChoices": self.constrained_choices,
            "overall": self.overall.report(),
            "forward": self.forward.report(),
            "byAction": {k: v.report() for k, v in sorted(self.by_action.items())},
            "byLinesSkipped": {str(k): v.report() for k, v in sorted(self.by_skip.items())},
        }


def part_scores(
    program: str,
    predicted: str,
    expected: str,
    completion,
    action: str = "",
    written: frozenset[str] | None = None,
) -> list[PartScore]:
    """The parts of a predicted frame with the confidence the model gave each and whether each is
    right: a local it wrote (right: the true frame has that name with that text; a value cut
    because the model looped on it counts at 0), the returned / raised value, and the source line
    (right: the true frame's event and line). `written`: what the code that ran can write
    (`format.calibration.written_since`), which sorts the locals into kinds."""
    confidence = frame_confidence(predicted, completion.offsets, completion.logprobs, completion.cuts)
    if confidence is None:
        return []
    p, e = parts(predicted), parts(expected)
    event = p.event or ""
    out: list[PartScore] = []
    if p.local_reprs is not None:
        truth = e.local_reprs or {}
        for name, text in p.local_reprs.items():
            if name in confidence.locals:
                wrote = None if written is None else name in written
                kind = value_kind(p.event, unchanged=name in confidence.unchanged, written=wrote)
                right = truth.get(name) == text
                cut = name in confidence.cut_locals
                out.append(PartScore(program, kind, confidence.locals[name], right, text, cut, event, action))
    if p.value is not None and confidence.value is not None:
        right = e.value is not None and p.value == e.value and p.event == e.event
        value, cut = confidence.value, confidence.cut_value
        out.append(PartScore(program, value_kind(p.event), value, right, p.value, cut, event, action))
    if confidence.line is not None and p.line_text is not None:
        right = p.event == e.event and p.line_text == e.line_text
        out.append(PartScore(program, "line", confidence.line, right, p.line_text, False, event, action))
    return out


def shown(part: PartScore, calibration: Calibration | None) -> float:
    """The confidence a user sees for a part, as `format.calibration.calibrate` makes it."""
    if calibration is None or part.cut:
        return part.p
    return calibration.probability(part.kind, part.p)


def calibration_report(scored: list[PartScore], calibration: Calibration | None) -> dict:
    """The calibration figures of every predicted value (lines apart) as shown, the model's raw
    ones beside them, and per kind of part."""
    values = [s for s in scored if s.kind != "line"]
    out = measure.summary(
        [shown(s, calibration) for s in values], [s.right for s in values], [s.program for s in values]
    )
    out["calibrated"] = calibration is not None
    if calibration is not None:
        raw = measure.summary([s.p for s in values], [s.right for s in values], [s.program for s in values])
        out["raw"] = {k: raw[k] for k in ("auroc", "ece", "ece_ci95", "top_half_accuracy", "mean_confidence")}
    by_kind = {}
    for kind in sorted({s.kind for s in scored}):
        mine = [s for s in scored if s.kind == kind]
        figures = measure.summary(
            [shown(s, calibration) for s in mine], [s.right for s in mine], [s.program for s in mine]
        )
        by_kind[kind] = {k: figures[k] for k in ("values", "accuracy", "auroc", "ece", "mean_confidence")}
    out["byKind"] = by_kind
    return out


def _skip_bucket(states, i: int, j: int) -> int:
    if j < 0:
        return 0
    lo, hi = sorted((i, j))
    skipped = sum(1 for k in range(lo + 1, hi) if states[k].event == "line")
    for bound in (0, 1, 2, 4, 8, 16, 32):
        if skipped <= bound:
            return bound
    return 64


async def evaluate(
    subjects: list[Subject] | list[dict],
    client: ModelClient,
    *,
    trajectories: int = 2,
    seed: int = 1,
    max_frames: int | None = None,
    constrained: bool = True,
    progress=None,
    limits: Limits = RECORD_LIMITS,
    calibration: Calibration | None = None,
) -> NextStateReport:
    """Teacher-forced next-state accuracy of `client` on the recorded executions of `subjects`;
    confidences are reported through `calibration` (None: the model's raw ones)."""
    if subjects and isinstance(subjects[0], dict):
        subjects = subjects_from_heldout(subjects)  # type: ignore[arg-type]
    specials = await client.special_ids([str(t) for t in _all_specials()])
    report = NextStateReport(calibration=calibration)
    rng = random.Random(seed)
    for subject in subjects:
        assert isinstance(subject, Subject)
        rec = record(
            Program(
                f"/eval/{subject.name.replace('/', '_')}",
                source=subject.source,
                entry=subject.entry,
                entry_args=subject.args,
            ),
            limits,
        )
        if rec.outcome.kind not in ("finished", "raised", "exited") or len(rec.states) < 2:
            continue
        states = list(rec.states)
        source = SourceInfo(subject.source, f"/eval/{subject.name}")
        flow = ProgramFlow(source)
        writes = ProgramWrites(source)
        report.programs += 1
        for _ in range(trajectories):
            trajectory = sample(rng, states, source, Policy())
            if trajectory is None:
                continue
            await _score_trajectory(
                subject.name, trajectory, states, source, flow, writes, client, specials, report, constrained
            )
            if progress is not None:
                progress(report)
            if max_frames is not None and report.overall.frames >= max_frames:
                return report
    return report


async def _score_trajectory(
    program: str,
    t: Trajectory,
    states,
    source: SourceInfo,
    flow: ProgramFlow,
    writes: ProgramWrites,
    client: ModelClient,
    specials: dict[str, int],
    report: NextStateReport,
    constrained: bool,
) -> None:
    first = states[t.indices[0]]
    entry_line = first.line if first.event == "call" else (source.def_line(first.function) or first.line)
    trace = TraceText("nd", source, entry_line, entry_function=first.function)
    seen = trace.append(first)
    stop_id = specials[str(FRAME_SEP)]
    limit = await client.context_length()
    for step, action in enumerate(t.steps):
        j = t.indices[step + 1]
        prompt_ids = await _prompt_ids(trace, action, client, specials)
        if limit is not None and len(prompt_ids) + MAX_FRAME_TOKENS > limit and len(trace.frames) > 1:
            # as the neural world does when its history outgrows the model: a new window that keeps
            # the call stack
            trace, seen_chain = window_from("nd", source, open_chain(trace, seen), first_id=trace.tracker.next_id)
            seen = seen_chain[-1]
            prompt_ids = await _prompt_ids(trace, action, client, specials)
        constraint = frame_constraint(flow, trace, seen, action)
        expected = str(END) if j < 0 else _expected_frame(trace, states[j], action)
        started = time.monotonic()
        try:
            budget = MAX_FRAME_TOKENS if limit is None else max(1, min(MAX_FRAME_TOKENS, limit - len(prompt_ids)))
            result = await client.complete(
                prompt_ids,
                max_tokens=budget,
                stop_ids=[stop_id],
                n=1,
                temperature=0.0,
                constraint=constraint if constrained else None,
            )
            completion = result.completions[0]
            text = completion.text
            report.constrained_choices += result.constrained
        except ModelError as exc:
            report.errors += 1
            if len(report.error_messages) < 5:
                report.error_messages.append(str(exc))
            text = ""
            completion = None
        elapsed = time.monotonic() - started
        if text.endswith(str(FRAME_SEP)):
            text = text[: -len(str(FRAME_SEP))]
        s = score_frame(text, expected)
        if completion is not None:
            landed = _landed(text, constraint, trace, action)
            written = written_since(trace, landed, action.kind, writes) if landed is not None else None
            report.parts += part_scores(program, text, expected, completion, action.kind, written)
        s.seconds = [elapsed]
        s.valid = int(_valid(text, constraint, trace, action))
        report.overall.add(s)
        report.by_action[action.kind].add(s)
        if not action.inverse:
            report.forward.add(s)
        report.by_skip[_skip_bucket(states, t.indices[step], j)].add(s)
        if j < 0:
            break
        seen = trace.append(states[j], action)  # teacher forcing: the true frame goes on


async def _prompt_ids(trace: TraceText, action, client: ModelClient, specials: dict[str, int]) -> list[int]:
    ids: list[int] = []
    for seg in merge_text(trace.segments() + trace.action_segments(action)):
        ids.extend([specials[seg]] if isinstance(seg, Special) else await client.tokenize(seg))
    return ids


def _expected_frame(trace: TraceText, state, action) -> str:
    """The true frame as the trace text writes it after `action` (without action tokens or separator)."""
    shadow = trace.shadow.get(_invocation_after(trace, state, action))
    return "".join(trace.frame_segments(state, shadow)[:-1])


def _invocation_after(trace: TraceText, state, action) -> int:
    snapshot = trace.tracker.snapshot()
    try:
        return trace.tracker.advance(action.kind, state.event, state.line)[0]
    finally:
        trace.tracker.restore(snapshot)


def _landed(text: str, constraint, trace: TraceText, action) -> State | None:
    """The state a predicted frame reads as (None: not a frame the program allows, or the end)."""
    if constraint is None or not constraint.accepts(text):
        return None
    try:
        state = trace.parse(text, action, allowed=constraint.landed(text))
    except FormatError:
        return None
    return state if isinstance(state, State) else None


def _valid(text: str, constraint, trace: TraceText, action) -> bool:
    """Is `text` a frame the program allows after `action`, which the trace text reads?"""
    if constraint is None or not constraint.accepts(text):
        return False
    try:
        trace.parse(text, action, allowed=constraint.landed(text))
    except FormatError:
        return False
    return True


def _all_specials():
    from neural_dap.format.tokens import ALL_SPECIALS

    return ALL_SPECIALS


def plot(report: dict, path: str) -> None:
    """Accuracy (whole frame, and event + line) against lines skipped per jump, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    buckets = report["byLinesSkipped"]
    xs = list(buckets)
    exact = [buckets[x]["exact"] or 0 for x in xs]
    line = [buckets[x]["line"] or 0 for x in xs]
    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=120)
    ax.plot(range(len(xs)), exact, marker="o", label="whole frame exact")
    ax.plot(range(len(xs)), line, marker="s", label="event + line")
    ax.set_xticks(range(len(xs)), [f"≤{x}" if x != "64" else ">32" for x in xs])
    ax.set_xlabel("lines skipped by the action in the real execution")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title("next-state accuracy vs. jump length")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
