"""The MCP server: the tools registered on the SDK's `MCPServer`, and its transports.

Stdio by default (what an agent starts); `serve_http` is streamable HTTP bound to 127.0.0.1 behind
a bearer token (a request without it gets 401 before it reaches the SDK). Each tool's description
is short and carries one example; arguments are snake_case; every result is structured (a JSON
object) and bounded, and a failure is a tool error whose text says what to do, the session intact.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import Field, ValidationError

from neural_dap.core.world import WorldError
from neural_dap.mcp import what_if
from neural_dap.mcp.checks import did_you_mean, quote
from neural_dap.mcp.guide import INSTRUCTIONS, debug_prompt
from neural_dap.mcp.sessions import Sessions, ToolFailure, Workspace
from neural_dap.mcp.tools import DEFAULT_TIMEOUT, GRACE, Tools

log = logging.getLogger("neural_dap.mcp")

MAX_ERROR = 600  # characters of an error's text
ECHO_LIMIT = 200  # an agent's text longer than this is never sent back whole in an error


class Server(MCPServer):
    """The SDK's server, with errors an agent can act on: a call whose arguments do not fit the
    schema gets one line per wrong argument (not pydantic's raw text with its documentation URL),
    and no error repeats more than `ECHO_LIMIT` characters of what the agent sent."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        schema = self._tool_input_schema(name)
        known = set((schema or {}).get("properties", {}))
        unknown = sorted(set(arguments or {}) - known) if schema is not None else []
        if unknown:  # a misspelt argument is not silently dropped
            raise ToolError(
                f"Error executing tool {name}: {quote(unknown[0])} is not an argument of {name}"
                f"{did_you_mean(unknown[0], known)} (its arguments: {', '.join(sorted(known))})"
            )
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                text = f"Error executing tool {name}: {argument_problems(cause)}"
            else:
                text = str(exc)
            raise ToolError(bounded_error(text, arguments)) from None


def argument_problems(error: ValidationError) -> str:
    """Each argument that does not fit the tool's schema, in a few words."""
    parts = []
    for problem in error.errors()[:5]:
        where = ".".join(str(p) for p in problem.get("loc", ())) or "arguments"
        message = str(problem.get("msg", "invalid"))
        if problem.get("type") == "missing":
            message = "missing (required)"
        elif problem.get("type") == "unexpected_keyword_argument" or problem.get("type") == "extra_forbidden":
            message = "not an argument of this tool"
        parts.append(f"{where}: {message}")
    more = len(error.errors()) - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def bounded_error(text: str, arguments: Any) -> str:
    """`text` with any long string the agent sent replaced by a short quote of it, and cut."""
    for value in _strings(arguments):
        if len(value) > ECHO_LIMIT:
            short = quote(value)
            text = text.replace(repr(value), short).replace(value, short)
    return text if len(text) <= MAX_ERROR else text[: MAX_ERROR - 1] + "\u2026"


def _strings(value: Any, depth: int = 0) -> list[str]:
    if isinstance(value, str):
        return [value]
    if depth > 4:
        return []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v, depth + 1)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v, depth + 1)]
    return []


SessionId = Annotated[str, Field(description="the session id `record` returned, e.g. 's1'")]
MaxRepr = Annotated[int, Field(description="cut each value's repr at this many characters", ge=16, le=100_000)]
Timeout = Annotated[float, Field(description="seconds before the call gives up with an error", ge=1, le=600)]
Start = Annotated[int, Field(description="first item of the page (0-based)", ge=0)]
Count = Annotated[int, Field(description="items per page", ge=1, le=500)]
Frame = Annotated[int, Field(description="stack frame: 0 is the innermost", ge=0)]


