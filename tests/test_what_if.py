"""What-if branches through the real adapter: setVariable / setExpression at a past stop runs the
real program again from there with the new value (a new branch the session stands on); `branches`
lists and switches; a value that is not a literal is refused and the session goes on."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from neural_dap.dapwire.client import DapError

from .dap_helpers import adapter, start, where

PROGRAM = textwrap.dedent(
    """\
    def total(xs, factor):
        s = 0
        for x in xs:
            s += x * factor
        return s


    def main():
        factor = 2
        items = [1, 2, 3]
        result = total(items, factor)
        print("result", result)
        return result


    main()
    """
)

FUNCTION = textwrap.dedent(
    """\
    def f(text, n):
        out = []
        for k in range(n):
            out.append(text[k % len(text)].upper())
        print("made", len(out))
        return "-".join(out)
    """
)


@pytest.fixture()
def program(tmp_path: Path) -> str:
    path = tmp_path / "scale.py"
    path.write_text(PROGRAM)
    return str(path)


@pytest.fixture()
def function(tmp_path: Path) -> str:
    path = tmp_path / "spell.py"
    path.write_text(FUNCTION)
    return str(path)


async def _locals_ref(c, frame: int = 0) -> int:
    frames = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"]
    scopes = (await c.call("scopes", {"frameId": frames[frame]["id"]}))["scopes"]
    return scopes[0]["variablesReference"]


async def _move(c, command: str, arguments: dict | None = None) -> dict:
    await c.call(command, {"threadId": 1, **(arguments or {})})
    return (await c.wait_event("stopped"))["body"]


def _stdout_since(c, mark: int) -> str:
    return "".join(e["body"]["output"] for e in c.events_named("output")[mark:] if e["body"]["category"] == "stdout")


async def _back_before_the_call(c, program: str) -> None:
    """Stop at the print, then step back to `result = total(items, factor)`: a moment of the past."""
    await start(c, {"program": program}, breakpoints={program: [{"line": 12}]})
    assert (await where(c))[:2] == ("main", 12)
    await _move(c, "stepBack")
    name, line, names = await where(c)
    assert (name, line, names["factor"]) == ("main", 11, "2")


async def test_set_variable_in_the_past_runs_the_program_again_with_it(program):
    async with adapter() as c:
        await _back_before_the_call(c, program)
        mark = len(c.events_named("output"))
        before = len(c.events)
        answer = await c.call(
            "setVariable", {"variablesReference": await _locals_ref(c), "name": "factor", "value": "10"}
        )
        assert answer["value"] == "10"
        stopped = (await c.wait_event("stopped"))["body"]
        assert "branch 1" in stopped["description"] and "factor = 2 \u2192 10" in stopped["description"]
        # the program ran again: `continued` first, else VS Code keeps the previous stop's description
        moves = [e["event"] for e in c.events[before:] if e["event"] in ("continued", "stopped")]
        assert moves == ["continued", "stopped"], moves
        name, line, names = await where(c)
        assert (name, line, names["factor"], names["items"]) == ("main", 11, "10", "[1, 2, 3]")
        # continue: the breakpoint at the print again, on the new branch, with its output
        assert (await _move(c, "continue"))["reason"] == "breakpoint"
        assert (await where(c))[2]["result"] == "60"
        # the live copy of the program at this stop is the branch's too (its replays set the value)
        frames = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"]
        live = await c.call(
            "evaluate",
            {"expression": "factor * sum(items) + len(items)", "frameId": frames[0]["id"], "context": "repl"},
        )
        assert live["result"] == "63"
        await _move(c, "continue")
        assert "result 60\n" in _stdout_since(c, mark)
        assert "result 12" not in _stdout_since(c, mark)


async def test_branches_lists_and_switches_and_the_original_stays(program):
    async with adapter() as c:
        await _back_before_the_call(c, program)
        await c.call("setVariable", {"variablesReference": await _locals_ref(c), "name": "factor", "value": "10"})
        await c.wait_event("stopped")
        listed = await c.call("branches")
        assert listed["current"] == 1
        original, branch = listed["branches"]
        assert original["id"] == 0 and not original["current"] and "original" in original["description"]
        assert branch["current"] and branch["parent"] == 0
        assert (branch["name"], branch["old"], branch["new"], branch["function"], branch["line"]) == (
            "factor",
            "2",
            "10",
            "main",
            11,
        )
        assert branch["path"] == program and isinstance(branch["index"], int)
        # back to the original: at the moment the branches part, with the old value; its output
        switched = await c.call("branches", {"switch": 0})
        assert switched["current"] == 0
        stopped = (await c.wait_event("stopped"))["body"]
        assert "branch 0" in stopped["description"]
        assert (await where(c))[1:] == (11, {"factor": "2", "items": "[1, 2, 3]"})
        mark = len(c.events_named("output"))
        await _move(c, "continue")
        assert (await where(c))[2]["result"] == "12"
        await _move(c, "next")
        assert _stdout_since(c, mark) == "result 12\n"
        # and forward to branch 1 again, then a branch of it: both values hold
        await c.call("branches", {"switch": 1})
        await c.wait_event("stopped")
        assert (await where(c))[1:] == (11, {"factor": "10", "items": "[1, 2, 3]"})  # where the runs part
        await _move(c, "next")
        assert (await where(c))[2]["result"] == "60"
        await _move(c, "stepBack")
        await c.call("setVariable", {"variablesReference": await _locals_ref(c), "name": "items", "value": "[5]"})
        await c.wait_event("stopped")
        await _move(c, "next")
        assert (await where(c))[2]["result"] == "50"
        listed = await c.call("branches")
        assert [b["id"] for b in listed["branches"]] == [0, 1, 2] and listed["current"] == 2
        assert listed["branches"][2]["parent"] == 1


async def test_a_value_that_is_not_a_literal_is_refused_and_the_session_goes_on(program, tmp_path):
    marker = tmp_path / "ran"
    async with adapter() as c:
        await _back_before_the_call(c, program)
        ref = await _locals_ref(c)
        for value in (f"__import__('pathlib').Path({str(marker)!r}).touch()", "factor + 1", "[x for x in 'ab']"):
            with pytest.raises(DapError) as refused:
                await c.call("setVariable", {"variablesReference": ref, "name": "factor", "value": value})
            assert "literal" in str(refused.value) and "never executed" in str(refused.value)
        with pytest.raises(DapError) as refused:
            await c.call("setVariable", {"variablesReference": ref, "name": "nothing", "value": "1"})
        assert "not a local" in str(refused.value)
        with pytest.raises(DapError) as refused:
            await c.call("setExpression", {"expression": "items[0]", "value": "1"})
        assert "only a local variable" in str(refused.value)
        assert not marker.exists()
        assert (await c.call("branches"))["current"] == 0
        # still at the same stop, on the original run
        assert (await _move(c, "next"))["reason"] == "breakpoint"  # the one at the print
        local = {"factor": "2", "items": "[1, 2, 3]", "result": "12", "(return) total": "12"}
        assert (await where(c))[1:] == (12, local)


async def test_a_caller_frame_is_refused_with_the_reason(program):
    async with adapter() as c:
        await start(c, {"program": program}, breakpoints={program: [{"line": 4}]})
        assert (await where(c))[0] == "total"
        with pytest.raises(DapError) as refused:
            await c.call(
                "setVariable", {"variablesReference": await _locals_ref(c, frame=1), "name": "factor", "value": "3"}
            )
        assert "innermost frame" in str(refused.value)


CHANGING = textwrap.dedent(
    """\
    import sys
    from pathlib import Path


    def main(path):
        counter = Path(path)
        n = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(n + 1))
        if n % 2:
            seen = "odd"
        seen = "even"
        x = 5
        return x


    main(sys.argv[1])
    """
)


async def test_a_program_that_does_not_run_the_same_way_again_is_refused(tmp_path):
    """Each run of this program takes another path (a counter in a file): the branch would not be
    the run the user stood on, so none is made, and the session stays where it was."""
    program = tmp_path / "changing.py"
    program.write_text(CHANGING)
    async with adapter() as c:
        await start(
            c,
            {"program": str(program), "args": [str(tmp_path / "counter")], "recording": "full"},
            breakpoints={str(program): [{"line": 13}]},
        )
        name, line, names = await where(c)
        assert (name, line, names["n"], names["x"]) == ("main", 13, "0", "5")
        with pytest.raises(DapError) as refused:
            await c.call("setVariable", {"variablesReference": await _locals_ref(c), "name": "x", "value": "6"})
        assert "no branch was made" in str(refused.value) and "not deterministic" in str(refused.value)
        assert [b["id"] for b in (await c.call("branches"))["branches"]] == [0]
        assert (await where(c))[2]["x"] == "5"


async def _return_value(c) -> str:
    """Continue to the end of a function launch; the value it returned."""
    while True:
        stopped = await _move(c, "continue")
        if stopped["reason"] == "end":
            break
    frames = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"]
    scopes = (await c.call("scopes", {"frameId": frames[0]["id"]}))["scopes"]
    variables = (await c.call("variables", {"variablesReference": scopes[0]["variablesReference"]}))["variables"]
    return next(v["value"] for v in variables if v["name"].startswith("(return)"))


async def _fresh(function: str, args: str) -> str:
    async with adapter() as c:
        await start(c, {"program": function, "entry": {"function": "f", "args": args}, "stopOnEntry": True})
        return await _return_value(c)


async def test_set_expression_at_the_call_gives_what_a_fresh_recording_gives(function):
    async with adapter() as c:
        await start(c, {"program": function, "entry": {"function": "f", "args": "'ab', 3"}, "stopOnEntry": True})
        await _move(c, "next")
        await _move(c, "next")
        await _move(c, "stepBack")
        await _move(c, "stepBack")  # the first line again, arguments as the call gave them
        assert (await where(c))[1:] == (2, {"text": "'ab'", "n": "3"})
        frames = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"]
        answer = await c.call("setExpression", {"expression": "text", "value": "'xyz'", "frameId": frames[0]["id"]})
        assert answer["value"] == "'xyz'"
        await c.wait_event("stopped")
        answer = await c.call("setExpression", {"expression": "n", "value": "5", "frameId": frames[0]["id"]})
        await c.wait_event("stopped")
        assert (await where(c))[2] == {"text": "'xyz'", "n": "5"}
        mark = len(c.events_named("output"))
        returned = await _return_value(c)
        assert "made 5\n" in _stdout_since(c, mark)
        assert (await c.call("branches"))["branches"][2]["parent"] == 1
    assert returned == "'X-Y-Z-X-Y'" == await _fresh(function, "'xyz', 5")


def test_the_terminal_sets_a_value_in_the_past_and_switches_branches(program):
    script = "b 12; c; back; set factor 10; n; p result; set factor factor*2; branches; branches 0; n; p result; q"
    done = subprocess.run(
        [sys.executable, "-m", "neural_dap", "debug", program, "--do", script],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = done.stdout
    assert done.returncode == 0, done.stderr
    assert "now on branch 1: factor = 2 \u2192 10 in main at scale.py:11" in out
    assert "not a Python literal" in out  # factor*2 is refused
    assert "> branch 1: factor = 2 \u2192 10" in out and "  branch 0 (the original run)" in out
    assert out.count("\n60\n") == 1 and out.count("\n12\n") == 1  # `p result` on each branch


_BENCHMARK = Path(__file__).resolve().parent.parent / "benchmarks" / "what_if.py"
_spec = importlib.util.spec_from_file_location("neural_dap_what_if", _BENCHMARK)
assert _spec is not None and _spec.loader is not None
what_if = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = what_if  # (dataclasses look their module up)
_spec.loader.exec_module(what_if)


@pytest.mark.skipif(not what_if.DATA.exists(), reason="CRUXEval's dev set is not in ../shared/data")
async def test_a_changed_argument_gives_what_a_fresh_recording_with_it_gives():
    """benchmarks/what_if.py on the first 30 CRUXEval functions: every branch made at the call with
    one argument changed returns (or raises) what `f` called with that argument does."""
    counts = await what_if.measure(what_if.load(what_if.DATA, 30), seed=1)
    assert counts.different == 0, counts.differences
    assert counts.refused == 0, counts.reasons
    assert counts.same >= 25


async def test_the_neural_world_refuses_with_the_reason_and_goes_on(tmp_path):
    from .test_failed_predictions import neural_launch, scripted_model, true_frames

    with scripted_model(tmp_path, true_frames(1)) as url:
        async with adapter() as c:
            await start(c, neural_launch(url))
            name, line, names = await where(c)
            with pytest.raises(DapError) as refused:
                await c.call(
                    "setVariable", {"variablesReference": await _locals_ref(c), "name": "items", "value": "[1]"}
                )
            assert "the neural world cannot run the program again" in str(refused.value)
            with pytest.raises(DapError) as refused:
                await c.call("branches")
            assert "world 'recorded'" in str(refused.value)
            assert await where(c) == (name, line, names)


async def test_pause_ends_a_branch_that_runs_for_ever_and_the_session_goes_on(tmp_path):
    program = tmp_path / "countdown.py"
    program.write_text("def down(n):\n    while n != 0:\n        n -= 1\n    return n\n\n\ndown(3)\n")
    async with adapter() as c:
        await start(c, {"program": str(program)}, breakpoints={str(program): [{"line": 2}]})
        seq = await c.send_request(
            "setVariable", {"variablesReference": await _locals_ref(c), "name": "n", "value": "-1"}
        )
        await anyio.sleep(1.5)  # the branch counts down from -1: it would run to the wall-time limit
        await c.call("pause", {"threadId": 1})
        answer = await c.response(seq, "setVariable", timeout=20)
        assert not answer["success"] and "no branch was made" in answer["message"]
        assert [b["id"] for b in (await c.call("branches"))["branches"]] == [0]
        assert (await where(c))[1:] == (2, {"n": "3"})
        assert (await _move(c, "next"))["reason"] == "step"


CLOSURE = textwrap.dedent(
    """\
    def g(k):
        scale = 2

        def times(v):
            return v * scale

        return [times(v) for v in range(k)]
    """
)


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
async def test_a_local_a_closure_reads_is_set_on_each_interpreter(tmp_path, version):
    """3.11 and 3.12 write the frame's locals back with PyFrame_LocalsToFast, 3.13 through f_locals;
    a local held in a cell (a closure reads it) is set too."""
    from .test_recorder import _python

    python = sys.executable if version == "3.11" else _python(version)
    if python is None:
        pytest.skip(f"no python{version} on this machine")
    program = tmp_path / "closure.py"
    program.write_text(CLOSURE)
    launch = {"program": str(program), "entry": {"function": "g", "args": "3"}, "stopOnEntry": True}
    async with adapter() as c:
        await start(c, {**launch, "python": python})
        await _move(c, "next")
        assert (await where(c))[1:] == (4, {"k": "3", "scale": "2"})
        await c.call("setVariable", {"variablesReference": await _locals_ref(c), "name": "scale", "value": "5"})
        await c.wait_event("stopped")
        assert (await where(c))[2] == {"k": "3", "scale": "5"}
        assert await _return_value(c) == "[0, 5, 10]"


async def test_every_kind_of_literal_is_accepted_and_anything_else_refused(function):
    """Each accepted value is a branch of its own (more than are kept open: an old one is recorded
    again when switched back to)."""
    accepted = {
        "-3": "-3",
        "1.5e3": "1500.0",
        "'é\\\\n'": "'é\\\\n'",
        "b'xy'": "b'xy'",
        "(1, 'a')": "(1, 'a')",
        "{1, 2}": "{1, 2}",
        "set()": "set()",
        "{'k': [True, None]}": "{'k': [True, None]}",
        "1+2j": "(1+2j)",
    }
    refused = ["10**9", "text", "-'a'", "[1] * 3", "[" * 40 + "]" * 40, "9" * 5000, "{**{}}", "...", "f'{n}'"]
    async with adapter() as c:
        await start(c, {"program": function, "entry": {"function": "f", "args": "'ab', 3"}, "stopOnEntry": True})
        frame = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"][0]["id"]
        for value, shown in accepted.items():
            answer = await c.call("setExpression", {"expression": "text", "value": value, "frameId": frame})
            await c.wait_event("stopped")
            assert answer["value"] == shown, value
            # (the Variables view reads as debugpy's SafeRepr: an empty set is `{}` there)
            assert (await where(c))[2]["text"] == ("{}" if shown == "set()" else shown)
        for value in refused:
            with pytest.raises(DapError):
                await c.call("setExpression", {"expression": "text", "value": value, "frameId": frame})
        listed = await c.call("branches")
        assert len(listed["branches"]) == 1 + len(accepted) and listed["current"] == len(accepted)
        await c.call("branches", {"switch": 1})
        await c.wait_event("stopped")
        assert (await where(c))[2] == {"text": "-3", "n": "3"}
        stopped = await _move(c, "continue")  # len(-3): the branch's own run raises
        assert stopped["reason"] == "exception" and stopped["text"] == "TypeError"  # (as debugpy words it)


def test_nvim_dap_with_the_readmes_what_if_helpers(program, tmp_path):
    """The nvim-dap helpers of docs/time-travel.md in a real headless Neovim with the real nvim-dap (skipped without
    a checkout at $NEURAL_DAP_NVIM_DAP or .e2e/nvim-dap, as tests/test_nvim_dap.py is)."""
    import json
    import os

    from .conftest import ROOT, modern_nvim
    from .test_nvim_dap import _nvim_dap

    nvim, plugin = modern_nvim(), _nvim_dap()
    if nvim is None or plugin is None:
        pytest.skip("needs Neovim 0.11+ (dev extra) and an nvim-dap checkout at $NEURAL_DAP_NVIM_DAP or .e2e/nvim-dap")
    out = tmp_path / "seen.json"
    env = {
        **os.environ,
        "ND_NVIM_DAP": str(plugin),
        "ND_OUT": str(out),
        "ND_NEURAL_DAP": str(Path(sys.executable).with_name("neural-dap")),
    }
    run = subprocess.run(
        [nvim, "--headless", "--clean", "-u", str(ROOT / "tests" / "nvim" / "what_if.lua"), program],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.is_file(), (run.stdout + run.stderr)[-3000:]
    seen = json.loads(out.read_text())
    assert seen["errors"] == []
    stops = [(s["reason"], s["line"], s.get("description", "")) for s in seen["stops"]]
    assert stops == [
        ("entry", 1, ""),
        ("breakpoint", 12, ""),
        ("step", 11, ""),
        ("goto", 11, "branch 1: factor = 2 \u2192 10 in main at scale.py:11 (event 7)"),
        ("breakpoint", 12, ""),
        ("goto", 11, "branch 0 (the original run)"),
    ]
    assert (seen["factor"], seen["result"], seen["original"]) == ("10", "60", "2")
    assert [b["id"] for b in seen["listed"]["branches"]] == [0, 1] and seen["listed"]["current"] == 1
    assert "result 60\n" not in seen["output"]  # the branch stopped at the print, before it ran
