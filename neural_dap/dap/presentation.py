"""How a stop looks in a debugger: frames, scopes and an expandable variables tree.

Stops are shown as debugpy shows them, so a session can be compared with debugpy stop by stop: a
state that has just returned (or raised out of its function) is shown back in the caller, at the
call line, with a `(return) name` variable holding the value (none where library code called the
function: the caller gets that code's value, which is not recorded). Values are parsed from their repr
text with the safe parser; what does not parse is shown as text, never evaluated.

Scopes are debugpy's: "Locals", and "Globals" where the frame's module is on the stack (a script's
`<module>` frame, whose locals are the module's globals as recorded at that stop; values a running
callee changed appear when it returns, as in any caller's frame). Where it is not (a function
launch, a module imported from elsewhere), Globals is left out rather than shown wrong.

Long lists and tuples are announced with `indexedVariables` and paged with `start`/`count`. A
recording keeps a bounded number of a value's items (`limits`: 50 children, a repr of `maxRepr`
characters): a page past them holds one entry saying how many of its items were not recorded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from neural_dap.core import reprs
from neural_dap.core.state import TRUNCATION_MARK, Frame, Value, kind_of
from neural_dap.core.world import Divergence, LiveChild, Stop
from neural_dap.dapwire import protocol as p
from neural_dap.debugger.shown import returning_name, shown

PAGE_HINT = 100  # containers longer than this are announced with a count so clients page them
_SEQUENCES = ("list", "tuple")  # recorded structures whose children are items 0, 1, ... (paged)
_MAPPINGS = ("dict",)  # children named by their keys' reprs
_SETS = ("set", "frozenset")  # children numbered in iteration order: no expression reaches one
RETURN_PREFIX = "(return) "
# parsed values whose children debugpy lists with a last `len()` (expandable when empty too)
_CONTAINERS = (list, tuple, dict, set, frozenset)


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
    returned: list[tuple[str, str]] = field(default_factory=list)  # ... after the locals (Stop.returned)
    holders: dict[str, str] = field(default_factory=dict)  # "(return) f" -> the local holding its object
    returned_values: dict[str, Value] = field(default_factory=dict)  # ... or its children (the library's)
    is_call: bool = False
    module: FrameView | None = None  # the frame of this frame's module on the stack: its Globals

    def variable_reprs(self) -> dict[str, str]:
        """What expressions see in this frame: its module's globals, its locals over them, plus the
        return-value pseudo-variables."""
        out = dict(self.module.locals) if self.module is not None and self.module is not self else {}
        out.update(self.locals)
        for name, text in (*self.extras, *self.returned):
            out.setdefault(name, text)
        return out


def _frame_views(
    stack: list[Frame],
    first_id: int,
    extras: list[tuple[str, str]],
    at_call: bool,
    module_frame: Frame | None = None,
) -> list[FrameView]:
    views = [
        FrameView(
            id=first_id + k,
            name=frame.function,
            line=frame.line,
            path=frame.path,
            locals=dict(frame.locals),
            values=dict(frame.values),
            invocation=frame.invocation,
            extras=extras if k == 0 else [],
            is_call=k == 0 and at_call,
        )
        for k, frame in enumerate(stack)
    ]
    elsewhere = None  # a thread's globals: the main thread's module frame (Stop.module_frame)
    if module_frame is not None:
        elsewhere = FrameView(
            -1,
            module_frame.function,
            module_frame.line,
            module_frame.path,
            dict(module_frame.locals),
            dict(module_frame.values),
            module_frame.invocation,
        )
    for view in views:
        # the outermost `<module>` frame of the same file (a script's; an imported module's while
        # it is being imported); none for a function launch or a module imported earlier
        view.module = next(
            (m for m in reversed(views) if m.name == "<module>" and m.path == view.path and view.path), None
        )
        if view.module is None and elsewhere is not None and elsewhere.path == view.path:
            view.module = elsewhere
    return views


def attribute_order(name: str) -> tuple[int, str]:
    """debugpy's order of a scope's names and an object's attributes."""
    if name.startswith("__"):
        return (3 if name.endswith("__") else 2, name)
    return (1 if name.startswith("_") else 0, name)


