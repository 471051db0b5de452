"""The terminal front end's answer to `runInTerminal`: the program's input is what is typed here.

`neural-dap debug` is a DAP client like an editor; where an editor opens a terminal, this runs the
adapter's relay (neural_dap/terminal_relay.py) on its own stdin and stdout, so `input()` in the
program reads what the user types while the program is recorded, and its output shows here as it
is written. The relay ends when the recording does; only then does the front end read its own
commands from the terminal again.
"""

from __future__ import annotations

import os
import sys

import anyio
from anyio.abc import Process


def wanted(stdin: str | None) -> bool:
    """`--stdin -` asks for it; without --stdin, a session run in a terminal (input and output)
    gets it, since a person is there to type."""
    if stdin is not None:
        return stdin == "-"
    return sys.stdin.isatty() and sys.stdout.isatty()


class OwnTerminal:
    def __init__(self) -> None:
        self.process: Process | None = None

    async def __call__(self, message: dict) -> dict | None:
        """Run the relay the adapter asked for; anything else is declined."""
        if message.get("command") != "runInTerminal" or self.process is not None:
            return None
        arguments = message.get("arguments") or {}
        command = arguments.get("args")
        if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
            return None
        cwd = arguments.get("cwd")
        # the relay shares this process's stdin, stdout and stderr: it is what the user sees and types
        self.process = await anyio.open_process(
            command, stdin=None, stdout=None, stderr=None, cwd=cwd if isinstance(cwd, str) and cwd else os.getcwd()
        )
        return {"processId": self.process.pid}

    async def finished(self, timeout: float) -> None:
        """Wait for the relay to end (the recording has), so it reads no more of what is typed."""
        if self.process is None:
            return
        with anyio.move_on_after(timeout):
            await self.process.wait()
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
