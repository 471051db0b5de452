"""All the code a program runs can be reached, as debugpy users expect (issue 22, item 1): the user's
own package in a sibling folder, the standard library with `justMyCode: false`, and a breakpoint
that can never be hit says so instead of looking set."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.dap_helpers import adapter, start, where

JSON_DECODER = Path(json.__file__).with_name("decoder.py")


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """proj/lib/mylib.py imported from proj/scripts/run.py (the library's folder put on sys.path)."""
    lib = tmp_path / "proj" / "lib"
    lib.mkdir(parents=True)
    (lib / "mylib.py").write_text("def scale(x):\n    doubled = x * 2\n    return doubled + 1\n")
    scripts = tmp_path / "proj" / "scripts"
    scripts.mkdir()
    run = scripts / "run.py"
    run.write_text(
        textwrap.dedent(
            f"""\
            import json
            import sys
            sys.path.insert(0, {str(lib)!r})
            import mylib

            value = mylib.scale(20)
            data = json.loads('{{"a": 1}}')
            print(value, data)
            """
        )
    )
    return run, lib / "mylib.py"


async def test_a_breakpoint_in_the_users_sibling_package_is_hit(tmp_path: Path) -> None:
    run, mylib = _project(tmp_path)
    async with adapter() as client:
        stop = await start(client, {"program": str(run)}, breakpoints={str(mylib): [{"line": 3}]})
        assert stop["body"]["reason"] == "breakpoint"
        assert await where(client) == ("scale", 3, {"x": "20", "doubled": "40"})


async def test_step_in_enters_the_sibling_package_but_not_the_standard_library(tmp_path: Path) -> None:
    run, _ = _project(tmp_path)
    async with adapter() as client:
        await start(client, {"program": str(run)}, breakpoints={str(run): [{"line": 6}, {"line": 7}]})
        await client.call("stepIn", {"threadId": 1})
        await client.wait_event("stopped")
        assert (await where(client))[:2] == ("scale", 2)
        await client.call("continue", {"threadId": 1})
        await client.wait_event("stopped")
        assert (await where(client))[:2] == ("<module>", 7)
        await client.call("stepIn", {"threadId": 1})  # json.loads is library code: stepped over
        await client.wait_event("stopped")
        assert (await where(client))[:2] == ("<module>", 8)


async def test_with_just_my_code_false_the_standard_library_stops_and_steps(tmp_path: Path) -> None:
    run, _ = _project(tmp_path)
    decode_line = next(
        n for n, text in enumerate(JSON_DECODER.read_text().splitlines(), 1) if "obj, end = self.raw_decode(s" in text
    )
    async with adapter() as client:
        stop = await start(
            client, {"program": str(run), "justMyCode": False}, breakpoints={str(JSON_DECODER): [{"line": decode_line}]}
        )
        assert stop["body"]["reason"] == "breakpoint"
        frames = (await client.call("stackTrace", {"threadId": 1}))["stackFrames"]
        assert frames[0]["source"]["path"] == str(JSON_DECODER) and frames[0]["name"] == "decode"
        assert any(f["name"] == "loads" for f in frames)  # json/__init__.py is on the stack too


async def test_a_breakpoint_that_can_never_hit_says_why(tmp_path: Path) -> None:
    run, _ = _project(tmp_path)
    never = tmp_path / "proj" / "lib" / "unused.py"
    never.write_text("def nothing():\n    return 0\n")
    async with adapter() as client:
        await client.call("initialize", {"adapterID": "tests"})
        await client.wait_event("initialized")
        # (recorded to its end first: while a live program runs, a file may still be imported later)
        seq = await client.send_request("launch", {"program": str(run), "live": False})
        await client.call("setBreakpoints", {"source": {"path": str(never)}, "breakpoints": [{"line": 2}]})
        await client.call(
            "setBreakpoints", {"source": {"path": str(JSON_DECODER)}, "breakpoints": [{"line": 10}, {"line": 20}]}
        )
        await client.call("configurationDone")
        assert (await client.response(seq, "launch"))["success"]
        await client.wait_event("stopped")  # (the breakpoints are judged before the first stop)
        changed = {}
        for event in client.events:
            if event.get("event") == "breakpoint":
                bp = event["body"]["breakpoint"]
                changed[bp["id"]] = bp
        messages = {bp["message"] for bp in changed.values() if not bp["verified"]}
        assert "no code of this file ran in the recorded run" in messages
        assert any("justMyCode" in m for m in messages)
