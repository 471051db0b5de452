"""Questions about the whole recorded run (debugger/history.py) as DAP requests: data
breakpoints, valueHistory, lastChange, valueOrigin, calls, logpointHistory, travel, and the session
summary."""

from __future__ import annotations

import os
import re
from typing import Any

import msgspec

from neural_dap.dap.connection import RequestError
from neural_dap.dap.execution import ExecutionRequests
from neural_dap.dapwire import protocol as p
from neural_dap.debugger import asking


class QueryRequests(ExecutionRequests):
    async def on_session_summary(self, request: p.Request) -> None:
        await self.respond(request, self.debugger.summary())

    def _frame_depth(self, frame_id: int | None) -> int:
        """The stack index (0: innermost) of a DAP frame id at the current stop."""
        view = self._require_view()
        frame = view.frame(frame_id)
        if frame is None:
            raise RequestError(f"no frame {frame_id} at this stop")
        return next((k for k, f in enumerate(view.stop.stack) if f.invocation == frame.invocation), 0)

    async def on_data_breakpoint_info(self, request: p.Request) -> None:
        args = self._args(request, p.DataBreakpointInfoArguments)
        view = self._require_view()
        expression, frame_id = args.name, args.frame_id
        node = view.handles.get(args.variables_reference) if args.variables_reference else None
        if node is not None and node.kind in ("locals", "globals"):
            frame_id = node.target.id  # type: ignore[attr-defined]
        elif node is not None:  # an attribute or item of an expanded value: its evaluateName
            child = next(
                (v for v in view.variables(args.variables_reference or 0) if v.name == args.name and v.evaluate_name),
                None,
            )
            expression = child.evaluate_name if child is not None and child.evaluate_name else args.name
        data_id, description = self.debugger.data_breakpoint_info(expression, self._frame_depth(frame_id))
        body: dict[str, Any] = {"dataId": data_id, "description": description}
        if data_id is not None:
            body.update({"accessTypes": ["write"], "canPersist": False})
        await self.respond(request, body)

    async def on_set_data_breakpoints(self, request: p.Request) -> None:
        args = self._args(request, p.SetDataBreakpointsArguments)
        refused: dict[int, str] = {}
        wanted = []
        for k, bp in enumerate(args.breakpoints):
            if bp.access_type not in (None, "write"):
                refused[k] = (
                    f"only writes can be watched: a recording keeps values, not the reads of them ({bp.access_type})"
                )
            else:
                wanted.append((k, bp.data_id))
        results = self.debugger.set_data_breakpoints([data_id for _, data_id in wanted])
        by_index = dict(zip((k for k, _ in wanted), results, strict=True))
        out = []
        for k in range(len(args.breakpoints)):
            result = by_index.get(k, refused.get(k, ""))
            if isinstance(result, str):
                out.append(p.Breakpoint(verified=False, message=result, reason="failed"))
            else:
                message = f"{result.expression} in {result.function}"
                out.append(p.Breakpoint(verified=True, id=result.id, message=message))
        await self.respond(request, {"breakpoints": out})

    async def on_value_history(self, request: p.Request) -> None:
        args = self._args(request, p.ValueHistoryArguments)
        depth = self._frame_depth(args.frame_id)
        page = await asking.value_history(
            self.debugger, args.expression, frame=depth, start=args.start, count=args.count
        )
        await self.respond(request, _camel(page))

    async def on_last_change(self, request: p.Request) -> None:
        """Custom: where the frame's invocation last changed the expression (who set this); null: never."""
        args = self._args(request, p.LastChangeArguments)
        depth = self._frame_depth(args.frame_id)
        change = await asking.last_change(self.debugger, args.expression, frame=depth, before=args.before)
        await self.respond(request, {"change": _camel(change) if change is not None else None})

    async def on_value_origin(self, request: p.Request) -> None:
        """Custom: where the value came from, a chain of steps (each a moment `travel` goes to) back to
        the statement that computed it, and why the chain ends there (`end`, `reason`)."""
        args = self._args(request, p.ValueOriginArguments)
        depth = self._frame_depth(args.frame_id)
        origin = await asking.value_origin(self.debugger, args.expression, frame=depth)
        await self.respond(request, _camel(origin))

    async def on_calls(self, request: p.Request) -> None:
        args = self._args(request, p.CallsArguments)
        page = await asking.calls(self.debugger, args.function, start=args.start, count=args.count)
        await self.respond(request, _camel(page))

    async def on_logpoint_history(self, request: p.Request) -> None:
        args = self._args(request, p.LogpointHistoryArguments)
        if not args.source.path:
            raise RequestError("logpointHistory needs source.path")
        page = await asking.logpoint(
            self.debugger,
            os.path.abspath(args.source.path),
            args.line,
            args.log_message,
            start=args.start,
            count=args.count,
        )
        await self.respond(request, _camel(page))

    async def on_travel(self, request: p.Request) -> None:
        args = self._args(request, p.TravelArguments)
        last = asking.queries_of(self.debugger).semantics.last  # refused at once where there is no recording
        if not 0 <= args.index <= last:
            raise RequestError(f"there is no event {args.index}: the run has events 0 to {last}")
        await self._execute(request, "travel", run=lambda: asking.travel(self.debugger, args.index))


def _camel(value: Any) -> Any:
    """A history answer as DAP bodies spell keys (camelCase)."""
    data = msgspec.to_builtins(value)

    def convert(item: Any) -> Any:
        if isinstance(item, dict):
            return {
                re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): v if k == "arguments" else convert(v)
                for k, v in item.items()
            }
        if isinstance(item, list):
            return [convert(v) for v in item]
        return item

    return convert(data)
