"""Scopes and paging through the real adapter over stdio, as debugpy shows them: "Locals" and, where
the frame's module is on the stack, "Globals" (the module's variables as recorded at the stop);
a long list opens as debugpy's does (`more`, buckets of 1000) where a live copy of the program
answers, and where none can (a full recording) it is announced with `indexedVariables` and paged,
a page past what the recording kept saying how many of its items were not recorded."""

from __future__ import annotations

import textwrap
from pathlib import Path

from neural_dap.dapwire.client import DapClient
from tests.dap_helpers import adapter, start

SCRIPT = textwrap.dedent(
    """\
    import os
    LIMIT = 3
    counter = 0
    big = list(range(10000))
    mid = list(range(180))


    def bump(n):
        global counter
        counter += n
        local_total = counter * 2
        return local_total


    class Box:
        pass


    for k in range(2):
        bump(k + 1)
    print(counter, os.sep)
    """
)

TESTS = textwrap.dedent(
    """\
    SETTING = 5


    def test_one():
        value = SETTING + 1
        assert value == 6
    """
)


async def _scopes(client: DapClient, frame: int = 0) -> dict[str, dict]:
    frames = (await client.call("stackTrace", {"threadId": 1}))["stackFrames"]
    scopes = (await client.call("scopes", {"frameId": frames[frame]["id"]}))["scopes"]
    return {s["name"]: s for s in scopes}


async def _variables(client: DapClient, ref: int, **paging) -> dict[str, dict]:
    listed = (await client.call("variables", {"variablesReference": ref, **paging}))["variables"]
    return {v["name"]: v for v in listed}


async def _page(client: DapClient, ref: int, start: int, count: int) -> list[tuple[str, str]]:
    args = {"variablesReference": ref, "filter": "indexed", "start": start, "count": count}
    return [(v["name"], v["value"]) for v in (await client.call("variables", args))["variables"]]


async def test_a_function_of_a_script_has_locals_and_the_modules_globals(tmp_path: Path) -> None:
    path = tmp_path / "prog.py"
    path.write_text(SCRIPT)
    async with adapter() as client:
        # line 10 (`counter += n`), the second call: the first has added 1 to counter
        await start(client, {"program": str(path)}, breakpoints={str(path): [{"line": 10, "hitCondition": "2"}]})
        scopes = await _scopes(client)
        assert list(scopes) == ["Locals", "Globals"]
        assert scopes["Locals"]["presentationHint"] == "locals"
        local = await _variables(client, scopes["Locals"]["variablesReference"])
        assert {name: v["value"] for name, v in local.items()} == {"n": "2"}
        module = await _variables(client, scopes["Globals"]["variablesReference"])
        # an imported module is a variable, as in debugpy; functions, classes and dunders are in its groups
        groups = {"special variables", "function variables", "class variables"}
        assert set(module) == groups | {"LIMIT", "counter", "big", "mid", "k", "os"}
        assert module["os"]["value"].startswith("<module 'os' from ")
        assert (module["LIMIT"]["value"], module["counter"]["value"], module["k"]["value"]) == ("3", "1", "1")
        assert scopes["Globals"]["namedVariables"] == 9
        assert module["counter"]["evaluateName"] == "counter"
        # the caller (the module itself) has both scopes too, as in debugpy
        outer = await _scopes(client, 1)
        assert list(outer) == ["Locals", "Globals"]
        outer_locals = await _variables(client, outer["Locals"]["variablesReference"])
        assert set(outer_locals) == set(module)


