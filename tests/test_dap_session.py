"""The DAP server driven by a real DAP client over stdio and TCP, as VS Code drives it."""

from __future__ import annotations

import sys
import textwrap
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import msgspec
import pytest
from anyio.abc import SocketAttribute

from neural_dap.dap.server import serve_streams
from neural_dap.dapwire.client import connect_tcp
from neural_dap.dapwire.framing import encode_frame
from neural_dap.world.recorded import RecordedWorld

from .dap_helpers import adapter, start, step, where

PROGRAM = textwrap.dedent(
    """\
    def square(x):
        y = x * x
        return y

    def risky(n):
        if n > 2:
            raise ValueError(f"too big: {n}")
        return n

    def main(limit):
        total = 0
        for i in range(limit):
            total += square(i)
        try:
            risky(limit)
        except ValueError as err:
            print("caught", err)
        items = {"a": [1, 2, {"b": 3}], "n": total, "big": list(range(150))}
        return total

    result = main(4)
    print("result", result)
    """
)


@pytest.fixture()
def program(tmp_path: Path) -> str:
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    return str(path)


async def test_initialize_announces_every_capability_explicitly():
    async with adapter() as c:
        caps = await c.call("initialize", {"adapterID": "neural-dap"})
        for name in (
            "supportsConfigurationDoneRequest",
            "supportsStepBack",
            "supportsRestartFrame",
            "supportsConditionalBreakpoints",
            "supportsHitConditionalBreakpoints",
            "supportsLogPoints",
            "supportsFunctionBreakpoints",
            "supportsEvaluateForHovers",
            "supportsExceptionInfoRequest",
            "supportsTerminateRequest",
            "supportsCancelRequest",
            "supportsGotoTargetsRequest",
        ):
            assert caps[name] is True, name
        # VS Code then asks for 20 frames at once; with delayed loading a 2-frame stack showed "Load More"
        assert caps["supportsDelayedStackTraceLoading"] is False
        assert {f["filter"] for f in caps["exceptionBreakpointFilters"]} == {"raised", "uncaught", "userUnhandled"}


async def test_the_values_steps_saw_returned_stay_with_the_frame_back_and_forth_in_time(program):
    """debugpy keeps a `(return) square` in `main` once a step has passed its return, for the frame's
    life, and a `continue` adds none; travelling back shows the one that had returned by then."""
    async with adapter() as c:
        await start(c, {"program": program}, breakpoints={program: [{"line": 13}]})
        assert "(return) square" not in (await where(c))[2]
        _, (_, line, local) = await step(c, "next")
        assert (line, local["(return) square"]) == (12, "0")
        _, (_, line, local) = await step(c, "continue")
        assert (line, local["i"], local["(return) square"]) == (13, "1", "0")  # (kept across the continue)
        _, (_, line, local) = await step(c, "next")
        assert (line, local["(return) square"]) == (12, "1")
        _, (_, line, local) = await step(c, "stepBack")
        assert (line, local["i"], local["(return) square"]) == (13, "1", "0")
        _, (_, line, local) = await step(c, "reverseContinue")
        assert (line, local["i"]) == (13, "0") and "(return) square" not in local


