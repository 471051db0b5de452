"""Breakpoint requests: lines, functions and exception filters, kept by the debugger core's table;
after launch they are checked again against the program's sources and what the recording ran."""

from __future__ import annotations

import os

from neural_dap.dap.connection import Connection, RequestError
from neural_dap.dapwire import protocol as p
from neural_dap.debugger.breakpoints import BreakpointSpec

EXCEPTION_FILTERS = [
    p.ExceptionBreakpointsFilter(
        filter="raised",
        label="Raised Exceptions",
        description="Stop where an exception is raised, caught or not",
        default=False,
    ),
    p.ExceptionBreakpointsFilter(
        filter="uncaught",
        label="Uncaught Exceptions",
        description="Stop where the exception that ends the program is raised",
        default=True,
    ),
    p.ExceptionBreakpointsFilter(
        filter="userUnhandled",
        label="User Uncaught Exceptions",
        description="Stop where an exception leaves your code into code that is not yours (a failing test, say)",
        default=False,
    ),
]


class BreakpointRequests(Connection):
    async def on_set_breakpoints(self, request: p.Request) -> None:
        args = self._args(request, p.SetBreakpointsArguments)
        path = args.source.path
        if not path:
            raise RequestError("setBreakpoints needs source.path")
        path = os.path.abspath(path)
        requested = (
            args.breakpoints
            if args.breakpoints is not None
            else [p.SourceBreakpoint(line=ln) for ln in args.lines or []]
        )
        specs = self.debugger.set_line_breakpoints(path, requested, self._source_text(path))
        await self.debugger.breakpoints_taken()
        await self.respond(request, {"breakpoints": [_breakpoint(s) for s in specs]})

    async def on_set_function_breakpoints(self, request: p.Request) -> None:
        args = self._args(request, p.SetFunctionBreakpointsArguments)
        specs = self.debugger.breakpoints.set_functions(args.breakpoints, self._known_sources())
        self.debugger.breakpoints_changed()
        await self.debugger.breakpoints_taken()
        await self.respond(request, {"breakpoints": [_breakpoint(s) for s in specs]})

    def _known_sources(self) -> dict[str, str]:
        paths = set(self.debugger.breakpoints.by_path)
        if self.debugger.launch is not None:
            paths.add(self.debugger.launch.program)
        out = {}
        for path in sorted(paths):
            text = self._source_text(path)
            if text is not None:
                out[path] = text
        return out

    async def _after_launch_breakpoints(self) -> None:
        changed = self.debugger.breakpoints_after_launch(self._source_text, self._known_sources())
        for spec in changed:
            await self.event("breakpoint", {"reason": "changed", "breakpoint": _breakpoint(spec)})

    async def on_set_exception_breakpoints(self, request: p.Request) -> None:
        args = self._args(request, p.SetExceptionBreakpointsArguments)
        known = {f.filter for f in EXCEPTION_FILTERS}
        unknown = [f for f in args.filters if f not in known]
        self.debugger.exception_filters = frozenset(f for f in args.filters if f in known)
        body = {
            "breakpoints": [
                {"verified": f in known, "message": None if f in known else f"unknown filter {f!r}"}
                for f in args.filters
            ]
        }
        await self.respond(request, body)
        if unknown:
            await self.output(f"neural-dap: unknown exception filters {unknown}; known: {sorted(known)}\n", "important")


def _breakpoint(spec: BreakpointSpec) -> p.Breakpoint:
    return p.Breakpoint(
        verified=spec.verified,
        id=spec.id,
        message=spec.message,
        source=p.Source(name=os.path.basename(spec.path), path=spec.path) if spec.kind == "line" else None,
        line=spec.shown_line,
        reason=None if spec.verified else "failed",
    )
