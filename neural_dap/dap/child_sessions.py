"""Child debug sessions (`"subProcess": true`), the way debugpy hands a child process to the client:
the DAP `startDebugging` reverse request, with a launch configuration that opens the child. VS Code
shows the child nested under the program's session and starts a session of its own for it (another
adapter process, for a stdio adapter); any client that answers `startDebugging` can do the same.

The world says which children there are and what opens each (`HasChildSessions`); this layer knows
only the parent's launch configuration, which each child's is made from.
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from neural_dap.core.world import ChildSession, HasChildSessions
from neural_dap.dap.connection import Connection

ANSWER_SECONDS = 30.0
NO_CHILD_SESSIONS = (
    "neural-dap: the program started {count} Python process(es), recorded as child sessions, but this client"
    " does not answer startDebugging, so they cannot be opened here: {names}\n"
)
# what a child does not inherit: what ran (the child's own is given), and what the client does
# around a launch (a build task run again for each child, a server-ready action, the console's)
_NOT_INHERITED = frozenset(
    {"program", "module", "args", "stdin", "console", "subProcess", "noDebug", "entry", "source", "pythonArgs"}
    | {"preLaunchTask", "postDebugTask", "serverReadyAction", "presentation", "debugServer"}
    | {"internalConsoleOptions", "redirectOutput"}
)


class StartDebuggingArguments(msgspec.Struct, frozen=True):
    configuration: dict[str, Any]
    request: str = "launch"


class ChildSessions(Connection):
    _children: list[ChildSession] | None = None  # (per session: set on the instance once known)

    async def _child_sessions(self) -> list[ChildSession]:
        """The children the client can be asked to open (once the program has run)."""
        if self._children is None:
            world = self.world
            found: list[ChildSession] = []
            if isinstance(world, HasChildSessions):
                found = await anyio.to_thread.run_sync(world.child_sessions)  # (reads recordings cut short)
            self._children = found
        return self._children

    async def _first_stop_yields_focus(self, report) -> bool:
        """The program stopped where nobody asked (its entry, its end) and children will be opened:
        a child that stops at a breakpoint takes the editor's focus, as under debugpy (where the
        parent would still be running)."""
        return (
            report.reason in ("entry", "end")
            and bool(getattr(self.client, "supports_start_debugging_request", False))
            and bool(await self._child_sessions())
        )

    async def offer_child_sessions(self, parent: dict[str, Any], parent_program: str) -> None:
        """Ask the client to open a session for each child process the program started."""
        children = await self._child_sessions()
        if not children:
            return
        if not getattr(self.client, "supports_start_debugging_request", False):
            names = ", ".join(child.name for child in children)
            await self.output(NO_CHILD_SESSIONS.format(count=len(children), names=names), "important")
            return
        for child in children:
            configuration = child_configuration(parent, child, parent_program)
            answer = await self.ask_client(
                "startDebugging", StartDebuggingArguments(configuration=configuration), ANSWER_SECONDS
            )
            if answer is None or not answer.success:
                why = answer.message if answer is not None else f"no answer within {ANSWER_SECONDS:g} s"
                await self.output(f"neural-dap: the client did not open {child.name}: {why}\n", "important")


def child_configuration(parent: dict[str, Any], child: ChildSession, parent_program: str) -> dict[str, Any]:
    """The parent's launch configuration with what ran replaced by the child (its other keys, such
    as `type`, `justMyCode` and `stopOnEntry`, still apply)."""
    inherited = {k: v for k, v in parent.items() if k not in _NOT_INHERITED and not k.startswith("__")}
    launch = dict(child.launch)
    if not launch.get("program"):  # a multiprocessing worker runs the functions of the parent's program
        launch["program"] = parent_program
    return {**inherited, "request": "launch", "name": child.name, "world": "recorded", **launch}
