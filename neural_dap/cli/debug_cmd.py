"""`neural-dap debug PROGRAM [ARGS...]` or `neural-dap debug [options] -m MODULE [ARGS...]`: debug in
the terminal, through the DAP server.

The front end is an ordinary DAP client of `neural-dap adapter` (started as a child process), so
what it shows is exactly what an editor would get. Commands:

  s  step into        n  next (step over)     r  step out (return)     c  continue
  back  step back     rc  reverse continue    bi  step back into       bo  step back out
  b LINE [if COND]    b FUNCTION              p EXPR    where    list    locals    threads    summary    q
Asking the recording (recorded world): `history EXPR` every change of a local, `self.attr` or
`d["k"]` (every call of this frame's function), `last EXPR` where it last changed (who set it),
`origin EXPR` where its value came from (followed through copies and arguments to where it was computed),
`calls FUNCTION` every call with its arguments and result, `log LINE MESSAGE` a log point over every
past run of a line (`{expr}` is interpolated), `travel INDEX` go to a moment (an event index above).
What if (recorded world): `set NAME VALUE` gives a local of the innermost frame a new value (a Python
literal) here, even in the past, and the program runs on from here with it as a new branch;
`branches` lists the branches, `branches ID` switches to one (0: the original run).
`--do "b 5; c; n; back; p x"` runs a script of commands and prints every stop.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from neural_dap.cli import own_terminal
from neural_dap.cli.args import parse_with_program
from neural_dap.dapwire.client import DapClient

COMMANDS_HELP = __doc__.split("Commands:", 1)[1].strip()
STEP_COMMANDS = {
    "s": "stepIn",
    "step": "stepIn",
    "n": "next",
    "next": "next",
    "r": "stepOut",
    "return": "stepOut",
    "c": "continue",
    "continue": "continue",
    "back": "stepBack",
    "rc": "reverseContinue",
    "bi": "stepBackInto",
    "bo": "stepBackOut",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "commands:\n  " + COMMANDS_HELP.replace("\n", "\n  ")
    parser.add_argument("program", nargs="?", help="the Python file to debug (or -m MODULE)")
    parser.add_argument(
        "-m",
        dest="module",
        help="debug `python -m MODULE ARGS...` (e.g. -m pytest -q tests/test_x.py); ends our options",
    )
    parser.add_argument("--python", help="the interpreter that runs the program (default: this one)")
    parser.add_argument(
        "--stdin",
        help="a file the program reads as its standard input (input(), sys.stdin); `-`: what is typed (or piped)"
        " here, the default when this runs in a terminal",
    )
    parser.add_argument(
        "--run", action="store_true", help="run to the first breakpoint or exception stop instead of stopping on entry"
    )
    parser.add_argument(
        "--batch",
        action="store_true",
        help="record the program to its end before debugging it (by default it is debugged while it runs)",
    )
    parser.add_argument(
        "--sandbox",
        action="store_true",
        help="refuse the program's changes to the world (files outside its TMPDIR, the network, processes): "
        "for a run that must not happen twice",
    )
    parser.add_argument(
        "--break-on",
        default="uncaught",
        help="exception stops, comma-separated: uncaught (default), raised, userUnhandled (leaves your code: "
        "a failing test), or none",
    )
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="arguments for the program (after `--`)")
    parser.add_argument("--do", help='a script of commands separated by ";", e.g. "b 5; c; n; back; p x"')
    parser.add_argument("--entry", help="debug a call of this function instead of the whole script")
    parser.add_argument("--args", help="the call's arguments as Python literal text")
    parser.add_argument("--returns", help="start at the end: the function returned this value (neural world)")
    parser.add_argument("--world", choices=["recorded", "neural"], default="recorded")
    parser.add_argument(
        "--model",
        help='"embedded" (default for --world neural) or the URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1',
    )
    parser.add_argument("--model-name", help="the served model's name (default: the server's first model)")
    parser.add_argument("--dialect", choices=["cwm", "nd"], help="trace dialect the model speaks (default: nd)")
    parser.add_argument("--samples", type=int, help="completions per prediction; the majority frame wins")
    parser.add_argument("--temperature", type=float)
    parser.add_argument("--reconcile", choices=["none", "recorded", "debugpy"], default="none")
    parser.add_argument("--trust", choices=["model", "reality"], default="model")
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for any one answer of the adapter"
    )


OPTIONS_WITH_VALUE = {
    "--do",
    "--entry",
    "--args",
    "--returns",
    "--world",
    "--model",
    "--model-name",
    "--dialect",
    "--samples",
    "--temperature",
    "--reconcile",
    "--trust",
    "--timeout",
    "--python",
    "--break-on",
    "--stdin",
}


def launch_arguments(opts: argparse.Namespace) -> dict:
    args: dict = {"args": opts.argv, "stopOnEntry": not opts.run, "world": opts.world}
    if opts.module:
        args["module"] = opts.module  # it stops on entry at the first line of the user's code it runs
    else:
        args["program"] = os.path.abspath(opts.program)
    if opts.python:
        args["python"] = opts.python
    if opts.sandbox:
        args["sandbox"] = True
    if opts.batch:
        args["live"] = False
    if own_terminal.wanted(opts.stdin):
        args["console"] = "integratedTerminal"  # the program reads this terminal (cli/own_terminal.py)
    elif opts.stdin:
        args["stdin"] = os.path.abspath(opts.stdin)
    if opts.entry:
        args["entry"] = {"function": opts.entry}
        if opts.args is not None:
            args["entry"]["args"] = opts.args
        if opts.returns is not None:
            args["entry"]["returns"] = opts.returns
    if opts.world == "neural":
        model: dict | str = opts.model or "embedded"
        if opts.model and opts.model != "embedded":
            model = {"url": opts.model}
        if isinstance(model, dict) or any(
            v is not None for v in (opts.model_name, opts.dialect, opts.samples, opts.temperature)
        ):
            model = model if isinstance(model, dict) else {"url": "embedded"}
            for key, value in (
                ("name", opts.model_name),
                ("dialect", opts.dialect),
                ("samples", opts.samples),
                ("temperature", opts.temperature),
            ):
                if value is not None:
                    model[key] = value
        args["model"] = model
        args["reconcile"] = opts.reconcile
        args["trust"] = opts.trust
    return args


@dataclass
class Frontend:
    client: DapClient
    out: Any = sys.stdout
    breakpoints: dict[str, list[dict]] = field(default_factory=dict)
    function_breakpoints: list[dict] = field(default_factory=list)
    last_locals: dict[int, dict[str, str]] = field(default_factory=dict)
    frame_id: int | None = None
    thread_id: int = 1  # the thread the last stop is in (a worker's breakpoint stops in the worker)
    program: str = ""
    ended: bool = False
    mid_line: bool = False  # the program's output so far ends without a newline (pytest's dots)

    def print(self, text: str = "") -> None:
        if self.mid_line:
            self.out.write("\n")
            self.mid_line = False
        print(text, file=self.out, flush=True)

    def on_event(self, message: dict) -> None:
        name = message.get("event")
        body = message.get("body") or {}
        if name == "output" and body.get("category") != "telemetry":
            text = body.get("output", "")
            if body.get("category") == "stdout":
                # the program's own output as it wrote it: pieces of one line stay on one line
                self.out.write(text)
                self.out.flush()
                if text:
                    self.mid_line = not text.endswith("\n")
                return
            prefix = {"stderr": "! ", "important": "* "}.get(str(body.get("category")), "")
            for line in text.rstrip("\n").split("\n"):
                self.print(f"{prefix}{line}" if prefix else line)
        elif name == "terminated":
            self.ended = True

    async def show_stop(self, stopped: dict) -> None:
        body = stopped.get("body") or {}
        self.thread_id = int(body.get("threadId") or 1)
        stack = await self._stack()
        if not stack:
            self.print(f"[{body.get('reason')}] (no frames)")
            return
        top = stack[0]
        self.frame_id = top["id"]
        path = (top.get("source") or {}).get("path") or ""
        scopes = (await self.client.call("scopes", {"frameId": top["id"]})).get("scopes", [])
        variables = []
        if scopes:
            variables = (
                await self.client.call("variables", {"variablesReference": scopes[0]["variablesReference"]})
            ).get("variables", [])
        current = {v["name"]: v["value"] for v in variables}
        line_text = _source_line(path, top["line"])
        reason = body.get("reason", "")
        thread = f" (thread {self.thread_id})" if self.thread_id != 1 else ""
        self.print(f"[{reason}] {os.path.basename(path)}:{top['line']} in {top['name']}{thread}")
        self.print(f"  {top['line']:>4} | {line_text}")
        previous = self.last_locals.get(len(stack))
        # a predicted value carries the model's confidence ("x  (p=0.93)", "≈ x?  (p=0.31)"): shown,
        # but only a changed value is a change
        changed = {
            k: v
            for k, v in current.items()
            if previous is None or _without_confidence(previous.get(k)) != _without_confidence(v)
        }
        if changed:
            self.print("       | " + "   ".join(f"{k} = {v}" for k, v in changed.items()))
        if body.get("description") and reason in ("exception", "end"):
            self.print(f"       | {body['description']}")
        self.last_locals[len(stack)] = current

    async def _stack(self, thread_id: int | None = None) -> list[dict]:
        """The frames of a thread (the stopped one by default) at the current stop."""
        body = await self.client.call("stackTrace", {"threadId": thread_id or self.thread_id})
        return body.get("stackFrames", [])

    async def run_command(self, text: str, timeout: float) -> bool:
        """Run one command; False when the session is over."""
        words = text.strip().split(None, 1)
        if not words:
            return True
        cmd, rest = words[0], (words[1] if len(words) > 1 else "")
        if cmd in ("q", "quit", "exit"):
            return False
        if cmd in STEP_COMMANDS:
            if self.ended:
                self.print("the program has ended")
                return False
            response = await self.client.request(STEP_COMMANDS[cmd], {"threadId": self.thread_id}, timeout=timeout)
            if not response.get("success"):
                # a step that failed (a prediction that could not be made): still at the last stop
                self.print(f"! {response.get('message') or STEP_COMMANDS[cmd] + ' failed'}")
                return True
            await self.next_stop(timeout)
            return not self.ended
        if cmd in ("b", "break"):
            await self.set_breakpoint(rest)
        elif cmd in ("p", "print"):
            try:
                body = await self.client.call(
                    "evaluate", {"expression": rest, "frameId": self.frame_id, "context": "repl"}
                )
                self.print(body.get("result", ""))
            except Exception as exc:
                self.print(f"error: {getattr(exc, 'message', exc)}")
        elif cmd in ("where", "bt", "w"):
            stack = await self._stack()
            for k, frame in enumerate(stack):
                path = (frame.get("source") or {}).get("path", "")
                self.print(f"{'>' if k == 0 else ' '} {frame['name']} at {os.path.basename(path)}:{frame['line']}")
        elif cmd in ("locals", "vars"):
            stack = await self._stack()
            scopes = (await self.client.call("scopes", {"frameId": stack[0]["id"]})).get("scopes", [])
            for v in (await self.client.call("variables", {"variablesReference": scopes[0]["variablesReference"]})).get(
                "variables", []
            ):
                self.print(f"  {v['name']} = {v['value']}")
        elif cmd in ("l", "list"):
            stack = await self._stack()
            path, line = (stack[0].get("source") or {}).get("path", ""), stack[0]["line"]
            for n in range(max(1, line - 3), line + 4):
                text_line = _source_line(path, n)
                self.print(f"{'->' if n == line else '  '} {n:>4} | {text_line}")
        elif cmd == "summary":
            self.print_summary(await self.client.call("sessionSummary"))
        elif cmd in ("history", "last", "origin", "calls", "log"):
            try:
                await self.ask_recording(cmd, rest)
            except Exception as exc:
                self.print(f"error: {getattr(exc, 'message', exc)}")
        elif cmd == "travel":
            if not rest.strip().isdigit():
                self.print("travel INDEX: an event index, as `history`, `calls` and `log` show them")
                return True
            response = await self.client.request("travel", {"index": int(rest)}, timeout=timeout)
            if not response.get("success"):
                self.print(f"! {response.get('message')}")
                return True
            self.ended = False
            await self.next_stop(timeout)
        elif cmd == "set":
            await self.set_value(rest, timeout)
        elif cmd == "branches":
            await self.branches(rest, timeout)
        elif cmd == "threads":
            for thread in (await self.client.call("threads")).get("threads", []):
                stack = await self._stack(thread["id"])
                where = f"{stack[0]['name']} at line {stack[0]['line']}" if stack else "(no frames)"
                mark = ">" if thread["id"] == self.thread_id else " "
                self.print(f"{mark} {thread['id']}: {thread['name']}  {where}")
        elif cmd in ("h", "help", "?"):
            self.print(COMMANDS_HELP)
        else:
            self.print(f"unknown command {cmd!r}; `help` lists them")
        return True

    async def ask_recording(self, cmd: str, rest: str, count: int = 20) -> None:
        """history / last / calls / log: questions about the whole recorded run, a page at a time."""
        if not rest.strip():
            self.print(f"{cmd} needs an argument; `help` lists the commands")
            return
        if cmd == "last":
            body = await self.client.call("lastChange", {"expression": rest, "frameId": self.frame_id})
            change = body.get("change")
            if change is None:
                self.print(f"{rest} has not changed in this call up to here")
            else:
                old, new = _bound(change["old"]), _bound(change["new"])
                self.print(f"{rest}: {old} \u2192 {new}   {_made_by(change)}")
            return
        if cmd == "origin":
            self.print_origin(
                await self.client.call("valueOrigin", {"expression": rest.strip(), "frameId": self.frame_id})
            )
            return
        if cmd == "history":
            page = await self.client.call(
                "valueHistory", {"expression": rest, "frameId": self.frame_id, "count": count}
            )
            for change in page["items"]:
                call = f" (call {change['call']})" if change.get("call") else ""
                old, new = _bound(change["old"]), _bound(change["new"])
                self.print(f"  {old} \u2192 {new}   {_made_by(change)}{call}")
        elif cmd == "calls":
            page = await self.client.call("calls", {"function": rest.strip(), "count": count})
            for call in page["items"]:
                arguments = ", ".join(f"{k}={v}" for k, v in call["arguments"].items())
                ended = "raised " if call["raised"] else "-> "
                result = f"{ended}{call['value']}" if call.get("returned") else "(had not returned)"
                self.print(f"  {call['function']}({arguments}) {result}   {_moment(call['moment'])}")
        else:
            where, _, message = rest.strip().partition(" ")
            path, line = where.rsplit(":", 1) if ":" in where else (self.program, where)
            if not line.isdigit() or not message:
                self.print("log LINE MESSAGE, e.g. log 12 i={i} total={total}")
                return
            page = await self.client.call(
                "logpointHistory",
                {"source": {"path": os.path.abspath(path)}, "line": int(line), "logMessage": message, "count": count},
            )
            for entry in page["items"]:
                self.print(f"  [hit {entry['hit']}] {entry['text']}   @{entry['moment']['index']}")
        shown = len(page["items"])
        more = "" if page.get("totalExact", True) else " at least"
        if page["total"] > shown or not page.get("totalExact", True):
            self.print(f"  ({shown} shown of{more} {page['total']})")
        elif not shown:
            self.print("  (none)")

    def print_origin(self, origin: dict) -> None:
        """A value's origin chain: each statement it passed through, newest first, then why it ends."""
        if origin["value"] is None:
            self.print(origin["reason"])
            return
        self.print(f"{origin['expression']} = {origin['value']} came from:")
        for step in origin["steps"]:
            argument = KIND_NOTES.get(step["kind"], "")
            self.print(
                f"  {step['statement']}   \u2192 {step['expression']} = {step['value']}{argument}   "
                f"{_moment(step['moment'])}"
            )
        self.print(f"  [{origin['end']}] {origin['reason']}")

    async def set_value(self, rest: str, timeout: float) -> None:
        """set NAME VALUE: a what-if branch from this stop (the adapter's setExpression)."""
        name, _, value = rest.strip().partition(" ")
        if not name or not value.strip():
            self.print("set NAME VALUE, e.g. set n 5 or set items [1, 2]")
            return
        response = await self.client.request(
            "setExpression", {"expression": name, "value": value, "frameId": self.frame_id}, timeout=timeout
        )
        if not response.get("success"):
            self.print(f"! {response.get('message')}")
            return
        self.ended = False
        await self.next_stop(timeout)

    async def branches(self, rest: str, timeout: float) -> None:
        """branches [ID]: list the what-if branches, or switch to one."""
        arguments = {}
        if rest.strip():
            if not rest.strip().isdigit():
                self.print("branches [ID]: a branch number, as `branches` lists them")
                return
            arguments["switch"] = int(rest)
        response = await self.client.request("branches", arguments, timeout=timeout)
        if not response.get("success"):
            self.print(f"! {response.get('message')}")
            return
        if "switch" in arguments:
            self.ended = False
            await self.next_stop(timeout)
            return
        for branch in response["body"]["branches"]:
            self.print(f"{'>' if branch['current'] else ' '} {branch['description']}")

    async def next_stop(self, timeout: float) -> None:
        """Show the stop the last command led to, or say that the program ended."""
        message = await self.client.wait_event({"stopped", "terminated"}, timeout=timeout)
        if message["event"] == "stopped":
            await self.show_stop(message)
            return
        exited = self.client.events_named("exited")
        code = (exited[-1].get("body") or {}).get("exitCode") if exited else None
        self.print(f"[exited] the program finished (exit code {code})")
        self.ended = True

    async def set_breakpoint(self, spec: str) -> None:
        condition = None
        if " if " in f" {spec} ":
            spec, condition = spec.split(" if ", 1) if " if " in spec else (spec, None)
        spec = spec.strip()
        if spec.isdigit() or ":" in spec:
            path, line = spec.rsplit(":", 1) if ":" in spec else (self.program, spec)
            path = os.path.abspath(path)
            entry: dict[str, Any] = {"line": int(line)}
            if condition:
                entry["condition"] = condition.strip()
            self.breakpoints.setdefault(path, []).append(entry)
            body = await self.client.call(
                "setBreakpoints", {"source": {"path": path}, "breakpoints": self.breakpoints[path]}
            )
            result = body["breakpoints"][-1]
            where = f"{os.path.basename(path)}:{result.get('line', line)}"
            note = f" ({result['message']})" if result.get("message") else ""
            self.print(
                f"breakpoint {'set at' if result.get('verified') else 'NOT set at'} {where}"
                f"{' if ' + condition.strip() if condition else ''}{note}"
            )
        else:
            entry = {"name": spec}
            if condition:
                entry["condition"] = condition.strip()
            self.function_breakpoints.append(entry)
            body = await self.client.call("setFunctionBreakpoints", {"breakpoints": self.function_breakpoints})
            result = body["breakpoints"][-1]
            self.print(f"breakpoint on function {spec}: {'set' if result.get('verified') else result.get('message')}")

    def print_summary(self, summary: dict) -> None:
        if not summary:
            return
        self.print("session summary:")
        for key, value in summary.items():
            if isinstance(value, (dict, list)):
                value = json.dumps(value)
            self.print(f"  {key}: {value}")


