"""Debugger trajectories on recorded executions, rendered in the `nd` dialect for training.

A trajectory starts at an entry state of the traced function (its call, a state inside it, or its
return) and applies a sequence of debugger actions chosen by the paper's mixed random policy: with
probability `uniform` an action drawn uniformly from those available, otherwise one favouring
step_into / step_over. Two task-shaped starts are mixed in: from the call, one `continue` to the
return (output prediction), and from the return, `inv_step_return` to the call (input prediction).
Every frame reached by an action is a prediction target; the context and the entry frame are not.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from neural_dap.core.actions import Action
from neural_dap.core.source import SourceInfo
from neural_dap.core.state import State
from neural_dap.format.tokens import END, FRAME_SEP, Special
from neural_dap.format.trace import TraceText
from neural_dap.trace.tree import StateTree


@dataclass
class Policy:
    uniform: float = 0.4  # probability of a uniformly random available action
    max_actions: int = 24
    budget_chars: int = 2900  # stop adding frames beyond this much text (~1000 tokens: one training sequence)
    output_task: float = 0.15  # start at the call, continue to the return
    input_task: float = 0.15  # start at the return, step back to the call
    end_token: float = 0.05  # at the end, ask a forward action anyway: the answer is <|end_of_text|>


@dataclass
class Trajectory:
    """Segments of the rendered text, with a mask of those a model must predict."""

    segments: list[str] = field(default_factory=list)
    predicted: list[bool] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    indices: list[int] = field(default_factory=list)  # the entry state, then each action's target (-1: the end)
    steps: list[Action] = field(default_factory=list)  # the actions themselves (with their lines)

    def add(self, segments: list[str], predicted: bool) -> None:
        for seg in segments:
            self.segments.append(seg)
            self.predicted.append(predicted)

    def text(self) -> str:
        return "".join(self.segments)

    def to_json(self) -> list[list[str]]:
        """[[kind, text], ...]: kind s/t (special/text), upper case when predicted."""
        out = []
        for seg, pred in zip(self.segments, self.predicted, strict=False):
            kind = "s" if isinstance(seg, Special) else "t"
            out.append([kind.upper() if pred else kind, str(seg)])
        return out

    @staticmethod
    def from_json(rows: list[list[str]]) -> Trajectory:
        t = Trajectory()
        for kind, text in rows:
            t.segments.append(Special(text) if kind in "sS" else text)
            t.predicted.append(kind.isupper())
        return t


def _breakpoint_lines(rng: random.Random, tree: StateTree, i: int, forward: bool, source: SourceInfo) -> list[int]:
    states = tree.states
    span = range(i + 1, len(states)) if forward else range(i)
    seen = sorted({states[k].line for k in span if states[k].event == "line"})
    if seen and rng.random() < 0.85:
        return sorted(rng.sample(seen, k=min(len(seen), rng.choice([1, 1, 2]))))
    candidates = sorted(source.executable_lines) or [states[i].line]
    return [rng.choice(candidates)]


def choose_action(rng: random.Random, tree: StateTree, i: int, policy: Policy, source: SourceInfo) -> Action | None:
    available = tree.available(i)
    if not available:
        return None
    if rng.random() < policy.uniform:
        kind = rng.choice(available)
    else:
        favoured = [k for k in ("step_into", "step_over") if k in available]
        kind = rng.choice(favoured or available)
    if kind == "breakpoint":
        return Action.at_lines("breakpoint", _breakpoint_lines(rng, tree, i, True, source))
    if kind == "inv_breakpoint":
        return Action.at_lines("inv_breakpoint", _breakpoint_lines(rng, tree, i, False, source))
    return Action(kind)  # type: ignore[arg-type]


def sample(
    rng: random.Random, states: list[State], source: SourceInfo, policy: Policy | None = None
) -> Trajectory | None:
    """One trajectory on one execution (states of a function entry: depth 0 is the function)."""
    policy = policy or Policy()
    if len(states) < 2:
        return None
    tree = StateTree(states)
    root = states[0].invocation
    root_states = tree.by_invocation[root]
    roll = rng.random()
    plan: list[Action] = []
    if roll < policy.output_task:
        start = 0
        plan = [Action("continue")]
    elif roll < policy.output_task + policy.input_task and tree.is_terminal(tree.last):
        start = tree.last
        plan = [Action("inv_step_return")]
    else:
        start = 0 if rng.random() < 0.4 else rng.choice(root_states)
    first = states[start]
    function = first.function
    entry_line = first.line if first.event == "call" else (source.def_line(function) or first.line)
    trace = TraceText("nd", source, entry_line, entry_function=function)
    out = Trajectory()
    out.indices.append(start)
    out.add(trace.context(), False)
    trace.append(first)
    out.add(trace.frames[-1], False)
    i = start
    chars = len(out.text())
    for step in range(policy.max_actions):
        action = plan[step] if step < len(plan) else None
        if action is None:
            if step >= len(plan) and step > 0 and rng.random() < 1 / max(2, policy.max_actions // 2):
                break
            if i == tree.last and rng.random() < policy.end_token:
                ending = Action(rng.choice(["step_into", "step_over", "continue", "step_return"]))  # type: ignore[arg-type]
                out.add(trace.action_segments(ending), False)
                out.add([END], True)
                out.actions.append(ending.kind)
                out.steps.append(ending)
                out.indices.append(-1)
                break
            action = choose_action(rng, tree, i, policy, source)
            if action is None:
                break
        j = tree.apply(i, action)
        if j == i:
            continue
        before = len(trace.frames)
        trace.append(states[j], action)
        frame = trace.frames[before]
        n_action = len(trace.action_segments(action))
        out.add(frame[:n_action], False)
        out.add(frame[n_action:], True)
        out.actions.append(action.kind)
        out.steps.append(action)
        out.indices.append(j)
        chars += sum(len(s) for s in frame)
        i = j
        if chars > policy.budget_chars:
            break
    if not out.actions:
        return None
    assert out.segments[-1] in (FRAME_SEP, END)
    return out
