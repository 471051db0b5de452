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
            "breakpoints",
            "source",
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
        assert (await call(client, "state", session=session))["at_end"]  # a run without an exception: its end
        start = await call(client, "goto", session=session, where="start")
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
        assert run["exit_code"] == 1 and run["output"].startswith("avg 4.0\nTraceback (most recent call last):\n")
        assert run["output"].endswith("ZeroDivisionError: division by zero\n")  # (as a plain run prints it)
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
        assert origin["argument"] and origin["passed_by"]["line"] == 9  # the caller's line that passed []
        assert "changed_by" not in origin
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
        assert f"session {session} is closed" in await fails(client, "state", session=session)
        assert "no session 's99'" in await fails(client, "state", session="s99")


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
        await call(client, "goto", session=session, where="start")
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
        await call(client, "goto", session=session, where="start")
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
        await call(client, "goto", session=session, where="start")
        hit = await call(
            client, "step", session=session, action="continue", breakpoints=[{"file": "cart.py", "line": 6}]
        )
        assert hit["location"]["line"] == 6
        value = await call(client, "evaluate", session=session, expression="sorted(items, key=lambda i: i[1])[0][0]")
        assert value["value"] == "'fig'" and value["live"]


# -- tools that never mislead, say what they do not know, and answer in few words (issue 39) --------

LEDGER = textwrap.dedent(
    """\
    def parse(raw):
        out = {}
        for line in raw.splitlines():
            name, amount = line.split(",")
            out[name] = int(amount)
        return out


    def signed(kind, amount):
        sign = 1 if kind == "deposit" else 1
        return sign * amount


    def balance(entries):
        total = 0
        for kind, amount in entries:
            total += signed(kind, amount)
        return total


    result = balance([("deposit", 100), ("withdraw", 30)])
    assert result == 70, result
    print("ok")
    """
)


