"""Results a model reads well: bounded in size, with counts of what was left out, and with the
source line and three lines either side wherever a location is shown.

Values are reprs (as recorded, or as the evaluator answered), cut at `max_repr` characters; a cut
repr ends with the truncation mark and the result says how many characters were left out. Moments
are short ids ("m1234", the event index of the run) that `goto` travels to.
"""

from __future__ import annotations

import re
from typing import Any

from neural_dap.core.source import read_source
from neural_dap.core.state import TRUNCATION_MARK, as_traced
from neural_dap.core.world import Stop
from neural_dap.debugger.core import Debugger, Report
from neural_dap.format.confidence import UNCERTAIN_BELOW
from neural_dap.mcp.sessions import ToolFailure, Workspace

CONTEXT_LINES = 3
MAX_LOCALS = 40
MAX_FRAMES = 12
MAX_OUTPUT = 2000
DEFAULT_MAX_REPR = 200
MOMENT = re.compile(r"^m(\d{1,12})$")


def moment_id(index: int) -> str:
    return f"m{index}"


def parse_moment(text: str) -> int:
    match = MOMENT.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ToolFailure(f"{text!r} is not a moment id (they look like 'm1234', as other tools return them)")
    return int(match.group(1))


def cut(text: str | None, max_repr: int) -> str | None:
    if text is None:
        return None
    if len(text) <= max_repr:
        return text
    return text[: max(1, max_repr - 1)] + TRUNCATION_MARK


def guess(text: str, p: float | None) -> str:
    """A predicted value as an agent must read it: `v  (p=0.93)`; a guess `≈ v?  (p=0.31)` below
    `UNCERTAIN_BELOW`, and where the model gave no probability, `≈ v?  (p unknown)`."""
    if p is None:
        return f"\u2248 {text}?  (p unknown)"
    if p < UNCERTAIN_BELOW:
        return f"\u2248 {text}?  (p={p:.2f})"
    return f"{text}  (p={p:.2f})"


def bounded_reprs(values: dict[str, str], max_repr: int, limit: int = MAX_LOCALS) -> tuple[dict[str, str], int]:
    """Up to `limit` of `values`, each cut; and how many were left out."""
    items = list(values.items())
    return {name: cut(text, max_repr) or "" for name, text in items[:limit]}, max(0, len(items) - limit)


