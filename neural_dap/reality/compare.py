"""Compare a predicted state with reality: line, event, stack, every local, the value."""

from __future__ import annotations

from neural_dap.core.state import State, as_traced
from neural_dap.core.world import Divergence
from neural_dap.trace.child.values import without_addresses


def normalize(text: str | None) -> str | None:
    if text is None:
        return None
    return without_addresses(text).strip()


def compare_states(predicted: State, actual: State) -> list[Divergence]:
    predicted, actual = as_traced(predicted), as_traced(actual)  # (a model is not asked for modules)
    out: list[Divergence] = []
    if predicted.event != actual.event:
        out.append(Divergence("event", predicted=predicted.event, actual=actual.event))
    if predicted.line != actual.line:
        out.append(Divergence("line", predicted=str(predicted.line), actual=str(actual.line)))
    if predicted.function != actual.function or predicted.depth != actual.depth:
        out.append(
            Divergence(
                "stack",
                predicted=f"{predicted.function} (depth {predicted.depth})",
                actual=f"{actual.function} (depth {actual.depth})",
            )
        )
    if predicted.terminal and actual.terminal and normalize(predicted.value) != normalize(actual.value):
        out.append(Divergence("value", name=predicted.function, predicted=predicted.value, actual=actual.value))
    if predicted.event in ("call", "line") and actual.event in ("call", "line"):
        out.extend(compare_locals(predicted.locals, actual.locals))
    return out


def compare_locals(predicted: dict[str, str], actual: dict[str, str]) -> list[Divergence]:
    out = []
    for name in list(predicted) + [n for n in actual if n not in predicted]:
        p, a = normalize(predicted.get(name)), normalize(actual.get(name))
        if p != a:
            out.append(Divergence("local", name=name, predicted=predicted.get(name), actual=actual.get(name)))
    return out