async def test_a_10000_item_list_opens_to_its_last_item_as_in_debugpy(tmp_path: Path) -> None:
    """At a stop with a live copy of the program, a long list opens as debugpy's does: items 0 to
    99 (named with as many digits as the last index), `more`, `len()`; `more` holds buckets of
    1000, and the last bucket reaches the last item."""
    path = tmp_path / "prog.py"
    path.write_text(SCRIPT)
    async with adapter() as client:
        await start(client, {"program": str(path)}, breakpoints={str(path): [{"line": 10}]})
        scopes = await _scopes(client)
        big = (await _variables(client, scopes["Globals"]["variablesReference"]))["big"]
        assert big["type"] == "list" and big["variablesReference"] > 0
        children = (await client.call("variables", {"variablesReference": big["variablesReference"]}))["variables"]
        names = [v["name"] for v in children]
        assert names == [f"{k:04d}" for k in range(100)] + ["more", "len()"]
        assert (children[3]["value"], children[3]["evaluateName"]) == ("3", "big[3]")
        assert (children[-1]["value"], children[-1]["evaluateName"]) == ("10000", "len(big)")
        buckets = await _variables(client, children[100]["variablesReference"])
        assert list(buckets) == [f"[{a}:{min(a + 1000, 10000)}]" for a in range(100, 10000, 1000)]
        last = await client.call("variables", {"variablesReference": buckets["[9100:10000]"]["variablesReference"]})
        items = [(v["name"], v["value"]) for v in last["variables"]]
        assert items[0] == ("9100", "9100") and items[-1] == ("9999", "9999") and len(items) == 900
        mid = (await _variables(client, scopes["Globals"]["variablesReference"]))["mid"]
        rest = (await client.call("variables", {"variablesReference": mid["variablesReference"]}))["variables"]
        assert [v["name"] for v in rest][-2:] == ["more", "len()"]  # 80 more: one range, opened at once
        tail = await _variables(client, rest[-2]["variablesReference"])
        assert list(tail)[-1] == "179" and len(tail) == 80


async def test_a_full_recording_pages_the_300_items_it_kept_and_says_where_it_stops(tmp_path: Path) -> None:
    """No program to ask (a full recording): a long list is announced with its length and paged,
    up to the 300 items debugpy shows of a container; past them a page says what was not kept."""
    path = tmp_path / "prog.py"
    path.write_text(SCRIPT)
    async with adapter() as client:
        await start(client, {"program": str(path), "recording": "full"}, breakpoints={str(path): [{"line": 10}]})
        scopes = await _scopes(client)
        big = (await _variables(client, scopes["Globals"]["variablesReference"]))["big"]
        assert big["indexedVariables"] == 10000 and big["type"] == "list"
        ref = big["variablesReference"]
        assert (await client.call("variables", {"variablesReference": ref, "filter": "named"}))["variables"] == []
        first = await _page(client, ref, 0, 100)
        assert first == [(str(k), str(k)) for k in range(100)]
        straddling = await _page(client, ref, 295, 10)
        assert straddling[:5] == [(str(k), str(k)) for k in range(295, 300)]
        assert straddling[5] == ("...", "5 more not recorded (items 300 to 304; the recording keeps 300 of 10000)")
        assert await _page(client, ref, 9950, 100) == [
            ("...", "50 more not recorded (items 9950 to 9999; the recording keeps 300 of 10000)")
        ]
        item = (await _variables(client, ref, start=3, count=1))["3"]
        assert item["evaluateName"] == "big[3]"
        mid = (await _variables(client, scopes["Globals"]["variablesReference"]))["mid"]
        assert mid["indexedVariables"] == 180
        assert await _page(client, mid["variablesReference"], 170, 20) == [(str(k), str(k)) for k in range(170, 180)]


async def test_no_globals_where_the_module_is_not_on_the_stack(tmp_path: Path) -> None:
    path = tmp_path / "prog.py"
    path.write_text(SCRIPT)
    async with adapter() as client:  # a function launch: the module ran, but not on this stack
        await start(client, {"program": str(path), "entry": {"function": "bump", "args": "4"}, "stopOnEntry": True})
        assert list(await _scopes(client)) == ["Locals"]
    (tmp_path / "test_s.py").write_text(TESTS)
    async with adapter() as client:  # a test module pytest imported before it ran the test
        await start(
            client,
            {"module": "pytest", "args": ["-q", "-p", "no:cacheprovider", "test_s.py"], "cwd": str(tmp_path)},
            breakpoints={str(tmp_path / "test_s.py"): [{"line": 6}]},
        )
        frames = (await client.call("stackTrace", {"threadId": 1}))["stackFrames"]
        assert frames[0]["name"] == "test_one"
        assert list(await _scopes(client)) == ["Locals"]
