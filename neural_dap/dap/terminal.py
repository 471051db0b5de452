"""A launch's `console` (debugpy's key): where the program's input comes from and its output goes.

"internalConsole" (the default): the output is shown in the debug console, as the user steps
through the recording; the program reads its input from a `stdin` file, else end-of-file.
"integratedTerminal" / "externalTerminal": as with debugpy, the program's input and output go
through the client's terminal: the adapter asks the client (`runInTerminal`) to run a small relay
there (neural_dap/terminal_relay.py) that connects back (dap/terminal_link.py), so `input()` reads
what the user types while the program is recorded, and replays read the same bytes again. The
output is shown in the terminal as the program writes it, and, as debugpy does, not a second time
in the debug console (unless `"redirectOutput": true`).

A program that waits for a person is recorded under a longer wall-time limit (`TERMINAL_WALL_TIME`,
unless the launch sets `limits.wallTime`); `pause` ends its recording at any time.
"""

from __future__ import annotations

import os
from typing import Any, Literal

import anyio
import msgspec

from neural_dap.core.world import LaunchSpec, WorldError
from neural_dap.dap.connection import Connection, RequestError
from neural_dap.dap.terminal_link import TerminalLink, TerminalLinkError
from neural_dap.dapwire import protocol as p
from neural_dap.debugger import branching

TerminalKind = Literal["integrated", "external"]
TERMINAL_KINDS: dict[str, TerminalKind] = {"integratedTerminal": "integrated", "externalTerminal": "external"}
ANSWER_SECONDS = 30.0  # for the client to answer runInTerminal, and then for the relay to connect
TERMINAL_WALL_TIME = 600.0  # seconds: the recording waits on the user's typing

INTERNAL_CONSOLE_INPUT = (
    'neural-dap: with "console": "internalConsole" the program\'s input() reads end-of-file: type its input'
    ' in a terminal with "console": "integratedTerminal", or give it as a file with "stdin": "input.txt"\n'
)
NO_TERMINAL_INPUT = (
    "neural-dap: this client cannot open a terminal (it does not answer runInTerminal), so console={console!r}"
    ' has no effect and the program\'s input() reads end-of-file: give its input as a file with "stdin": "input.txt"\n'
)


class TerminalConsole(Connection):
    terminal: TerminalLink | None = None  # while a terminal console is open (per session: set on the instance)
    output_in_terminal = False  # the program's output went to the terminal: not again to the debug console

    async def output(self, text: str, category: str = "console") -> None:
        if category in ("stdout", "stderr") and self._terminal_showed_it():
            return
        await super().output(text, category)

    def _terminal_showed_it(self) -> bool:
        """The run the session stands on is the one whose output went to the terminal (a what-if
        branch, recorded since, was not shown anywhere: its output goes to the debug console)."""
        if not self.output_in_terminal:
            return False
        try:
            return branching.branches(self.debugger)[1] == 0
        except WorldError:
            return True

    async def program_output(self, text: str, category: str) -> None:
        """What a program run without debugging writes: to its terminal, else the debug console."""
        if self.terminal is not None:
            await self.terminal.show(text.encode("utf-8", "replace"))
        await self.output(text, category)

    async def open_console(self, spec: LaunchSpec, args: p.LaunchArguments, runs_program: bool) -> LaunchSpec:
        """The launch, its stdin and output joined to a terminal where the launch asks for one and
        the client can open it; otherwise as it was, with a word on what the program's input is."""
        console = args.console or "internalConsole"
        kind = TERMINAL_KINDS.get(console)
        if kind is None:
            if args.redirect_output is False:
                await self.output(
                    "neural-dap ignores redirectOutput=False: without a terminal, the debug console is where"
                    " the program's output is shown\n",
                    "important",
                )
            if args.console is not None and runs_program and not spec.stdin:
                await self.output(INTERNAL_CONSOLE_INPUT, "important")
            return spec
        if not runs_program:
            return spec  # a predicted program reads nothing
        if spec.stdin:
            await self.output(
                f'neural-dap: the program reads its input from {spec.stdin} ("stdin"); no terminal is opened\n',
                "important",
            )
            return spec
        if not self.client.supports_run_in_terminal_request:
            await self.output(NO_TERMINAL_INPUT.format(console=console), "important")
            return spec
        link = TerminalLink()
        try:
            await self._start_relay(link, kind, spec)
        except BaseException as exc:
            with anyio.CancelScope(shield=True):  # the folder goes, even when the launch was cancelled
                await link.finish()
            link.remove()
            if isinstance(exc, TerminalLinkError):
                raise RequestError(f"console {console}: {exc}") from None
            raise
        self.terminal = link
        self.output_in_terminal = args.redirect_output is not True
        assert self._task_group is not None
        self._task_group.start_soon(link.serve)
        return msgspec.structs.replace(
            spec,
            stdin=link.stdin_fifo,
            stdin_log=link.stdin_log,
            output_copy=link.output_fifo,
            options=_with_wall_time(spec.options),
        )

    async def _start_relay(self, link: TerminalLink, kind: TerminalKind, spec: LaunchSpec) -> None:
        await link.listen()
        name = f"python -m {spec.module}" if spec.module else os.path.basename(spec.program)
        arguments = p.RunInTerminalRequestArguments(
            args=link.relay_command(wait=kind == "external"),
            cwd=spec.cwd or os.getcwd(),
            kind=kind,
            title=f"neural-dap: {name}",
        )
        answer = await self.ask_client("runInTerminal", arguments, ANSWER_SECONDS)
        if answer is None or not answer.success:
            why = answer.message if answer is not None else f"no answer within {ANSWER_SECONDS:g} s"
            raise TerminalLinkError(f"the client did not run the terminal: {why}")
        await link.accept(ANSWER_SECONDS)

    async def console_ended(self) -> None:
        """The program has ended (or its recording did): the terminal is the user's again."""
        if self.terminal is not None:
            await self.terminal.finish()

    async def close_console(self) -> None:
        if self.terminal is not None:
            await self.terminal.finish()
            self.terminal.remove()
            self.terminal = None


def _with_wall_time(options: dict[str, Any]) -> dict[str, Any]:
    limits = options.get("limits")
    if limits is None:
        return {**options, "limits": {"wallTime": TERMINAL_WALL_TIME}}
    if isinstance(limits, dict) and "wallTime" not in limits:
        return {**options, "limits": {**limits, "wallTime": TERMINAL_WALL_TIME}}
    return options  # the user's own wall time (or a malformed value, which the world names)
