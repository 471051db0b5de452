"""Drive neural-dap and a real debugpy with the same DAP requests, and take what a user sees at each
stop from both: the stop's reason and place, the stack, the scopes, the variables expanded (paged as
an editor pages them), and the console output (log points). The agreement tests compare the two.

Requests go to each adapter as VS Code sends them; debugpy is launched as its users launch it
(`justMyCode`, `showReturnValue`), so where the two differ it is neural-dap that must change.
"""

from __future__ import annotations

import os
import re
import subprocess
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

from neural_dap.dapwire.client import DapClient, adapter_command, spawn
from neural_dap.reality.debugpy_peer import debugpy_adapter_command

TIMEOUT = 60.0
# debugpy's presentation groups: what it files apart from an object's own attributes
GROUPS = ("special variables", "function variables", "class variables", "protected variables")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


@dataclass
class Var:
    name: str
    value: str
    type: str
    children: list[Var] | None = None  # None: not expandable (or not expanded)
    expandable: bool = False


@dataclass
class View:
    """One stop as a user sees it."""

    reason: str
    text: str  # the exception text, the description
    thread: str
    stack: list[tuple[str, int]]
    scopes: list[str]
    variables: dict[str, list[Var]] = field(default_factory=dict)  # scope name -> variables
    evaluated: dict[str, str] = field(default_factory=dict)  # expression -> result (or "error: ...")
    # (Plan.all_threads) every other thread listed: name -> its stack, the program's frames only
    others: dict[str, list[tuple[str, int]]] = field(default_factory=dict)


@dataclass
class Session:
    """What one adapter did with the plan: its stops and the console output."""

    views: list[View] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    stdout: str = ""


@dataclass(frozen=True)
class Plan:
    program: str  # a file path
    breakpoints: tuple[dict, ...] = ()  # DAP SourceBreakpoints in `program`
    commands: tuple[str, ...] = ()
    exception_filters: tuple[str, ...] = ()
    stop_on_entry: bool = False
    expand: int = 1  # levels of variables to expand below the scopes
    expand_names: tuple[str, ...] = ()  # only these top-level names are expanded (all when empty)
    scopes: tuple[str, ...] = ("Locals",)  # the scopes whose variables are read
    evaluate: tuple[str, ...] = ()  # expressions evaluated at each stop (the REPL's context)
    python: str | None = None
    launch: tuple[tuple[str, object], ...] = ()  # extra launch keys, both adapters
    all_threads: bool = False  # the stack of every thread, not only the stopped one
    groups: bool = False  # a scope's groups ("function variables", ...) compared too, opened (else left out)


def value(text: str) -> str:
    return _ADDRESS.sub("", text)


@asynccontextmanager
async def _debugpy() -> DapClient:
    async with spawn(debugpy_adapter_command(), timeout=TIMEOUT, stderr=subprocess.DEVNULL) as client:
        yield client


@asynccontextmanager
async def _neural() -> DapClient:
    async with spawn(adapter_command(), timeout=TIMEOUT, stderr=subprocess.DEVNULL) as client:
        yield client


async def run(plan: Plan, which: str) -> Session:
    """The plan under `which` ("debugpy" or "neural-dap")."""
    opener = _debugpy if which == "debugpy" else _neural
    session = Session()
    async with opener() as client:
        await client.call(
            "initialize",
            {
                "adapterID": which,
                "clientID": "agreement",
                "linesStartAt1": True,
                "columnsStartAt1": True,
                "pathFormat": "path",
                "supportsVariablePaging": True,
                "supportsVariableType": True,
            },
        )
        launch: dict = {
            "program": plan.program,
            "cwd": os.path.dirname(plan.program),
            "console": "internalConsole",
            "stopOnEntry": plan.stop_on_entry,
            "justMyCode": True,
            "showReturnValue": True,
            "redirectOutput": True,
            "env": {"PYTHONHASHSEED": "0"},
            **dict(plan.launch),
        }
        if "module" in launch:
            del launch["program"]  # a module launch (`python -m pytest ...`): the module is the program
        if plan.python:
            launch["python"] = [plan.python] if which == "debugpy" else plan.python
        seq = await client.send_request("launch", launch)
        await client.wait_event("initialized", timeout=TIMEOUT)
        await client.call("setBreakpoints", {"source": {"path": plan.program}, "breakpoints": list(plan.breakpoints)})
        await client.call("setExceptionBreakpoints", {"filters": list(plan.exception_filters)})
        await client.call("configurationDone")
        response = await client.response(seq, "launch", timeout=TIMEOUT)
        assert response.get("success"), response
        thread = 1
        for command in (None, *plan.commands):
            if command is not None:
                await client.call(command, {"threadId": thread})
            message = await client.wait_event({"stopped", "terminated", "exited"}, timeout=TIMEOUT)
            if message["event"] != "stopped":
                break
            thread = int((message.get("body") or {}).get("threadId", 1))
            session.views.append(await _view(client, message, plan))
        if not client.closed:
            with anyio.move_on_after(5):
                await client.request("disconnect", {"terminateDebuggee": True}, timeout=5)
        for event in client.events_named("output"):
            body = event.get("body") or {}
            if body.get("category") == "stdout":
                session.stdout += body.get("output", "")
            elif body.get("category") in ("console", "important", "stderr"):
                session.console.append(f"{body.get('category')}: {body.get('output', '')}")
    return session


