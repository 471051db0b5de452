"""What-if edits: assign a new value to a local of the running program at a recorded moment.

A what-if branch (world/branches.py) is the same program recorded again with instructions of the
form "when event `at` has been recorded, set `name` to `value` in the innermost traced frame". The
skeleton engine counts events and calls the recorder's hook at a chosen count: the hook at count
`at + 1` runs right after event `at` was recorded, inside that event's trace callback, so the frame
of that event is the innermost traced frame and has not run on yet. Every process of the recording
applies the edits it reaches: the recording itself, and the workers that replay from a checkpoint
taken before an edit (a checkpoint taken after it is a copy of the program with the value already
set), so the states rebuilt later are the branch's.

The state of event `at` itself was recorded before the edit; a worker that captures it adds the new
value to its changes, so the branch shows the new value at the moment the user changed it.

The value arrives as the text of a Python literal, checked by the adapter, and is read here with
ast.literal_eval: nothing of it is executed. Up to its first edit a branch reads the first run's
journal (what the program received from the world then), so it takes the same path and repeats none
of its effects; after it, the branch runs in the sandbox (child/journal.py). Standard library only.
"""

from __future__ import annotations

import ast
import sys

from neural_dap.trace.child import live
from neural_dap.trace.child.journal import JOURNAL, MODE_RECORD, MODE_REPLAY
from neural_dap.trace.child.values import _ATOMS, _SMALL_INT

NEVER = 1 << 62
_CHANGES_AT = {"l": 3, "c": 5}  # where a captured line / call event keeps its changed locals


class Edit:
    __slots__ = ("at", "done", "function", "name", "value")

    def __init__(self, spec: dict) -> None:
        self.at = int(spec["at"])
        self.name = str(spec["name"])
        self.function = str(spec.get("function") or "")
        self.value = ast.literal_eval(str(spec["value"]))
        self.done = False


class Edits:
    """The edits of one branch, in the order the run reaches them."""

    def __init__(self, specs: list, rec, scratch: str | None = None) -> None:
        self.edits = sorted((Edit(spec) for spec in specs), key=lambda e: e.at)
        self.rec = rec  # the recorder: which code is the user's, and how values are encoded
        self.scratch = scratch  # the only folder the branch may change files in, after its edit

    def sooner(self, at: int) -> int:
        """The hook's next count: `at`, or earlier when an edit is due before it."""
        pending = [e.at + 1 for e in self.edits if not e.done]
        return min([at, *pending])

    def reached(self, count: int, events: list, capturing: bool, tell: bool) -> None:
        """The hook at `count`: apply every edit of event `count - 1`. `events`: what the recorder
        captured (`capturing`: it holds that event, last) and the channel's messages, which the
        recording process (`tell`) uses to say whether each edit was made."""
        captured = len(events) - 1
        for edit in self.edits:
            if edit.done or edit.at + 1 != count:
                continue
            edit.done = True
            self._leave_the_journal()
            problem = self._apply(edit)
            if problem is None and capturing:
                self._show_at_event(edit, events, captured)
            if tell:
                events.append(["whatif", edit.at, edit.name, "applied" if problem is None else problem])

    def _leave_the_journal(self) -> None:
        """Up to its first edit a branch is the first run, read back from its journal; from there it
        is a run of its own, which may read the world but change none of it (but for files in its
        scratch folder)."""
        if JOURNAL is not None and JOURNAL.mode() in (MODE_RECORD, MODE_REPLAY):
            JOURNAL.sandbox(self.scratch)

    def _apply(self, edit: Edit) -> str | None:
        frames = live.user_frames(self.rec.is_user)
        if not frames:
            return "no frame of the program is running at this moment"
        frame = frames[0]
        if edit.function and frame.f_code.co_name != edit.function:
            return f"the program was in {frame.f_code.co_name}, not {edit.function}, when it ran again"
        names = frame.f_locals
        if edit.name not in names:
            return f"{edit.name} is not a local of {frame.f_code.co_name} at this moment"
        set_local(frame, edit.name, edit.value)
        return None

    def _show_at_event(self, edit: Edit, events: list, captured: int) -> None:
        """The state of event `at` (captured just before the edit) carries the new value."""
        if captured < 0:
            return
        event = events[captured]
        position = _CHANGES_AT.get(event[0])
        if position is None:
            return
        value = edit.value
        if type(value) is int and -_SMALL_INT < value < _SMALL_INT:
            encoded = value
        elif type(value) in _ATOMS:
            encoded = self.rec.encode_atom(value)
        else:
            encoded = self.rec.encode_object(value)
        patched = list(event)
        patched[position] = [*(event[position] or []), edit.name, encoded]
        events[captured] = tuple(patched) if isinstance(event, tuple) else patched


def set_local(frame, name: str, value: object) -> None:
    """Assign a local of a running frame. On 3.13+ `f_locals` writes through (PEP 667); before, it is
    a snapshot dict that PyFrame_LocalsToFast copies back into the frame's fast locals and cells."""
    if sys.version_info >= (3, 13):
        frame.f_locals[name] = value
        return
    import ctypes

    names = frame.f_locals  # the frame's own snapshot dict, refreshed from its fast locals by this read
    names[name] = value
    ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