@pytest.mark.parametrize("transport", ["stdio", "tcp"])
async def test_a_session_scripted_the_way_vscode_runs_one(transport, program):
    async with adapter(transport) as c:
        stopped = await start(c, {"program": program}, breakpoints={program: [{"line": 13}]})
        assert stopped["body"]["reason"] == "breakpoint"
        # the program runs to its first stop: `continued` before it (VS Code's Restart reuses the
        # session and would show the old session's last stop otherwise)
        moves = [e["event"] for e in c.events if e["event"] in ("continued", "stopped")]
        assert moves[:2] == ["continued", "stopped"], moves
        assert (await c.call("threads"))["threads"] == [{"id": 1, "name": "MainThread"}]
        frames = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"]
        assert [(f["name"], f["line"]) for f in frames] == [("main", 13), ("<module>", 21)]
        assert frames[0]["source"]["path"] == program
        assert await where(c) == ("main", 13, {"limit": "4", "total": "0", "i": "0"})

        assert await step(c, "continue") == ("breakpoint", ("main", 13, {"limit": "4", "total": "0", "i": "1"}))
        # (a step over the call keeps what it returned beside the locals, as debugpy does, for good)
        returned = {"(return) square": "1"}
        assert await step(c, "next") == ("step", ("main", 12, {"limit": "4", "total": "1", "i": "1", **returned}))
        assert await step(c, "continue") == (
            "breakpoint",
            ("main", 13, {"limit": "4", "total": "1", "i": "2", **returned}),
        )
        assert await step(c, "stepIn") == ("step", ("square", 2, {"x": "2"}))
        reason, (name, line, local) = await step(c, "stepOut")
        assert (reason, name, line, local["(return) square"], local["total"]) == ("step", "main", 13, "4", "1")
        assert await step(c, "stepBack") == ("step", ("square", 3, {"x": "2", "y": "4"}))
        assert await step(c, "reverseContinue") == (
            "breakpoint",
            ("main", 13, {"limit": "4", "total": "1", "i": "2", **returned}),
        )

        frames = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"]
        await c.call("restartFrame", {"frameId": frames[0]["id"]})
        assert (await c.wait_event("stopped"))["body"]["reason"] == "restart"
        assert await where(c) == ("main", 10, {"limit": "4"})

        frames = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"]
        result = await c.call(
            "evaluate", {"expression": "limit * 2 + 1", "frameId": frames[0]["id"], "context": "watch"}
        )
        assert result["result"] == "9"
        hover = await c.request(
            "evaluate", {"expression": "open('/etc/passwd')", "frameId": frames[0]["id"], "context": "hover"}
        )
        assert not hover["success"] and "not defined" in hover["message"]
        await c.call("disconnect", {"terminateDebuggee": True})


async def test_stepping_back_across_calls_returns_and_exceptions(program):
    async with adapter() as c:
        await start(c, {"program": program}, breakpoints={program: [{"line": 15}]})
        assert (await where(c))[1] == 15
        assert await step(c, "stepIn") == ("step", ("risky", 6, {"n": "4"}))
        assert await step(c, "next") == ("step", ("risky", 7, {"n": "4"}))
        _, (name, line, local) = await step(c, "stepIn")  # the exception leaves risky: shown in main
        assert (name, line, local["(exception) risky"]) == ("main", 15, "ValueError('too big: 4')")
        # (on 3.11 an exception leaving a function is a return to settrace: debugpy shows None)
        local = {"limit": "4", "total": "14", "i": "3", "(return) risky": "None"}
        assert await step(c, "next") == ("step", ("main", 16, local))
        # and back the same way
        _reason, (name, line, local) = await step(c, "stepBackInto")
        assert (name, line) == ("main", 15) and "(exception) risky" in local
        assert await step(c, "stepBackInto") == ("step", ("risky", 7, {"n": "4"}))
        assert await step(c, "stepBackOut") == ("step", ("main", 15, {"limit": "4", "total": "14", "i": "3"}))
        assert await step(c, "stepBack") == ("step", ("main", 14, {"limit": "4", "total": "14", "i": "3"}))
        # stepping back over a loop body with calls lands on the loop's previous line, not in square
        assert await step(c, "stepBack") == ("step", ("main", 12, {"limit": "4", "total": "14", "i": "3"}))
        assert await step(c, "stepBack") == ("step", ("main", 13, {"limit": "4", "total": "5", "i": "3"}))


async def test_conditional_hit_conditional_log_and_function_breakpoints(program):
    async with adapter() as c:
        bps = {
            program: [
                {"line": 13, "condition": "i == 2"},
                {"line": 2, "hitCondition": ">=3"},
                {"line": 12, "logMessage": "loop i={i} total={total}"},
            ]
        }
        await start(c, {"program": program}, breakpoints=bps)
        assert await where(c) == ("main", 13, {"limit": "4", "total": "1", "i": "2"})
        assert await step(c, "continue") == ("breakpoint", ("square", 2, {"x": "2"}))  # its third call
        assert await step(c, "continue") == ("breakpoint", ("square", 2, {"x": "3"}))
        logs = [
            e["body"]["output"]
            for e in c.events_named("output")
            if e["body"]["output"].startswith(("loop", "name 'i'"))
        ]
        assert logs[:3] == [
            "name 'i' is not defined\n",  # debugpy prints what a part raised, alone
            "loop i=0 total=0\n",
            "loop i=1 total=1\n",
        ]
        body = await c.call("setFunctionBreakpoints", {"breakpoints": [{"name": "risky"}]})
        assert body["breakpoints"][0]["verified"]
        await c.call("setBreakpoints", {"source": {"path": program}, "breakpoints": []})
        reason, (name, line, _) = await step(c, "continue")
        assert (reason, name, line) == ("function breakpoint", "risky", 6)


