"""An asynchronous DAP client: for the terminal front end, the debugpy reality peer and the tests.

It talks to any debug adapter over a byte stream (a child process's stdio, or TCP). Every request
has a timeout, so a peer that never answers (debugpy does not answer requests it does not know)
produces a clear error instead of a hang.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import msgspec
from anyio.abc import ByteReceiveStream, ByteSendStream

from neural_dap.dapwire.framing import Frame, FrameReader, FrameWriter

DEFAULT_TIMEOUT = 30.0


class DapError(Exception):
    """A request failed: the adapter said so, never answered, or the connection closed."""

    def __init__(self, command: str, message: str, response: dict | None = None) -> None:
        super().__init__(f"{command}: {message}")
        self.command = command
        self.message = message
        self.response = response


class DapClient:
    def __init__(self, receive: ByteReceiveStream, send: ByteSendStream, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.reader = FrameReader(receive)
        self.writer = FrameWriter(send)
        self.timeout = timeout
        self.seq = 0
        self.pending: dict[int, tuple[anyio.Event, list[dict]]] = {}
        self.events: list[dict] = []  # every event received, in order
        self.responses: list[dict] = []  # every response received, in order
        self._event_cursor = 0
        self._event_arrived = anyio.Event()
        self.closed = False
        self.on_event: Callable[[dict], None] | None = None
        # answers a reverse request (runInTerminal) with the response's body, or None to decline it
        self.on_reverse_request: Callable[[dict], Awaitable[dict | None]] | None = None

    async def _read_loop(self) -> None:
        try:
            async for frame in self.reader.frames():
                if not isinstance(frame, Frame):
                    continue
                try:
                    message = msgspec.json.decode(frame.body)
                except msgspec.DecodeError:
                    continue
                if not isinstance(message, dict):
                    continue
                kind = message.get("type")
                if kind == "response":
                    self.responses.append(message)
                    waiter = self.pending.get(int(message.get("request_seq") or -1))
                    if waiter is not None:
                        waiter[1].append(message)
                        waiter[0].set()
                elif kind == "event":
                    self.events.append(message)
                    if self.on_event is not None:
                        self.on_event(message)
                    self._event_arrived.set()
                    self._event_arrived = anyio.Event()
                elif kind == "request":
                    await self._answer_reverse_request(message)
        finally:
            self.closed = True
            for event, _ in self.pending.values():
                event.set()
            self._event_arrived.set()

    async def _answer_reverse_request(self, message: dict) -> None:
        # one we cannot answer (startDebugging, or no handler): say so rather than leave the adapter waiting
        answer: dict[str, Any] = {"success": False, "message": "not supported by this client"}
        if self.on_reverse_request is not None:
            try:
                body = await self.on_reverse_request(message)
            except Exception as exc:
                answer["message"] = f"{message.get('command')} failed: {exc}"
            else:
                if body is not None:
                    answer = {"success": True, "body": body}
        self.seq += 1
        response = {"seq": self.seq, "type": "response", "request_seq": message.get("seq")}
        await self.writer.write(msgspec.json.encode({**response, "command": message.get("command"), **answer}))

    async def send_request(self, command: str, arguments: dict | None = None) -> int:
        self.seq += 1
        seq = self.seq
        message: dict[str, Any] = {"seq": seq, "type": "request", "command": command}
        if arguments is not None:
            message["arguments"] = arguments
        self.pending[seq] = (anyio.Event(), [])
        await self.writer.write(msgspec.json.encode(message))
        return seq

    async def response(self, seq: int, command: str, timeout: float | None = None) -> dict:
        waiter = self.pending.get(seq)
        if waiter is None:
            raise DapError(command, "no such request in flight")
        event, box = waiter
        with anyio.move_on_after(self.timeout if timeout is None else timeout):
            await event.wait()
        self.pending.pop(seq, None)
        if not box:
            if self.closed:
                raise DapError(command, "the adapter closed the connection")
            raise DapError(command, f"no response within {self.timeout if timeout is None else timeout:g} s")
        return box[0]

    async def request(self, command: str, arguments: dict | None = None, timeout: float | None = None) -> dict:
        """Send a request and return the whole response (successful or not)."""
        seq = await self.send_request(command, arguments)
        return await self.response(seq, command, timeout)

    async def call(self, command: str, arguments: dict | None = None, timeout: float | None = None) -> dict:
        """Send a request and return its body; a failed request raises DapError."""
        response = await self.request(command, arguments, timeout)
        if not response.get("success"):
            raise DapError(command, response.get("message") or "failed", response)
        return response.get("body") or {}

    async def wait_event(
        self, name: str | set[str], timeout: float | None = None, where: Callable[[dict], bool] | None = None
    ) -> dict:
        """The next event called `name` (or any of a set of names) not taken by an earlier wait."""
        names = {name} if isinstance(name, str) else set(name)
        label = " or ".join(sorted(names))
        limit = self.timeout if timeout is None else timeout
        with anyio.move_on_after(limit):
            while True:
                for k in range(self._event_cursor, len(self.events)):
                    message = self.events[k]
                    if message.get("event") in names and (where is None or where(message)):
                        self._event_cursor = k + 1
                        return message
                if self.closed:
                    break
                await self._event_arrived.wait()
        raise DapError(
            label,
            f"no {label} event within {limit:g} s" if not self.closed else f"the adapter closed before a {label} event",
        )

    def responses_to(self, seq: int) -> list[dict]:
        """Every response the adapter sent to request `seq` (one, for an adapter that behaves)."""
        return [r for r in self.responses if r.get("request_seq") == seq]

    def events_named(self, name: str) -> list[dict]:
        return [e for e in self.events if e.get("event") == name]

    async def aclose(self) -> None:
        self.writer.closed = True


@asynccontextmanager
async def connected(receive: ByteReceiveStream, send: ByteSendStream, *, timeout: float = DEFAULT_TIMEOUT):
    client = DapClient(receive, send, timeout=timeout)
    async with anyio.create_task_group() as tg:
        tg.start_soon(client._read_loop)
        try:
            yield client
        finally:
            tg.cancel_scope.cancel()


@asynccontextmanager
async def spawn(
    command: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    stderr=None,
):
    """Start an adapter process that speaks DAP on its stdio, and connect to it."""
    process = await anyio.open_process(list(command), env={**os.environ, **(env or {})}, cwd=cwd, stderr=stderr)
    try:
        assert process.stdout is not None and process.stdin is not None
        async with connected(process.stdout, process.stdin, timeout=timeout) as client:
            client.process = process  # type: ignore[attr-defined]
            yield client
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None and process.stdin is not None:
                await process.stdin.aclose()  # an adapter ends by itself when its input closes
                with anyio.move_on_after(3):
                    await process.wait()
            if process.returncode is None:
                process.terminate()
                with anyio.move_on_after(5):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()


@asynccontextmanager
async def connect_tcp(host: str, port: int, *, timeout: float = DEFAULT_TIMEOUT):
    stream = await anyio.connect_tcp(host, port)
    async with stream, connected(stream, stream, timeout=timeout) as client:
        yield client


def adapter_command(python: str | None = None) -> list[str]:
    """How to start neural-dap's own adapter over stdio."""
    return [python or sys.executable, "-m", "neural_dap", "adapter"]


__all__ = ["DapClient", "DapError", "adapter_command", "connect_tcp", "connected", "spawn"]
