"""What-if branches over DAP: `setVariable` and `setExpression` change a local at the stop (any
moment of the past included) and the real program runs on from there with the new value, as a new
branch the session then stands on; the custom request `branches` lists the branches and, with
`{"switch": id}`, moves to another one. A stop on a branch says which in its description.

A value is a Python literal, parsed and never executed (core/literals.py); anything else, a caller's
frame, an item of a value, and the neural world are refused with the reason, and the session stays
where it was.
"""

from __future__ import annotations

import msgspec

from neural_dap.core import reprs
from neural_dap.core.branches import Branch
from neural_dap.dap.connection import RequestError
from neural_dap.dap.execution import ExecutionRequests
from neural_dap.dap.presentation import FrameView
from neural_dap.dapwire import protocol as p
from neural_dap.debugger import branching
from neural_dap.debugger.core import Busy, Report


class SetVariableArguments(msgspec.Struct, rename="camel"):
    variables_reference: int
    name: str
    value: str


class SetExpressionArguments(msgspec.Struct, rename="camel"):
    expression: str
    value: str
    frame_id: int | None = None


class BranchesArguments(msgspec.Struct, rename="camel"):
    switch: int | None = None  # the branch to stand on


class BranchInfo(msgspec.Struct, rename="camel", omit_defaults=True):
    """One branch as `branches` lists it; the fields after `description` say where it forked."""

    id: int
    current: bool
    description: str
    parent: int | None = None
    index: int | None = None  # the event where the value was changed
    path: str | None = None
    line: int | None = None
    function: str | None = None
    name: str | None = None
    old: str | None = None
    new: str | None = None


class BranchRequests(ExecutionRequests):
    async def on_set_variable(self, request: p.Request) -> None:
        args = self._args(request, SetVariableArguments)
        view = self._require_view()
        node = view.handles.get(args.variables_reference)
        if node is None:
            raise RequestError(f"unknown variablesReference {args.variables_reference}")
        if node.kind not in ("locals", "globals"):
            raise RequestError(
                f"only a variable itself can be set, not an item or attribute of one: set the whole value "
                f"({node.evaluate_name or 'the variable'} = ...)"
            )
        frame: FrameView = node.target  # type: ignore[assignment]
        await self._change(request, self._depth(frame), args.name, args.value)

    async def on_set_expression(self, request: p.Request) -> None:
        args = self._args(request, SetExpressionArguments)
        name = args.expression.strip()
        if not name.isidentifier():
            raise RequestError(
                f"only a local variable can be set ({name!r} is not a name); its value is never executed"
            )
        frame = self._require_view().frame(args.frame_id)
        if frame is None:
            raise RequestError(f"no frame {args.frame_id} at this stop")
        await self._change(request, self._depth(frame), name, args.value)

    async def on_branches(self, request: p.Request) -> None:
        """Custom: {"branches": [...], "current": id}; with {"switch": id} it first stands on that
        branch (then a `stopped` event follows, as after any move)."""
        args = self._args(request, BranchesArguments)
        self._require_launched()
        report = None
        if args.switch is not None:
            try:
                report = await branching.switch(self.debugger, args.switch)
            except Busy as exc:
                raise RequestError(str(exc)) from None
            if report.failure is not None:
                raise RequestError(report.failure)
        found, current = branching.branches(self.debugger)
        await self.respond(request, {"branches": [_info(b, current) for b in found], "current": current})
        if report is not None:
            await self._ran_again(report)

    async def _change(self, request: p.Request, depth: int, name: str, text: str) -> None:
        """Make the branch, answer with the new value as the stop on the branch shows it, then stop there."""
        self._require_launched()
        try:
            report = await branching.set_value(self.debugger, depth, name, text)
        except Busy as exc:
            raise RequestError(str(exc)) from None
        if report.failure is not None:
            raise RequestError(report.failure)
        top = report.stop.stack[0] if report.stop.stack else None
        new = top.locals.get(name, text) if top is not None else text
        await self.respond(request, {"value": new, "type": reprs.type_name(reprs.parse_repr(new)) or None})
        await self._ran_again(report)

    async def _ran_again(self, report: Report) -> None:
        """The stop on the branch, after a `continued` event: the program did run again, and VS Code
        takes a stop as new only after a resume (its own step requests count as one; setVariable
        and custom requests do not), else it keeps the previous stop's "Paused on ..." text."""
        thread = self.debugger.thread_id()
        await self.event("continued", p.ContinuedEventBody(thread_id=thread, all_threads_continued=True))
        await self._conclude(report)

    def _depth(self, frame: FrameView) -> int:
        """The stack index of a frame of the view (-1: not on the stop's stack)."""
        stack = self._require_view().stop.stack
        return next((k for k, f in enumerate(stack) if f.invocation == frame.invocation), -1)

    def _require_launched(self) -> None:
        if self.world is None or not self.launched.is_set():
            raise RequestError("no program has been launched")
        if self.terminated:
            raise RequestError("the program has ended")
        if self.debugger.busy:
            raise RequestError("the program is already running; pause it first")


def _info(branch: Branch, current: int) -> BranchInfo:
    fork = branch.fork
    info = BranchInfo(branch.id, branch.id == current, branch.describe(), branch.parent)
    if fork is None:
        return info
    return msgspec.structs.replace(
        info,
        index=fork.index,
        path=fork.path,
        line=fork.line,
        function=fork.function,
        name=fork.name,
        old=fork.old,
        new=fork.new,
    )
