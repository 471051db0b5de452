"""Run Without Debugging (`noDebug: true`): the program runs as `python program args`, untraced.

Its output reaches the client as `output` events while it runs; `exited` and `terminated` follow.
A launch with an `entry` calls that function of the program, with the argument text the user wrote
in the launch configuration (the same text a debug launch would run).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable

import anyio
from anyio.abc import Process

_CALL_ENTRY = (
    "import runpy, sys\n"
    "namespace = runpy.run_path(sys.argv[1], run_name='__neural_dap_entry__')\n"
    "result = eval(sys.argv[2] + '(' + sys.argv[3] + ')', namespace)\n"  # the user's own launch text
    "print(repr(result))\n"
)


def command(
    program: str,
    args: list[str],
    python: str | None,
    entry: tuple[str, str] | None,
    *,
    module: str | None = None,
    python_args: list[str] | None = None,
) -> list[str]:
    interpreter = [python or sys.executable, *(python_args or [])]
    if module is not None:
        return [*interpreter, "-m", module, *args]
    if entry is None:
        return [*interpreter, program, *args]
    return [*interpreter, "-c", _CALL_ENTRY, program, entry[0], entry[1]]


class PlainRun:
    """One plain run of the program; `wait` streams its output and returns its exit code."""

    def __init__(self, argv: list[str], cwd: str | None, env: dict[str, str] | None, stdin: str | None = None) -> None:
        self.argv = argv
        self.stdin = stdin  # a file the program reads, else nothing (end-of-file)
        self.cwd = cwd
        self.env = {**os.environ, **(env or {})}
        self.process: Process | None = None

    async def run(self, output: Callable[[str, str], Awaitable[None]]) -> int:
        # a terminal console's FIFO is opened without waiting for a writer (its input may have ended)
        given_fd = os.open(self.stdin or os.devnull, os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(given_fd, True)
        with open(given_fd, "rb") as given:
            self.process = await anyio.open_process(
                self.argv, cwd=self.cwd, env=self.env, start_new_session=True, stdin=given
            )
        process = self.process
        assert process.stdout is not None and process.stderr is not None

        async def pump(stream, category: str) -> None:
            decoder = _Utf8()
            async for chunk in stream:
                text = decoder.feed(chunk)
                if text:
                    await output(text, category)
            tail = decoder.feed(b"", final=True)
            if tail:
                await output(tail, category)

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump, process.stdout, "stdout")
            tg.start_soon(pump, process.stderr, "stderr")
        return await process.wait()

    def kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            try:
                os.killpg(self.process.pid, 9)
            except (ProcessLookupError, PermissionError):
                self.process.kill()


class _Utf8:
    """Decodes a byte stream that may split characters across reads."""

    def __init__(self) -> None:
        import codecs

        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data: bytes, final: bool = False) -> str:
        return self.decoder.decode(data, final)