def _stdio(root: Path) -> Client:
    return Client(
        StdioServerParameters(
            command=sys.executable,
            args=["-m", "neural_dap", "mcp", "--root", str(root)],
            cwd=str(REPO),
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    )


async def test_every_mistake_gets_an_error_that_names_it_over_stdio(root: Path) -> None:
    """A typo, a line past the end or without code, a condition that does not parse, a closed
    session, a model outside the root: each an error saying so (with the nearest names that exist),
    never an empty answer that reads as a fact about the run, and never the agent's long text back."""
    (root / "ledger.py").write_text(LEDGER)
    async with _stdio(root) as c:
        session = (await call(c, "record", program="ledger.py"))["session"]
        assert "no function 'balanse'" in (text := await fails(c, "calls", session=session, function="balanse"))
        assert "nearest: balance" in text
        assert "never called" in (await call(c, "calls", session=session, function="parse"))["note"]
        assert "no variable 'reslt'" in (text := await fails(c, "value_history", session=session, expression="reslt"))
        assert "nearest: result" in text
        assert "no variable" in await fails(c, "last_value", session=session, expression="nope")
        assert "no variable" in await fails(c, "value_origin", session=session, expression="nope.x")
        for line, problem in (
            (500, "line 500 is outside ledger.py (no such line: it has lines 1 to 23)"),
            (7, "has no code"),
        ):
            assert problem in await fails(c, "logpoint", session=session, line=line, message="x")
            bad = [{"file": "ledger.py", "line": line}]
            assert problem in await fails(c, "step", session=session, action="reverse_continue", breakpoints=bad)
        # a line with code that never ran is said apart from one that does not exist
        assert "line 3 of ledger.py never ran" in await fails(c, "logpoint", session=session, line=3, message="x")
        bad = [{"line": 17, "condition": "i =="}]
        assert "condition 'i ==' is not a Python expression" in await fails(c, "breakpoints", session=session, set=bad)
        assert "'lines' is not an argument of source" in await fails(c, "source", file="ledger.py", lines=3)
        wrong_type = await fails(c, "record", program="ledger.py", max_repr="wide")
        assert "max_repr:" in wrong_type and "http" not in wrong_type and "pydantic" not in wrong_type
        long = "x + " * 2000 + "("
        refused = await fails(c, "evaluate", session=session, expression=long)
        assert len(refused) < 400 and "(8001 characters)" in refused
        assert "outside the workspace root" in await fails(
            c, "predict", file="ledger.py", function="signed", call_args="'deposit', 1", model=str(REPO)
        )
        assert "not allowed" in await fails(
            c, "predict", file="ledger.py", function="signed", call_args="'deposit', 1", model="http://example.com"
        )
        assert "built into Python" in await fails(c, "record", module="os")
        await call(c, "close", session=session)
        assert f"session {session} is closed" in await fails(c, "state", session=session)


async def test_the_session_stands_where_it_is_needed_and_arguments_are_arguments(root: Path) -> None:
    (root / "ledger.py").write_text(LEDGER)
    async with connected(root) as client:
        run = await call(client, "record", program="ledger.py")
        assert run["now"] == {
            "moment": run["exception"]["moment"],
            "at": "exception",
            "line": 22,
            "function": "<module>",
        }
        last = await call(client, "last_value", session=run["session"], expression="result")
        assert last["changed"] and last["changed_by"]["line"] == 21
        # at the end nothing runs forward: said, not a silent stop
        assert "goto start" in await fails(client, "step", session=run["session"], action="continue")
        lines = [{"line": 10}, {"line": 3}]
        hit = await call(client, "step", session=run["session"], action="reverse_continue", breakpoints=lines)
        assert (hit["location"]["function"], hit["locals"]["kind"]) == ("signed", "'withdraw'")
        assert hit["breakpoint_lines_never_ran"] == ["ledger.py:3"]  # parse is never called: said, not skipped
        argument = await call(client, "last_value", session=run["session"], expression="kind")
        assert argument["argument"] and argument["passed_by"]["line"] == 17 and "changed_by" not in argument
        start = await call(client, "goto", session=run["session"], where="start")
        note = (await call(client, "last_value", session=run["session"], expression="result"))["note"]
        assert start["at_start"] and "stands at the start" in note


async def test_value_origin_follows_the_value_into_the_calls_that_made_it(root: Path) -> None:
    """result = balance(...) -> balance's `return total` -> `total += signed(...)` -> signed's
    `return sign * amount`, and where `sign` was set: the wrong line, one answer away."""
    (root / "ledger.py").write_text(LEDGER)
    (root / "parsed.py").write_text("d = dict(alice=3)\nx = d['alice']\nprint(x)\n")
    async with connected(root) as client:
        session = (await call(client, "record", program="ledger.py"))["session"]
        origin = await call(client, "value_origin", session=session, expression="result")
        assert [(s["kind"], s["line"]) for s in origin["steps"] if s["kind"] != "operand"] == [
            ("assigned", 21),
            ("returned", 18),
            ("assigned", 17),
            ("returned", 11),
        ]
        sign = next(s for s in origin["steps"] if s["kind"] == "operand" and s["expression"] == "sign")
        assert (sign["line"], sign["statement"]) == (10, 'sign = 1 if kind == "deposit" else 1')
        assert origin["end"] == "computed" and "`sign * amount`" in origin["reason"]
        other = (await call(client, "record", program="parsed.py"))["session"]
        item = await call(client, "value_origin", session=other, expression="x")
        assert "(its ['alice'] was set within)" in item["reason"]  # not "its 'alice']"


async def test_a_function_of_a_script_whose_top_level_fails_is_recorded(root: Path) -> None:
    (root / "ledger.py").write_text(LEDGER)
    (root / "early.py").write_text("import sys\nprint('starting')\nraise SystemExit(3)\n\n\ndef f(x):\n    return x\n")
    async with connected(root) as client:
        run = await call(client, "record", program="ledger.py", function="signed", call_args="'withdraw', 30")
        assert run["exit_code"] == 0 and run["top_level"].startswith("the top level raised AssertionError: 130")
        assert "at line 22" in run["top_level"]
        assert "AssertionError: 130" in run["output"]  # the top level's traceback, as Python prints it
        calls = await call(client, "calls", session=run["session"], function="signed")
        assert calls["items"][0]["returned"] == "30"
        refused = await fails(client, "record", program="early.py", function="f", call_args="1")
        assert "raised sys.exit(3) at line 3 before it defined f" in refused
        assert 'if __name__ == "__main__":' in refused
        assert "nearest: signed" in await fails(client, "record", program="ledger.py", function="sined")


async def test_answers_say_things_once(root: Path) -> None:
    (root / "many.py").write_text(
        "def add(a, b):\n    '''Add.'''\n    c = a + b\n    return c\n\n\nfor k in range(12):\n    add(k, 1)\n"
    )
    async with connected(root) as client:
        session = (await call(client, "record", program="many.py"))["session"]
        calls = await call(client, "calls", session=session, function="add")
        assert calls["total"] == 12 and "source" in calls["definition"]
        assert all(set(item) <= {"call", "moment", "arguments", "returned", "end_moment"} for item in calls["items"])
        assert len(json.dumps(calls)) < 2000
        history = await call(client, "value_history", session=session, expression="k")
        assert history["total"] == 12 and all("source" not in i["changed_by"] for i in history["items"])
        assert history["items"][0]["changed_by"]["code"] == "for k in range(12):"
        # breakpoints stay on the session, listed with how often their line ran
        listed = await call(client, "breakpoints", session=session, set=[{"line": 3, "condition": "a == 5"}])
        assert listed["breakpoints"] == [{"file": "many.py", "line": 3, "condition": "a == 5", "line_ran": 12}]
        await call(client, "goto", session=session, where="start")
        hit = await call(client, "step", session=session, action="continue")
        assert (hit["reason"], hit["locals"]["a"]) == ("breakpoint", "5")
        assert (await call(client, "breakpoints", session=session, set=[]))["breakpoints"] == []
        text = await call(client, "source", file="many.py", start=2, end=4, session=session)
        assert text["lines"] == ["2 |     '''Add.'''", "3 |     c = a + b", "4 |     return c"]
        assert text["total_lines"] == 8 and text["never_ran"] == []
        assert "past the end" in await fails(client, "source", file="many.py", start=40)
        # a what-if branch says how it ended
        await call(client, "goto", session=session, where=hit["moment"])
        branch = await call(client, "set_value", session=session, name="b", value="'x'")
        ends = branch["branch_ends"]
        assert (ends["outcome"], ends["exit_code"], ends["exception"]["type"]) == ("raised", 1, "TypeError")


async def test_guidance_is_served_as_instructions_and_a_prompt(root: Path) -> None:
    async with connected(root) as client:
        assert client.instructions is not None and "value_origin" in client.instructions
        assert len(client.instructions) < 2000 and "guesses" in client.instructions
        prompts = (await client.list_prompts()).prompts
        assert [p.name for p in prompts] == ["debug"]
        prompt = await client.get_prompt("debug", {"program": "cart.py", "symptom": "prints 14, not 15"})
        text = prompt.messages[0].content.text  # type: ignore[union-attr]
        assert "record" in text and "cart.py" in text and "prints 14, not 15" in text


async def test_a_recursive_functions_values_are_found_in_each_call(root: Path) -> None:
    """In a recursive function the calls' events interleave: `sub = f(kid)` is followed by the inner
    call's events, and the change it made is still found in its own call."""
    (root / "leaves.py").write_text(
        textwrap.dedent(
            """\
            def leaves(node):
                kids = node.get("kids")
                if not kids:
                    if "leaf" in node:
                        return 1
                    return
                n = 0
                for kid in kids:
                    sub = leaves(kid)
                    n += sub
                return n


            print(leaves({"kids": [{"leaf": "a"}, {"kids": []}]}))
            """
        )
    )
    async with connected(root) as client:
        run = await call(client, "record", program="leaves.py")
        assert run["exception"]["type"] == "TypeError"
        last = await call(client, "last_value", session=run["session"], expression="sub")
        assert (last["before"], last["after"], last["changed_by"]["line"]) == ("1", "None", 9)
        origin = await call(client, "value_origin", session=run["session"], expression="sub")
        assert [(s["kind"], s["statement"]) for s in origin["steps"]] == [
            ("assigned", "sub = leaves(kid)"),
            ("returned", "return"),  # the bare return that made it None
        ]


class GuessingWorld:
    """A neural world's stand-in: two predicted frames whose values the model was unsure of (p=0.05),
    or gave no probability for. What the server shows of a prediction is under test, not a model."""

    name = "neural"

    def __init__(self, launch: Any) -> None:
        from neural_dap.core.world import Capabilities

        self.capabilities = Capabilities(exact=False, inverse=True)
        self.path = launch.program
        self.stops: list[Any] = []

    def _stop(self, index: int, line: int, locals_: dict[str, str], **confidence: Any) -> Any:
        from neural_dap.core.state import Frame, State
        from neural_dap.core.world import Stop

        state = State("line", line, "", "total", 0, 1, locals_, path=self.path)
        frame = Frame("total", line, "", 1, self.path, locals_)
        return Stop(state, (frame,), index, at_start=index == 0, predicted=True, **confidence)

    async def start(self, launch: Any) -> Any:
        return self._stop(0, 10, {"ledger": "{'a': 1}"})

    async def act(self, action: Any, **_: Any) -> Any:
        if not self.stops:
            self.stops.append(
                self._stop(
                    1,
                    11,
                    {"ledger": "{'a': 1}", "s": "'a'"},
                    line_confidence=0.9,
                    local_confidence={"ledger": 0.99, "s": 0.05},
                )
            )
        else:
            self.stops.append(self._stop(2, 12, {"ledger": "{'a': 1}", "s": "0"}))  # no probabilities given
        return self.stops[-1]

    def source(self, path: str) -> str | None:
        return None

    def summary(self) -> dict[str, Any]:
        return {"world": "neural", "confidence": {"predictedValues": 4, "uncertainValues": 3}}

    async def close(self) -> None:
        pass


async def test_a_predicted_value_carries_its_probability_and_a_guess_is_marked(root: Path) -> None:
    (root / "ledger.py").write_text(LEDGER)
    server, sessions = build(str(root), world_factory=GuessingWorld)
    async with Client(server) as client:
        result = await call(
            client, "predict", file="ledger.py", function="balance", call_args="{'a': 1}", actions=["next", "next"]
        )
    await sessions.close_all()
    assert next(iter(result)) == "confidence" and result["confidence"].startswith("LOW:")  # said first
    start, sure, unsure = result["states"]
    assert start["locals"] == {"ledger": "{'a': 1}"}  # the agent's own call: not a prediction
    assert sure["locals"] == {"ledger": "{'a': 1}  (p=0.99)", "s": "\u2248 'a'?  (p=0.05)"}
    assert sure["uncertain"] == ["s"] and sure["line_p"] == 0.9
    assert unsure["locals"]["s"] == "\u2248 0?  (p unknown)" and unsure["line_p"] is None
    assert result["summary"]["confidence"] == {"predictedValues": 4, "uncertainValues": 3}


@pytest.mark.slow
async def test_the_embedded_models_predictions_carry_probabilities_over_stdio(root: Path) -> None:
    (root / "ledger.py").write_text(LEDGER)
    async with _stdio(root) as c:
        result = await call(
            c, "predict", file="ledger.py", function="balance", call_args="[('deposit', 5)]", actions=["step_in"] * 3
        )
    assert next(iter(result)) == "confidence" and "summary" in result and "confidence" in result["summary"]
    predicted = result["states"][1:]
    assert predicted and all(s["predicted"] for s in predicted)
    for state in predicted:
        for name, value in state["locals"].items():
            assert "(p=" in value or "(p unknown)" in value, (name, value)
            assert value.startswith("\u2248") == (name in state.get("uncertain", [])), (name, value)


async def test_a_failing_pytest_test_names_its_exception_type_and_message_apart(root: Path) -> None:
    test = "def add(a, b):\n    return a - b\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    (root / "test_add.py").write_text(test)
    async with connected(root) as client:
        run = await call(client, "record", module="pytest", args=["-q", "-p", "no:cacheprovider", "test_add.py"])
        exception = run["exception"]
        assert exception["type"] == "AssertionError" and exception["message"].startswith("assert -1 == 5")
        assert run["now"]["at"] == "exception" and run["now"]["line"] == 6