_CONFIDENCE = re.compile(r"^(?:\u2248 (?P<guess>.*)\?|(?P<fact>.*?))  \(p=[0-9.]+\)(?P<rest>.*)$", re.S)


def _without_confidence(value: str | None) -> str | None:
    """A Variables value without the confidence a predicted one carries."""
    m = _CONFIDENCE.match(value) if value is not None else None
    if m is None:
        return value
    return (m.group("guess") if m.group("guess") is not None else m.group("fact")) + m.group("rest")


def _bound(value: str | None) -> str:
    """A change's side: the value's repr, or "(unset)" where the name was not bound (None there would
    read as the value None)."""
    return "(unset)" if value is None else value


# how an origin step came by the value (debugger/origin.py's step kinds), after its value
KIND_NOTES = {
    "argument": " (argument)",
    "call": " (set inside this call)",
    "returned": " (returned)",
    "default": " (default value)",
    "operand": " (operand: where it was set)",
}


def _made_by(change: dict) -> str:
    """Who made a change: the statement (`travel` to its index shows the value before) and, where
    the new value shows later, from which moment."""
    statement = change.get("statement")
    if not statement:
        return _moment(change["moment"])
    code = f" `{change['code']}`" if change.get("code") else ""
    text = f"by{code} {_moment(statement)}; seen from @{change['moment']['index']}"
    return f"{text} ({change['note']})" if change.get("note") else text


