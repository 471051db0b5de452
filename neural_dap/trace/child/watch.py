"""A location watched through a replay: which events changed the value one frame reaches by a path.

"Who changed it" (debugger/history.py) knows that between two events of one frame the value of an
expression changed, and that other code ran in between (a callee, a library calling back). A worker
replays that stretch (child/skeleton.py) and, at every event of it, reads the expression from the
frame that holds it (the frame of the first event, kept alive by the replay itself) and encodes it as
the recorder encodes locals. Where the encoding differs from the previous event's, the object was
changed by whatever ran just before that event, through whatever name: the adapter names the
statement from the timeline. This is gdb's watchpoint over a replay, exact and free of object
identity (addresses differ between replays; the frame and the path do not).

Only attribute and literal-key steps are followed (the adapter parses the user's text into them; no
text is evaluated); reading runs in the journal's sandbox, so a property or `__getitem__` of the
program's that has effects is refused them, as every repr of a recording is.

Standard library only.
"""

from __future__ import annotations

import types
from typing import Any

from neural_dap.trace.child.journal import sandboxed

_ATOMS = frozenset({int, str, float, bool, type(None), bytes, complex})
_UNBOUND = object()


class Watch:
    """The changes of one path in the frame of the first event observed: `series` holds
    [event, encoding, bound] for the first event and for every event where it differs."""

    def __init__(self, path: list, encode) -> None:
        self.root = str(path[0])
        self.steps = [(str(kind), key) for kind, key in path[1:]]
        self.encode = encode
        self.frame: types.FrameType | None = None
        self.series: list[list[Any]] = []
        self._object: Any = _UNBOUND
        self._encoded: Any = None

    def observe(self, event: int, frames: list[types.FrameType]) -> None:
        """Event `event` is about to run (its state is the one a debugger shows there)."""
        if self.frame is None:
            if not frames:
                return
            self.frame = frames[0]
        with sandboxed():
            value = self._resolve()
            if value is _UNBOUND:
                encoded = None
            elif value is self._object and type(value) in _ATOMS:
                return  # the same unchangeable object: the same value
            else:
                try:
                    encoded = self.encode(value)
                except Exception as exc:  # the program's repr failed: that is what the user would see
                    encoded = f"<repr failed: {type(exc).__name__}>"
        bound = value is not _UNBOUND
        if self.series and encoded == self._encoded and bound == self.series[-1][2]:
            self._object = value
            return
        self._object, self._encoded = value, encoded
        self.series.append([event, encoded, bound])

    def _resolve(self) -> Any:
        frame = self.frame
        assert frame is not None
        try:
            value = frame.f_locals.get(self.root, _UNBOUND)
        except Exception:
            return _UNBOUND
        for kind, key in self.steps:
            if value is _UNBOUND:
                return value
            try:
                value = getattr(value, key) if kind == "." else value[key]
            except Exception:  # no such attribute or item (yet): not bound
                return _UNBOUND
        return value


__all__ = ["Watch"]
