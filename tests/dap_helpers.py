"""Drive the real neural-dap adapter process over stdio or TCP with a DAP client."""

from __future__ import annotations

import os
import sys
from contextlib import asynccontextmanager

import anyio

from neural_dap.dapwire.client import DapClient, adapter_command, connect_tcp, spawn

TIMEOUT = 60.0


@asynccontextmanager
async def adapter(transport: str = "stdio", env: dict | None = None):
    if transport == "stdio":
        async with spawn(adapter_command(), timeout=TIMEOUT, env=env) as client:
            yield client
        return
    process = await anyio.open_process(
        [sys.executable, "-m", "neural_dap", "adapter", "--port", "0"], env={**os.environ, **(env or {})}
    )
    try:
        assert process.stdout is not None
        line = b""
        with anyio.fail_after(30):
            while not line.endswith(b"\n"):
                line += await process.stdout.receive(1)
        host_port = line.decode().rsplit(" ", 1)[-1].strip()
        host, port = host_port.rsplit(":", 1)
        assert host == "127.0.0.1"
        async with connect_tcp(host, int(port), timeout=TIMEOUT) as client:
            yield client
    finally:
        process.terminate()
        with anyio.move_on_after(5):
            await process.wait()
        if process.returncode is None:
            process.kill()


async def start(
    client: DapClient,
    launch: dict,
    breakpoints: dict[str, list[dict]] | None = None,
    exception_filters: list[str] | None = None,
    progress: bool = False,
) -> dict:
    """The VS Code sequence: initialize, launch, breakpoints, configurationDone; returns the first stop."""
    await client.call(
        "initialize",
        {
            "adapterID": "neural-dap",
            "clientID": "tests",
            "linesStartAt1": True,
            "columnsStartAt1": True,
            "supportsProgressReporting": progress,
        },
    )
    await client.wait_event("initialized")
    launch_seq = await client.send_request("launch", launch)
    for path, bps in (breakpoints or {}).items():
        await client.call("setBreakpoints", {"source": {"path": path}, "breakpoints": bps})
    if exception_filters is not None:
        await client.call("setExceptionBreakpoints", {"filters": exception_filters})
    await client.call("configurationDone")
    response = await client.response(launch_seq, "launch")
    assert response["success"], response
    return await client.wait_event("stopped")


async def where(client: DapClient) -> tuple[str, int, dict[str, str]]:
    """(function, line, locals) of the top frame now."""
    frames = (await client.call("stackTrace", {"threadId": 1}))["stackFrames"]
    scopes = (await client.call("scopes", {"frameId": frames[0]["id"]}))["scopes"]
    variables = (await client.call("variables", {"variablesReference": scopes[0]["variablesReference"]}))["variables"]
    # (debugpy's groups, a frame's dunders, functions and classes, left closed)
    inline = [v for v in variables if v["name"] not in ("special variables", "function variables", "class variables")]
    return frames[0]["name"], frames[0]["line"], {v["name"]: v["value"] for v in inline}


async def step(client: DapClient, command: str) -> tuple[str, tuple[str, int, dict[str, str]]]:
    await client.call(command, {"threadId": 1})
    stopped = await client.wait_event("stopped")
    return stopped["body"]["reason"], await where(client)
