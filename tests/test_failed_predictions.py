"""What clients see when a prediction fails: an error on the request that asked for it (every client
shows that), an `entry` first stop whatever happens, and requests during a step answered from the
last stop. The model is a scripted OpenAI-compatible server (tests/scripted_model_server.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from contextlib import contextmanager

import anyio

from neural_dap.trace.recorder import Program, record

from .conftest import EXAMPLES, ROOT
from .dap_helpers import adapter, start, where
from .fakes import frame_text

PROGRAM = str(EXAMPLES / "bubble_sort.py")


@contextmanager
def scripted_server(tmp_path, completions: list[str], delay: float = 0.0, by_position: bool = False, name: str = "s"):
    """(its URL, its process)"""
    spec = tmp_path / f"{name}.json"
    spec.write_text(json.dumps({"completions": completions, "delay": delay, "by_position": by_position}))
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "scripted_model_server.py"), str(spec)], stdout=subprocess.PIPE, text=True
    )
    try:
        yield server.stdout.readline().strip(), server  # type: ignore[union-attr]
    finally:
        if server.poll() is None:
            server.terminate()
        server.wait(10)


@contextmanager
def scripted_model(tmp_path, completions: list[str], delay: float = 0.0):
    with scripted_server(tmp_path, completions, delay) as (url, _):
        yield url


def true_frames(count: int) -> list[str]:
    """What a perfect model writes for the first `count` step_into frames of bubble_sort([3, 1, 2])."""
    states = list(record(Program(PROGRAM, entry="bubble_sort", entry_args="[3, 1, 2]")).states)
    return [frame_text(s) for s in states[1 : count + 1]]


def neural_launch(url: str) -> dict:
    return {
        "program": PROGRAM,
        "entry": {"function": "bubble_sort", "args": "[3, 1, 2]"},
        "world": "neural",
        "model": {"url": url, "retries": 0},
        "stopOnEntry": True,
    }


def test_the_terminal_shows_a_failed_step_and_the_session_goes_on(tmp_path):
    with scripted_model(tmp_path, true_frames(1)) as url:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "neural_dap",
                "debug",
                PROGRAM,
                "--entry",
                "bubble_sort",
                "--args",
                "[3, 1, 2]",
                "--world",
                "neural",
                "--model",
                url,
                "--do",
                "n; n; where",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "[entry] bubble_sort.py:10 in bubble_sort"
    failures = [line for line in lines if line.startswith("! next failed")]
    assert len(failures) == 2 and "could not predict step_over" in failures[0]
    assert "> bubble_sort at bubble_sort.py:10" in lines  # still at the last stop
    assert "session summary:" in out.stdout


async def test_a_failed_step_is_an_error_response_and_the_first_stop_is_entry(tmp_path):
    with scripted_model(tmp_path, []) as url:
        async with adapter() as c:
            stopped = await start(c, neural_launch(url))
            assert (
                stopped["body"]["reason"] == "entry"
            )  # as the recorded world's first stop, though the prediction failed
            told = [e for e in c.events_named("output") if e["body"].get("category") == "important"]
            assert told and "could not predict step_into" in told[0]["body"]["output"]
            assert (await where(c))[:2] == ("bubble_sort", 9)
            response = await c.request("next", {"threadId": 1})
            assert not response["success"] and "could not predict step_over" in response["message"]
            await anyio.sleep(0.3)
            assert len(c.events_named("stopped")) == 1  # no stop the client did not ask for
            assert (await where(c))[:2] == ("bubble_sort", 9)  # and the session is still usable


async def test_requests_during_a_step_are_answered_from_the_last_stop(tmp_path):
    with scripted_model(tmp_path, true_frames(2), delay=1.5) as url:
        async with adapter() as c:
            stopped = await start(c, neural_launch(url))
            assert stopped["body"]["reason"] == "entry"
            frame = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"][0]
            scopes = (await c.call("scopes", {"frameId": frame["id"]}))["scopes"]
            step = await c.send_request("stepIn", {"threadId": 1})
            started = time.monotonic()
            during = await c.call("stackTrace", {"threadId": 1})  # nvim-dap asks for the previous stop's frames
            variables = await c.call("variables", {"variablesReference": scopes[0]["variablesReference"]})
            assert time.monotonic() - started < 1.0 and during["stackFrames"][0]["line"] == 10
            assert {v["name"] for v in variables["variables"]} == {"values"}
            assert (await c.response(step, "stepIn"))["success"]
            assert (await c.wait_event("stopped"))["body"]["reason"] == "step"
            assert (await where(c))[1] == 11


def _served(url: str) -> int:
    import httpx

    try:
        return int(httpx.get(url.removesuffix("/v1") + "/stats", timeout=5).json()["requests"])
    except httpx.HTTPError:
        return -1


async def test_a_session_on_two_replicas_survives_the_one_it_uses_being_killed(tmp_path):
    frames = true_frames(8)
    with (
        scripted_server(tmp_path, frames, by_position=True, name="a") as (url_a, server_a),
        scripted_server(tmp_path, frames, by_position=True, name="b") as (url_b, server_b),
    ):
        async with adapter() as c:
            launch = neural_launch(url_a)
            launch["model"] = {"url": [url_a, url_b], "retries": 0}
            await start(c, launch)
            seen = []
            for _ in range(3):
                await c.call("stepIn", {"threadId": 1})
                await c.wait_event("stopped")
                seen.append((await where(c))[1])
            used, other = ((url_a, server_a), (url_b, server_b))[:: 1 if _served(url_a) > 0 else -1]
            assert _served(used[0]) > 0 and _served(other[0]) == 0  # the session sticks to one replica
            used[1].kill()
            used[1].wait(10)
            for _ in range(3):
                response = await c.request("stepIn", {"threadId": 1})
                assert response["success"], response
                await c.wait_event("stopped")
                seen.append((await where(c))[1])
            assert _served(other[0]) > 0
            truth = [s.line for s in record(Program(PROGRAM, entry="bubble_sort", entry_args="[3, 1, 2]")).states]
            assert seen == truth[2:8]  # the entry stop is the first line (truth[1]); then one line a step