class Viewer:
    """Shows stops and locations of one session's program."""

    def __init__(self, workspace: Workspace, debugger: Debugger | None, max_repr: int = DEFAULT_MAX_REPR) -> None:
        if not isinstance(max_repr, int) or not 16 <= max_repr <= 100_000:
            raise ToolFailure("max_repr must be a number of characters from 16 to 100000")
        self.workspace = workspace
        self.debugger = debugger
        self.max_repr = max_repr
        self._lines: dict[str, list[str]] = {}  # the sources this answer showed, split once

    def cut(self, text: str | None) -> str | None:
        return cut(text, self.max_repr)

    def source_text(self, path: str) -> str | None:
        text = self.debugger.source(path) if self.debugger is not None else None
        return text if text is not None else read_source(path)

    def source_lines(self, path: str) -> list[str]:
        """A file's lines, if it lies in the workspace and can be read ([] otherwise)."""
        found = self._lines.get(path)
        if found is None:
            text = self.source_text(path) if path and self.workspace.inside(path) else None
            found = self._lines[path] = text.splitlines() if text else []
        return found

    def context(self, path: str, line: int) -> list[str]:
        """The line and `CONTEXT_LINES` either side, numbered; the line itself marked with `>`."""
        lines = self.source_lines(path)
        if not lines or line < 1:
            return []
        low, high = max(1, line - CONTEXT_LINES), min(len(lines), line + CONTEXT_LINES)
        width = len(str(high))
        return [
            f"{'>' if n == line else ' '} {n:>{width}} | {self.cut(lines[n - 1]) or ''}" for n in range(low, high + 1)
        ]

    def location(self, path: str, line: int, function: str | None = None, *, context: bool = True) -> dict[str, Any]:
        """Where: file, line, function; with `context` the line and three either side, else the
        line's own code only (rows of a page, whose context would repeat)."""
        out: dict[str, Any] = {"file": self.workspace.show(path), "line": line}
        if function is not None:
            out["function"] = function
        if context:
            out["source"] = self.context(path, line)
        else:
            code = self.line_code(path, line)
            if code:
                out["code"] = code
        return out

    def line_code(self, path: str, line: int, limit: int = 120) -> str:
        """One line's code, stripped and cut ('' where the source is not at hand)."""
        lines = self.source_lines(path)
        code = lines[line - 1].strip() if 1 <= line <= len(lines) else ""
        return code if len(code) <= limit else code[: limit - 1] + TRUNCATION_MARK

    def stop(
        self,
        stop: Stop,
        report: Report | None = None,
        *,
        locals_: bool = True,
        given: bool = False,
        context: bool = True,
    ) -> dict[str, Any]:
        """The current moment: where, what event, the locals, the stack, how the run ended if it did.
        A predicted stop's values carry the model's probability, a guess marked as one (`given`: the
        prediction's first state, made from the agent's own call, not predicted). Without `context`
        the location carries its line's code, not the lines around it (a prediction's later states)."""
        if stop.predicted and not given:
            return self._predicted(self.stop(stop, report, locals_=locals_, given=True, context=context), stop)
        state = stop.state
        out: dict[str, Any] = {"moment": moment_id(stop.index), "event": state.event}
        if report is not None:
            out["reason"] = report.reason
            if report.description:
                out["description"] = report.description
            if report.failure:
                out["failure"] = report.failure
        out["location"] = self.location(state.path, state.line, state.function, context=context)
        if state.event == "return":
            out["returns"] = self.cut(state.value)
        elif state.event == "exception":
            out["raises"] = self.cut(state.value)
        if state.caught:
            out["caught"] = self.cut(state.caught)
        if locals_:
            # (a module's data: its dunders, imports, functions and classes are not shown to agents)
            shown, left = bounded_reprs(dict(as_traced(state).locals), self.max_repr)
            out["locals"] = shown
            if left:
                out["locals_left_out"] = left
        frames = [
            {"function": f.function, "file": self.workspace.show(f.path), "line": f.line}
            for f in stop.stack[:MAX_FRAMES]
        ]
        out["stack"] = frames
        if len(stop.stack) > MAX_FRAMES:
            out["stack_left_out"] = len(stop.stack) - MAX_FRAMES
        if stop.at_start:
            out["at_start"] = True
        if stop.at_end:
            out["at_end"] = True
            if stop.exit is not None:
                out["exit"] = {"code": stop.exit.code, "description": stop.exit.description}
        if stop.predicted:
            out["predicted"] = True
        if stop.divergences:
            out["divergences"] = [self.cut(d.describe()) for d in stop.divergences]
        if stop.note:
            out["note"] = self.cut(stop.note)
        if report is not None and report.output:
            out.update(self.output(report.output, "output"))
        return out

    def _predicted(self, out: dict[str, Any], stop: Stop) -> dict[str, Any]:
        """A predicted stop as shown: every value with its probability `p`, below `UNCERTAIN_BELOW`
        written as a guess (`≈ v?  (p=0.05)`, as the terminal and DAP show it), and where the model
        gave none, `p unknown`, a guess too. `uncertain` names the guessed locals; `line_p` is the
        probability of the line."""
        marked = {}
        uncertain = []
        for name, text in out.get("locals", {}).items():
            p = stop.local_confidence.get(name)
            marked[name] = guess(text, p)
            if p is None or p < UNCERTAIN_BELOW:
                uncertain.append(name)
        if "locals" in out:
            out["locals"] = marked
        for key in ("returns", "raises"):
            if key in out:
                out[key] = guess(out[key] or "", stop.value_confidence)
                if stop.value_confidence is None or stop.value_confidence < UNCERTAIN_BELOW:
                    uncertain.append(key)
        out["line_p"] = round(stop.line_confidence, 3) if stop.line_confidence is not None else None
        if uncertain:
            out["uncertain"] = uncertain
        return out

    def output(self, chunks: Any, key: str, limit: int = MAX_OUTPUT) -> dict[str, Any]:
        """The tail of written output (`(stream, text)` pairs) and how many characters came before it."""
        text = "".join(t for _stream, t in chunks)
        if len(text) <= limit:
            return {key: text}
        return {key: text[-limit:], f"{key}_left_out_chars": len(text) - limit}


def page(items: list[Any], total: int, start: int, more: bool | None = None) -> dict[str, Any]:
    """A page of a longer list: the items, where it starts, the total, and the start of the next."""
    out: dict[str, Any] = {"items": items, "start": start, "total": total}
    following = start + len(items)
    if (more if more is not None else following < total) and items:
        out["next_start"] = following
    return out
