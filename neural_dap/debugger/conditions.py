"""Breakpoint conditions, hit conditions and log points, decided as debugpy 1.8 decides them.

debugpy evaluates them in the running program, on its real objects. Here they run where DESIGN §10
says: on the recorded values where those are exact (literal values: numbers, strings, containers
of them), else in a throwaway copy of the program at the stop (`ChecksLive`: real objects, effects
refused). An expression that raises is the user's error, shown as debugpy shows it, and the
breakpoint stops; one that neither can evaluate (a full recording keeps only text for an object)
is undecided, and an undecided condition never stops the program.

debugpy's rules (pydevd `handle_breakpoint_condition`): a hit condition that is met stops whatever
the condition says; otherwise the condition decides (a breakpoint with only a hit condition does
not stop); a log point's message is evaluated at every hit (before the condition) and printed
where the breakpoint would have stopped, which it never does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from neural_dap.core import reprs
from neural_dap.core.evaluator import Budget, EvaluationError, SafeEvaluator
from neural_dap.core.world import Check, CheckResult

# Each expression on the recorded values gets a small budget: it runs at every hit, inside a step.
CONDITION_BUDGET = Budget(steps=20_000, seconds=0.1)


@dataclass(frozen=True)
class Verdict:
    """One expression's outcome at a hit."""

    truth: bool | None = None  # a condition's value
    text: str | None = None  # a log point part's str()
    error: str | None = None  # what the expression raised ("NameError: name 'q' is not defined")
    undecided: str | None = None  # why it could not be evaluated here (never a reason to stop)


@dataclass(frozen=True)
class Message:
    """A log point's message: literal pieces around `{expression}`s (`pieces` has one more)."""

    pieces: tuple[str, ...]
    expressions: tuple[str, ...]


def split_message(message: str) -> Message:
    """debugpy's reading of a log message: `{expr}` with nested braces (`{d['{']}` aside), `{{`
    and `}}` stand for braces; an unclosed `{` is literal text."""
    pieces: list[str] = []
    expressions: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(message):
        ch = message[i]
        if message.startswith(("{{", "}}"), i):
            current.append(ch)
            i += 2
            continue
        if ch != "{":
            current.append(ch)
            i += 1
            continue
        depth, end = 0, -1
        for j in range(i, len(message)):
            if message[j] == "{":
                depth += 1
            elif message[j] == "}":
                depth -= 1
                if depth == 0:
                    end = j
                    break
        if end < 0:
            current.append(message[i:])
            break
        expression = message[i + 1 : end].strip()
        if expression:
            pieces.append("".join(current))
            current = []
            expressions.append(expression)
        i = end + 1
    pieces.append("".join(current))
    return Message(tuple(pieces), tuple(expressions))


def exact_names(names: dict[str, str]) -> dict[str, object]:
    """The recorded values that are exactly the program's (their repr is a Python literal): what the
    safe evaluator may decide with. An object known by its text is left out, so an expression
    reading it is decided by the program itself."""
    out: dict[str, object] = {}
    for name, text in names.items():
        value = reprs.parse_repr(text)
        if _literal(value):
            out[name] = value
    return out


def _literal(value: object, depth: int = 0) -> bool:
    if depth > 20:
        return False
    if value is None or type(value) in (bool, int, float, complex, str, bytes):
        return True
    if type(value) in (list, tuple, set, frozenset):
        return all(_literal(v, depth + 1) for v in value)  # type: ignore[attr-defined]
    if type(value) is dict:
        return all(_literal(k, depth + 1) and _literal(v, depth + 1) for k, v in value.items())  # type: ignore[attr-defined]
    return False


def on_recorded_values(check: Check, names: dict[str, object]) -> Verdict:
    """`check` decided by the safe evaluator over exact recorded values, where it can be."""
    expression, mode = check
    try:
        compile(expression.strip(), "<condition>", "eval")
    except SyntaxError as exc:  # the program would raise it too (debugpy shows it and stops)
        return Verdict(error=f"SyntaxError: {exc.msg}")
    try:
        value = SafeEvaluator(names, CONDITION_BUDGET).value(expression)
    except EvaluationError as exc:
        if exc.raised:  # Python raised it, computing on exact values: the program would too
            return Verdict(error=str(exc))
        return Verdict(undecided=str(exc))
    try:
        return Verdict(truth=bool(value)) if mode == "truth" else Verdict(text=str(value))
    except Exception as exc:  # (an exact value's bool/str does not raise; kept total)
        return Verdict(error=f"{type(exc).__name__}: {exc}")


def from_program(result: CheckResult) -> Verdict:
    if result.error is not None:
        return Verdict(error=result.error)
    return Verdict(truth=result.truth, text=result.text)


LiveChecker = Callable[[tuple[Check, ...]], Awaitable[tuple[CheckResult, ...] | None]]


async def decide(checks: Sequence[Check], names: dict[str, object], live: LiveChecker | None) -> list[Verdict]:
    """Each check's verdict: on the recorded values where they decide it, else all of them in the
    program (in one copy, in order, as debugpy runs them one after the other); `live` answers None
    where there is no program to ask."""
    verdicts = [on_recorded_values(check, names) for check in checks]
    if all(v.undecided is None for v in verdicts) or live is None:
        return verdicts
    answers = await live(tuple(checks))
    if answers is None:
        return verdicts
    return [from_program(a) for a in answers]


def hit_decides(hit_condition: str | None, hits: int) -> bool | None:
    """debugpy's hit condition: True (met: stop), False (not met and nothing else to ask), None
    (no hit condition: the condition decides)."""
    from neural_dap.debugger.breakpoints import hit_condition_met

    if not hit_condition or not hit_condition.strip():
        return None
    return hit_condition_met(hit_condition, hits)


def message_text(message: Message, verdicts: Sequence[Verdict]) -> str:
    """The printed log message: debugpy prints the error alone when a part raised."""
    for verdict in verdicts:
        if verdict.error is not None:
            return verdict.error.split(": ", 1)[-1] if ": " in verdict.error else verdict.error
    out = [message.pieces[0]]
    for expression, verdict, piece in zip(message.expressions, verdicts, message.pieces[1:], strict=True):
        if verdict.undecided is not None:
            out.append(f"<{expression}: {verdict.undecided}>")
        else:
            out.append(verdict.text or "")
        out.append(piece)
    return "".join(out)
