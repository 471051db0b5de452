"""What the client reads at a stop: threads, the stack, scopes and variables (the `StopView`),
`evaluate` (through the debugger core: a live copy of the program where there is one), the source,
exception details and goto targets."""

from __future__ import annotations

import logging
import os
import re
import traceback
from typing import Any

from neural_dap.core import reprs
from neural_dap.core.source import SourceInfo, read_source
from neural_dap.core.world import Stop, Thread, WorldError
from neural_dap.dap.connection import Connection, RequestError
from neural_dap.dap.presentation import LEAF_TYPES, LiveRef
from neural_dap.dapwire import protocol as p
from neural_dap.debugger import asking
from neural_dap.debugger.core import MAIN_THREAD, is_plain_reference
from neural_dap.debugger.shown import shown

log = logging.getLogger("neural_dap.dap")


class InspectionRequests(Connection):
    async def on_threads(self, request: p.Request) -> None:
        threads = self.debugger.threads() if self.view is not None else [Thread(MAIN_THREAD, "MainThread")]
        await self.respond(request, {"threads": [p.Thread(id=t.id, name=t.name) for t in threads]})

    async def on_stack_trace(self, request: p.Request) -> None:
        args = self._args(request, p.StackTraceArguments)
        view = self._require_view()
        if args.thread_id == self.debugger.thread_id():
            frames = view.stack_frames()
        else:  # another thread: where it stood at this stop
            try:
                stack = await self.debugger.thread_stack(args.thread_id)
            except WorldError as exc:
                raise RequestError(str(exc)) from None
            frames = view.stack_frames(view.add_thread(args.thread_id, stack))
        start = max(0, args.start_frame)
        chosen = frames[start : start + args.levels] if args.levels > 0 else frames[start:]
        await self.respond(request, {"stackFrames": chosen, "totalFrames": len(frames)})

    async def on_scopes(self, request: p.Request) -> None:
        args = self._args(request, p.ScopesArguments)
        view = self._require_view()
        if view.frame(args.frame_id) is None:
            raise RequestError(f"no frame {args.frame_id} at this stop")
        await self.respond(request, {"scopes": view.scopes(args.frame_id)})

    async def on_variables(self, request: p.Request) -> None:
        args = self._args(request, p.VariablesArguments)
        view = self._require_view()
        node = view.live_node(args.variables_reference)
        if node is not None:
            # a value of the program: its children as debugpy shows them, from the live copy
            target = node.target
            assert isinstance(target, LiveRef)
            try:
                children, _total = await self.debugger.children_live(
                    target.frame, target.root, target.path, max(0, args.start), max(0, args.count)
                )
            except WorldError as exc:  # no live copy after all: what the recording kept
                log.debug("variables from the recording: %s", exc)
            else:
                await self.respond(request, {"variables": view.live_variables(node, children)})
                return
        cut = view.cut_roots(args.variables_reference)
        if cut is not None:
            depth, names = cut
            try:
                shown = await self.debugger.roots_live(depth, tuple(("l", name) for name in names))
            except WorldError as exc:
                log.debug("cut values stay cut: %s", exc)
            else:
                view.live_texts.update({(depth, n): r.value for n, r in zip(names, shown, strict=True) if r})
        await self.respond(
            request, {"variables": view.variables(args.variables_reference, args.start, args.count, args.filter)}
        )

    async def on_evaluate(self, request: p.Request) -> None:
        args = self._args(request, p.EvaluateArguments)
        view = self._require_view()
        frame = view.frame(args.frame_id)
        if frame is None:
            raise RequestError("no such frame")
        stack = view.stop.stack
        depth = next((k for k, f in enumerate(stack) if f.invocation == frame.invocation), None)
        if args.context == "hover" and not is_plain_reference(args.expression):
            depth = None  # a hover only reads: what the mouse rests on never runs a call in the program
        try:
            result = await self.debugger.evaluate(args.expression, frame.variable_reprs(), depth, frame.values)
        except WorldError as exc:
            raise RequestError(str(exc)) from None
        if result.live and depth is not None and view.live and (result.type or "") not in LEAF_TYPES:
            # a value of the program: it opens as debugpy's do, from the live copy
            reference = view.expandable_live(LiveRef(depth, ("e", args.expression)), args.expression)
        else:
            value = result.value if not result.live else reprs.parse_repr(result.text)  # expandable where it parses
            reference = view.expandable(value, args.expression)
        text = shown(result.text, result.type)
        if args.context == "repl" and result.type == "NoneType" and not reference:
            text = ""  # (the console answers nothing for None, as Python's REPL and debugpy do)
        await self.respond(request, {"result": text, "type": result.type, "variablesReference": reference})

    async def on_source(self, request: p.Request) -> None:
        args = self._args(request, p.SourceArguments)
        path = args.source.path if args.source else None
        text = self._source_text(path) if path else None
        if text is None:
            raise RequestError("source not available")
        await self.respond(request, {"content": text, "mimeType": "text/x-python"})

    async def on_exception_info(self, request: p.Request) -> None:
        stop = self.stop
        if stop is None or not (stop.state.event == "exception" or stop.state.caught):
            raise RequestError("the program is not stopped at an exception")
        await self.respond(request, exception_info(stop, self.debugger.exception_filters))

    async def on_goto_targets(self, request: p.Request) -> None:
        args = self._args(request, p.GotoTargetsArguments)
        path = os.path.abspath(args.source.path or "")
        text = self._source_text(path)
        if text is None or args.line not in SourceInfo(text, path).executable_lines:
            await self.respond(request, {"targets": []})
            return
        self.goto_ids += 1
        target_id = self.goto_ids
        self.goto_lines[target_id] = (path, args.line)
        targets = [p.GotoTarget(id=target_id, label=f"line {args.line}", line=args.line)]
        if self.debugger.exact and self.stop is not None:
            # in a recording, each execution of the line is a moment to travel to
            try:
                page = await asking.line_executions(self.debugger, path, args.line, count=100)
            except WorldError:
                page = None
            for moment, hit, detail in page.items if page is not None else []:
                self.goto_ids += 1
                self.goto_moments[self.goto_ids] = moment.index
                label = f"line {args.line}, hit {hit}" + (f" ({detail})" if detail else "")
                targets.append(p.GotoTarget(id=self.goto_ids, label=label, line=args.line))
        await self.respond(request, {"targets": targets})


