"""The MCP tools for what-if branches (debugger/branching.py): `set_value` gives a local a new value
at the current moment and the real program runs on from there with it, as a new branch the session
stands on; `branches` lists the branches and switches between them. An agent's value is a model's
text: it is parsed as a Python literal, never executed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from neural_dap.core.world import WorldError
from neural_dap.debugger import branching
from neural_dap.debugger.core import Busy, Debugger, Report
from neural_dap.mcp.sessions import Session, ToolFailure
from neural_dap.mcp.tools import GRACE, MAX_EXPRESSION, Tools, check_timeout, within

BRANCH_OUTPUT = 300  # characters of a branch's last output set_value shows


async def set_value(
    tools: Tools, session: str, name: str, value: str, frame: int, max_repr: int, timeout: float
) -> dict[str, Any]:
    timeout = check_timeout(timeout)
    if not isinstance(value, str) or len(value) > MAX_EXPRESSION:
        raise ToolFailure(f"the value must be the text of a Python literal of at most {MAX_EXPRESSION} characters")

    async def work(s: Session) -> dict[str, Any]:
        report = await _reach(s.debugger, timeout, lambda: branching.set_value(s.debugger, frame, name, value))
        viewer = tools._viewer(s, max_repr)
        shown = viewer.stop(report.stop, report)
        branch = report.description or ""
        # the stop repeats the branch's description as its description, note and output: once is enough
        for key in ("description", "note", "output"):
            if branch and branch in str(shown.get(key, "")) and len(str(shown[key])) < len(branch) + 40:
                del shown[key]
        return {
            "session": s.id,
            "branch": branch,
            "branch_ends": branch_end(tools._run_summary(s.debugger, viewer)),
            **shown,
        }

    return await tools._locked(session, timeout + 2 * GRACE, work)


def branch_end(summary: dict[str, Any]) -> dict[str, Any]:
    """How the new branch's run ended, from its recording: outcome, exit code, the exception that
    ended it (type, message, line) and the last of its output."""
    out: dict[str, Any] = {k: summary[k] for k in ("outcome", "exit_code", "stopped_by_limit") if k in summary}
    exception = summary.get("exception")
    if exception:
        where = exception.get("location", {})
        out["exception"] = {
            "type": exception.get("type"),
            "message": exception.get("message"),
            **({"file": where["file"], "line": where["line"]} if where else {}),
        }
    text = summary.get("output", "")
    out["output_tail"] = text[-BRANCH_OUTPUT:]
    return out


async def branches(tools: Tools, session: str, switch: int | None, max_repr: int, timeout: float) -> dict[str, Any]:
    timeout = check_timeout(timeout)

    async def work(s: Session) -> dict[str, Any]:
        out: dict[str, Any] = {"session": s.id}
        if switch is not None:
            report = await _reach(s.debugger, timeout, lambda: branching.switch(s.debugger, switch))
            out.update(tools._viewer(s, max_repr).stop(report.stop, report))
        found, current = branching.branches(s.debugger)
        out["branches"] = [
            {"id": b.id, "parent": b.parent, "current": b.id == current, "description": b.describe()} for b in found
        ]
        return out

    return await tools._locked(session, timeout + 2 * GRACE, work)


async def _reach(debugger: Debugger, timeout: float, move: Callable[[], Awaitable[Report]]) -> Report:
    """A branch move; past `timeout` it is paused (a value that makes the program loop), which ends
    the branch's recording and makes no branch."""

    async def run() -> Report | BaseException:
        async with anyio.create_task_group() as group:

            async def watchdog() -> None:
                await anyio.sleep(timeout)
                debugger.pause()

            group.start_soon(watchdog)
            try:
                answer: Report | BaseException = await move()
            except (Busy, WorldError) as exc:
                answer = exc
            group.cancel_scope.cancel()
        return answer

    answer = await within(timeout + GRACE, "set_value", run)
    if isinstance(answer, BaseException):
        raise ToolFailure(str(answer))
    if answer.failure is not None:
        raise ToolFailure(answer.failure)
    return answer
