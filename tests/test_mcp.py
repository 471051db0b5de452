"""`neural-dap mcp`: every tool through the SDK's in-memory client, then the real transports (stdio as
a subprocess, streamable HTTP with and without the bearer token)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[mcp]'")

from mcp import Client, StdioServerParameters

from neural_dap.mcp.server import build

REPO = Path(__file__).resolve().parent.parent

CART = textwrap.dedent(
    """\
    def total_price(items):
        total = 0
        for name, price, qty in items:
            total += price * qty
        total = total - 1  # the bug
        return total


    cart = [("apple", 2, 3), ("pear", 5, 1), ("fig", 1, 4)]
    result = total_price(cart)
    print("total", result)
    """
)

AVERAGE = textwrap.dedent(
    """\
    def average(xs):
        total = 0
        for x in xs:
            total += x
        return total / len(xs)


    print("avg", average([3, 4, 5]))
    print("empty", average([]))
    """
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "cart.py").write_text(CART)
    (tmp_path / "average.py").write_text(AVERAGE)
    return tmp_path


@asynccontextmanager
async def connected(root: Path, live_evaluate: bool = False) -> AsyncIterator[Client]:
    """The SDK's in-memory client on a server for `root` (a context manager, not a fixture: an async
    fixture's teardown runs in another task, and the client's scopes must be left where they began)."""
    server, sessions = build(str(root), live_evaluate=live_evaluate)
    try:
        async with Client(server) as c:
            yield c
    finally:
        await sessions.close_all()


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def fails(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text  # type: ignore[union-attr]


async def test_the_tools_are_listed_with_a_short_description_and_an_example(root: Path) -> None:
    async with connected(root) as client:
        listed = (await client.list_tools()).tools
        names = [t.name for t in listed]
        assert names == [
            "record",
            "state",
            "step",
            "goto",
            "last_value",
            "value_history",
            "value_origin",
            "calls",
            "logpoint",
            "evaluate",
            "predict",
            "set_value",
            "branches",
            "close",
        ]
        for tool in listed:
            assert tool.description and "Example" in tool.description and len(tool.description) < 600
            assert all("_" in p or p.islower() for p in tool.input_schema.get("properties", {}))


async def test_record_then_find_the_line_that_made_the_wrong_output(root: Path) -> None:
    async with connected(root) as client:
        run = await call(client, "record", program="cart.py")
        assert (run["session"], run["exit_code"], run["outcome"]) == ("s1", 0, "finished")
        assert run["output"] == "total 14\n" and run["events"] > 10 and run["calls"] == 2
        assert "exception" not in run
        session = run["session"]

        end = await call(client, "goto", session=session, where="end")
        assert end["at_end"] and end["locals"]["result"] == "14"
        assert any(line.startswith("> ") and "print" in line for line in end["location"]["source"])

        last = await call(client, "last_value", session=session, expression="result")
        assert (last["before"], last["after"]) == ("<not set>", "14")
        assert last["changed_by"]["line"] == 10  # result = total_price(cart)

        # into the call that made it: its return, then who set `total`
        await call(client, "goto", session=session, where=last["moment"])
        back = await call(client, "step", session=session, action="step_back_in")
        assert (back["event"], back["location"]["line"], back["returns"]) == ("return", 6, "14")
        origin = await call(client, "last_value", session=session, expression="total")
        assert (origin["before"], origin["after"], origin["changed_by"]["line"]) == ("15", "14", 5)
        assert "> 5 |     total = total - 1  # the bug" in origin["changed_by"]["source"]

        # where the argument came from: the module's `cart`, a literal
        chain = await call(client, "value_origin", session=session, expression="items")
        assert [(s["kind"], s["statement"], s["line"]) for s in chain["steps"]] == [
            ("argument", "result = total_price(cart)", 10),
            ("assigned", 'cart = [("apple", 2, 3), ("pear", 5, 1), ("fig", 1, 4)]', 9),
        ]
        assert chain["end"] == "literal" and chain["steps"][0]["moment"].startswith("m")
        assert chain["steps"][0]["function"] == "<module>"

        history = await call(client, "value_history", session=session, expression="total", count=2)
        assert [(c["before"], c["after"]) for c in history["items"]] == [("<not set>", "0"), ("0", "6")]
        assert history["next_start"] == 2 and history["total"] >= 4
        rest = await call(client, "value_history", session=session, expression="total", start=2)
        assert [c["after"] for c in rest["items"]] == ["11", "15", "14"]
        assert "next_start" not in rest


async def test_state_step_breakpoints_and_evaluate(root: Path) -> None:
    async with connected(root) as client:
        session = (await call(client, "record", program="cart.py"))["session"]
        start = await call(client, "state", session=session)
        assert start.get("at_start") or start["moment"] in ("m0", "m1")
        hit = await call(
            client,
            "step",
            session=session,
            action="continue",
            breakpoints=[{"file": "cart.py", "line": 4, "condition": "name == 'fig'"}],
        )
        assert (hit["reason"], hit["location"]["line"], hit["locals"]["name"]) == ("breakpoint", 4, "'fig'")
        assert [f["function"] for f in hit["stack"]] == ["total_price", "<module>"]
        over = await call(client, "step", session=session, action="next")
        assert over["location"]["line"] == 3 and over["locals"]["total"] == "15"
        back = await call(client, "step", session=session, action="step_back")
        assert back["moment"] == hit["moment"]
        # the breakpoint held for that step only: continue now runs to the end
        assert (await call(client, "step", session=session, action="continue"))["at_end"]
        await call(client, "goto", session=session, where=hit["moment"])
        value = await call(client, "evaluate", session=session, expression="sum(p * q for _, p, q in items)")
        assert value["value"] == "15" and value["type"] == "int"
        caller = await call(client, "evaluate", session=session, expression="cart[0][0]", frame=1)
        assert caller["value"] == "'apple'"
        # a bad call fails with a message and leaves the session where it was
        assert "not defined" in await fails(client, "evaluate", session=session, expression="nope + 1")
        assert "unknown action" in await fails(client, "step", session=session, action="jump")
        assert "not a moment id" in await fails(client, "goto", session=session, where="somewhere")
        assert (await call(client, "state", session=session))["moment"] == hit["moment"]
        assert (await call(client, "goto", session=session, where="start"))["at_start"]


async def test_an_uncaught_exception_its_location_and_goto_exception(root: Path) -> None:
    async with connected(root) as client:
        run = await call(client, "record", program="average.py")
        assert run["exit_code"] == 1 and run["output"] == "avg 4.0\n"
        exception = run["exception"]
        assert (exception["type"], exception["message"]) == ("ZeroDivisionError", "division by zero")
        assert exception["location"]["line"] == 5 and exception["location"]["function"] == "average"
        at = await call(client, "goto", session=run["session"], where="exception")
        assert (at["moment"], at["location"]["line"], at["locals"]["xs"]) == (exception["moment"], 5, "[]")
        calls = await call(client, "calls", session=run["session"], function="average")
        assert [(c["arguments"]["xs"], c.get("returned"), c.get("raised")) for c in calls["items"]] == [
            ("[3, 4, 5]", "4.0", None),
            ("[]", None, "ZeroDivisionError('division by zero')"),
        ]
        origin = await call(client, "last_value", session=run["session"], expression="xs")
        assert origin["changed_by"]["line"] == 9  # the caller's line that passed []
        no_exception = (await call(client, "record", program="cart.py"))["session"]
        assert "no exception" in await fails(client, "goto", session=no_exception, where="exception")


async def test_logpoint_paged_calls_and_close(root: Path) -> None:
    async with connected(root) as client:
        session = (await call(client, "record", program="cart.py"))["session"]
        page = await call(client, "logpoint", session=session, line=4, message="{name}: total={total}", count=2)
        assert [i["text"] for i in page["items"]] == ["apple: total=0", "pear: total=6"]
        assert (page["total"], page["next_start"]) == (3, 2)
        assert page["location"]["source"][3] == ">  4 |         total += price * qty".replace(">  4", "> 4")
        there = await call(client, "goto", session=session, where=page["items"][1]["moment"])
        assert there["locals"]["name"] == "'pear'"
        calls = await call(client, "calls", session=session, function="cart.py:total_price")
        assert calls["items"][0]["returned"] == "14" and calls["total"] == 1
        closed = await call(client, "close", session=session)
        assert closed == {"closed": session, "recorded": "cart.py", "sessions_open": 0}
        assert "no session" in await fails(client, "state", session=session)


async def test_one_call_of_a_function_and_literal_arguments_only(root: Path) -> None:
    async with connected(root) as client:
        (root / "stats.py").write_text("def average(xs):\n    return sum(xs) / len(xs)\n")
        run = await call(client, "record", program="stats.py", function="average", call_args="[2, 4]")
        assert run["recorded"] == "stats.py average([2, 4])" and run["exit_code"] == 0
        calls = await call(client, "calls", session=run["session"], function="average")
        assert calls["items"][0]["returned"] == "3.0"
        message = await fails(client, "record", program="stats.py", function="average", call_args="__import__('os')")
        assert "literals" in message


async def test_a_module_launch(root: Path) -> None:
    async with connected(root) as client:
        (root / "calc").mkdir()
        (root / "calc" / "__init__.py").write_text("")
        (root / "calc" / "__main__.py").write_text("import sys\nn = int(sys.argv[1])\nprint(n * 2)\n")
        run = await call(client, "record", module="calc", args=["21"])
        assert run["output"] == "42\n" and run["recorded"] == "-m calc"


async def test_paths_outside_the_root_are_refused(root: Path, tmp_path_factory) -> None:
    async with connected(root) as client:
        outside = tmp_path_factory.mktemp("outside")
        (outside / "evil.py").write_text("print('ran')\n")
        os.symlink(outside / "evil.py", root / "link.py")
        for arguments in (
            {"program": str(outside / "evil.py")},
            {"program": "../" + outside.name + "/evil.py"},
            {"program": "link.py"},
            {"program": "cart.py", "cwd": str(outside)},
        ):
            assert "outside the workspace root" in await fails(client, "record", **arguments)
        session = (await call(client, "record", program="cart.py"))["session"]
        message = await fails(
            client,
            "step",
            session=session,
            action="continue",
            breakpoints=[{"file": str(outside / "evil.py"), "line": 1}],
        )
        assert "outside the workspace root" in message
        assert "outside" in await fails(client, "logpoint", session=session, file="/etc/passwd", line=1, message="x")
        assert "outside" in await fails(client, "predict", file="/etc/passwd", function="f", call_args="1")


async def test_values_are_cut_at_max_repr_and_lists_are_bounded(root: Path) -> None:
    async with connected(root, live_evaluate=True) as client:  # the whole value, from the live program
        (root / "big.py").write_text(
            "def f():\n"
            + "".join(f"    v{k} = {k}\n" for k in range(50))
            + "    text = 'x' * 5000\n    return text\n\nf()\n"
        )
        session = (await call(client, "record", program="big.py"))["session"]
        await call(client, "step", session=session, action="continue", breakpoints=[{"line": 53}])
        state = await call(client, "state", session=session, max_repr=20)
        assert len(state["locals"]) == 40 and state["locals_left_out"] == 11
        value = await call(client, "evaluate", session=session, expression="text", max_repr=30)
        assert len(value["value"]) == 30 and value["value"].endswith("\u2026") and value["value_left_out_chars"] > 4900
        wide = await call(client, "evaluate", session=session, expression="text", max_repr=6000)
        assert len(wide["value"]) == 5002


async def test_a_program_that_never_ends_is_recorded_up_to_its_limits(root: Path) -> None:
    async with connected(root) as client:
        (root / "forever.py").write_text("n = 0\nwhile True:\n    n += 1\n")
        began = time.monotonic()
        run = await call(client, "record", program="forever.py", timeout=4)
        assert time.monotonic() - began < 10
        assert run["outcome"] in ("timeout", "event_limit") and "stopped_by_limit" in run
        end = await call(client, "goto", session=run["session"], where="end")
        assert end["at_end"] and int(end["locals"]["n"]) > 1000
        capped = await call(client, "record", program="forever.py", max_events=500)
        assert capped["outcome"] == "event_limit" and capped["events"] < 10_000  # the skeleton stops within a chunk


@pytest.mark.slow
async def test_predict_forward_reconciled_with_the_recorded_run(root: Path) -> None:
    (root / "stats.py").write_text("def average(xs):\n    total = sum(xs)\n    return total / len(xs)\n")
    async with connected(root) as client:
        result = await call(
            client,
            "predict",
            file="stats.py",
            function="average",
            call_args="[3, 4]",
            actions=["step_in", "next", "next"],
            reconcile="recorded",
        )
        assert result["states"][0]["action"] == "start" and len(result["states"]) >= 2
        assert all(s.get("predicted") for s in result["states"][1:])
        assert isinstance(result["divergences"], int)
        assert result["summary"]["world"]


# -- the real transports ---------------------------------------------------------------------------------


async def test_what_if_a_value_had_been_another(root: Path) -> None:
    """set_value at a past moment runs the real program on with the new value (a branch); branches
    lists and switches; an agent's value is a literal, never executed."""
    async with connected(root) as client:
        session = (await call(client, "record", program="cart.py"))["session"]
        await call(client, "step", session=session, action="continue", breakpoints=[{"file": "cart.py", "line": 5}])
        moved = await call(client, "set_value", session=session, name="total", value="100")
        assert "branch 1: total = 15 \u2192 100" in moved["branch"] and moved["locals"]["total"] == "100"
        refused = await fails(client, "set_value", session=session, name="total", value="__import__('os')")
        assert "not a Python literal" in refused
        end = await call(client, "goto", session=session, where="end")
        assert end["locals"]["result"] == "99"
        assert "step back to a line" in await fails(client, "set_value", session=session, name="result", value="1")
        listed = await call(client, "branches", session=session, switch=0)
        assert [b["current"] for b in listed["branches"]] == [True, False]
        assert listed["locals"]["total"] == "15"