def _moment(moment: dict) -> str:
    return f"@{moment['index']} {os.path.basename(moment['path'])}:{moment['line']} in {moment['function']}"


def _source_line(path: str, line: int) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else ""
    except OSError:
        return ""


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    if "-m" in argv:  # as `python -m`: everything after the module name is the module's
        at = argv.index("-m")
        if at + 1 >= len(argv):
            parser.error("-m needs a module name")
        opts = parser.parse_args(argv[: at + 2])
        opts.argv = argv[at + 2 :]
    else:
        opts = parse_with_program(parser, argv, OPTIONS_WITH_VALUE)
        if opts.program is None:
            parser.error("give a PROGRAM to debug, or -m MODULE")
    if opts.module is None and not os.path.isfile(opts.program):
        print(f"neural-dap debug: no such program: {opts.program}", file=sys.stderr)
        return 2
    import anyio

    return anyio.run(_session, opts)


async def _session(opts: argparse.Namespace) -> int:
    import anyio

    from neural_dap.dapwire.client import DapError, adapter_command, spawn

    async with spawn(adapter_command(), timeout=opts.timeout) as client:
        front = Frontend(client, program=os.path.abspath(opts.program) if opts.program else "")
        client.on_event = front.on_event
        arguments = launch_arguments(opts)
        # the adapter is our own child: the relay it asks us to run is its own
        terminal = own_terminal.OwnTerminal() if "console" in arguments else None
        client.on_reverse_request = terminal
        try:
            await client.call(
                "initialize",
                {
                    "adapterID": "neural-dap",
                    "clientID": "neural-dap-debug",
                    "linesStartAt1": True,
                    "columnsStartAt1": True,
                    "supportsRunInTerminalRequest": terminal is not None,
                },
            )
            launch = await client.send_request("launch", arguments)
            filters = [f.strip() for f in opts.break_on.split(",") if f.strip() and f.strip() != "none"]
            await client.call("setExceptionBreakpoints", {"filters": filters})
            commands = [c for c in opts.do.split(";") if c.strip()] if opts.do is not None else None
            if opts.run and commands:
                # `--run --do "b 12; c"`: the breakpoints the script starts with are set before the
                # program runs, as a person sets them before pressing Run
                while commands and commands[0].split()[0] in ("b", "break"):
                    command = commands.pop(0)
                    front.print(f"(nd) {command.strip()}")
                    await front.run_command(command, opts.timeout)
            await client.call("configurationDone")
            # a person answering the program's questions takes the time they take: the recording's
            # wall-time limit (at most an hour) bounds the launch then
            wait = opts.timeout if terminal is None else max(opts.timeout, 3700.0)
            response = await client.response(launch, "launch", timeout=wait)
            if terminal is not None:
                await terminal.finished(timeout=10)
            if not response.get("success"):
                print(f"neural-dap debug: {response.get('message')}", file=sys.stderr)
                return 1
            await front.next_stop(opts.timeout)
            if commands is not None:
                for command in commands:
                    front.print(f"(nd) {command.strip()}")
                    if not await front.run_command(command, opts.timeout):
                        break
            else:
                while not front.ended:
                    try:
                        line = await anyio.to_thread.run_sync(lambda: input("(nd) "))
                    except EOFError:
                        break
                    if not await front.run_command(line, opts.timeout):
                        break
            if opts.world == "neural":
                front.print_summary(await client.call("sessionSummary"))
            with anyio.move_on_after(5):
                await client.request("disconnect", {"terminateDebuggee": True})
        except DapError as exc:
            print(f"neural-dap debug: {exc}", file=sys.stderr)
            return 1
    return 0