async def _view(client: DapClient, message: dict, plan: Plan) -> View:
    body = message.get("body") or {}
    thread = int(body.get("threadId", 1))
    threads = {t["id"]: t["name"] for t in (await client.call("threads"))["threads"]}
    frames = (await client.call("stackTrace", {"threadId": thread}))["stackFrames"]
    frames = [f for f in frames if (f.get("source") or {}).get("path", "").endswith(".py")]
    view = View(
        str(body.get("reason", "")),
        str(body.get("text") or body.get("description") or ""),
        threads.get(thread, ""),
        [(f["name"], f["line"]) for f in frames],
        [],
    )
    if plan.all_threads:
        for number, name in threads.items():
            if number != thread:
                stack = (await client.call("stackTrace", {"threadId": number}))["stackFrames"]
                view.others[name] = [(f["name"], f["line"]) for f in stack if _programs(f, plan)]
    scopes = (await client.call("scopes", {"frameId": frames[0]["id"]}))["scopes"]
    view.scopes = [s["name"] for s in scopes]
    for scope in scopes:
        if scope["name"] in plan.scopes:
            view.variables[scope["name"]] = await _expand(client, scope["variablesReference"], plan.expand, plan, True)
    for expression in plan.evaluate:
        answer = await client.request(
            "evaluate", {"expression": expression, "frameId": frames[0]["id"], "context": "repl"}
        )
        view.evaluated[expression] = (
            value(answer["body"]["result"]) if answer.get("success") else "error: " + str(answer.get("message"))
        )
    return view


PAGE = 100


def _programs(frame: dict, plan: Plan) -> bool:
    """A frame of the program's own file (debugpy lists a thread's library frames too)."""
    return (frame.get("source") or {}).get("path", "") == plan.program


async def _expand(client: DapClient, reference: int, depth: int, plan: Plan, top: bool) -> list[Var]:
    """Every child of `reference`, paged as VS Code pages indexed children (`start`/`count`)."""
    out: list[Var] = []
    body = await client.call("variables", {"variablesReference": reference})
    for v in body.get("variables", []):
        opened = top and plan.groups and v["name"] in GROUPS  # (its variables, one level down)
        if v["name"] in GROUPS and not opened:
            continue
        var = Var(v["name"], value(v.get("value", "")), v.get("type", ""), expandable=bool(v["variablesReference"]))
        wanted = opened or not top or not plan.expand_names or v["name"] in plan.expand_names
        if opened:
            var.children = await _expand(client, v["variablesReference"], depth, plan, False)
            out.append(var)
            continue
        if v["variablesReference"] and depth > 0 and wanted:
            var.children = await _expand(client, v["variablesReference"], depth - 1, plan, False)
        out.append(var)
    return out


def differences(ours: Session, theirs: Session) -> list[str]:
    """What a user would see differ, stop by stop (empty when the sessions agree)."""
    out: list[str] = []
    if len(ours.views) != len(theirs.views):
        out.append(f"{len(ours.views)} stops, debugpy {len(theirs.views)}")
    for k, (a, b) in enumerate(zip(ours.views, theirs.views, strict=False)):
        here = f"stop {k} ({b.stack[0] if b.stack else '?'})"
        if a.stack != b.stack:
            out.append(f"{here}: stack {a.stack} vs debugpy {b.stack}")
            continue
        if a.reason != b.reason:
            out.append(f"{here}: reason {a.reason!r} vs debugpy {b.reason!r}")
        for name, theirs_vars in b.variables.items():
            out.extend(_var_differences(f"{here} {name}", a.variables.get(name, []), theirs_vars))
        for expression, result in b.evaluated.items():
            if a.evaluated.get(expression) != result:
                out.append(f"{here}: evaluate {expression!r}: {a.evaluated.get(expression)!r} vs debugpy {result!r}")
        if a.others != b.others:
            out.append(f"{here}: other threads {a.others} vs debugpy {b.others}")
    return out


def _var_differences(where: str, ours: list[Var], theirs: list[Var]) -> list[str]:
    out = []
    mine = {v.name: v for v in ours}
    for v in theirs:
        m = mine.get(v.name)
        if m is None:
            out.append(f"{where}: {v.name} missing (debugpy: {v.value[:60]!r})")
            continue
        if m.value != v.value:
            out.append(f"{where}: {v.name} = {m.value[:80]!r} vs debugpy {v.value[:80]!r}")
        if v.expandable and not m.expandable:
            out.append(f"{where}: {v.name} cannot be expanded (debugpy expands it)")
        if v.children is not None and m.children is not None:
            out.extend(_var_differences(f"{where}.{v.name}", m.children, v.children))
    extra = [n for n in mine if n not in {v.name for v in theirs}]
    if extra:
        out.append(f"{where}: extra {extra[:5]}")
    return out