@dataclass(frozen=True)
class LiveRef:
    """A value of the program at the stop, found again from a frame's local or global by a path of
    selectors (trace/child/resolvers.py): what a live copy expands as debugpy does."""

    frame: int  # the frame's depth on the stop's stack (0: innermost)
    root: tuple[str, str]  # ("l", name): the frame's local (a module frame's are its globals)
    path: tuple[list, ...] = ()


@dataclass
class _Node:
    """A handle's target: a frame's locals, a recorded structured value, a parsed value, or a value
    of the program (`live`: its children come from a live copy, else from `fallback`)."""

    kind: str  # "locals" | "globals" | "value" | "parsed" | "live"
    target: object
    evaluate_name: str | None = None
    fallback: _Node | None = None
    group: str | None = None  # of a scope ("locals", "globals"): only its variables of this group


# debugpy's groups of a scope's variables, in its order (pydevd's DAPGrouper; "protected variables",
# `_names`, are shown inline, as debugpy shows them by default)
SPECIAL, FUNCTIONS, CLASSES = "special variables", "function variables", "class variables"
GROUPS = (SPECIAL, FUNCTIONS, CLASSES)


def _top_level(local_reprs: dict[str, str], values: dict[str, Value]) -> int:
    """How many variables a scope lists at its top: its groups and its names shown inline."""
    groups = [group_of(name, text, values.get(name)) for name, text in local_reprs.items()]
    return groups.count(None) + len(set(groups) - {None})


def group_of(name: str, text: str, structured: Value | None) -> str | None:
    """The group debugpy files a scope's variable under (pydevd's `get_var_scope`): a `__dunder__`
    among the special variables, a routine among the function variables, a class among the class
    variables; None: shown inline (a `_name` is, whatever it holds, and so is a module)."""
    if name.startswith("__") and name.endswith("__"):
        return SPECIAL
    if name.startswith("_") or name.endswith("__"):
        return None
    kind = kind_of(text, structured)
    return FUNCTIONS if kind == "routine" else CLASSES if kind == "class" else None


LEAF_TYPES = frozenset({"int", "float", "complex", "str", "bool", "NoneType"})


def is_leaf(text: str, structured: Value | None) -> bool:
    """A value debugpy shows without children (None, numbers, strings), judged by its recorded
    text (a string cut by the recording is still one)."""
    if structured is not None and structured.type:
        return structured.type in LEAF_TYPES
    if text.startswith(("'", '"')):
        return True
    return reprs.type_name(reprs.parse_repr(text)) in LEAF_TYPES


