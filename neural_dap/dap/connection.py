"""A DAP connection's plumbing, shared by every group of requests: its state, sending responses
and events, reading and dispatching requests (each in a task of its own, so `pause` and `cancel`
reach a long step), and a few helpers. The requests themselves are grouped by what they are about
(dap/breakpoint_requests.py, dap/inspection.py, dap/execution.py, dap/queries.py, dap/session.py),
the way pygls groups features; none of them owns program state: the `Debugger` does.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec

from neural_dap.core.source import read_source
from neural_dap.core.world import LaunchSpec, Stop, WorldError, WorldModel
from neural_dap.dap import plain_run
from neural_dap.dap.presentation import StopView
from neural_dap.dapwire import protocol as p
from neural_dap.dapwire.framing import FramingProblem
from neural_dap.debugger.core import Debugger

log = logging.getLogger("neural_dap.dap")

WorldFactory = Callable[[LaunchSpec], WorldModel]
Send = Callable[[msgspec.Struct], Awaitable[None]]

THREAD_ID = 1


class RequestError(Exception):
    """Turns into an error response with this message."""


class Connection:
    def __init__(self, world_factory: WorldFactory, send: Send) -> None:
        self.debugger = Debugger(world_factory)
        self._send_struct = send
        self.seq = 0
        self.client = p.InitializeArguments()
        self.initialized = False
        self.initialize_read = False  # requests read after `initialize` are served (a client may pipeline them)
        self.plain: plain_run.PlainRun | None = None  # a launch with noDebug
        self.view: StopView | None = None
        self.configured = anyio.Event()
        self.launched = anyio.Event()
        self.terminated = False
        self.closing = anyio.Event()
        self.disconnecting = False  # a disconnect is closing the world: background work ends quietly
        self.in_flight: dict[int, anyio.CancelScope] = {}
        self._open: set[int] = set()  # requests not answered yet
        self.goto_lines: dict[int, tuple[str, int]] = {}
        self.goto_moments: dict[int, int] = {}  # gotoTargets' executions of a line: target id -> event
        self.goto_ids = 0
        self.progress_counter = 0
        self.progress_open: set[str] = set()  # progressStart sent, progressEnd not yet: a `cancel` may name one
        self.threads_shown: set[int] = {THREAD_ID}  # announced with a `thread` started event
        self._task_group: anyio.abc.TaskGroup | None = None
        self._asked: dict[int, tuple[anyio.Event, list[p.Response]]] = {}  # reverse requests not answered yet

    @property
    def world(self) -> WorldModel | None:
        return self.debugger.world

    @property
    def stop(self) -> Stop | None:
        return self.debugger.stop

    # -- sending ------------------------------------------------------------------------------------
    def _next_seq(self) -> int:
        self.seq += 1
        return self.seq

    async def event(self, name: str, body: Any = None) -> None:
        await self._send_struct(p.Event(seq=self._next_seq(), event=name, body=body))

    async def respond(self, request: p.Request, body: Any = None) -> None:
        self._open.discard(request.seq)
        await self._send_struct(
            p.Response(seq=self._next_seq(), request_seq=request.seq, success=True, command=request.command, body=body)
        )

    async def fail(self, request_seq: int, command: str, message: str) -> None:
        self._open.discard(request_seq)
        await self._send_struct(
            p.Response(
                seq=self._next_seq(),
                request_seq=request_seq,
                success=False,
                command=command,
                message=message,
                body={"error": {"id": 1, "format": message, "showUser": True}},
            )
        )

    async def output(self, text: str, category: str = "console") -> None:
        await self.event("output", p.OutputEventBody(output=text, category=category))

    async def ask_client(self, command: str, arguments: msgspec.Struct, timeout: float) -> p.Response | None:
        """A reverse request (runInTerminal): the client's answer, or None when none came in time."""
        seq = self._next_seq()
        arrived, box = anyio.Event(), list[p.Response]()
        self._asked[seq] = (arrived, box)
        try:
            await self._send_struct(p.Request(seq=seq, command=command, arguments=arguments))
            with anyio.move_on_after(timeout):
                await arrived.wait()
        finally:
            self._asked.pop(seq, None)
        return box[0] if box else None

    def _answered(self, response: p.Response) -> None:
        waiter = self._asked.get(response.request_seq)
        if waiter is not None:
            waiter[1].append(response)
            waiter[0].set()

    # -- dispatch -----------------------------------------------------------------------------------
    async def run(self, messages, task_group: anyio.abc.TaskGroup) -> None:
        """Serve until the client disconnects. `messages` yields decoded requests or problems."""
        self._task_group = task_group
        with anyio.CancelScope() as reading:
            task_group.start_soon(self._stop_reading_when_closing, reading)
            await self._read(messages, task_group)

    async def _stop_reading_when_closing(self, reading: anyio.CancelScope) -> None:
        """After `disconnect` is answered the session ends, though the client may keep its end open."""
        await self.closing.wait()
        reading.cancel()

    async def _read(self, messages, task_group: anyio.abc.TaskGroup) -> None:
        async for item in messages:
            if isinstance(item, FramingProblem):
                if not item.before_first_frame:  # a client that spoke DAP is told why; anything else is not
                    await self.output(f"neural-dap: closing the connection: {item.what}\n", "important")
                log.warning("closing the connection: %s", item.what)
                break
            if isinstance(item, p.Response):
                self._answered(item)
                continue
            if isinstance(item, p.Request):
                if item.command == "initialize":
                    self.initialize_read = True
                elif not self.initialize_read:
                    await self.fail(item.seq, item.command, "the first request must be 'initialize'")
                    continue
                task_group.start_soon(self.handle, item)
            else:
                await self._bad_message(item)
            if self.closing.is_set():
                break

    async def _bad_message(self, problem: tuple[int | None, str]) -> None:
        seq, what = problem
        log.warning("bad DAP message: %s", what)
        if seq is not None:
            await self.fail(seq, "unknown", f"malformed request: {what}")
        else:
            await self.output(f"neural-dap: ignored a malformed message ({what})\n", "important")

    async def handle(self, request: p.Request) -> None:
        method = getattr(self, "on_" + _snake(request.command), None) if _is_command(request.command) else None
        if method is None:
            await self.fail(request.seq, request.command, f"unsupported request {request.command!r}")
            return
        self._open.add(request.seq)
        with anyio.CancelScope() as scope:
            self.in_flight[request.seq] = scope
            try:
                await method(request)
            except RequestError as exc:
                await self.fail(request.seq, request.command, str(exc))
            except WorldError as exc:
                await self.fail(request.seq, request.command, str(exc))
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                await self.fail(request.seq, request.command, f"invalid arguments for {request.command}: {exc}")
            except Exception as exc:  # a bug of ours must not end the session
                log.exception("request %s failed", request.command)
                await self.fail(
                    request.seq, request.command, f"internal error in {request.command}: {type(exc).__name__}: {exc}"
                )
            finally:
                self.in_flight.pop(request.seq, None)
        if request.seq in self._open:  # cancelled before it was answered
            await self.fail(request.seq, request.command, "cancelled")

    @staticmethod
    def _args(request: p.Request, kind: type) -> Any:
        return msgspec.convert(request.arguments or {}, kind)

    # -- helpers ------------------------------------------------------------------------------------
    def _source_text(self, path: str) -> str | None:
        return self.debugger.source(path) or read_source(path)

    def _require_view(self) -> StopView:
        if self.view is None:
            raise RequestError("the program is not stopped")
        return self.view

    async def _progress_start(self, title: str) -> str | None:
        if not self.client.supports_progress_reporting:
            return None
        self.progress_counter += 1
        progress_id = f"neural-dap-{self.progress_counter}"
        self.progress_open.add(progress_id)
        await self.event(
            "progressStart", p.ProgressStartEventBody(progress_id=progress_id, title=title, cancellable=True)
        )
        return progress_id

    async def _progress_end(self, progress_id: str | None) -> None:
        if progress_id is not None:
            self.progress_open.discard(progress_id)
            with anyio.CancelScope(shield=True):
                await self.event("progressEnd", p.ProgressEndEventBody(progress_id=progress_id))


def _is_command(command: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", command or ""))


def _snake(command: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", command).lower()
