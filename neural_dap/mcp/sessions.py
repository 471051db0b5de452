"""Sessions of the MCP server: one `Debugger` each, kept by a short id, confined to a workspace root.

A session is what `record` made: a recorded run the agent travels through with the other tools. It
lives until `close`, until the server ends, or until it has been idle for `IDLE_SECONDS`; at most
`MAX_SESSIONS` live at once (each holds a recording and its checkpoints). One tool call at a time
moves a session (its lock); a call that cannot get the lock in its timeout says so. A session's
world is started in the calling task (a recorded world holds no cancel scopes), so nothing of a
session outlives the calls but its recording, which `close` ends.
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass, field

import anyio

from neural_dap.core.trust import canonical, covers
from neural_dap.debugger.core import Debugger

MAX_SESSIONS = 16
IDLE_SECONDS = 30 * 60


class ToolFailure(Exception):
    """A tool call that cannot be served; its text is what the agent reads (the session stays usable)."""


class Workspace:
    """The folder the server may read and run in: every path an agent names must lie inside it
    (compared as realpaths, so a symlink out of it is refused)."""

    def __init__(self, root: str) -> None:
        self.root = canonical(root)
        if not os.path.isdir(self.root):
            raise ValueError(f"the workspace root {self.root} is not a folder")

    def resolve(self, path: str, *, base: str | None = None, what: str = "path") -> str:
        """`path` (relative to `base`, else the root) as an absolute realpath inside the root."""
        if not isinstance(path, str) or not path or "\0" in path:
            raise ToolFailure(f"{what} must be a non-empty path")
        full = canonical(os.path.join(base or self.root, os.path.expanduser(path)))
        if not covers(self.root, full):
            raise ToolFailure(f"{what} {path!r} is outside the workspace root {self.root}; it is refused")
        return full

    def inside(self, path: str) -> bool:
        return covers(self.root, canonical(path))

    def show(self, path: str) -> str:
        """A path as the agent should read it: relative to the root where it lies inside."""
        if not path:
            return path
        real = canonical(path)
        if covers(self.root, real):
            return os.path.relpath(real, self.root)
        return path


@dataclass
class Session:
    id: str
    debugger: Debugger
    what: str  # what was recorded, as the agent asked ("examples/bug.py", "-m pytest -q")
    kind: str = "recorded"
    # the breakpoints the `breakpoints` tool set: path -> [(line, condition)]; every step stops at them
    breakpoints: dict[str, list[tuple[int, str | None]]] = field(default_factory=dict)
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    used: float = field(default_factory=time.monotonic)


MAX_REMEMBERED = 1000  # closed sessions whose end is remembered, so a late call hears why


class Sessions:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._sessions: dict[str, Session] = {}
        self._ids = itertools.count(1)
        # id -> how it ended: a call on a closed session says so, not "no session"
        self._closed: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def new_id(self) -> str:
        return f"s{next(self._ids)}"

    async def admit(self) -> None:
        """Room for one more session: idle ones are closed first; then a full table is refused."""
        now = time.monotonic()
        for session in [s for s in self._sessions.values() if now - s.used > IDLE_SECONDS and not s.lock.locked()]:
            await self.close(session.id, f"closed after {IDLE_SECONDS // 60} minutes unused")
        if len(self._sessions) >= MAX_SESSIONS:
            raise ToolFailure(
                f"{MAX_SESSIONS} sessions are open ({', '.join(self._sessions)}); close one with the close tool"
            )

    def add(self, session: Session) -> None:
        self._sessions[session.id] = session

    def get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            known = ", ".join(list(self._sessions)[:20]) or "none"
            ended = self._closed.get(session_id) if isinstance(session_id, str) else None
            if ended is not None:
                raise ToolFailure(f"session {session_id} is closed ({ended}); open sessions: {known}; record again")
            shown = repr(session_id)[:40]
            raise ToolFailure(f"no session {shown} (open sessions: {known}); record a program first")
        session.used = time.monotonic()
        return session

    async def close(self, session_id: str, how: str = "closed by the close tool") -> Session:
        session = self.get(session_id)
        del self._sessions[session_id]
        self._closed[session_id] = how
        while len(self._closed) > MAX_REMEMBERED:
            del self._closed[next(iter(self._closed))]
        with anyio.CancelScope(shield=True):
            await session.debugger.close()
        return session

    async def close_all(self) -> None:
        for session_id in list(self._sessions):
            await self.close(session_id)