class StopView:
    """The frames of one stop, and the handles of everything expandable in them."""

    def __init__(self, stop: Stop, divergences: tuple[Divergence, ...] = (), live: bool = False) -> None:
        self.stop = stop
        # values come from a live copy of the program where there can be one (debugpy's views)
        self.live = live
        self.live_texts: dict[tuple[int, str], str] = {}  # (frame depth, name) -> text debugpy shows
        self.handles: dict[int, _Node] = {}
        self.frames: list[FrameView] = []  # the stopped thread's
        self.other_threads: dict[int, list[FrameView]] = {}  # thread id -> its frames, as asked for
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
            if stop.called_by_library and len(stack) > 1:
                pass  # (a function library code called returned into that code: what the call line
                # gets back is that code's value, which was not recorded; debugpy shows that one)
            elif state.event == "return" and state.function == "<module>":
                pass  # a module returns nothing anyone gets (debugpy shows no value at its end either)
            else:
                name = (
                    returning_name(state.function, dict(stack[0].locals), state.path, state.line)
                    if stack
                    else state.function
                )
                extras.append((f"{label} {name}", state.value or "None"))
            if len(stack) > 1:
                stack = stack[1:]  # back in the caller, at the call line
        # (the frames below, where library code runs the stack: an event loop's task under
        # `<module>`, as debugpy lists the real stack)
        self.frames = _frame_views([*stack, *stop.outer], 1000, extras, state.event == "call", stop.module_frame)
        # the values functions returned into each frame while the user stepped (debugger/returns.py)
        shift = len(stop.stack) - len(stack)  # (a stop at a return: shown from the caller)
        for depth, name, text, holder, structured in stop.returned:
            at = depth - shift
            # (the stop's own return is shown already; at an exception leaving f on 3.11 debugpy
            # shows settrace's `(return) f: None`, beside which neural-dap says `(exception) f`)
            if 0 <= at < len(stack) and all(name != shown for shown, _ in self.frames[at].extras):
                self.frames[at].returned.append((name, text))
                if holder:
                    self.frames[at].holders[name] = holder
                elif structured is not None:
                    self.frames[at].returned_values[name] = structured
        if stop.exception_line and self.frames and not extras:
            self.frames[0].line = stop.exception_line  # where the exception reached the frame

    def add_thread(self, thread_id: int, stack: tuple[Frame, ...]) -> list[FrameView]:
        """Another thread's frames at this stop (where it stood), with ids of their own."""
        views = self.other_threads.get(thread_id)
        if views is None:
            views = self.other_threads[thread_id] = _frame_views(
                list(stack), 1_000_000 * thread_id, [], False, self.stop.module_frame
            )
        return views

    def frame(self, frame_id: int | None) -> FrameView | None:
        if frame_id is None:
            return self.frames[0] if self.frames else None
        for frames in (self.frames, *self.other_threads.values()):
            found = next((f for f in frames if f.id == frame_id), None)
            if found is not None:
                return found
        return None

    # -- DAP shapes --------------------------------------------------------------------------------
    def stack_frames(self, frames: list[FrameView] | None = None) -> list[p.StackFrame]:
        return [
            p.StackFrame(
                id=f.id,
                name=f.name,
                line=f.line,
                column=1,
                source=p.Source(name=os.path.basename(f.path) or f.path, path=f.path) if f.path else None,
            )
            for f in (self.frames if frames is None else frames)
        ]

    def scopes(self, frame_id: int) -> list[p.Scope]:
        frame = self.frame(frame_id)
        if frame is None:
            return []
        ref = self._handle(_Node("locals", frame))
        scopes = [
            p.Scope(
                name="Locals",
                variables_reference=ref,
                expensive=False,
                presentation_hint="locals",
                named_variables=_top_level(frame.locals, frame.values) + len(frame.extras) + len(frame.returned),
            )
        ]
        if frame.module is not None:
            scopes.append(
                p.Scope(
                    name="Globals",
                    variables_reference=self._handle(_Node("globals", frame.module)),
                    expensive=False,
                    named_variables=_top_level(frame.module.locals, frame.module.values),
                )
            )
        return scopes

    def variables(self, ref: int, start: int = 0, count: int = 0, filter: str | None = None) -> list[p.Variable]:
        node = self.handles.get(ref)
        if node is None:
            return []
        if filter == "named" and self._indexed(node):
            return []  # items are all indexed: a client asks for them by page
        start = max(0, start)
        entries: list[tuple[str, str, Value | None, str | None]]
        if node.kind in ("locals", "globals"):
            out = self._scope_variables(node)
            return out[start : start + count] if count else out[start:]
        if node.kind == "live":
            node = node.fallback or _Node("parsed", None)
        entries = self._children(node, start, count)
        return [self._variable(name, text, structured, evaluate) for name, text, structured, evaluate in entries]

    def _scope_variables(self, node: _Node) -> list[p.Variable]:
        """A scope's variables as debugpy lists them: its groups first (special, function and class
        variables, each opening to its own), then the return values and the other names in debugpy's
        order (names, `_names`, `__names`: pydevd's sorted_attributes_key). A group's node lists its
        own names."""
        frame: FrameView = node.target  # type: ignore[assignment]
        depth = self.depth(frame) if self.live else None
        top = node.group is None
        grouped: dict[str, list[str]] = {}
        # `(return) f` among the locals, ordered by the function's name (pydevd's key for it)
        returns = dict(frame.returned) if node.kind == "locals" else {}
        out: list[p.Variable] = []
        if node.kind == "locals" and top:
            for name, text in frame.extras:
                if name.startswith(RETURN_PREFIX):
                    returns[name] = text
                else:
                    out.append(self._variable(name, text, None, name))
        ordered = [*frame.locals, *returns]
        for name in sorted(ordered, key=lambda n: attribute_order(n.removeprefix(RETURN_PREFIX))):
            if name in returns and name.startswith(RETURN_PREFIX):
                # (an object a local holds opens as that local: debugpy keeps the object itself)
                holder = frame.holders.get(name, "")
                if holder and frame.locals.get(holder) == returns[name]:
                    structured = frame.values.get(holder)
                else:
                    structured = frame.returned_values.get(name)
                group = group_of(name, returns[name], structured)  # (a function returned: "function variables")
                if group != node.group:
                    if top and group is not None:
                        grouped.setdefault(group, []).append(name)
                    continue
                out.append(self._variable(name, returns[name], structured, name))
                continue
            text = frame.locals[name]
            structured = frame.values.get(name)
            group = group_of(name, text, structured)
            if group != node.group:
                if top and group is not None:
                    grouped.setdefault(group, []).append(name)
                continue
            live = LiveRef(depth, ("l", name)) if depth is not None else None
            if live is not None:
                text = self.live_texts.get((depth, name), text)  # type: ignore[arg-type]
            out.append(self._variable(name, text, structured, name, live))
        groups = [
            p.Variable(
                name=group,
                value="",
                type="",
                variables_reference=self._handle(_Node(node.kind, frame, group=group)),
            )
            for group in GROUPS
            if group in grouped
        ]
        return groups + out

    def depth(self, frame: FrameView) -> int | None:
        """`frame`'s depth on the stop's stack (what a live copy numbers its frames by)."""
        return next((k for k, f in enumerate(self.stop.stack) if f.invocation == frame.invocation), None)

    def cut_roots(self, ref: int) -> tuple[int, list[str]] | None:
        """A scope's variables whose recorded text was cut (and not fetched yet): (the frame's depth,
        their names), for a live copy to show them as debugpy does. None where there are none."""
        node = self.handles.get(ref)
        if not self.live or node is None or node.kind not in ("locals", "globals"):
            return None
        frame: FrameView = node.target  # type: ignore[assignment]
        depth = self.depth(frame)
        if depth is None:
            return None
        names = [
            name
            for name, text in frame.locals.items()
            if text.endswith(TRUNCATION_MARK)
            and (depth, name) not in self.live_texts
            and group_of(name, text, frame.values.get(name)) == node.group
        ]
        return (depth, names) if names else None

    def live_node(self, ref: int) -> _Node | None:
        node = self.handles.get(ref)
        return node if node is not None and node.kind == "live" else None

    def live_variables(self, node: _Node, children: tuple[LiveChild, ...]) -> list[p.Variable]:
        """A live value's children as variables; each one that opens gets a live handle of its own."""
        parent: LiveRef = node.target  # type: ignore[assignment]
        out = []
        for child in children:
            evaluate = None
            if child.evaluate is not None and node.evaluate_name:
                evaluate = child.evaluate.replace("%s", node.evaluate_name, 1)
            ref = 0
            if child.expandable:
                target = LiveRef(parent.frame, parent.root, (*parent.path, child.selector))
                ref = self._handle(_Node("live", target, evaluate))
            out.append(
                p.Variable(
                    name=child.name,
                    value=child.value,  # (the program's SafeRepr already: child/resolvers.py)
                    variables_reference=ref,
                    type=child.type or None,
                    evaluate_name=evaluate,
                )
            )
        return out

    @staticmethod
    def _indexed(node: _Node) -> bool:
        if node.kind == "parsed":
            return isinstance(node.target, (list, tuple))
        if node.kind == "value":
            value: Value = node.target  # type: ignore[assignment]
            return value.type in _SEQUENCES and len(value.children) + value.more > PAGE_HINT  # announced indexed
        return False

    def _children(self, node: _Node, start: int = 0, count: int = 0) -> list[tuple[str, str, Value | None, str | None]]:
        """A node's children from `start` (`count` of them, all for 0): only those are made into
        variables, so a page of a long list costs its page."""
        base = node.evaluate_name
        end = None if not count else start + count
        out: list[tuple[str, str, Value | None, str | None]] = []
        if node.kind == "value":
            value: Value = node.target  # type: ignore[assignment]
            for name, child in value.children[start:end]:
                if value.type in _SEQUENCES or value.type in _MAPPINGS:
                    evaluate = f"{base}[{name}]" if base else None
                elif value.type in _SETS:
                    evaluate = None
                else:
                    evaluate = f"{base}.{name}" if base else None
                out.append((name, child.repr, child if child.children else None, evaluate))
            recorded = len(value.children)
            total = recorded + value.more
            last = total if end is None else min(end, total)
            if value.more and last > max(start, recorded):
                # the page reaches past what the recording kept: one entry says how many of its
                # items were not recorded (and, for a sequence, which)
                first = max(start, recorded)
                missing = last - first
                which = f"items {first} to {last - 1}; " if value.type in _SEQUENCES else ""
                note = f"{missing} more not recorded ({which}the recording keeps {recorded} of {total})"
                out.append(("...", note, None, None))
            return out
        parsed = node.target
        items = reprs.children(parsed)
        for name, item in items[start:end]:
            if isinstance(parsed, dict):
                evaluate = f"{base}[{name}]" if base else None
            elif isinstance(parsed, reprs.ObjectRepr) and not name.isdigit():
                evaluate = f"{base}.{name}" if base else None
            elif isinstance(parsed, (list, tuple)):
                evaluate = f"{base}[{name}]" if base else None
            else:
                evaluate = None
            out.append((name, reprs.show(item), None, evaluate))
        if isinstance(parsed, _CONTAINERS) and len(items) <= PAGE_HINT and (end is None or end >= len(items)):
            # (debugpy's last child of a container, an empty one's only)
            out.append(("len()", str(len(parsed)), None, f"len({base})" if base else None))
        return out

    def _variable(
        self, name: str, text: str, structured: Value | None, evaluate_name: str | None, live: LiveRef | None = None
    ) -> p.Variable:
        ref = 0
        indexed = named = None
        if structured is not None and structured.children:
            ref = self._handle(_Node("value", structured, evaluate_name))
            size = len(structured.children) + structured.more
            if structured.type in _SEQUENCES and size > PAGE_HINT:
                indexed = size  # its true length: pages past the recorded items say so
            else:
                named = len(structured.children)
            kind = structured.type
        else:
            parsed = reprs.parse_repr(text)
            kind = structured.type if structured is not None and structured.type else reprs.type_name(parsed)
            if reprs.has_children(parsed) or isinstance(parsed, _CONTAINERS):
                ref = self._handle(_Node("parsed", parsed, evaluate_name))
                size = len(reprs.children(parsed))
                if isinstance(parsed, (list, tuple)) and size > PAGE_HINT:
                    indexed = size
        if live is not None and not is_leaf(text, structured):
            # debugpy's children, from the program; what the recording kept where it cannot
            fallback = self.handles.pop(ref) if ref else None
            ref = self._handle(_Node("live", live, evaluate_name, fallback))
            indexed = named = None
        value = self._with_confidence(name, shown(text, kind), evaluate_name)
        hint = None
        mark = self.marked.get(name)
        if mark is not None:
            value = f"{value}   \u26a0 reality: {mark.actual}"
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

    def _with_confidence(self, name: str, text: str, evaluate_name: str | None) -> str:
        """A predicted local or return value with the probability the model gave it: "x  (p=0.93)";
        below `UNCERTAIN_BELOW` it reads as a guess, "≈ x?  (p=0.31)". Real values are unchanged."""
        from neural_dap.format.confidence import UNCERTAIN_BELOW

        stop = self.stop
        state = stop.state
        p_value = None
        if evaluate_name == name and state.locals.get(name) == text:
            p_value = stop.local_confidence.get(name)
        elif name.startswith(("(return) ", "(exception) ")) and text == (state.value or "None"):
            p_value = stop.value_confidence
        if p_value is None:
            return text
        if p_value < UNCERTAIN_BELOW:
            return f"\u2248 {text}?  (p={p_value:.2f})"
        return f"{text}  (p={p_value:.2f})"

    def expandable_live(self, ref: LiveRef, evaluate_name: str | None) -> int:
        """A handle on a value of the program (an evaluated expression's), opened from the live copy."""
        return self._handle(_Node("live", ref, evaluate_name))

    def expandable(self, value: object, evaluate_name: str | None) -> int:
        if reprs.has_children(value) or isinstance(value, _CONTAINERS):
            return self._handle(_Node("parsed", value, evaluate_name))
        return 0
