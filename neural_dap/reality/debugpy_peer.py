"""A real debugpy session, driven as a DAP client: reality for reconciliation, and the reference the
agreement tests compare neural-dap's stops with.

debugpy hangs on requests it does not implement, so only requests it supports are sent (forward
stepping, stack, scopes, variables) and every one has a timeout. Values are normalised as the
recorder normalises them (object addresses removed), and debugpy's presentation groups (`special
variables`, functions, modules, classes) are dropped, so a snapshot compares with a neural-dap stop.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

import anyio

from neural_dap.dapwire.client import DapClient, DapError, spawn
from neural_dap.trace.child.values import without_addresses
from neural_dap.trace.program import WITHOUT_THE_WORKING_FOLDER

_HIDDEN_TYPES = {"function", "module", "type", "builtin_function_or_method", "method", "ABCMeta"}
_GROUPS = {"special variables", "function variables", "class variables", "protected variables"}


RealityError = DapError  # what a failing debugpy session raises (a request failed or timed out)


@dataclass
class Snapshot:
    """One debugpy stop: the frames (innermost first) and the top frame's variables."""

    reason: str
    frames: list[tuple[str, int, str]]  # (function, line, path)
    locals: dict[str, str]
    returns: dict[str, str] = field(default_factory=dict)  # "(return) f" pseudo-variables
    thread: str = ""  # the name of the thread it stopped in

    @property
    def function(self) -> str:
        return self.frames[0][0] if self.frames else ""

    @property
    def line(self) -> int:
        return self.frames[0][1] if self.frames else 0


# `python -m debugpy.adapter`, without the working folder first on sys.path (where `-m` puts it):
# started in a project's folder, debugpy's adapter would import a project's `json.py` in place of
# the standard library's (tests/test_working_directory.py)
# (reality/debugpy_adapter.py: debugpy's adapter, acknowledging the debuggee's messages at once)
_ADAPTER_BOOT = WITHOUT_THE_WORKING_FOLDER + "from neural_dap.reality.debugpy_adapter import main\nmain()\n"


def debugpy_adapter_command() -> list[str]:
    """The command that runs debugpy's adapter as the peer runs it (a DAP server on stdio)."""
    return [sys.executable, "-c", _ADAPTER_BOOT]