async def test_over_real_stdio(root: Path) -> None:
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "neural_dap", "mcp", "--root", str(root)],
        cwd=str(REPO),
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    async with Client(parameters) as c:
        run = await call(c, "record", program="cart.py")
        await call(c, "goto", session=run["session"], where="end")
        last = await call(c, "last_value", session=run["session"], expression="result")
        assert last["changed_by"]["line"] == 10


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_over_http_the_token_is_required(root: Path) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    port = _free_port()
    token = "test-token-" + os.urandom(8).hex()
    process = subprocess.Popen(
        [sys.executable, "-m", "neural_dap", "mcp", "--root", str(root), "--http", str(port), "--token", token],
        cwd=str(REPO),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        banner = process.stderr.readline() + process.stderr.readline()
        assert f"127.0.0.1:{port}/mcp" in banner and token in banner
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(100):
            try:
                response = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
                break
            except httpx.ConnectError:
                time.sleep(0.1)
        assert response.status_code == 401
        wrong = httpx.post(url, json={}, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and "unauthorized" in wrong.text

        async def with_the_token() -> None:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
            async with http, Client(streamable_http_client(url, http_client=http)) as c:
                run = await call(c, "record", program="cart.py")
                assert run["output"] == "total 14\n"
                assert json.dumps(await call(c, "close", session=run["session"]))

        anyio.run(with_the_token)
    finally:
        process.terminate()
        process.wait(10)


async def test_an_agents_expression_is_never_executed_unless_the_server_allows_it(root: Path) -> None:
    attack = "__import__('pathlib').Path('PWNED').write_text('ran') or len(cart)"
    async with connected(root) as client:  # by default: interpreted over the recorded values
        session = (await call(client, "record", program="cart.py"))["session"]
        await call(client, "goto", session=session, where="end")
        assert "not defined" in await fails(client, "evaluate", session=session, expression=attack)
        await fails(client, "evaluate", session=session, expression="total_price(cart)")  # no call runs
    assert not (root / "PWNED").exists()
    async with connected(root, live_evaluate=True) as client:  # `neural-dap mcp --live-evaluate`
        session = (await call(client, "record", program="cart.py"))["session"]
        hit = await call(
            client, "step", session=session, action="continue", breakpoints=[{"file": "cart.py", "line": 6}]
        )
        assert hit["location"]["line"] == 6
        value = await call(client, "evaluate", session=session, expression="sorted(items, key=lambda i: i[1])[0][0]")
        assert value["value"] == "'fig'" and value["live"]