async def test_breakpoints_on_lines_without_code_move_back_as_in_debugpy(program):
    """A line without code moves to the line with code before it, as debugpy moves it: a blank line
    below a function to the function's last line, a line past the end to the last line."""
    async with adapter() as c:
        await c.call("initialize", {"adapterID": "neural-dap"})
        body = await c.call(
            "setBreakpoints", {"source": {"path": program}, "breakpoints": [{"line": 4}, {"line": 13}, {"line": 100}]}
        )
        first, second, third = body["breakpoints"]
        assert first["verified"] and first["line"] == 3 and "moved" in first["message"]
        assert second["verified"] and second["line"] == 13 and "message" not in second
        assert third["verified"] and third["line"] == 22


async def test_exception_filters_and_exception_info(program, tmp_path):
    async with adapter() as c:
        stopped = await start(c, {"program": program}, exception_filters=["raised"])
        assert stopped["body"]["reason"] == "exception"
        # as debugpy words it: the type as `text`, str(exception) as `description`
        assert (stopped["body"]["text"], stopped["body"]["description"]) == ("ValueError", "too big: 4")
        assert await where(c) == ("risky", 7, {"n": "4"})
        info = await c.call("exceptionInfo", {"threadId": 1})
        assert info["exceptionId"] == "ValueError" and "too big: 4" in info["description"]
        assert info["details"]["message"] == "too big: 4"
    crash = tmp_path / "crash.py"
    crash.write_text("def f(d):\n    return d['missing']\n\nf({})\n")
    async with adapter() as c:
        stopped = await start(c, {"program": str(crash)}, exception_filters=["uncaught"])
        assert stopped["body"]["reason"] == "exception"
        assert stopped["body"]["description"] == "'missing'"  # a KeyError's str is its key's repr
        assert (await where(c))[:2] == ("f", 2)
        await c.call("continue", {"threadId": 1})
        stopped = await c.wait_event("stopped")
        assert stopped["body"]["reason"] == "end" and "exit code 1" in stopped["body"]["description"]
        await c.call("continue", {"threadId": 1})
        assert (await c.wait_event("exited"))["body"]["exitCode"] == 1
        await c.wait_event("terminated")


async def test_variables_expand_containers_and_page_long_ones(program):
    async with adapter() as c:
        await start(c, {"program": program}, breakpoints={program: [{"line": 19}]})
        frames = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"]
        scope = (await c.call("scopes", {"frameId": frames[0]["id"]}))["scopes"][0]
        variables = {
            v["name"]: v
            for v in (await c.call("variables", {"variablesReference": scope["variablesReference"]}))["variables"]
        }
        items = variables["items"]
        assert items["type"] == "dict" and items["variablesReference"] > 0
        children = {
            v["name"]: v
            for v in (await c.call("variables", {"variablesReference": items["variablesReference"]}))["variables"]
        }
        assert list(children) == ["'a'", "'n'", "'big'", "len()"]  # as debugpy opens a dict
        big = (await c.call("variables", {"variablesReference": children["'big'"]["variablesReference"]}))["variables"]
        assert [v["name"] for v in big] == [f"{k:03d}" for k in range(100)] + ["more", "len()"]
        rest = (await c.call("variables", {"variablesReference": big[100]["variablesReference"]}))["variables"]
        assert [(v["name"], v["value"]) for v in rest[:3]] == [("100", "100"), ("101", "101"), ("102", "102")]
        assert len(rest) == 50
        inner = (await c.call("variables", {"variablesReference": children["'a'"]["variablesReference"]}))["variables"]
        assert [v["value"] for v in inner] == ["1", "2", "{'b': 3}", "3"] and inner[2]["variablesReference"] > 0
        assert inner[2]["evaluateName"] == "items['a'][2]"
        assert (
            await c.call("evaluate", {"expression": inner[2]["evaluateName"] + "['b']", "frameId": frames[0]["id"]})
        )["result"] == "3"


async def test_output_events_arrive_at_the_stop_where_the_output_was_written_and_the_end(program):
    async with adapter() as c:
        await start(c, {"program": program}, breakpoints={program: [{"line": 18}]})
        outputs = [e["body"]["output"] for e in c.events_named("output") if e["body"].get("category") == "stdout"]
        assert outputs == ["caught too big: 4\n"]
        stopped_index = max(i for i, e in enumerate(c.events) if e.get("event") == "stopped")
        output_index = max(
            i for i, e in enumerate(c.events) if e.get("event") == "output" and e["body"].get("category") == "stdout"
        )
        assert output_index < stopped_index
        assert await step(c, "continue") == ("end", ("<module>", 22, {"result": "14"}))
        assert [e["body"]["output"] for e in c.events_named("output") if e["body"].get("category") == "stdout"][
            -1
        ] == "result 14\n"
        await c.call("continue", {"threadId": 1})
        assert (await c.wait_event("exited"))["body"]["exitCode"] == 0
        await c.wait_event("terminated")