class DebugpyPeer:
    def __init__(
        self,
        program: str,
        args: tuple[str, ...] = (),
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        python: str | None = None,
        timeout: float = 30.0,
        entry: tuple[str, str] | None = None,
        breakpoints: tuple[int, ...] = (),
        module: str | None = None,
    ) -> None:
        """`module`: launch `python -m module ARGS` (in `cwd`) as debugpy's `"module"` launch does;
        `program` is then the file of the user's code the breakpoints are in."""
        self.program = os.path.abspath(program)
        self.module = module
        self.args = args
        self.cwd = cwd or os.path.dirname(self.program)
        self.env = {"PYTHONHASHSEED": "0", **(env or {})}
        self.python = python or sys.executable
        self.timeout = timeout
        self.entry = entry  # (function, literal args): debug a call of one function
        self.breakpoints = breakpoints  # lines of the program: the session starts at the first hit
        self.client: DapClient | None = None
        self.ended = False
        self._stack = AsyncExitStack()
        self._tmp: tempfile.TemporaryDirectory | None = None
        self.requests = 0
        self._thread = 1

    async def start(self) -> Snapshot | None:
        program = self.program
        if self.entry is not None:
            program = self._entry_wrapper()
        # the adapter runs here, where debugpy is installed; the program runs under `python` (debugpy's
        # launcher brings its own copy of debugpy into that interpreter, as for any VS Code user)
        command = debugpy_adapter_command()
        self.client = await self._stack.enter_async_context(
            spawn(command, timeout=self.timeout, stderr=subprocess.DEVNULL)
        )
        c = self.client
        assert c is not None
        await self._call(
            "initialize",
            {
                "adapterID": "debugpy",
                "clientID": "neural-dap",
                "linesStartAt1": True,
                "columnsStartAt1": True,
                "pathFormat": "path",
            },
        )
        target = {"module": self.module} if self.module is not None else {"program": program}
        launch = await c.send_request(
            "launch",
            {
                **target,
                "python": [self.python],
                "args": list(self.args),
                "cwd": self.cwd,
                "env": self.env,
                "console": "internalConsole",
                "stopOnEntry": self.entry is None and not self.breakpoints,
                "justMyCode": True,
                "showReturnValue": True,
                "redirectOutput": True,
            },
        )
        await c.wait_event("initialized", timeout=self.timeout)
        if self.entry is not None:
            await self._call("setFunctionBreakpoints", {"breakpoints": [{"name": self.entry[0]}]})
        if self.breakpoints:
            await self._call(
                "setBreakpoints",
                {"source": {"path": self.program}, "breakpoints": [{"line": line} for line in self.breakpoints]},
            )
        await self._call("setExceptionBreakpoints", {"filters": []})
        await self._call("configurationDone")
        response = await c.response(launch, "launch", timeout=self.timeout)
        if not response.get("success"):
            raise DapError("launch", response.get("message") or "debugpy could not launch the program")
        return await self._snapshot()

    def _entry_wrapper(self) -> str:
        """A script that runs the program's definitions and calls the entry function."""
        function, args = self.entry  # type: ignore[misc]
        self._tmp = tempfile.TemporaryDirectory(prefix="neural-dap-debugpy-")
        path = os.path.join(self._tmp.name, "entry.py")
        with open(path, "w") as fh:
            fh.write(
                "import runpy, sys\n"
                f"sys.path.insert(0, {os.path.dirname(self.program)!r})\n"
                f"namespace = runpy.run_path({self.program!r}, run_name='__neural_dap_entry__')\n"
                f"namespace[{function!r}]({args})\n"
            )
        return path

    async def _call(self, command: str, arguments: dict | None = None) -> dict:
        assert self.client is not None
        self.requests += 1
        return await self.client.call(command, arguments, timeout=self.timeout)

    async def step(self, command: str) -> Snapshot | None:
        """`next`, `stepIn`, `stepOut` or `continue`; None once the program has ended."""
        if command not in ("next", "stepIn", "stepOut", "continue"):
            raise ValueError(f"debugpy is driven forward only, not with {command!r}")
        if self.ended:
            return None
        assert self.client is not None
        await self._call(command, {"threadId": self._thread})
        return await self._snapshot()

    async def _snapshot(self) -> Snapshot | None:
        assert self.client is not None
        message = await self.client.wait_event({"stopped", "terminated", "exited"}, timeout=self.timeout)
        if message["event"] != "stopped":
            self.ended = True
            return None
        body = message.get("body") or {}
        self._thread = body.get("threadId", 1)
        threads = (await self._call("threads")).get("threads", [])
        thread_name = next((t["name"] for t in threads if t["id"] == self._thread), "")
        frames_body = await self._call("stackTrace", {"threadId": self._thread})
        frames = [
            (f["name"], f["line"], (f.get("source") or {}).get("path", "")) for f in frames_body.get("stackFrames", [])
        ]
        frames = [
            f
            for f in frames
            if os.path.abspath(f[2]) != os.path.abspath(self._tmp.name if self._tmp else "/nonexistent")
            and not f[2].endswith(("runpy.py",))
        ]
        top_id = frames_body["stackFrames"][0]["id"]
        scopes = (await self._call("scopes", {"frameId": top_id})).get("scopes", [])
        local_vars: dict[str, str] = {}
        returns: dict[str, str] = {}
        if scopes:
            variables = (await self._call("variables", {"variablesReference": scopes[0]["variablesReference"]})).get(
                "variables", []
            )
            for v in variables:
                name = v["name"]
                if name in _GROUPS or name.startswith("__") or v.get("type") in _HIDDEN_TYPES:
                    continue
                if name.startswith("(return) "):
                    returns[name] = without_addresses(v["value"])
                    continue
                local_vars[name] = without_addresses(v["value"])
        return Snapshot(body.get("reason", ""), frames, local_vars, returns, thread_name)

    async def close(self) -> None:
        if self.client is not None and not self.client.closed:
            with anyio.move_on_after(3, shield=True):
                await self.client.request("disconnect", {"terminateDebuggee": True}, timeout=3)
        await self._stack.aclose()
        if self._tmp is not None:
            self._tmp.cleanup()
