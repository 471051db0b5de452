"""How a stop looks in a debugger: frames, scopes and an expandable variables tree.

Stops are shown as debugpy shows them, so a session can be compared with debugpy stop by stop: a
state that has just returned (or raised out of its function) is shown back in the caller, at the
call line, with a `(return) name` variable holding the value. Values are parsed from their repr
text with the safe parser; what does not parse is shown as text, never evaluated.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from neural_dap.core import reprs
from neural_dap.core.state import Value
from neural_dap.core.world import Divergence, Stop
from neural_dap.dap import protocol as p

PAGE_HINT = 100  # containers longer than this are announced with a count so clients page them


@dataclass
class FrameView:
    id: int
    name: str
    line: int
    path: str
    locals: dict[str, str]
    values: dict[str, Value]
    invocation: int
    extras: list[tuple[str, str]] = field(default_factory=list)  # ("(return) f", "4")
    is_call: bool = False

    def variable_reprs(self) -> dict[str, str]:
        """What expressions see in this frame: locals plus the return-value pseudo-variables."""
        out = dict(self.locals)
        for name, text in self.extras:
            out.setdefault(name, text)
        return out


@dataclass
class _Node:
    """A handle's target: a frame's locals, a recorded structured value, or a parsed value."""

    kind: str  # "locals" | "value" | "parsed"
    target: object
    evaluate_name: str | None = None


class StopView:
    """The frames of one stop, and the handles of everything expandable in them."""

    def __init__(self, stop: Stop, divergences: tuple[Divergence, ...] = ()) -> None:
        self.stop = stop
        self.handles: dict[int, _Node] = {}
        self.frames: list[FrameView] = []
        self.marked = {d.name: d for d in divergences if d.kind == "local"}
        self._next = 1
        self._build()

    def _handle(self, node: _Node) -> int:
        ref = self._next
        self._next += 1
        self.handles[ref] = node
        return ref

    def _build(self) -> None:
        stop = self.stop
        state = stop.state
        stack = list(stop.stack)
        extras: list[tuple[str, str]] = []
        if state.terminal and not stop.hit_exception:
            label = "(return)" if state.event == "return" else "(exception)"
            extras.append((f"{label} {state.function}", state.value or "None"))
            if len(stack) > 1:
                stack = stack[1:]  # back in the caller, at the call line
        for k, frame in enumerate(stack):
            self.frames.append(
                FrameView(
                    id=1000 + k,
                    name=frame.function,
                    line=frame.line,
                    path=frame.path,
                    locals=dict(frame.locals),
                    values=dict(frame.values),
                    invocation=frame.invocation,
                    extras=extras if k == 0 else [],
                    is_call=k == 0 and state.event == "call",
                )
            )

    def frame(self, frame_id: int | None) -> FrameView | None:
        if frame_id is None:
            return self.frames[0] if self.frames else None
        return next((f for f in self.frames if f.id == frame_id), None)

    # -- DAP shapes --------------------------------------------------------------------------------
    def stack_frames(self) -> list[p.StackFrame]:
        return [
            p.StackFrame(
                id=f.id,
                name=f.name,
                line=f.line,
                column=1,
                source=p.Source(name=os.path.basename(f.path) or f.path, path=f.path) if f.path else None,
            )
            for f in self.frames
        ]

    def scopes(self, frame_id: int) -> list[p.Scope]:
        frame = self.frame(frame_id)
        if frame is None:
            return []
        ref = self._handle(_Node("locals", frame))
        return [
            p.Scope(
                name="Locals",
                variables_reference=ref,
                expensive=False,
                presentation_hint="locals",
                named_variables=len(frame.locals) + len(frame.extras),
            )
        ]

    def variables(self, ref: int, start: int = 0, count: int = 0, filter: str | None = None) -> list[p.Variable]:
        node = self.handles.get(ref)
        if node is None:
            return []
        if node.kind == "locals":
            frame: FrameView = node.target  # type: ignore[assignment]
            entries: list[tuple[str, str, Value | None, str | None]] = [
                (name, text, None, name) for name, text in frame.extras
            ]
            for name, text in frame.locals.items():
                entries.append((name, text, frame.values.get(name), name))
            out = [self._variable(name, text, structured, evaluate) for name, text, structured, evaluate in entries]
        else:
            out = [
                self._variable(name, text, structured, evaluate)
                for name, text, structured, evaluate in self._children(node)
            ]
        if filter == "named" and node.kind == "parsed" and isinstance(node.target, (list, tuple)):
            return []
        if count:
            return out[start : start + count]
        return out[start:]

    def _children(self, node: _Node) -> list[tuple[str, str, Value | None, str | None]]:
        base = node.evaluate_name
        if node.kind == "value":
            value: Value = node.target  # type: ignore[assignment]
            out: list[tuple[str, str, Value | None, str | None]] = []
            for name, child in value.children:
                out.append((name, child.repr, child if child.children else None, f"{base}.{name}" if base else None))
            if value.more:
                out.append(("...", f"{value.more} more not recorded", None, None))
            return out
        parsed = node.target
        plain: list[tuple[str, str, Value | None, str | None]] = []
        for name, item in reprs.children(parsed):
            if isinstance(parsed, dict):
                evaluate = f"{base}[{name}]" if base else None
            elif isinstance(parsed, reprs.ObjectRepr) and not name.isdigit():
                evaluate = f"{base}.{name}" if base else None
            elif isinstance(parsed, (list, tuple)):
                evaluate = f"{base}[{name}]" if base else None
            else:
                evaluate = None
            plain.append((name, reprs.show(item), None, evaluate))
        return plain

    def _variable(self, name: str, text: str, structured: Value | None, evaluate_name: str | None) -> p.Variable:
        ref = 0
        indexed = named = None
        if structured is not None and structured.children:
            ref = self._handle(_Node("value", structured, evaluate_name))
            named = len(structured.children)
            kind = structured.type
        else:
            parsed = reprs.parse_repr(text)
            kind = reprs.type_name(parsed)
            if reprs.has_children(parsed):
                ref = self._handle(_Node("parsed", parsed, evaluate_name))
                size = len(reprs.children(parsed))
                if isinstance(parsed, (list, tuple)) and size > PAGE_HINT:
                    indexed = size
        value = text
        hint = None
        mark = self.marked.get(name)
        if mark is not None:
            value = f"{text}   \u26a0 reality: {mark.actual}"
            # the mark is in the text: `hasDataBreakpoint` belongs to real data breakpoints
            hint = p.VariablePresentationHint(kind="data")
        return p.Variable(
            name=name,
            value=value,
            variables_reference=ref,
            type=kind or None,
            evaluate_name=evaluate_name,
            indexed_variables=indexed,
            named_variables=named,
            presentation_hint=hint,
        )

    def expandable(self, value: object, evaluate_name: str | None) -> int:
        if reprs.has_children(value):
            return self._handle(_Node("parsed", value, evaluate_name))
        return 0