async def test_goto_pause_terminate_and_an_entry_function(program):
    async with adapter() as c:
        stopped = await start(c, {"program": program, "entry": {"function": "main", "args": "3"}, "stopOnEntry": True})
        assert stopped["body"]["reason"] == "entry"
        assert await where(c) == ("main", 11, {"limit": "3"})
        targets = (await c.call("gotoTargets", {"source": {"path": program}, "line": 19}))["targets"]
        await c.call("goto", {"threadId": 1, "targetId": targets[0]["id"]})
        assert (await c.wait_event("stopped"))["body"]["reason"] == "goto"
        assert (await where(c))[1] == 19
        await c.call("pause", {"threadId": 1})  # already stopped: nothing happens
        await c.call("terminate")
        await c.wait_event("exited")
        await c.wait_event("terminated")


async def test_malformed_messages_get_errors_and_the_session_goes_on(program):
    async with adapter("tcp") as c:
        await c.call("initialize", {"adapterID": "neural-dap"})
        send = c.writer.stream.send
        await send(encode_frame(b"{not json"))
        await send(encode_frame(msgspec.json.encode({"type": "request", "command": "threads"})))  # no seq
        await send(encode_frame(msgspec.json.encode({"seq": 900, "type": "request", "command": 5})))
        problems = [await c.wait_event("output", where=lambda e: "malformed" in e["body"]["output"]) for _ in range(2)]
        assert all(p["body"]["category"] == "important" for p in problems)
        unknown = await c.request("flyToTheMoon", {})
        assert not unknown["success"] and "unsupported request" in unknown["message"]
        bad_args = await c.request("stackTrace", {"threadId": "one"})
        assert not bad_args["success"] and "invalid arguments" in bad_args["message"]
        missing = await c.request("launch", {"program": "/no/such/program.py"})
        assert not missing["success"] and "does not exist" in missing["message"]
        not_stopped = await c.request("scopes", {"frameId": 1})
        assert not not_stopped["success"] and "not stopped" in not_stopped["message"]
        assert (await c.call("threads"))["threads"][0]["id"] == 1


async def test_a_world_checks_its_own_launch_keys_and_ignores_the_clients(program):
    async with adapter("tcp") as c:
        await c.call("initialize", {"adapterID": "neural-dap"})
        bad = await c.request("launch", {"program": program, "recording": "fast"})
        assert not bad["success"] and "recorded world" in bad["message"] and "recording" in bad["message"]
        bad = await c.request("launch", {"program": program, "limits": {"maxEvents": -1}})
        assert not bad["success"] and "maxEvents" in bad["message"]
        bad = await c.request("launch", {"program": program, "world": "neural", "trust": "nobody"})
        assert not bad["success"] and "neural world" in bad["message"] and "trust" in bad["message"]
        # VS Code sends its own keys (name, type, request, __sessionId) with every launch
        vscode = {"name": "Debug", "type": "neural-python", "request": "launch", "__sessionId": "x"}
        ok = await c.request("launch", {**vscode, "program": program, "recording": "full"})
        assert ok["success"], ok


async def test_a_broken_header_is_explained_and_closes_the_connection(program):
    async with adapter("tcp") as c:
        await c.call("initialize", {"adapterID": "neural-dap"})
        await c.writer.stream.send(b"Bogus-Header: 1\r\n\r\n")
        told = await c.wait_event("output", where=lambda e: "closing the connection" in e["body"]["output"])
        assert told["body"]["category"] == "important" and "no Content-Length" in told["body"]["output"]
        with anyio.fail_after(10):
            while not c.closed:
                await anyio.sleep(0.05)


async def test_an_endless_program_is_debugged_up_to_the_limit(tmp_path):
    path = tmp_path / "endless.py"
    path.write_text("n = 0\nwhile True:\n    n += 1\n")
    async with adapter() as c:
        stopped = await start(c, {"program": str(path), "limits": {"maxEvents": 500}})
        assert stopped["body"]["reason"] == "end" and "event limit" in stopped["body"]["description"]
        _, end_line, local = await where(c)
        assert int(local["n"]) > 100
        _reason, (_, line, back) = await step(c, "stepBack")  # time travel still works on what was recorded
        assert {end_line, line} == {2, 3} and abs(int(back["n"]) - int(local["n"])) <= 1