def exception_info(stop: Stop, filters: frozenset[str]) -> dict[str, Any]:
    """DAP's exceptionInfo as debugpy answers it: the type (short and qualified), the message, how
    the stop was made (`unhandled`: the exception ends the program; `userUnhandled`: it leaves the
    user's code, whose frame has no traced caller; `always`: the `raised` filter) and the stack the
    exception is passing through, innermost call last as Python prints it."""
    text = (stop.state.value if stop.state.event == "exception" else stop.state.caught) or ""
    name = re.match(r"[\w.]+", text)
    full_type = name.group(0) if name else "Exception"
    type_name = full_type.rsplit(".", 1)[-1]
    message = _message(text[len(full_type) :], type_name) if text.startswith(full_type) else text
    exit_ = stop.exit
    # at the end, the exception ends the program unless the program went on to end otherwise (pytest
    # catching its last test's failure and exiting with its own code)
    ends = stop.at_end and (
        exit_ is None or exit_.description.startswith("uncaught") or full_type in ("SystemExit", "builtins.SystemExit")
    )
    if ends:
        mode = "unhandled"
    elif "userUnhandled" in filters and stop.state.event == "exception" and len(stop.stack) == 1:
        mode = "userUnhandled"  # it leaves the user's code: its frame has no traced caller
    else:
        mode = "always" if "raised" in filters else "unhandled"
    frames = [
        traceback.FrameSummary(frame.path, frame.line, frame.function, line=_line_of(frame.path, frame.line))
        for frame in reversed(stop.stack)
    ]
    trace = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
    return {
        "exceptionId": full_type,
        "description": text,
        "breakMode": mode,
        "details": p.ExceptionDetails(
            message=message or text,
            type_name=type_name,
            full_type_name=full_type,
            stack_trace=trace + f"{text}\n",
        ),
    }


def _message(arguments: str, type_name: str) -> str:
    """`str(exception)` from the text after its type: `('assert 4 == 5')` reads `assert 4 == 5` as
    debugpy shows it; a KeyError shows its key's repr, as Python does. Arguments that do not parse as
    literals are shown as recorded."""
    inner = arguments.strip()
    if inner.startswith(":"):  # `Type: message`, the form a traceback's last line takes
        return inner[1:].strip()
    if not (inner.startswith("(") and inner.endswith(")")):
        return inner
    inner = inner[1:-1]
    args = reprs.parse_repr(f"({inner},)") if inner.strip() else ()
    if isinstance(args, reprs.Opaque) or not isinstance(args, tuple):
        return inner
    if len(args) == 1:
        return repr(args[0]) if type_name == "KeyError" else str(args[0])
    return str(args) if args else ""


def _line_of(path: str, line: int) -> str:
    text = read_source(path)
    if text is None:
        return ""
    lines = text.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""
