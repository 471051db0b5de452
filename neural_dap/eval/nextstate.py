"""Next-state accuracy: given the true history and an action, is the predicted frame right?

Held-out programs (never trained on) are recorded again and trajectories sampled with the training
policy; every frame reached by an action is predicted from the true prompt before it (teacher
forcing) and scored: whole-frame exact match, event, line, each local, the value. Scores are broken
down by action and by how many lines the action skipped in the real execution.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass, field

from neural_dap.core.source import SourceInfo
from neural_dap.corpus.trajectories import Policy, Trajectory, sample
from neural_dap.format.tokens import END, FRAME_SEP, Special, TOKEN_EVENTS, merge_text, split_specials
from neural_dap.llm.base import ModelClient, ModelError
from neural_dap.corpus.dataset import RECORD_LIMITS
from neural_dap.trace.recorder import Program, record


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
        }


@dataclass
class FrameParts:
    event: str | None
    line_text: str | None
    local_reprs: dict | None
    value: str | None


def parts(text: str) -> FrameParts:
    segs = split_specials(text)
    event = TOKEN_EVENTS.get(segs[0]) if segs and isinstance(segs[0], Special) else ("end" if segs and segs[0] == END else None)
    texts = [s for s in segs if not isinstance(s, Special)]
    local_reprs = value = line_text = None
    try:
        if event in ("call", "line") and len(texts) >= 2:
            local_reprs = json.loads(texts[0])
            line_text = texts[1]
        elif event in ("return", "exception") and len(texts) >= 2:
            line_text = texts[0]
            value = json.loads(texts[1])
    except ValueError:
        pass
    return FrameParts(event, line_text, local_reprs if isinstance(local_reprs, dict) else None, value if isinstance(value, str) else None)


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


@dataclass
class NextStateReport:
    overall: Score = field(default_factory=Score)
    forward: Score = field(default_factory=Score)
    by_action: dict[str, Score] = field(default_factory=lambda: defaultdict(Score))
    by_skip: dict[int, Score] = field(default_factory=lambda: defaultdict(Score))
    programs: int = 0
    errors: int = 0

    def to_dict(self) -> dict:
        return {
            "programs": self.programs,
            "errors": self.errors,
            "overall": self.overall.report(),
            "forward": self.forward.report(),
            "byAction": {k: v.report() for k, v in sorted(self.by_action.items())},
            "byLinesSkipped": {str(k): v.report() for k, v in sorted(self.by_skip.items())},
        }


def _skip_bucket(states, i: int, j: int) -> int:
    if j < 0:
        return 0
    lo, hi = sorted((i, j))
    skipped = sum(1 for k in range(lo + 1, hi) if states[k].event == "line")
    for bound in (0, 1, 2, 4, 8, 16, 32):
        if skipped <= bound:
            return bound
    return 64


async def evaluate(programs: list[dict], client: ModelClient, *, trajectories: int = 2, seed: int = 1, max_frames: int | None = None,
                   progress=None) -> NextStateReport:
    specials = await client.special_ids([str(t) for t in _all_specials()])
    stop_id = specials[str(FRAME_SEP)]
    report = NextStateReport()
    rng = random.Random(seed)
    for program in programs:
        rec = record(Program(f"/heldout/{program.get('id', 'p')}.py", source=program["source"], entry=program["entry"], entry_args=program["args"]),
                     RECORD_LIMITS)
        if rec.outcome.kind not in ("finished", "raised") or len(rec.states) < 2:
            continue
        states = list(rec.states)
        report.programs += 1
        for _ in range(trajectories):
            trajectory = sample(rng, states, SourceInfo(program["source"]), Policy())
            if trajectory is None:
                continue
            await _score_trajectory(trajectory, states, client, specials, stop_id, report)
            if progress is not None:
                progress(report)
            if max_frames is not None and report.overall.frames >= max_frames:
                return report
    return report


async def _score_trajectory(t: Trajectory, states, client, specials, stop_id, report: NextStateReport) -> None:
    segments, predicted = t.segments, t.predicted
    k = 0
    step = 0
    prefix: list[str] = []
    while k < len(segments):
        if not predicted[k]:
            prefix.append(segments[k])
            k += 1
            continue
        start = k
        while k < len(segments) and predicted[k]:
            k += 1
        target = segments[start:k]
        expected = "".join(target[:-1]) if target[-1] == FRAME_SEP else "".join(target)
        prompt_ids: list[int] = []
        for seg in merge_text(prefix):
            prompt_ids.extend([specials[seg]] if isinstance(seg, Special) else await client.tokenize(seg))
        try:
            result = await client.complete(prompt_ids, max_tokens=max(64, 2 * len(expected) // 3 + 32), stop_ids=[stop_id], n=1, temperature=0.0)
            text = result.completions[0].text
        except ModelError:
            report.errors += 1
            text = ""
        if text.endswith(str(FRAME_SEP)):
            text = text[: -len(str(FRAME_SEP))]
        s = score_frame(text, expected)
        action = t.actions[step]
        report.overall.add(s)
        report.by_action[action].add(s)
        if not action.startswith("inv_"):
            report.forward.add(s)
        i, j = t.indices[step], t.indices[step + 1]
        report.by_skip[_skip_bucket(states, i, j)].add(s)
        prefix.extend(target)
        step += 1


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