async def test_progress_events_while_the_program_is_recorded(program):
    async with adapter() as c:
        await start(c, {"program": program, "stopOnEntry": True}, progress=True)
        starts = c.events_named("progressStart")
        ends = c.events_named("progressEnd")
        assert starts and ends and starts[0]["body"]["progressId"] == ends[0]["body"]["progressId"]
        assert "recorded" in starts[0]["body"]["title"]


async def test_a_huge_container_is_cut_in_its_repr_but_still_opens(tmp_path):
    path = tmp_path / "huge.py"
    path.write_text("data = list(range(100000))\nn = len(data)\n")
    async with adapter() as c:
        await start(c, {"program": str(path)}, breakpoints={str(path): [{"line": 2}]})
        frames = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"]
        scope = (await c.call("scopes", {"frameId": frames[0]["id"]}))["scopes"][0]
        data = next(
            v
            for v in (await c.call("variables", {"variablesReference": scope["variablesReference"]}))["variables"]
            if v["name"] == "data"
        )
        # as debugpy shows it: 60 items and an ellipsis; it opens to every item (`more`, buckets)
        assert data["value"] == "[" + ", ".join(str(k) for k in range(59)) + ", ...]"
        children = (await c.call("variables", {"variablesReference": data["variablesReference"]}))["variables"]
        assert children[0] == {**children[0], "name": "00000", "value": "0"}
        assert [v["name"] for v in children[-2:]] == ["more", "len()"] and children[-1]["value"] == "100000"


class TaskHoldingWorld(RecordedWorld):
    """A recorded world that holds a task group from start to close, as the debugpy reality does
    (its DAP client's reader task): anyio requires the group to be left in the task that entered it."""

    def __init__(self, closed: list[bool]) -> None:
        super().__init__()
        self.closed = closed

    async def start(self, launch):
        self.stack = AsyncExitStack()
        group = await self.stack.enter_async_context(anyio.create_task_group())
        group.start_soon(anyio.sleep_forever)
        self.group = group
        return await super().start(launch)

    async def close(self) -> None:
        self.group.cancel_scope.cancel()
        await self.stack.aclose()
        self.closed.append(True)
        await super().close()


async def test_a_world_holding_tasks_is_started_and_closed_cleanly_whoever_asks(program):
    closed: list[bool] = []
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:

        async def serve_one() -> None:
            stream = await listener.listeners[0].accept()
            async with stream:
                await serve_streams(stream, stream, lambda launch: TaskHoldingWorld(closed))

        tg.start_soon(serve_one)
        async with connect_tcp("127.0.0.1", port, timeout=30) as c:
            await start(c, {"program": program, "stopOnEntry": True})
            assert (await step(c, "next"))[0] == "step"
            await c.call("disconnect", {})
        with anyio.fail_after(10):  # the server's task ends, without an error from the world's close
            while not closed:
                await anyio.sleep(0.01)
    assert closed == [True]


async def test_a_short_stack_comes_whole_with_its_total(program):
    async with adapter() as c:
        await start(c, {"program": program}, breakpoints={program: [{"line": 12}]})  # in main(4): two frames
        whole = await c.call("stackTrace", {"threadId": 1, "startFrame": 0, "levels": 20})
        assert len(whole["stackFrames"]) == whole["totalFrames"] == 2


async def test_the_adapter_process_ends_after_answering_disconnect_though_its_input_stays_open(program):
    process = await anyio.open_process([sys.executable, "-m", "neural_dap", "adapter"])
    try:
        assert process.stdin is not None and process.stdout is not None
        for seq, (command, args) in enumerate([("initialize", {"adapterID": "t"}), ("disconnect", {})], start=1):
            await process.stdin.send(
                encode_frame(
                    msgspec.json.encode({"seq": seq, "type": "request", "command": command, "arguments": args})
                )
            )
        with anyio.fail_after(10):
            await process.wait()  # stdin is still open: the adapter ends by itself
        assert process.returncode == 0
        answered = b""
        with anyio.move_on_after(2):
            async for chunk in process.stdout:
                answered += chunk
        assert b'"command":"disconnect"' in answered and b'"success":true' in answered
    finally:
        if process.returncode is None:
            process.kill()