def build(
    root: str,
    world_factory: Callable[..., Any] | None = None,
    *,
    live_evaluate: bool = False,
    models: tuple[str, ...] = (),
) -> tuple[MCPServer, Sessions]:
    """The server, and the sessions it keeps (close them with `Sessions.close_all` at the end).
    `live_evaluate`: the person starting the server lets agents' expressions run in a live copy of
    the program; by default an agent's text (a model's) is only interpreted, never executed.
    `models`: model URLs or folders outside the workspace that `predict` may use."""
    if world_factory is None:
        from neural_dap.world.factory import create_world

        world_factory = create_world
    sessions = Sessions(Workspace(root))
    tools = Tools(sessions, world_factory, live_evaluate=live_evaluate, models=models)
    server = Server("neural-dap", instructions=INSTRUCTIONS, log_level="WARNING")

    @server.prompt(name="debug", description="How to find a bug's root cause with these tools, for one program")
    def debug(
        program: Annotated[str, Field(description="the failing program, relative to the root")],
        symptom: Annotated[str, Field(description="what is wrong, e.g. 'prints 14, expected 15'")] = "",
    ) -> str:
        return debug_prompt(program, symptom)

    async def guarded(timeout: float, work: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        """A tool's work, its failures as tool errors; a last deadline past the tool's own."""
        try:
            with anyio.fail_after(float(timeout) + 3 * GRACE):
                return await work()
        except ToolFailure as exc:
            raise ToolError(str(exc)) from None
        except WorldError as exc:
            raise ToolError(str(exc)) from None
        except TimeoutError:
            raise ToolError(f"the call did not finish within {timeout:g} s") from None
        except Exception as exc:
            log.exception("an MCP tool failed")
            raise ToolError(f"internal error: {type(exc).__name__}: {exc}") from None

    @server.tool(
        name="record",
        description=(
            "Run a Python program once under the recorder and open a session to travel through the run. "
            "Give `program` (a file), or `module` (e.g. pytest) with `args`, or `program` + `function` + "
            "`call_args` for one call. Returns the session, exit code, uncaught exception and where it was "
            'raised, the output\'s tail, event and call counts. Example: {"program": "app.py", "args": ["--n", "3"]}'
        ),
    )
    async def record(
        program: Annotated[str | None, Field(description="the Python file to run, relative to the root")] = None,
        module: Annotated[str | None, Field(description="run `python -m MODULE` instead, e.g. 'pytest'")] = None,
        args: Annotated[list[str] | None, Field(description="command-line arguments")] = None,
        cwd: Annotated[str | None, Field(description="working folder (default: the root)")] = None,
        function: Annotated[str | None, Field(description="call this function of `program` instead")] = None,
        # plain `str`: the SDK would parse a `str | None` argument such as "[3, 1]" as JSON into a list
        call_args: Annotated[str, Field(description="its arguments as literals: '[3, 1], key=None'")] = "",
        max_events: Annotated[int | None, Field(description="stop recording after this many events", ge=1)] = None,
        max_repr: MaxRepr = 200,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        return await guarded(
            timeout,
            lambda: tools.record(
                program, module, tuple(args or ()), cwd, function, call_args or None, max_events, max_repr, timeout
            ),
        )

    @server.tool(
        name="state",
        description=(
            "Where a session is now: the moment, location with source context, locals (reprs), stack. "
            'Example: {"session": "s1"}'
        ),
    )
    async def state(session: SessionId, max_repr: MaxRepr = 200, timeout: Timeout = DEFAULT_TIMEOUT) -> dict[str, Any]:
        return await guarded(timeout, lambda: tools.state(session, max_repr, timeout))

    @server.tool(
        name="step",
        description=(
            "Move through the run: next, step_in, step_out, step_back, step_back_in, step_back_out, continue, "
            "reverse_continue. It stops at the session's breakpoints (the breakpoints tool) and at `breakpoints` "
            "given for this step only, optionally when a condition holds. Returns the new state. Example: "
            '{"session": "s1", "action": "continue", "breakpoints": [{"file": "app.py", "line": 12, '
            '"condition": "i == 3"}]}'
        ),
    )
    async def step(
        session: SessionId,
        action: Annotated[str, Field(description="next | step_in | step_out | step_back | ... | reverse_continue")],
        breakpoints: Annotated[
            list[dict[str, Any]] | None,
            Field(description="[{file, line, condition}] for this step; file defaults to the recorded program"),
        ] = None,
        max_repr: MaxRepr = 200,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        return await guarded(timeout, lambda: tools.step(session, action, breakpoints or [], max_repr, timeout))

    @server.tool(
        name="goto",
        description=(
            "Travel to `where`: start, end, exception (where the exception that ended the run was raised), "
            'or a moment id another tool returned. Example: {"session": "s1", "where": "m1234"}'
        ),
    )
    async def goto(
        session: SessionId,
        where: Annotated[str, Field(description="start | end | exception | a moment id such as 'm1234'")],
        max_repr: MaxRepr = 200,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        return await guarded(timeout, lambda: tools.goto(session, where, max_repr, timeout))

    @server.tool(
        name="last_value",
        description=(
            "Where an expression (a variable, attribute path or item: total, self.items, d['k']) last changed "
            "before the current moment in this frame's call: the statement that changed it (changed_by), and its "
            'value before and after. Example: {"session": "s1", "expression": "total"}'
        ),
    )
    async def last_value(
        session: SessionId,
        expression: Annotated[str, Field(description="a variable, attribute path or item, e.g. 'self.total'")],
        frame: Frame = 0,
        max_repr: MaxRepr = 200,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        return await guarded(timeout, lambda: tools.last_value(session, expression, frame, max_repr, timeout))

    @server.tool(
        name="value_history",
        description=(
            "Every change of an expression over the whole run, in every call of the frame's function, in order, "
            'paged: each with before, after, the statement that changed it and its moment. Example: {"session": '
            '"s1", "expression": "total", "count": 20}'
        ),
    )
    async def value_history(
        session: SessionId,
        expression: Annotated[str, Field(description="a variable, attribute path or item, e.g. 'total'")],
        frame: Frame = 0,
        start: Start = 0,
        count: Count = 50,
        max_repr: MaxRepr = 200,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        return await guarded(
            timeout, lambda: tools.value_history(session, expression, frame, start, count, max_repr, timeout)
        )

    @server.tool(
        name="value_origin",
        description=(
            "Where a value came from: the statement that set it, followed back through plain copies (b = a), "
            "attribute and item stores and call arguments to where it was computed; each step a moment, and "
            "why the chain ends (computed, literal, global, library, complex). "
            'Example: {"session": "s1", "expression": "total"}'
        ),
    )
    async def value_origin(
        session: SessionId,
        expression: Annotated[str, Field(description="a variable, attribute path or item, e.g. 'obj.x'")],
        frame: Frame = 0,
        max_repr: MaxRepr = 200,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        return await guarded(timeout, lambda: tools.value_origin(session, expression, frame, max_repr, timeout))

    @server.tool(
        name="calls",
        description=(
            "Every call of a function over the run, paged: arguments, return value or exception, moment. "
            'Example: {"session": "s1", "function": "average"} (or "app.py:average" for one file\'s)'
        ),
    )
    async def calls(
        session: SessionId,
        function: Annotated[str, Field(description="a function name, or 'file.py:name'")],
        start: Start = 0,
        count: Count = 50,
        max_repr: MaxRepr = 200,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        return await guarded(timeout, lambda: tools.calls(session, function, start, count, max_repr, timeout))

    @server.tool(
        name="logpoint",
        description=(
            "A message evaluated at every past execution of a line ({expr} parts, as a debugger's log point), "
            'paged, each with its moment. Example: {"session": "s1", "file": "app.py", "line": 7, '
            '"message": "i={i} total={total}"}'
        ),
    )
    async def logpoint(
        session: SessionId,
        line: Annotated[int, Field(description="the line number", ge=1)],
        message: Annotated[str, Field(description="text with {expression} parts, e.g. 'x={x}'")],
        file: Annotated[str, Field(description="the file (default: the recorded program)")] = "",
        start: Start = 0,
        count: Count = 50,
        max_repr: MaxRepr = 200,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        return await guarded(
            timeout, lambda: tools.logpoint(session, file or "", line, message, start, count, max_repr, timeout)
        )

    @server.tool(
        name="evaluate",
        description=(
            "Evaluate a Python expression at the current moment (in a live copy of the program where the "
            "recording has one, else over the recorded values; nothing it changes reaches the recording). "
            'Example: {"session": "s1", "expression": "len(items) and items[-1]"}'
        ),
    )
    async def evaluate(
        session: SessionId,
        expression: Annotated[str, Field(description="a Python expression")],
        frame: Frame = 0,
        max_repr: MaxRepr = 200,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        return await guarded(timeout, lambda: tools.evaluate(session, expression, frame, max_repr, timeout))

    @server.tool(
        name="predict",
        description=(
            "Predict execution with the neural model instead of running: forward from a call (`call_args`) or "
            "backward from a return value (`returns`), taking `actions`; with reconcile 'recorded' every "
            "predicted state is checked against a real run and divergences listed. Example: "
            '{"file": "app.py", "function": "average", "call_args": "[3, 4]", "actions": ["step_in", "next"]}'
        ),
    )
    async def predict(
        file: Annotated[str, Field(description="the Python file, relative to the root")],
        function: Annotated[str, Field(description="the function to predict")],
        call_args: Annotated[str, Field(description="its arguments as literals, e.g. '[3, 4]'")] = "",
        returns: Annotated[str, Field(description="or: a return value to step back from, e.g. '[1, 2]'")] = "",
        actions: Annotated[
            list[str] | None, Field(description="step actions (default six step_in, or six step_back from returns)")
        ] = None,
        reconcile: Annotated[str, Field(description="'none' or 'recorded'")] = "none",
        model: Annotated[
            Any, Field(description="'embedded' (default), an OpenAI-compatible URL, a model folder, or {url, ...}")
        ] = "embedded",
        max_repr: MaxRepr = 200,
        timeout: Annotated[float, Field(description="seconds for the whole prediction", ge=1, le=600)] = 120.0,
    ) -> dict[str, Any]:
        return await guarded(
            timeout,
            lambda: tools.predict(
                file, function, call_args or None, returns or None, actions, reconcile, model, max_repr, timeout
            ),
        )

    @server.tool(
        name="set_value",
        description=(
            "What if: give a local of the current moment a new value (a Python literal, never executed) and "
            "run the real program on from there with it, as a new branch the session then stands on; step "
            'and goto then travel the branch. Example: {"session": "s1", "name": "qty", "value": "0"}'
        ),
    )
    async def set_value(
        session: SessionId,
        name: Annotated[str, Field(description="a local of the innermost frame")],
        value: Annotated[str, Field(description="a Python literal: 3, 'text', [1, 2], {'k': None}")],
        frame: Frame = 0,
        max_repr: MaxRepr = 200,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        return await guarded(timeout, lambda: what_if.set_value(tools, session, name, value, frame, max_repr, timeout))

    @server.tool(
        name="branches",
        description=(
            "The what-if branches of a session (0 is the original run; each other one changed a value), "
            'and with `switch` stand on another one. Example: {"session": "s1", "switch": 0}'
        ),
    )
    async def branches(
        session: SessionId,
        switch: Annotated[int | None, Field(description="the branch to stand on", ge=0)] = None,
        max_repr: MaxRepr = 200,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        return await guarded(timeout, lambda: what_if.branches(tools, session, switch, max_repr, timeout))

    @server.tool(
        name="breakpoints",
        description=(
            "The session's breakpoints, where every step (continue, reverse_continue, ...) stops: listed with "
            "how many times each line ran; `set` replaces them all ([] clears). Each line must hold code and "
            'each condition must parse. Example: {"session": "s1", "set": [{"file": "app.py", "line": 12, '
            '"condition": "i == 3"}]}'
        ),
    )
    async def breakpoints(
        session: SessionId,
        set: Annotated[  # (the argument's name as an agent writes it)
            list[dict[str, Any]] | None,
            Field(description="[{file, line, condition}] to stand from now on; file defaults to the program"),
        ] = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        return await guarded(timeout, lambda: tools.breakpoints(session, set, timeout))

    @server.tool(
        name="source",
        description=(
            "Read a file's lines, numbered (at most 200 a call; next_start for more). With a session, also the "
            "lines with code that never ran in its recording. Example: "
            '{"file": "app.py", "start": 10, "end": 30, "session": "s1"}'
        ),
    )
    async def source(
        file: Annotated[str, Field(description="the file, relative to the root (default: the session's program)")] = "",
        start: Annotated[int, Field(description="the first line (1-based)", ge=1)] = 1,
        end: Annotated[int | None, Field(description="the last line (default: 200 lines on)", ge=1)] = None,
        session: Annotated[str | None, Field(description="a session, to mark lines that never ran")] = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        return await guarded(timeout, lambda: tools.source(file, start, end, session, timeout))

    @server.tool(name="close", description='End a session and free its recording. Example: {"session": "s1"}')
    async def close(session: SessionId) -> dict[str, Any]:
        return await guarded(DEFAULT_TIMEOUT, lambda: tools.close(session))

    return server, sessions


async def serve_stdio(root: str, live_evaluate: bool = False, models: tuple[str, ...] = ()) -> None:
    server, sessions = build(root, live_evaluate=live_evaluate, models=models)
    try:
        await server.run_stdio_async()
    finally:
        with anyio.CancelScope(shield=True):
            await sessions.close_all()


def new_token() -> str:
    return secrets.token_urlsafe(32)


class BearerAuth:
    """ASGI middleware: HTTP requests need `Authorization: Bearer TOKEN`; others get 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = b'{"error": "unauthorized: send Authorization: Bearer <the token neural-dap mcp printed>"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="neural-dap"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


async def serve_http(
    root: str,
    port: int,
    token: str,
    host: str = "127.0.0.1",
    live_evaluate: bool = False,
    models: tuple[str, ...] = (),
) -> None:
    import uvicorn

    server, sessions = build(root, live_evaluate=live_evaluate, models=models)
    app = BearerAuth(server.streamable_http_app(host=host), token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    try:
        await uvicorn.Server(config).serve()
    finally:
        with anyio.CancelScope(shield=True):
            await sessions.close_all()
