"""Breakpoints: line, function and log points, with conditions and hit conditions.

Lines are verified against the lines that have code (the source is compiled, not run). A line
without code moves to the line with code before it, as debugpy moves it (to the next one where
there is none before).
Conditions and log-message expressions are evaluated by the safe evaluator over the stop's values.
The table knows no protocol: a front end passes anything with a requested breakpoint's fields
(`LineRequest`) and shows `BreakpointSpec`s its own way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from neural_dap.core.actions import Target
from neural_dap.core.evaluator import EvaluationError
from neural_dap.core.reprs import show
from neural_dap.core.source import SourceInfo

# (a count of at most 18 digits: a longer one is unreadable, as a hit never reaches it, and int() of
# thousands of digits from a client raises)
_HIT = re.compile(r"^\s*(==|>=|>|<=|<|%)?\s*(\d{1,18})\s*$")
_MOVE_WINDOW = 5


@dataclass
class BreakpointSpec:
    id: int
    kind: str  # "line" | "function"
    path: str
    requested_line: int
    lines: list[int]  # where it really stops (a function breakpoint: each first body line)
    condition: str | None = None
    hit_condition: str | None = None
    log_message: str | None = None
    verified: bool = False
    message: str | None = None
    name: str | None = None  # function breakpoints
    hits: int = 0  # hits seen so far, where the world cannot say which hit of the run a stop is

    @property
    def shown_line(self) -> int | None:
        """The line a client shows it at (a function breakpoint has none of its own)."""
        if self.kind != "line":
            return None
        return self.lines[0] if self.lines else self.requested_line


class LineRequest(Protocol):
    """A requested line breakpoint, as any front end words it (DAP's SourceBreakpoint is one)."""

    @property
    def line(self) -> int: ...
    @property
    def condition(self) -> str | None: ...
    @property
    def hit_condition(self) -> str | None: ...
    @property
    def log_message(self) -> str | None: ...


class FunctionRequest(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def condition(self) -> str | None: ...
    @property
    def hit_condition(self) -> str | None: ...


def hit_condition_met(condition: str | None, hits: int) -> bool:
    """VS Code's syntax: `3` or `==3`, `>=3`, `>3`, `<3`, `<=3`, `%3` (every third)."""
    if not condition or not condition.strip():
        return True
    m = _HIT.match(condition)
    if not m:
        return True  # an unreadable hit condition never hides a stop; the breakpoint's message says so
    op, n = m.group(1) or "==", int(m.group(2))
    return {
        "==": hits == n,
        ">=": hits >= n,
        ">": hits > n,
        "<=": hits <= n,
        "<": hits < n,
        "%": n > 0 and hits % n == 0,
    }[op]


def next_hit_met(condition: str | None, after: int) -> int | None:
    """The first hit number above `after` at which `condition` is met (None: at none), by the same
    rules as `hit_condition_met`: where a run can skip straight to it (a program that runs on while
    the session waits need not stop at the hits in between)."""
    if not condition or not condition.strip():
        return after + 1
    m = _HIT.match(condition)
    if not m:
        return after + 1  # (never hides a stop: see hit_condition_met)
    op, n = m.group(1) or "==", int(m.group(2))
    first = after + 1
    if op == "==":
        return n if n >= first else None
    if op == ">=":
        return max(first, n)
    if op == ">":
        return max(first, n + 1)
    if op == "<=":
        return first if first <= n else None
    if op == "<":
        return first if first < n else None
    return (after // n + 1) * n if n > 0 else None  # "%": the next multiple


def interpolate(message: str, evaluate: Callable[[str], object]) -> str:
    """A log point's message with each `{expression}` replaced by its value (`{{` is a brace)."""
    out: list[str] = []
    i = 0
    while i < len(message):
        ch = message[i]
        if ch == "{" and message.startswith("{{", i):
            out.append("{")
            i += 2
        elif ch == "}" and message.startswith("}}", i):
            out.append("}")
            i += 2
        elif ch == "{":
            end = message.find("}", i)
            if end < 0:
                out.append(message[i:])
                break
            expression = message[i + 1 : end]
            try:
                value = evaluate(expression)
                out.append(value if isinstance(value, str) else show(value))
            except EvaluationError as exc:
                out.append(f"<{expression}: {exc}>")
            i = end + 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


@dataclass
class BreakpointTable:
    next_id: int = 1
    by_path: dict[str, list[BreakpointSpec]] = field(default_factory=dict)
    functions: list[BreakpointSpec] = field(default_factory=list)

    def _id(self) -> int:
        value = self.next_id
        self.next_id += 1
        return value

    def set_lines(self, path: str, requested: Sequence[LineRequest], source: str | None) -> list[BreakpointSpec]:
        info = SourceInfo(source, path) if source is not None else None
        specs = []
        for bp in requested:
            spec = BreakpointSpec(self._id(), "line", path, bp.line, [], bp.condition, bp.hit_condition, bp.log_message)
            self._verify_line(spec, info)
            specs.append(spec)
        self.by_path[path] = specs
        return specs

    def _verify_line(self, spec: BreakpointSpec, info: SourceInfo | None) -> None:
        if info is None:
            spec.verified, spec.message, spec.lines = False, "the source is not available yet", []
            return
        executable = info.executable_lines
        line = spec.requested_line
        if line in executable:
            spec.verified, spec.lines, spec.message = True, [line], None
        else:
            # debugpy's rule (pydevd adjusts the line to the one with code before it, whichever code
            # object it is in: a blank line below a function stops at the function's last line);
            # with none before, the next one
            before = [ln for ln in executable if ln < line]
            moved = max(before) if before else None
            if moved is None:
                moved = next((ln for ln in range(line + 1, line + _MOVE_WINDOW + 1) if ln in executable), None)
            if moved is not None:
                spec.verified, spec.lines = True, [moved]
                spec.message = f"line {line} has no code; the breakpoint moved to line {moved}"
            else:
                spec.verified, spec.lines = False, []
                spec.message = f"line {line} has no code to stop at"
        if spec.verified and spec.condition:
            try:
                compile(spec.condition, "<condition>", "eval")
            except SyntaxError as exc:
                spec.message = f"invalid condition: {exc.msg}"
        if spec.verified and spec.hit_condition and not _HIT.match(spec.hit_condition):
            spec.message = f"hit condition {spec.hit_condition!r} not understood (use e.g. 3, >=3 or %3)"

    def reverify(self, source_of: Callable[[str], str | None]) -> list[BreakpointSpec]:
        """Verify again with the world's sources (after launch); returns the breakpoints that changed."""
        changed = []
        for path, specs in self.by_path.items():
            text = source_of(path)
            info = SourceInfo(text, path) if text is not None else None
            for spec in specs:
                before = (spec.verified, tuple(spec.lines), spec.message)
                self._verify_line(spec, info)
                if (spec.verified, tuple(spec.lines), spec.message) != before:
                    changed.append(spec)
        return changed

    def set_functions(self, requested: Sequence[FunctionRequest], sources: dict[str, str]) -> list[BreakpointSpec]:
        self.functions = []
        for bp in requested:
            spec = BreakpointSpec(self._id(), "function", "", 0, [], bp.condition, bp.hit_condition, name=bp.name)
            self._resolve_function(spec, sources)
            self.functions.append(spec)
        return self.functions

    def _resolve_function(self, spec: BreakpointSpec, sources: dict[str, str]) -> None:
        name = (spec.name or "").split(".")[-1].strip()
        for path, text in sources.items():
            lines = SourceInfo(text, path).first_body_lines(name)
            if lines:
                spec.path, spec.lines, spec.verified, spec.message = path, lines, True, None
                return
        spec.verified, spec.message = False, f"no function named {spec.name!r} in the program"

    def reresolve_functions(self, sources: dict[str, str]) -> list[BreakpointSpec]:
        for spec in self.functions:
            self._resolve_function(spec, sources)
        return list(self.functions)

    def targets(self) -> tuple[Target, ...]:
        out: set[Target] = set()
        for specs in self.by_path.values():
            for spec in specs:
                if spec.verified:
                    out.update((spec.path, line) for line in spec.lines)
        for spec in self.functions:
            if spec.verified:
                out.update((spec.path, line) for line in spec.lines)
        return tuple(sorted(out))

    def next_hit(self, target: Target, after: int) -> int | None:
        """The first hit number of `target`'s line above `after` at which one of its breakpoints can
        stop or log (None: none can again): only a hit condition rules a hit out, and only where no
        condition asks too (a hit condition that is not met leaves the condition to decide)."""
        specs = self.at(*target)
        if not specs:
            return after + 1  # (not one of ours: nothing rules a hit out)
        found: int | None = None
        for spec in specs:
            if spec.condition and spec.condition.strip():
                return after + 1
            n = next_hit_met(spec.hit_condition, after)
            if n is not None and (found is None or n < found):
                found = n
        return found

    def at(self, path: str, line: int) -> list[BreakpointSpec]:
        found = [s for s in self.by_path.get(path, []) if s.verified and line in s.lines]
        found += [s for s in self.functions if s.verified and s.path == path and line in s.lines]
        return found
